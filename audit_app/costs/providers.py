"""One name per provider: the normaliser every path that stores or compares a provider uses.

Pure module (no Django). Token logs name the same provider differently (LiteLLM's
``custom_llm_provider`` says ``bedrock``, OpenTelemetry's ``gen_ai.provider.name`` says
``aws.bedrock``, the price catalog says ``aws-bedrock``), so rollups store the name
`normalize_provider` gives (at ingest, once per distinct rollup key), the URL filter
``provider=`` accepts any alias, and reconciliation maps bill lines through it too.

`PROVIDER_ALIASES` is the one table of aliases. Lookups ignore case, surrounding spaces and the
separator used (``aws.bedrock``, ``aws_bedrock`` and ``AWS Bedrock`` are one key); a name the
table does not know is kept, lower-cased and stripped.

Bills name the cloud that bills, not the API: `billing_provider` gives a bill line's short
cloud name (``Amazon Web Services, Inc.`` -> ``aws``), and `usage_provider` the token logs' name
for what a bill line bought (AWS's Amazon Bedrock -> ``aws-bedrock``), so reconciliation meets
the logs on `normalize_provider`'s names.
"""

from __future__ import annotations

import re

PROVIDER_ALIASES: dict[str, str] = {
    "bedrock": "aws-bedrock",
    "aws.bedrock": "aws-bedrock",
    "aws_bedrock": "aws-bedrock",
    "amazon-bedrock": "aws-bedrock",
    "bedrock_converse": "aws-bedrock",
    "vertex_ai": "gcp-vertex",
    "vertex_ai_beta": "gcp-vertex",
    "gcp.vertex_ai": "gcp-vertex",
    "gcp.gemini": "gcp-vertex",
    "gcp.gen_ai": "gcp-vertex",
    "gemini": "gcp-vertex",
    "azure": "azure-openai",
    "azure_ai": "azure-openai",
    "azure_openai": "azure-openai",
    "azure.ai.openai": "azure-openai",
    "azure.ai.inference": "azure-openai",
    "together_ai": "together",
    "fireworks_ai": "fireworks",
    "mistral_ai": "mistral",
    "x_ai": "xai",
    "cohere_chat": "cohere",
    "groq": "groq",
    "deepinfra": "deepinfra",
    "cerebras": "cerebras",
    "openai": "openai",
    "anthropic": "anthropic",
    "text-completion-openai": "openai",
}

_SEPARATORS = re.compile(r"[\s._-]+")


def _lookup_key(name: str) -> str:
    return _SEPARATORS.sub("-", name.strip().lower())


_CANONICAL_BY_KEY: dict[str, str] = {_lookup_key(k): v for k, v in PROVIDER_ALIASES.items()}


def normalize_provider(provider: str) -> str:
    """The provider's one name: ``bedrock`` / ``aws.bedrock`` -> ``aws-bedrock``,
    ``vertex_ai`` -> ``gcp-vertex``, ``azure`` -> ``azure-openai``; unknown names lower-cased."""
    name = provider.strip().lower()
    return _CANONICAL_BY_KEY.get(_lookup_key(name), name)


def known_provider(name: str) -> str | None:
    """The provider's one name when `PROVIDER_ALIASES` knows ``name`` (a routing prefix such as
    LiteLLM's ``openai/`` or ``bedrock/``), else None."""
    return _CANONICAL_BY_KEY.get(_lookup_key(name))


_WORD = re.compile(r"[a-z0-9]+")
# Short cloud names by a word of the billing provider's own name ("Amazon Web Services, Inc.",
# "Microsoft", "Google Cloud", "Oracle Cloud Infrastructure", ...).
BILLING_PROVIDER_WORDS: tuple[tuple[str, frozenset[str]], ...] = (
    ("aws", frozenset({"aws", "amazon"})),
    ("azure", frozenset({"azure", "microsoft"})),
    ("gcp", frozenset({"gcp", "google"})),
    ("oracle", frozenset({"oracle", "oci"})),
    ("alibaba", frozenset({"alibaba", "aliyun"})),
    ("ibm", frozenset({"ibm"})),
    ("openai", frozenset({"openai"})),
    ("anthropic", frozenset({"anthropic"})),
    ("litellm", frozenset({"litellm"})),
    ("databricks", frozenset({"databricks"})),
    ("snowflake", frozenset({"snowflake"})),
)


def billing_provider(raw: str) -> str:
    """A bill's provider as a short lower-case cloud name: aws, azure, gcp, oracle, ...; else a
    slug of the name (``Acme GPU Cloud`` -> ``acme-gpu-cloud``)."""
    words = _WORD.findall(raw.lower())
    for short, names in BILLING_PROVIDER_WORDS:
        if names.intersection(words):
            return short
    return "-".join(words)


def usage_provider(*, provider: str, service: str | None) -> str:
    """The token logs' name for what a bill line bought, from its short cloud name and service.

    Only what `normalize_provider` cannot know is decided here, from the billed service: AWS's
    "Amazon Bedrock" is aws-bedrock, Google Cloud's Vertex AI is gcp-vertex. Everything else goes
    through `normalize_provider` (azure -> azure-openai, openai, anthropic, ...).
    """
    billed_service = (service or "").lower()
    if provider == "aws" and "bedrock" in billed_service:
        return "aws-bedrock"
    if provider == "gcp" and "vertex" in billed_service:
        return "gcp-vertex"
    return normalize_provider(provider)
