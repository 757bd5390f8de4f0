"""Recommendations: price each asynchronous workload's last 30 days on cheaper targets.

Targets (DESIGN §3.6): the batch tier of the same API model; cheaper providers of the same open
model; dedicated throughput hardware (instance $/hour x assumed tokens/s, through the traffic
cost model in `audit_app.costs.costing`, scale-to-zero since nobody waits on async work).

What a workload costs now comes from the one read model (`reporting.spend`: API spend plus its
share of GPU pool bills), scaled from the window to a month. Options saving less than
`RECOMMENDATION_MIN_SAVINGS_USD` a month are not proposed; of the rest, the best leads
(rank 1) and up to two alternatives are kept under it (ranks 2, 3), never counted again in the
savings total. Throughput figures are assumptions until a benchmark gate confirms them, and
every recommendation says so.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from typing import TypedDict, cast

from django.conf import settings
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from audit_app.access.audit import audit_record
from audit_app.access.permissions import Actor, Role, has_role
from audit_app.costs.billing import pool_reports
from audit_app.costs.costing import Deployment, ScalingMode, monthly_cost
from audit_app.costs.pricing import normalize_model, normalize_provider
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
from audit_app.reporting.filters import SpendFilters
from audit_app.reporting.selectors import (
    daily_rollups,
    hourly_output_tokens,
    price_book,
    rollups_in_range,
)
from audit_app.reporting.spend import SpendLines, SpendRow, spend_lines
from audit_app.workloads.services import (
    CHECKPOINT_EVERY,
    analysis_window,
    effective_class,
)

WINDOW_DAYS = 30
MONTH_HOURS = 730
COLD_START_SECONDS = 600.0
MAX_TARGETS = 3
CENT = Decimal("0.01")
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*b\b")


class DecisionRefused(DomainError):
    """A decision the service will not record; a missing note is the usual bad input."""

    field = "note"


@dataclass(frozen=True, kw_only=True)
class Option:
    kind: str
    target: str
    projected_monthly: Decimal
    assumptions: list[str]
    confidence: str


def model_class(model: str) -> str | None:
    """'70b' for Llama-3.3-70B-Instruct, '8b' for an 8B model; None when no size is named."""
    match = _SIZE.search(model.lower().replace("-", " "))
    if not match:
        return None
    size = float(match.group(1))
    return "8b" if size <= 13 else "70b" if size <= 90 else None


def _month(amount: Decimal, hours: int) -> Decimal:
    return amount * Decimal(MONTH_HOURS) / Decimal(hours)


def _money(amount: Decimal) -> Decimal:
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


class _Usage(TypedDict):
    """One provider/model's traffic of a workload over the window."""

    provider: str
    model: str
    day: date
    spend: Decimal  # what a batch tier discounts
    requests: int
    input_tokens: int
    output_tokens: int
    batch_share: float


def _batch_option(usage: _Usage, hours: int) -> Option | None:
    if usage["batch_share"] >= 0.99 or usage["spend"] <= 0:
        return None
    price = price_book().find(provider=usage["provider"], model=usage["model"], day=usage["day"])
    if price is None or not price.batch_input or not price.input:
        return None
    discount = 1 - price.batch_input / price.input
    non_batch = usage["spend"] * Decimal(str(1 - usage["batch_share"]))
    projected = usage["spend"] - non_batch * discount
    return Option(
        kind=Recommendation.TargetKind.BATCH_API,
        target=f"{usage['provider']} batch API, {usage['model']}",
        projected_monthly=_month(projected, hours),
        assumptions=[
            f"Batch price {price.batch_input}/{price.batch_output or price.output} $ per 1M "
            f"input/output tokens vs {price.input}/{price.output} from the price card "
            f"({price.model}, valid from {price.valid_from}).",
            f"{usage['batch_share']:.0%} of its requests already use the batch API.",
            "Batch results arrive within 24 hours; the workload is asynchronous.",
        ],
        confidence="High: a published price; only the turnaround changes.",
    )


def _provider_options(usage: _Usage, hours: int) -> list[Option]:
    family = normalize_model(usage["model"]).split("/")[-1].removesuffix("-instruct")
    if not model_class(family):
        return []  # closed models have no other provider
    options = []
    for row in HardwareTarget.objects.filter(
        kind="api", usd_per_million_input_tokens__isnull=False
    ):
        name = normalize_model(row.name).split("/")[-1]
        if family.replace(".", "-")[:14] not in name.replace(".", "-"):
            continue
        if normalize_provider(row.provider) == normalize_provider(usage["provider"]):
            continue
        input_price = cast(Decimal, row.usd_per_million_input_tokens)  # the filter: not null
        cost = (
            Decimal(usage["input_tokens"]) * input_price
            + Decimal(usage["output_tokens"]) * (row.usd_per_million_output_tokens or 0)
        ) / Decimal(1_000_000)
        options.append(
            Option(
                kind=Recommendation.TargetKind.CHEAPER_PROVIDER,
                target=f"{row.provider} {row.name}",
                projected_monthly=_month(cost, hours),
                assumptions=[
                    f"{row.provider} lists {row.name} at ${row.usd_per_million_input_tokens} "
                    f"input / ${row.usd_per_million_output_tokens} output per 1M tokens "
                    f"(source: {row.source}, {row.source_date}).",
                    f"Same token volume: {usage['input_tokens']:,} input and "
                    f"{usage['output_tokens']:,} output tokens in {WINDOW_DAYS} days.",
                ],
                confidence="Medium: a published price for the same open model; check quality and "
                "quantisation with an evaluation on that provider (a gate verifies only "
                "dedicated hardware).",
            )
        )
    return options


