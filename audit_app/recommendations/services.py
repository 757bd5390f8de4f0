"""Recommendations: price each asynchronous workload's last 30 days on cheaper targets.

Targets (DESIGN §3.6): the batch tier of the same API model; cheaper providers of the same open
model; dedicated throughput hardware. The option math is `audit_app.recommendations.options`
(pure); this module reads what it prices against (price cards, the catalog's API listings and
instances, the throughput assumptions) and each workload's traffic, and keeps the results.

What a workload costs now comes from the one read model (`reporting.spend`: API spend plus its
share of GPU pool bills), scaled from the window to a month. Options saving less than
`RECOMMENDATION_MIN_SAVINGS_USD` a month are not proposed; of the rest, the best leads
(rank 1) and up to two alternatives are kept under it (ranks 2, 3), never counted again in the
savings total. Throughput figures are assumptions until a benchmark gate confirms them, and
every recommendation says so.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, cast

from django.conf import settings
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from audit_app.access.audit import audit_record
from audit_app.access.permissions import Actor, Role, has_role
from audit_app.costs.billing import pool_reports
from audit_app.costs.price_cards import price_book
from audit_app.costs.pricing import PriceBook
from audit_app.lib.errors import DomainError, ErrorKind
from audit_app.lib.results_cache import current_version
from audit_app.models import (
    AuditEvent,
    HardwareTarget,
    Recommendation,
    RecommendationEvent,
    RecommendationMoveRefused,
    ThroughputAssumption,
    Workload,
    WorkloadClass,
)
from audit_app.recommendations.options import (
    ApiListing,
    HardwareOffer,
    Instance,
    Option,
    Throughput,
    Usage,
    batch_option,
    hardware_options,
    monthly,
    provider_options,
)
from audit_app.reporting.filters import SpendFilters
from audit_app.reporting.selectors import (
    daily_rollups,
    hourly_output_tokens,
    rollups_in_range,
)
from audit_app.reporting.spend import SpendLines, SpendRow, spend_lines
from audit_app.workloads.services import (
    CHECKPOINT_EVERY,
    analysis_window,
    effective_class,
)

MAX_TARGETS = 3
CENT = Decimal("0.01")


class DecisionRefused(DomainError):
    """A decision the service will not record; a missing note is the usual bad input."""

    field = "note"


def _money(amount: Decimal) -> Decimal:
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


@dataclass(frozen=True, kw_only=True)
class OptionTargets:
    """What the option builders price against: the price cards, the catalog's API listings
    and its instances with their throughput assumptions. Read once per refresh."""

    prices: PriceBook
    listings: tuple[ApiListing, ...]
    offers: tuple[HardwareOffer, ...]
    # Every catalogued instance by name, with or without a throughput assumption.
    instances: dict[str, Instance] = field(default_factory=dict)


def option_targets() -> OptionTargets:
    listings = tuple(
        ApiListing(
            provider=row.provider,
            name=row.name,
            # The filter below leaves only rows with an input price.
            usd_per_million_input_tokens=cast(Decimal, row.usd_per_million_input_tokens),
            usd_per_million_output_tokens=row.usd_per_million_output_tokens,
            source=row.source,
            source_date=row.source_date,
        )
        for row in HardwareTarget.objects.filter(
            kind="api", usd_per_million_input_tokens__isnull=False
        )
    )
    instances: dict[str, Instance] = {}
    for row in HardwareTarget.objects.filter(kind="instance", usd_per_hour__isnull=False):
        # Names can repeat across providers: the first in the catalog's order serves.
        instances.setdefault(
            row.name,
            Instance(
                name=row.name,
                accelerator=row.accelerator,
                accelerator_count=row.accelerator_count,
                usd_per_hour=cast(Decimal, row.usd_per_hour),  # the filter: not null
                source=row.source,
                source_date=row.source_date,
            ),
        )
    offers = tuple(
        HardwareOffer(
            instance=instances[assumption.instance],
            throughput=Throughput(
                model_class=assumption.model_class,
                tokens_per_second=assumption.tokens_per_second,
                source=assumption.source,
                source_date=assumption.source_date,
                notes=assumption.notes,
            ),
        )
        for assumption in ThroughputAssumption.objects.order_by("pk")
        if assumption.instance in instances
    )
    return OptionTargets(prices=price_book(), listings=listings, offers=offers, instances=instances)


def workload_entries(lines: SpendLines) -> dict[str, dict[tuple[str, str], SpendRow]]:
    """Workload -> (provider, model) -> its spend row, from the read model's lines."""
    out: dict[str, dict[tuple[str, str], SpendRow]] = defaultdict(dict)
    for (name, provider, model), row in lines.grouped("workload", "provider", "model").items():
        out[name][(provider, model)] = row
    return out


