"""The maintained price dataset (`genai-prices`, pinned in pyproject.toml) read as price cards.

Pure module (no Django).

Its rules in full: `docs/methods.md`, section "The maintained price dataset".
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from importlib.metadata import version
from pathlib import Path
from typing import Any

from audit_app.costs.catalog import SEED_VALID_FROM
from audit_app.costs.pricing import Price
from audit_app.costs.providers import normalize_provider

DATASET_PACKAGE = "genai-prices"
MILLION_PER_THOUSAND = Decimal(1000)

# The dataset's provider ids in the product's provider names (`normalize_provider` keeps the
# rest as they are: groq, openai, anthropic, mistral, deepseek, cohere, ...).
PROVIDER_NAMES: dict[str, str] = {
    "google": "gcp-vertex",
    "aws": "aws-bedrock",
    "azure": "azure-openai",
    "x-ai": "xai",
}

# (card field, dataset price key, fallback price key): the prices a card copies.
_PRICE_KEYS = (
    ("input", "input_mtok", None),
    ("output", "output_mtok", None),
    ("cached_input", "cache_read_mtok", None),
    ("cache_write_input", "cache_write_mtok", "cache_write_5m_mtok"),
)


class DatasetError(ValueError):
    """The dataset file is refused whole; the message says why."""


# One price of one dataset model from one date, in the product's provider name and the
# dataset's model id: a `Price` not stored as a card yet.
DatasetCard = Price


@dataclass(frozen=True, kw_only=True)
class Dataset:
    name: str  # "genai-prices 0.2.3" or the file's name
    cards: list[DatasetCard]


def load_dataset(path: Path | None = None) -> Dataset:
    """The packaged dataset, or the JSON file at ``path``; raises `DatasetError`."""
    from genai_prices import types

    if path is None:
        from genai_prices.data import providers

        name = f"{DATASET_PACKAGE} {version(DATASET_PACKAGE)}"
    else:
        name = f"{path.name} ({DATASET_PACKAGE} {version(DATASET_PACKAGE)} schema)"
        try:
            raw = json.loads(path.read_bytes())
        except (OSError, ValueError) as error:
            raise DatasetError(f"{path.name} is not readable JSON: {error}") from error
        if not isinstance(raw, list):
            kind = type(raw).__name__
            raise DatasetError(f"{path.name} must hold a list of providers, not a {kind}")
        try:
            # The package reads its own published data.json this way (UpdatePrices.fetch).
            providers = types._providers_from_raw(raw)  # noqa: SLF001
        except Exception as error:  # pydantic's ValidationError, or a dataclass check
            reason = str(error)[:600]
            raise DatasetError(
                f"{path.name} does not match the price dataset's schema: {reason}"
            ) from error
    cards = [card for provider in providers for card in _provider_cards(provider, types)]
    return Dataset(name=name, cards=cards)


def _provider_cards(provider: Any, types: Any) -> Iterator[DatasetCard]:
    name = PROVIDER_NAMES.get(provider.id, normalize_provider(provider.id))
    for model in provider.models:
        where = f"provider {provider.id!r}, model {model.id!r}"
        history = (
            [(None, model.prices)]
            if isinstance(model.prices, types.ModelPrice)
            else [(c.constraint, c.prices) for c in model.prices]
        )
        for _, prices in history:
            _refuse_negative(prices, where=where, types=types)
        for variant in model.price_variants or ():
            _refuse_negative(variant.prices, where=f"{where} ({variant.when})", types=types)
        rule = _rule_json(model.match)
        for constraint, prices in _dated(history, types):
            valid_from = SEED_VALID_FROM if constraint is None else constraint.start_date
            card = _card(prices, types=types, provider=name, model=model.id, valid_from=valid_from)
            if card is not None:
                batch_input, batch_output = _batch_prices(model, valid_from=valid_from, types=types)
                yield dataclasses.replace(
                    card, match_rule=rule, batch_input=batch_input, batch_output=batch_output
                )


def _dated(history: list[tuple[Any, Any]], types: Any) -> list[tuple[Any, Any]]:
    """The price history without hours: a card has none, so of the time-of-day prices
    (DeepSeek's peak and off-peak) the one charged for the most hours of the day stands for
    the undated price."""
    daily = [(c, p) for c, p in history if isinstance(c, types.TimeOfDateConstraint)]
    if not daily:
        return history
    undated_hours = 24.0 - sum(_hours(c) for c, _ in daily)
    longest, prices = max(daily, key=lambda item: _hours(item[0]))
    kept = [(c, p) for c, p in history if isinstance(c, types.StartDateConstraint)]
    if _hours(longest) > undated_hours:
        return [(None, prices), *kept]
    return [(c, p) for c, p in history if c is None] + kept


def _hours(constraint: Any) -> float:
    start = constraint.start_time.hour + constraint.start_time.minute / 60
    end = constraint.end_time.hour + constraint.end_time.minute / 60
    return (end - start) % 24


def _refuse_negative(prices: Any, *, where: str, types: Any) -> None:
    for key, value in vars(prices).items():
        if value is None or key.startswith("_"):
            continue
        values = (
            [value.base, *(tier.price for tier in value.tiers)]
            if isinstance(value, types.TieredPrices)
            else [value]
        )
        for amount in values:
            if not isinstance(amount, Decimal) or not amount.is_finite() or amount < 0:
                raise DatasetError(f"{where}: price {key} is {amount}, not a price (>= 0)")


# Cards keep prices to 6 decimal places; the dataset's are rounded the same way so a sync
# compares like with like.
_PLACES = Decimal("0.000001")


def _amount(value: Decimal | None) -> Decimal | None:
    return None if value is None else value.quantize(_PLACES)


def _base(value: Any, types: Any) -> Decimal | None:
    return _amount(value.base if isinstance(value, types.TieredPrices) else value)


def _card(
    prices: Any, *, types: Any, provider: str, model: str, valid_from: date
) -> DatasetCard | None:
    values: dict[str, Any] = {}
    long: dict[str, Decimal] = {}
    threshold: int | None = None
    for field, key, fallback in _PRICE_KEYS:
        value = getattr(prices, key, None)
        if value is None and fallback:
            value = getattr(prices, fallback, None)
        values[field] = _base(value, types)
        if isinstance(value, types.TieredPrices) and value.tiers:
            tier = value.tiers[0]
            threshold = tier.start if threshold is None else min(threshold, tier.start)
            long[f"long_context_{field}"] = tier.price.quantize(_PLACES)
    if values["input"] is None and values["output"] is None:
        return None
    per_thousand = getattr(prices, "requests_kcount", None)
    return DatasetCard(
        provider=provider,
        model=model,
        valid_from=valid_from,
        input=values["input"] or Decimal(0),
        output=values["output"] or Decimal(0),
        cached_input=values["cached_input"],
        cache_write_input=values["cache_write_input"],
        long_context_threshold=threshold,
        long_context_input=long.get("long_context_input"),
        long_context_output=long.get("long_context_output"),
        long_context_cached_input=long.get("long_context_cached_input"),
        long_context_cache_write=long.get("long_context_cache_write_input"),
        per_request=None if per_thousand is None else _amount(per_thousand / MILLION_PER_THOUSAND),
    )


def _batch_prices(
    model: Any, *, valid_from: date, types: Any
) -> tuple[Decimal | None, Decimal | None]:
    """The batch (input, output) prices in effect on ``valid_from`` (the last batch variant
    that applies)."""
    found: tuple[Decimal | None, Decimal | None] = (None, None)
    for variant in model.price_variants or ():
        if variant.when != {"processing": "batch"}:
            continue
        constraint = variant.constraint
        if constraint is not None and (
            not isinstance(constraint, types.StartDateConstraint)
            or constraint.start_date > valid_from
        ):
            continue
        found = (
            _base(getattr(variant.prices, "input_mtok", None), types),
            _base(getattr(variant.prices, "output_mtok", None), types),
        )
    return found


def _rule_json(clause: Any) -> dict[str, object]:
    """A dataset match clause as the JSON the dataset writes (`pricing.rule_matches` reads)."""
    for name, attribute in (("or", "or_"), ("and", "and_")):
        if hasattr(clause, attribute):
            return {name: [_rule_json(c) for c in getattr(clause, attribute)]}
    ((key, value),) = dataclasses.asdict(clause).items()
    return {key: value}
