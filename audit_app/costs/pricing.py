"""Token pricing: match a request's provider and model to a price card and price its tokens.

Pure module (no Django). Money is Decimal. Rules:
- Providers are normalised to the catalog's names by `audit_app.costs.providers.normalize_provider`
  (LiteLLM's ``bedrock`` and OTel's ``aws.bedrock`` are both ``aws-bedrock``; ``vertex_ai`` and
  ``gcp.vertex_ai`` are ``gcp-vertex``; ...).
- Models are matched case-insensitively after dropping a routing prefix (``openai/``,
  ``bedrock/``) and a Bedrock cross-region prefix (``us.``, ``eu.``, ``apac.``, ``global.``).
  An exact match wins; else the longest card model that is a prefix of the request's model at a
  ``-``, ``:``, ``@`` or ``.`` boundary (``gpt-4o-mini-2024-07-18`` takes the ``gpt-4o-mini``
  card, never the ``gpt-4o`` one).
- The card used is the latest whose ``valid_from`` is on or before the request's day.
- ``input_tokens`` includes cached input; cached input is priced at the cached price when the
  card has one, else as ordinary input. Batch-API requests use the card's batch prices when it
  has them, else the ordinary prices (never a guessed discount).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from audit_app.costs.providers import PROVIDER_ALIASES, normalize_provider

MILLION = Decimal(1_000_000)

_ROUTING_PREFIX = re.compile(r"^[a-z0-9_.\-]+/(?=.)")
_BEDROCK_REGION = re.compile(r"^(us|eu|apac|global|us-gov|jp|au|ca)\.(?=[a-z])")
_BOUNDARY = frozenset("-:@.")
_PARENTHETICAL = re.compile(r"\s*\(.*\)\s*$")


def normalize_model(model: str) -> str:
    name = model.strip().lower()
    # Keep HF-style org/model names ("meta-llama/Llama-3.3-70B"), drop routing prefixes.
    match = _ROUTING_PREFIX.match(name)
    if match and match.group(0)[:-1] in PROVIDER_ALIASES:
        name = name[match.end() :]
    return _BEDROCK_REGION.sub("", name)


def card_model_name(raw: str) -> str:
    """Catalog names carry notes in parentheses ("gemini-2.5-pro (Vertex)"); drop them."""
    return normalize_model(_PARENTHETICAL.sub("", raw))


@dataclass(frozen=True, kw_only=True)
class Price:
    """Prices of one card, in USD per million tokens."""

    card_id: int | None
    provider: str
    model: str
    valid_from: date
    input: Decimal
    output: Decimal
    cached_input: Decimal | None = None
    batch_input: Decimal | None = None
    batch_output: Decimal | None = None


@dataclass(frozen=True, kw_only=True)
class TokenUsage:
    input_tokens: int  # includes cached input
    cached_input_tokens: int
    output_tokens: int
    batch_api: bool = False


def token_cost(price: Price, usage: TokenUsage) -> Decimal:
    input_price = price.batch_input if usage.batch_api and price.batch_input else price.input
    output_price = price.batch_output if usage.batch_api and price.batch_output else price.output
    cached_price = price.cached_input if price.cached_input is not None else input_price
    uncached = usage.input_tokens - usage.cached_input_tokens
    total = (
        Decimal(uncached) * input_price
        + Decimal(usage.cached_input_tokens) * cached_price
        + Decimal(usage.output_tokens) * output_price
    )
    return total / MILLION


class PriceBook:
    """Price cards indexed for lookup by (provider, model, day)."""

    def __init__(self, prices: Iterable[Price]) -> None:
        self._by_provider: dict[str, dict[str, list[Price]]] = {}
        for price in prices:
            models = self._by_provider.setdefault(normalize_provider(price.provider), {})
            models.setdefault(card_model_name(price.model), []).append(price)
        for models in self._by_provider.values():
            for versions in models.values():
                versions.sort(key=lambda p: p.valid_from, reverse=True)
        self._cache: dict[tuple[str, str, date], Price | None] = {}

    def find(self, *, provider: str, model: str, day: date) -> Price | None:
        key = (provider, model, day)
        if key not in self._cache:
            self._cache[key] = self._find(provider=provider, model=model, day=day)
        return self._cache[key]

    def _find(self, *, provider: str, model: str, day: date) -> Price | None:
        models = self._by_provider.get(normalize_provider(provider))
        if not models:
            return None
        wanted = normalize_model(model)
        versions = models.get(wanted) or _longest_prefix_match(wanted, models)
        if not versions:
            return None
        return next((p for p in versions if p.valid_from <= day), None)


def _longest_prefix_match(wanted: str, models: dict[str, list[Price]]) -> Sequence[Price]:
    best = ""
    for name in models:
        if (
            len(name) > len(best)
            and wanted.startswith(name)
            and len(wanted) > len(name)
            and wanted[len(name)] in _BOUNDARY
        ):
            best = name
    return models[best] if best else ()