def workload_options(
    workload: Workload,
    *,
    start: date,
    end: date,
    targets: OptionTargets,
    entries: dict[tuple[str, str], SpendRow] | None = None,
) -> tuple[Decimal, list[Option]]:
    """(current monthly cost, the targets it could move to); ``entries`` are the workload's
    spend rows per (provider, model) over the window (read here when not given)."""
    hours = ((end - start).days + 1) * 24
    if entries is None:
        lines = spend_lines(SpendFilters(start=start, end=end, workload=workload.name))
        entries = workload_entries(lines).get(workload.name, {})
    current = monthly(sum((row.spend_usd for row in entries.values()), Decimal(0)), hours)
    queryset = rollups_in_range(start=start, end=end, workload=workload.name)
    batch_requests: dict[tuple[str, str], int] = defaultdict(int)
    for batch_row in (
        queryset.filter(batch_api=True)
        .values("provider", "model")
        .annotate(n=Sum("requests"))
        .order_by()
    ):
        batch_requests[(batch_row["provider"], batch_row["model"])] += batch_row["n"]
    options: list[Option] = []
    for (provider, model), row in sorted(entries.items()):
        usage = Usage(
            provider=provider,
            model=model,
            spend=row.api_spend_usd,  # what a batch tier discounts
            input_tokens=row.input_tokens,
            output_tokens=row.output_tokens,
            batch_share=batch_requests[(provider, model)] / row.requests if row.requests else 0.0,
        )
        # This provider/model's traffic moves; the rest of the workload stays where it is.
        others = current - monthly(row.spend_usd, hours)
        demand = hourly_output_tokens(
            queryset=queryset.filter(provider=provider, model=model), start=start, end=end
        )
        price = targets.prices.find(provider=provider, model=model, day=end)
        candidates = [
            batch_option(usage, hours=hours, price=price),
            *provider_options(usage, hours=hours, listings=targets.listings),
            *hardware_options(model, demand=demand, offers=targets.offers),
        ]
        for option in candidates:
            if option is not None:
                options.append(replace(option, projected_monthly=option.projected_monthly + others))
    return current, options


def _source_uploads(workload: Workload, *, start: date, end: date, gpu: bool) -> list[int]:
    """The succeeded uploads a workload's figures were computed from: its token logs in the
    window, and the bills of the pools it ran on."""
    ids = set(
        daily_rollups(start=start, end=end, workload=workload.name)
        .values_list("upload_id", flat=True)
        .distinct()
        .order_by()
    )
    if gpu:
        for report in pool_reports(start=start, end=end):
            if workload.name in report.by_workload:
                ids.update(report.upload_ids)
    return sorted(ids)


def recommendation_upsert(
    *, lookup: dict[str, Any], values: dict[str, Any], now: datetime, version: int
) -> Recommendation:
    """The recommendation ``lookup`` finds, created with ``values`` (and its first history row)
    or, while still proposed, updated to them when they changed; a decided one keeps its
    figures."""
    recommendation, created = Recommendation.objects.get_or_create(
        **lookup, defaults={**values, "computed_at": now, "data_version": version}
    )
    if created:
        RecommendationEvent.objects.create(
            recommendation=recommendation,
            to_status=recommendation.status,
            note="Proposed by the recommender.",
        )
    elif recommendation.status == Recommendation.Status.PROPOSED and any(
        getattr(recommendation, name) != value for name, value in values.items()
    ):
        for name, value in values.items():
            setattr(recommendation, name, value)
        recommendation.computed_at = now
        recommendation.data_version = version
        recommendation.save()
    return recommendation


def min_savings() -> Decimal:
    return Decimal(str(settings.RECOMMENDATION_MIN_SAVINGS_USD))


