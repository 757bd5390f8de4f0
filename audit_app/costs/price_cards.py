"""Price cards: seed them from the shipped catalog (the data migration does the same once) and
sync them with the maintained price dataset (`prices_sync`, rules in `costs.price_sync`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from datetime import date
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from audit_app.costs.catalog import price_card_defaults, price_card_specs
from audit_app.costs.dataset import DatasetCard, load_dataset
from audit_app.costs.price_sync import KeptCard, PriceDifference, plan_sync
from audit_app.costs.pricing import (
    PRICE_FIELDS,
    Price,
    PriceBook,
    counting_threshold,
    tier_mismatch,
)
from audit_app.lib.results_cache import data_changed
from audit_app.models import DailyRollup, PriceCard

# `DatasetCard` price names -> PriceCard fields, in `pricing.PRICE_FIELDS` order.
CARD_FIELDS: dict[str, str] = {
    "input": "input_usd_per_mtok",
    "output": "output_usd_per_mtok",
    "cached_input": "cached_input_usd_per_mtok",
    "cache_write_input": "cache_write_input_usd_per_mtok",
    "batch_input": "batch_input_usd_per_mtok",
    "batch_output": "batch_output_usd_per_mtok",
    "long_context_threshold": "long_context_threshold_tokens",
    "long_context_input": "long_context_input_usd_per_mtok",
    "long_context_output": "long_context_output_usd_per_mtok",
    "long_context_cached_input": "long_context_cached_input_usd_per_mtok",
    "long_context_cache_write": "long_context_cache_write_usd_per_mtok",
    "per_request": "per_request_usd",
}
assert tuple(CARD_FIELDS) == PRICE_FIELDS


def price_book() -> PriceBook:
    """Every price card, indexed for lookup (`pricing.PriceBook`)."""
    return PriceBook(
        Price(
            card_id=card.pk,
            provider=card.provider,
            model=card.model,
            valid_from=card.valid_from,
            match_rule=card.match_rule,
            **{name: getattr(card, field) for name, field in CARD_FIELDS.items()},
        )
        for card in PriceCard.objects.all()
    )


def long_context_thresholds() -> Callable[[str, str, date], int]:
    """For one ingest: (provider, model, day) -> the input size above which a request's tokens
    are counted as long-context, its card's tier start (`pricing.counting_threshold`). The
    cards are read once and each lookup is cached (`PriceBook.find`)."""
    book = price_book()

    def threshold(provider: str, model: str, day: date) -> int:
        return counting_threshold(book.find(provider=provider, model=model, day=day))

    return threshold


@dataclass(frozen=True, kw_only=True)
class TierMismatch:
    """Unlogged traffic of a model whose long-context tokens were counted at another
    threshold than the tier of the card in force (ingested before the card or its tier):
    priced at the ordinary prices until re-ingested."""

    provider: str
    model: str
    counted_at: int  # pricing.MIXED_THRESHOLDS: rows of several thresholds added up
    tier_threshold: int
    first_day: date
    last_day: date


def tier_mismatches() -> list[TierMismatch]:
    """Every (provider, model, counted-at threshold) whose unlogged tokens miss the tier of the
    card in force on their day (`pricing.tier_mismatch`), with the days it covers."""
    book = price_book()
    found: dict[tuple[str, str, int, int], list[date]] = {}
    rows = (
        DailyRollup.objects.filter(unlogged_input_tokens__gt=0, pool="")
        .values_list("provider", "model", "day", "long_context_threshold_tokens")
        .distinct()
        .order_by()
    )
    for provider, model, day, counted_at in rows:
        price = book.find(provider=provider, model=model, day=day)
        if price is not None and tier_mismatch(price, counted_at):
            tier = price.long_context_threshold or 0
            found.setdefault((provider, model, counted_at, tier), []).append(day)
    return [
        TierMismatch(
            provider=provider,
            model=model,
            counted_at=counted_at,
            tier_threshold=tier,
            first_day=min(days),
            last_day=max(days),
        )
        for (provider, model, counted_at, tier), days in sorted(found.items())
    ]


@transaction.atomic
def price_cards_seed() -> int:
    """Create the catalog's cards that are missing; returns how many were created."""
    created = 0
    for spec in price_card_specs():
        _, was_created = PriceCard.objects.get_or_create(
            provider=spec.provider,
            model=spec.model,
            valid_from=spec.valid_from,
            defaults={**price_card_defaults(spec), "origin": PriceCard.Origin.CATALOG},
        )
        created += was_created
    return created