def _hardware_options(model: str, demand: list[int]) -> list[Option]:
    size = model_class(model)
    if size is None or not any(demand):
        return []
    options = []
    for assumption in ThroughputAssumption.objects.filter(model_class=size):
        instance = HardwareTarget.objects.filter(
            kind="instance", name=assumption.instance, usd_per_hour__isnull=False
        ).first()
        if instance is None:
            continue
        accelerators = instance.accelerator_count or 1
        deployment = Deployment(
            tokens_per_second=assumption.tokens_per_second,
            accelerators_per_replica=accelerators,
            # The filter above leaves only instances with an hourly price.
            usd_per_accelerator_hour=cast(Decimal, instance.usd_per_hour) / accelerators,
            cold_start_seconds=COLD_START_SECONDS,
        )
        projected = monthly_cost(
            deployment=deployment, demand_per_hour=demand, mode=ScalingMode.SCALE_TO_ZERO
        )
        options.append(
            Option(
                kind=Recommendation.TargetKind.DEDICATED_HARDWARE,
                target=f"{instance.name} ({instance.accelerator}), scale to zero",
                projected_monthly=projected,
                assumptions=[
                    f"{assumption.tokens_per_second:,.0f} output tokens/s per {instance.name} "
                    f"for a {size.upper()} model: {assumption.source} ({assumption.source_date}; "
                    f"{assumption.notes})",
                    f"${instance.usd_per_hour}/hour on demand ({instance.source}, "
                    f"{instance.source_date}).",
                    f"Replicas follow the last {WINDOW_DAYS} days' hourly output tokens, down to "
                    f"zero when idle, with a {COLD_START_SECONDS:.0f} s cold start per replica "
                    "added.",
                ],
                confidence="Low until a benchmark gate measures this model on this hardware: "
                "the throughput is an assumption.",
            )
        )
    return options


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
    entries: dict[tuple[str, str], SpendRow] | None = None,
) -> tuple[Decimal, list[Option]]:
    """(current monthly cost, the targets it could move to); ``entries`` are the workload's
    spend rows per (provider, model) over the window (read here when not given)."""
    hours = ((end - start).days + 1) * 24
    if entries is None:
        lines = spend_lines(SpendFilters(start=start, end=end, workload=workload.name))
        entries = workload_entries(lines).get(workload.name, {})
    current = _month(sum((row.spend_usd for row in entries.values()), Decimal(0)), hours)
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
        usage: _Usage = {
            "provider": provider,
            "model": model,
            "day": end,
            "spend": row.api_spend_usd,  # what a batch tier discounts
            "requests": row.requests,
            "input_tokens": row.input_tokens,
            "output_tokens": row.output_tokens,
            "batch_share": batch_requests[(provider, model)] / row.requests
            if row.requests
            else 0.0,
        }
        # This provider/model's traffic moves; the rest of the workload stays where it is.
        others = current - _month(row.spend_usd, hours)
        demand = hourly_output_tokens(
            queryset=queryset.filter(provider=provider, model=model), start=start, end=end
        )
        candidates = [
            _batch_option(usage, hours),
            *_provider_options(usage, hours),
            *_hardware_options(model, demand),
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
    now = timezone.now()
    kept: list[Recommendation] = []
    workloads = Workload.objects.select_related("classification").prefetch_related("overrides")
    for index, workload in enumerate(workloads):
        if checkpoint is not None and index % CHECKPOINT_EVERY == 0:
            checkpoint()
        if effective_class(workload) != WorkloadClass.ASYNC:
            continue
        mine = entries.get(workload.name, {})
        current, options = workload_options(workload, start=start, end=end, entries=mine)
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
                "assumptions": option.assumptions,
                "confidence": option.confidence[:300],
                "period_start": start,
                "period_end": end,
                "rank": rank,
                "source_upload_ids": sources,
            }
            recommendation, created = Recommendation.objects.get_or_create(
                workload=workload,
                target_kind=option.kind,
                target=option.target[:300],
                defaults={**values, "computed_at": now, "data_version": version},
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
            kept.append(recommendation)
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