@transaction.atomic
def recommendations_refresh(
    *,
    today: date | None = None,
    data_version: int | None = None,
    checkpoint: Callable[[], None] | None = None,
) -> list[Recommendation]:
    """Re-price every asynchronous workload; keeps decided recommendations and their history.

    Writes only what changed, so running it twice on the same data changes nothing.
    ``checkpoint`` is called every CHECKPOINT_EVERY workloads (see `services.derived`).
    """
    # The last 30 days with data (fewer when less was uploaded), scaled to a month.
    window = analysis_window(today)
    if window is None:
        Recommendation.objects.filter(status=Recommendation.Status.PROPOSED).delete()
        return []
    start, end = window
    version = data_version if data_version is not None else current_version().version
    floor = min_savings()
    entries = workload_entries(spend_lines(SpendFilters(start=start, end=end)))
    targets = option_targets()
    now = timezone.now()
    kept: list[Recommendation] = []
    workloads = Workload.objects.select_related("classification").prefetch_related("overrides")
    for index, workload in enumerate(workloads):
        if checkpoint is not None and index % CHECKPOINT_EVERY == 0:
            checkpoint()
        if effective_class(workload) != WorkloadClass.ASYNC:
            continue
        mine = entries.get(workload.name, {})
        current, options = workload_options(
            workload, start=start, end=end, targets=targets, entries=mine
        )
        best = sorted(
            (o for o in options if current - o.projected_monthly >= floor),
            key=lambda o: (o.projected_monthly, o.target),
        )[:MAX_TARGETS]
        if not best:
            continue
        gpu = any(row.gpu_cost_usd for row in mine.values())
        sources = _source_uploads(workload, start=start, end=end, gpu=gpu)
        for rank, option in enumerate(best, start=1):
            values = {
                "current_monthly_usd": _money(current),
                "projected_monthly_usd": _money(option.projected_monthly),
                "savings_monthly_usd": _money(current - option.projected_monthly),
                "assumptions": list(option.assumptions),
                "confidence": option.confidence[:300],
                "period_start": start,
                "period_end": end,
                "rank": rank,
                "source_upload_ids": sources,
            }
            kept.append(
                recommendation_upsert(
                    lookup={
                        "workload": workload,
                        "target_kind": option.kind,
                        "target": option.target[:300],
                    },
                    values=values,
                    now=now,
                    version=version,
                )
            )
    # Serving pools' own recommendations (issue 20) refresh with the workloads'.
    from audit_app.recommendations.pools import pool_recommendations_write

    kept.extend(
        pool_recommendations_write(targets=targets, start=start, end=end, now=now, version=version)
    )
    # Undecided proposals that no longer hold (the workload changed class, prices moved) go.
    Recommendation.objects.filter(status=Recommendation.Status.PROPOSED).exclude(
        pk__in=[r.pk for r in kept]
    ).delete()
    return kept


PAST_TENSE = {"approve": "approved a pilot of", "reject": "rejected"}
DECISIONS = {
    "approve": Recommendation.Status.PILOT_APPROVED,
    "reject": Recommendation.Status.REJECTED,
}


@transaction.atomic
def recommendation_decide(
    *, recommendation: Recommendation, user: Actor, decision: str, note: str = ""
) -> Recommendation:
    """A manager approves a pilot or rejects (with a note). Others are refused (forbidden)."""
    if not has_role(user, [Role.MANAGER]):
        raise DecisionRefused(
            "Only managers may approve or reject recommendations.", kind=ErrorKind.FORBIDDEN
        )
    if decision not in DECISIONS:
        raise DecisionRefused(
            f"decision must be approve or reject, not {decision!r}.", field="decision"
        )
    if decision == "reject" and not note.strip():
        raise DecisionRefused("A rejection needs a note saying why.")
    locked = Recommendation.objects.select_for_update().get(pk=recommendation.pk)
    try:
        locked.move_to(DECISIONS[decision], user=user, note=note)
    except RecommendationMoveRefused as exc:
        raise DecisionRefused(str(exc), kind=exc.kind) from None
    audit_record(
        actor=user,
        action=AuditEvent.Action.RECOMMENDATION_DECISION,
        obj=locked,
        summary=f"{PAST_TENSE[decision]} recommendation {locked.pk} ({locked.target})",
        details={"decision": decision, "note": note},
    )
    return locked
