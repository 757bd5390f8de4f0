"""Token pricing: match a request's provider and model to a price card and price its tokens.

Pure module (no Django).

Its rules in full: `docs/methods.md`, section "Token pricing".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from audit_app.costs.providers import PROVIDER_ALIASES, normalize_provider

MILLION = Decimal(1_000_000)
# Input size above which a request's tokens are counted apart at ingest (rollups'
# ``unlogged_long_context_*``) when its card has no long-context tier (or there is no card):
# Anthropic's and Google's tiers start here, and rows ingested before long-context prices
# existed were all counted here (migration 0026's default).
LONG_CONTEXT_THRESHOLD_TOKENS = 200_000
# A rollup's threshold when rows counted at different thresholds were added into it: no tier
# applies to its long-context tokens.
MIXED_THRESHOLDS = 0

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


# A card's prices, in the order `Price.prices` gives them (two cards are compared in it).
PRICE_FIELDS = (
    "input",
    "output",
    "cached_input",
    "cache_write_input",
    "batch_input",
    "batch_output",
    "long_context_threshold",
    "long_context_input",
    "long_context_output",
    "long_context_cached_input",
    "long_context_cache_write",
    "per_request",
)


@dataclass(frozen=True, kw_only=True)
class Price:
    """Prices of one card, in USD per million tokens (``per_request`` in USD per request).
    ``card_id`` is None for a price not stored as a card yet (a dataset's, `costs.dataset`)."""

    card_id: int | None = None
    provider: str
    model: str
    valid_from: date
    input: Decimal
    output: Decimal
    cached_input: Decimal | None = None
    batch_input: Decimal | None = None
    batch_output: Decimal | None = None
    cache_write_input: Decimal | None = None
    long_context_threshold: int | None = None
    long_context_input: Decimal | None = None
    long_context_output: Decimal | None = None
    long_context_cached_input: Decimal | None = None
    long_context_cache_write: Decimal | None = None
    per_request: Decimal | None = None
    match_rule: Mapping[str, object] | None = None

    def prices(self) -> tuple[Decimal | int | None, ...]:
        """Every price, for comparing two cards (not the name, date or rule)."""
        return tuple(getattr(self, name) for name in PRICE_FIELDS)


@dataclass(frozen=True, kw_only=True)
class TokenUsage:
    input_tokens: int  # includes cached and cache-creation input
    cached_input_tokens: int
    output_tokens: int
    batch_api: bool = False
    cache_creation_input_tokens: int = 0
    requests: int = 0  # priced requests, for a per-request price
    # The part of the counts above that belongs to requests whose input was above
    # ``long_context_threshold`` (the threshold the rollups counted them with).
    long_context_input_tokens: int = 0
    long_context_cached_input_tokens: int = 0
    long_context_cache_creation_input_tokens: int = 0
    long_context_output_tokens: int = 0
    long_context_threshold: int = LONG_CONTEXT_THRESHOLD_TOKENS


def counting_threshold(price: Price | None) -> int:
    """The input size above which ingest counts a request's tokens apart: where its card's
    long-context tier starts, else `LONG_CONTEXT_THRESHOLD_TOKENS`."""
    if price is None or price.long_context_threshold is None:
        return LONG_CONTEXT_THRESHOLD_TOKENS
    return price.long_context_threshold


def merged_threshold(mine: int, theirs: int) -> int:
    """The threshold of two rollups added together: theirs when equal, else mixed."""
    return mine if mine == theirs else MIXED_THRESHOLDS


def tier_applies(price: Price, counted_at: int) -> bool:
    """Whether the card's long-context tier prices tokens counted above ``counted_at`` input
    tokens: when the tier starts there. One allowance: the dataset writes some 200k tiers as
    "above 199,999", and rows ingested before thresholds were kept were counted above 200,000;
    those price at the tier, missing only requests of exactly 200,000 input tokens."""
    threshold = price.long_context_threshold
    if threshold is None:
        return False
    return threshold == counted_at or (threshold, counted_at) == _OLD_200K


_OLD_200K = (LONG_CONTEXT_THRESHOLD_TOKENS - 1, LONG_CONTEXT_THRESHOLD_TOKENS)


def tier_mismatch(price: Price | None, counted_at: int) -> bool:
    """Whether tokens counted above ``counted_at`` miss the card's tier (priced at the ordinary
    prices instead): the card has a tier that starts elsewhere."""
    return (
        price is not None
        and price.long_context_threshold is not None
        and not tier_applies(price, counted_at)
    )


def _tokens_cost(
    *,
    input_tokens: int,
    cached: int,
    creation: int,
    output: int,
    prices: tuple[Decimal, Decimal, Decimal, Decimal],
) -> Decimal:
    input_price, cached_price, write_price, output_price = prices
    return (
        Decimal(input_tokens - cached - creation) * input_price
        + Decimal(cached) * cached_price
        + Decimal(creation) * write_price
        + Decimal(output) * output_price
    )


def token_cost(price: Price, usage: TokenUsage) -> Decimal:
    input_price = price.batch_input if usage.batch_api and price.batch_input else price.input
    output_price = price.batch_output if usage.batch_api and price.batch_output else price.output
    cached_price = price.cached_input if price.cached_input is not None else input_price
    write_price = price.cache_write_input if price.cache_write_input is not None else input_price
    ordinary = (input_price, cached_price, write_price, output_price)
    if tier_applies(price, usage.long_context_threshold):
        long = (
            _or(price.long_context_input, input_price),
            _or(price.long_context_cached_input, cached_price),
            _or(price.long_context_cache_write, write_price),
            _or(price.long_context_output, output_price),
        )
        long_counts = (
            usage.long_context_input_tokens,
            usage.long_context_cached_input_tokens,
            usage.long_context_cache_creation_input_tokens,
            usage.long_context_output_tokens,
        )
    else:
        long, long_counts = ordinary, (0, 0, 0, 0)
    total = _tokens_cost(
        input_tokens=usage.input_tokens - long_counts[0],
        cached=usage.cached_input_tokens - long_counts[1],
        creation=usage.cache_creation_input_tokens - long_counts[2],
        output=usage.output_tokens - long_counts[3],
        prices=ordinary,
    ) + _tokens_cost(
        input_tokens=long_counts[0],
        cached=long_counts[1],
        creation=long_counts[2],
        output=long_counts[3],
        prices=long,
    )
    per_request = (price.per_request or Decimal(0)) * usage.requests
    return total / MILLION + per_request


def _or(value: Decimal | None, fallback: Decimal) -> Decimal:
    return fallback if value is None else value


_RULE_KEYS = frozenset({"equals", "starts_with", "ends_with", "contains", "regex", "or", "and"})


def rule_matches(rule: Mapping[str, object], name: str) -> bool:
    """Whether a model name matches a price dataset's match rule (case-insensitive, except
    ``regex`` which is applied as written, as the dataset does)."""
    (kind, value), *_ = rule.items()
    lowered = name.lower()
    if kind == "or":
        return any(rule_matches(clause, name) for clause in _clauses(value))
    if kind == "and":
        return all(rule_matches(clause, name) for clause in _clauses(value))
    if kind == "regex":
        return bool(re.search(str(value), name))
    text = str(value).lower()
    if kind == "equals":
        return lowered == text
    if kind == "starts_with":
        return lowered.startswith(text)
    if kind == "ends_with":
        return lowered.endswith(text)
    if kind == "contains":
        return text in lowered
    raise ValueError(f"unknown match rule {kind!r}; expected one of {sorted(_RULE_KEYS)}")


def _clauses(value: object) -> list[Mapping[str, object]]:
    if not isinstance(value, list) or not all(isinstance(c, Mapping) and c for c in value):
        raise ValueError(f"a match rule's or/and must be a list of rules, not {value!r}")
    return value


class PriceBook:
    """Price cards indexed for lookup by (provider, model, day)."""

    def __init__(self, prices: Iterable[Price]) -> None:
        self._by_provider: dict[str, dict[str, list[Price]]] = {}
        self._rules: dict[str, list[tuple[int, Mapping[str, object], str]]] = {}
        for price in prices:
            provider = normalize_provider(price.provider)
            models = self._by_provider.setdefault(provider, {})
            name = card_model_name(price.model)
            models.setdefault(name, []).append(price)
            if price.match_rule:
                order = price.card_id if price.card_id is not None else 0
                self._rules.setdefault(provider, []).append((order, price.match_rule, name))
        for models in self._by_provider.values():
            for versions in models.values():
                versions.sort(key=lambda p: p.valid_from, reverse=True)
        for rules in self._rules.values():
            rules.sort(key=lambda rule: rule[0])
        self._cache: dict[tuple[str, str, date], Price | None] = {}

    def prices_model(self, *, provider: str, model: str) -> bool:
        """Whether a card prices this provider's model on some day: a hosted API served it.
        A model a serving pool also runs (self-hosted, costed from GPU bills) is told apart by
        its provider this way (`groq` has a card for Llama, `vllm` has none)."""
        return self.find(provider=provider, model=model, day=date.max) is not None

    def find(self, *, provider: str, model: str, day: date) -> Price | None:
        key = (provider, model, day)
        if key not in self._cache:
            self._cache[key] = self._find(provider=provider, model=model, day=day)
        return self._cache[key]

    def _find(self, *, provider: str, model: str, day: date) -> Price | None:
        name = normalize_provider(provider)
        models = self._by_provider.get(name)
        if not models:
            return None
        wanted = normalize_model(model)
        versions = (
            self._rule_match(name, model.strip(), models)
            or models.get(wanted)
            or self._rule_match(name, wanted, models)
            or _longest_prefix_match(wanted, models)
        )
        if not versions:
            return None
        return next((p for p in versions if p.valid_from <= day), None)

    def _rule_match(
        self, provider: str, model: str, models: dict[str, list[Price]]
    ) -> Sequence[Price]:
        for _, rule, name in self._rules.get(provider, ()):
            if rule_matches(rule, model):
                return models[name]
        return ()


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