@dataclass(frozen=True, kw_only=True)
class SyncReport:
    """What a price sync added (or, on a dry run, would add)."""

    dataset: str
    dry_run: bool
    added: list[DatasetCard]
    new_models: int
    new_prices: int
    completed_cards: int
    aliases_added: int
    local_overrides: list[tuple[str, str]]
    differences: list[PriceDifference]
    tier_mismatches: list[TierMismatch]

    @property
    def changed(self) -> bool:
        return bool(self.added or self.completed_cards or self.aliases_added)

    def as_dict(self) -> dict[str, object]:
        return {
            "dataset": self.dataset,
            "dry_run": self.dry_run,
            "added_cards": len(self.added),
            "new_models": self.new_models,
            "new_prices": self.new_prices,
            "completed_cards": self.completed_cards,
            "aliases_added": self.aliases_added,
            "added": [_card_dict(card) for card in self.added],
            "local_overrides_kept": [
                {"provider": provider, "model": model} for provider, model in self.local_overrides
            ],
            "kept_prices_differing_from_dataset": [
                {
                    **asdict(d),
                    "kept_valid_from": str(d.kept_valid_from),
                    "dataset_valid_from": str(d.dataset_valid_from),
                }
                for d in self.differences
            ],
            "long_context_counted_at_another_threshold": [
                {
                    **asdict(m),
                    "first_day": m.first_day.isoformat(),
                    "last_day": m.last_day.isoformat(),
                }
                for m in self.tier_mismatches
            ],
        }


def _card_dict(card: DatasetCard) -> dict[str, object]:
    out: dict[str, object] = {
        "provider": card.provider,
        "model": card.model,
        "valid_from": card.valid_from.isoformat(),
    }
    for name in PRICE_FIELDS:
        value = getattr(card, name)
        if value is not None:
            out[name] = value if isinstance(value, int) else str(value)
    return out


def prices_sync(*, path: Path | None = None, dry_run: bool = False) -> SyncReport:
    """Add the dataset's new models and new prices as new cards (`costs.price_sync`).

    Raises `costs.dataset.DatasetError` (nothing written) when the file is refused."""
    dataset = load_dataset(path)
    kept = [
        KeptCard(
            id=card.pk,
            provider=card.provider,
            model=card.model,
            valid_from=card.valid_from,
            origin=card.origin,
            has_rule=bool(card.match_rule),
            prices=tuple(getattr(card, CARD_FIELDS[name]) for name in PRICE_FIELDS),
        )
        for card in PriceCard.objects.all()
    ]
    plan = plan_sync(kept, dataset.cards)
    report = SyncReport(
        dataset=dataset.name,
        dry_run=dry_run,
        added=plan.added,
        new_models=plan.new_models,
        new_prices=plan.new_prices,
        completed_cards=len(plan.completions),
        aliases_added=len(plan.rules_for),
        local_overrides=plan.local_overrides,
        differences=plan.differences,
        tier_mismatches=[],
    )
    if not dry_run and report.changed:
        _apply(
            report,
            completions=plan.completions,
            rules_for=plan.rules_for,
            today=timezone.now().date(),
        )
    # With the cards in force after the sync (before it, on a dry run).
    return replace(report, tier_mismatches=tier_mismatches())


def prices_sync_first_start() -> SyncReport | None:
    """The sync `make run` runs on a database no sync has touched yet; None when one has."""
    if PriceCard.objects.filter(origin=PriceCard.Origin.DATASET).exists():
        return None
    return prices_sync()


@transaction.atomic
def _apply(
    report: SyncReport,
    *,
    completions: dict[int, dict[str, object]],
    rules_for: Mapping[int, Mapping[str, object]],
    today: date,
) -> None:
    PriceCard.objects.bulk_create(
        [
            PriceCard(
                provider=card.provider,
                model=card.model[:200],
                valid_from=card.valid_from,
                origin=PriceCard.Origin.DATASET,
                dataset_model=card.model[:200],
                match_rule=card.match_rule,
                source=report.dataset,
                source_date=today.isoformat(),
                **{CARD_FIELDS[name]: getattr(card, name) for name in PRICE_FIELDS},
            )
            for card in report.added
        ],
        batch_size=500,
    )
    for card_id, filled in completions.items():
        PriceCard.objects.filter(pk=card_id).update(
            **{CARD_FIELDS[name]: value for name, value in filled.items()}
        )
    for card_id, rule in rules_for.items():
        PriceCard.objects.filter(pk=card_id).update(match_rule=rule)
    data_changed()  # bulk_create and update send no signals: record the change here
