"""Price cards: seed them from the shipped catalog (the data migration does the same once) and
sync them with the maintained price dataset (`prices_sync`, rules in `costs.price_sync`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from audit_app.costs.catalog import price_card_defaults, price_card_specs
from audit_app.costs.dataset import PRICE_FIELDS, DatasetCard, load_dataset
from audit_app.costs.price_sync import KeptCard, PriceDifference, plan_sync
from audit_app.models import PriceCard

# `DatasetCard` price names -> PriceCard fields, in `dataset.PRICE_FIELDS` order.
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
    tiers_not_applied: list[tuple[str, str, int]]

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
            "long_context_tiers_not_applied": [
                {"provider": p, "model": m, "threshold_tokens": t}
                for p, m, t in self.tiers_not_applied
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
        tiers_not_applied=plan.tiers_not_applied,
    )
    if not dry_run and report.changed:
        _apply(
            report,
            completions=plan.completions,
            rules_for=plan.rules_for,
            today=timezone.now().date(),
        )
    return report


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
    # bulk_create and update send no signals: tell cached and derived results here.
    from audit_app.lib.results_cache import data_changed
    from audit_app.reporting.derived import derived_refresh_request

    data_changed()
    derived_refresh_request()
