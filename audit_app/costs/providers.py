"""One name per provider: the normaliser every path that stores or compares a provider uses.

Pure module (no Django). Token logs name the same provider differently (LiteLLM's
``custom_llm_provider`` says ``bedrock``, OpenTelemetry's ``gen_ai.provider.name`` says
``aws.bedrock``, the price catalog says ``aws-bedrock``), so rollups store the name
`normalize_provider` gives (at ingest, once per distinct rollup key), the URL filter
``provider=`` accepts any alias, and reconciliation maps bill lines through it too.

`PROVIDER_ALIASES` is the one table of aliases. Lookups ignore case, surrounding spaces and the
separator used (``aws.bedrock``, ``aws_bedrock`` and ``AWS Bedrock`` are one key); a name the
table does not know is kept, lower-cased and stripped.
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
