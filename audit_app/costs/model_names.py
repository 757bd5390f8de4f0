"""One model id per provider: the name every path that stores or compares a model uses.

Pure module (no Django). Routes name one model differently: LiteLLM's callback and its OTel
spans say ``openai/gpt-4o`` (its routing prefix), OpenTelemetry instrumentations and provider
reports say ``gpt-4o``. `canonical_pair` gives the pair rollups store (at ingest, once per
distinct key; migration 0034 rewrote rows stored before):

- the provider is `normalize_provider`'s name;
- a routing prefix that names the row's own provider is dropped (``openai/gpt-4o`` served by
  ``openai`` is ``gpt-4o``, ``bedrock/anthropic.claude-…`` served by ``bedrock`` is
  ``anthropic.claude-…``); a prefix naming another provider is kept, as it is part of the
  model's name there (``openai/gpt-oss-120b`` served by ``vllm`` is a Hugging Face id);
- a row with no provider takes the provider its prefix names (``openai/gpt-4o`` with no
  provider is ``openai`` / ``gpt-4o``);
- case is kept and nothing else changes: Bedrock's ``us.`` / ``global.`` inference profiles
  are priced apart, and price datasets' regex rules match names as written.
"""

from __future__ import annotations

from collections.abc import Iterable

from audit_app.costs.providers import known_provider, normalize_provider


def canonical_pair(provider: str, model: str) -> tuple[str, str]:
    """The (provider, model) a row is stored and filtered under (rules: the module's doc)."""
    name = normalize_provider(provider) if provider.strip() else ""
    text = model.strip()
    prefix, slash, rest = text.partition("/")
    if not slash or not rest.strip():
        return name, text
    routed = known_provider(prefix)
    if routed is not None and name in ("", routed):
        return routed, rest.strip()
    return name, text


def canonical_model(model: str, provider: str = "") -> str:
    """The model's id under ``provider`` (`canonical_pair`'s model)."""
    return canonical_pair(provider, model)[1]


def served_names(models: Iterable[object]) -> list[str]:
    """A serving pool's ``models_served`` as rollups may store them: each name as written and
    its canonical id (``openai/meta-llama/Llama-3.1-8B``, LiteLLM's name for a vLLM server
    behind its OpenAI-compatible route, is stored as ``meta-llama/Llama-3.1-8B``)."""
    names: dict[str, None] = {}
    for model in models:
        text = str(model)
        names[text] = None
        names[canonical_model(text)] = None
    return list(names)
