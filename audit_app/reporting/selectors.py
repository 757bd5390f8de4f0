"""Selectors: every non-trivial read the audit app makes. They return frozen dataclasses."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Count, Max, Min, Prefetch, QuerySet, Sum
from django.db.models.functions import ExtractHour, ExtractIsoWeekDay, TruncDate
from django.utils import timezone

from audit_app.costs.rollups import Rollups, daily_rollups
from audit_app.ingestion.histograms import LatencyHistogram
from audit_app.lib.results_cache import cached, query_key
from audit_app.models import (
    HourlyRollup,
    PossibleRestatement,
    Recommendation,
    ServingPool,
    Upload,
    Workload,
)


@dataclass(frozen=True, kw_only=True)
class UploadsPerDay:
    days: list[date]
    counts_by_kind: dict[str, list[int]]  # kind label -> one count per day, aligned with days
    total: int


def uploads_per_day(*, days: int = 30, today: date | None = None) -> UploadsPerDay:
    """Uploads created on each of the last ``days`` days (UTC), per kind, zeros included."""
    last_day = today or timezone.now().date()
    first_day = last_day - timedelta(days=days - 1)
    day_list = [first_day + timedelta(days=i) for i in range(days)]
    rows = (
        Upload.objects.filter(created_at__date__gte=first_day, created_at__date__lte=last_day)
        .annotate(day=TruncDate("created_at"))
        .values("day", "kind")
        .annotate(n=Count("id"))
    )
    by_kind: dict[str, dict[date, int]] = defaultdict(dict)
    for row in rows:
        by_kind[row["kind"]][row["day"]] = row["n"]
    labels = dict(Upload.Kind.choices)
    counts = {
        labels[kind]: [by_kind[kind].get(day, 0) for day in day_list]
        for kind in Upload.Kind.values
        if kind in by_kind
    }
    if not counts:
        # An empty database still draws a chart: a flat line of zeros over the window.
        counts = {"Uploads": [0] * days}
    total = sum(sum(values) for values in counts.values())
    return UploadsPerDay(days=day_list, counts_by_kind=counts, total=total)


def upload_list(*, limit: int = 200) -> list[Upload]:
    """The newest uploads, each with the billing uploads it may restate (`may_restate`) or be
    restated by (`may_be_restated_by`) while nobody decided (`PossibleRestatement`)."""
    undecided = PossibleRestatement.objects.filter(decision=PossibleRestatement.Decision.OPEN)
    return list(
        Upload.objects.select_related("uploaded_by", "billing_source").prefetch_related(
            Prefetch("possible_restatements", queryset=undecided, to_attr="may_restate"),
            Prefetch("possibly_restated", queryset=undecided, to_attr="may_be_restated_by"),
        )[:limit]
    )


# --- Spend ---------------------------------------------------------------------------------
# Money is read through `audit_app.reporting.spend` (the one read model); its parts are here and
# in `audit_app.costs.rollups` (the rollups of a window, priced).
@dataclass(frozen=True, kw_only=True)
class UnpricedModel:
    provider: str
    model: str
    requests: int
    input_tokens: int
    output_tokens: int


# --- Workloads --------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class LatencySummary:
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    count: int


@dataclass(frozen=True, kw_only=True)
class WorkloadUsage:
    """A workload's traffic in a window: volume, tokens and latency (money is in
    `reporting.spend.WorkloadStats`, from the one read model)."""

    id: int | None
    name: str
    teams: list[str]
    providers: list[str]
    models: list[str]
    requests: int
    errors: int
    streaming_requests: int
    input_tokens: int
    output_tokens: int
    ttft: LatencySummary
    latency: LatencySummary
    tpot: LatencySummary

    @property
    def streaming_percent(self) -> float | None:
        return self.streaming_requests / self.requests * 100 if self.requests else None


EMPTY_LATENCY = LatencySummary(p50_ms=None, p95_ms=None, p99_ms=None, count=0)


def _summary(histogram: LatencyHistogram) -> LatencySummary:
    p = histogram.percentiles((0.5, 0.95, 0.99))
    return LatencySummary(p50_ms=p[0.5], p95_ms=p[0.95], p99_ms=p[0.99], count=histogram.count)


def _merged(rows: Iterable[Mapping[str, Any]], field: str) -> LatencyHistogram:
    return LatencyHistogram.merge_bytes(row[field] for row in rows)


def workload_usage(*, queryset: Rollups) -> list[WorkloadUsage]:
    """One line per workload: volume, tokens and latency percentiles from rollups (cached per
    data version: merging a month of histograms for hundreds of workloads is the most
    expensive read the dashboard makes)."""
    return cached("workload_usage", query_key(queryset), lambda: _workload_usage(queryset))


def _workload_usage(queryset: Rollups) -> list[WorkloadUsage]:
    sums = {
        row["workload"]: row
        for row in queryset.values("workload")
        .annotate(
            n=Sum("requests"),
            e=Sum("errors"),
            s=Sum("streaming_requests"),
            i=Sum("input_tokens"),
            o=Sum("output_tokens"),
        )
        .order_by()
    }
    labels: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    histograms: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for histogram_row in queryset.values(
        "workload",
        "team",
        "provider",
        "model",
        "ttft_histogram",
        "latency_histogram",
        "tpot_histogram",
    ).order_by():
        workload = histogram_row["workload"]
        for field in ("team", "provider", "model"):
            if histogram_row[field]:
                labels[workload][field].add(histogram_row[field])
        histograms[workload].append(histogram_row)
    ids = dict(Workload.objects.filter(name__in=list(sums)).values_list("name", "id"))
    out = []
    for name, row in sums.items():
        rows = histograms[name]
        out.append(
            WorkloadUsage(
                id=ids.get(name),
                name=name,
                teams=sorted(labels[name]["team"]),
                providers=sorted(labels[name]["provider"]),
                models=sorted(labels[name]["model"]),
                requests=row["n"],
                errors=row["e"],
                streaming_requests=row["s"],
                input_tokens=row["i"],
                output_tokens=row["o"],
                ttft=_summary(_merged(rows, "ttft_histogram")),
                latency=_summary(_merged(rows, "latency_histogram")),
                tpot=_summary(_merged(rows, "tpot_histogram")),
            )
        )
    out.sort(key=lambda w: w.name)
    return out


def hour_of_week_requests(*, queryset: QuerySet[HourlyRollup]) -> list[list[int]]:
    """Requests per (weekday Monday=0 .. Sunday=6, UTC hour 0..23), cached per data version."""
    return cached("hour_of_week", query_key(queryset), lambda: _hour_of_week_requests(queryset))


def _hour_of_week_requests(queryset: QuerySet[HourlyRollup]) -> list[list[int]]:
    matrix = [[0] * 24 for _ in range(7)]
    rows = (
        queryset.annotate(weekday=ExtractIsoWeekDay("hour"), hour_of_day=ExtractHour("hour"))
        .values("weekday", "hour_of_day")
        .annotate(n=Sum("requests"))
        .order_by()
    )
    for row in rows:
        matrix[row["weekday"] - 1][row["hour_of_day"]] += row["n"]
    return matrix


def data_date_range() -> tuple[date, date] | None:
    """First and last day that have rollups (of succeeded uploads)."""
    return cached("data_date_range", "", _data_date_range)


def _data_date_range() -> tuple[date, date] | None:
    bounds = daily_rollups().aggregate(first=Min("day"), last=Max("day"))
    if bounds["first"] is None:
        return None
    return bounds["first"], bounds["last"]


def filter_choices() -> dict[str, list[str]]:
    """Teams, providers and models that have data (for the filter drop-downs)."""
    return cached("filter_choices", "", _filter_choices)


def _filter_choices() -> dict[str, list[str]]:
    queryset = daily_rollups()
    return {
        field: sorted(v for v in queryset.values_list(field, flat=True).distinct().order_by() if v)
        for field in ("team", "provider", "model")
    }


def hourly_output_tokens(*, queryset: QuerySet[HourlyRollup], start: date, end: date) -> list[int]:
    """Output tokens per hour over start..end (UTC), zeros included: the demand profile the
    cost model prices (recommendations, benchmark gates)."""
    origin = datetime.combine(start, time.min, tzinfo=UTC)
    hours = ((end - start).days + 1) * 24
    demand = [0] * hours
    for row in queryset.values("hour").annotate(o=Sum("output_tokens")).order_by():
        index = int((row["hour"] - origin).total_seconds() // 3600)
        if 0 <= index < hours:
            demand[index] += row["o"]
    return demand


@dataclass(frozen=True, kw_only=True)
class RecommendationGroup:
    """One workload's (or one serving pool's) recommendations: the one that leads, the
    alternatives under it, and the closed ones (rejected, gate failed) kept for their history."""

    workload: Workload | None
    leader: Recommendation | None
    alternatives: list[Recommendation]
    closed: list[Recommendation]
    pool: ServingPool | None = None

    @property
    def name(self) -> str:
        if self.workload is not None:
            return self.workload.name
        return f"pool {self.pool.name}" if self.pool is not None else ""

    @property
    def open_savings(self) -> Decimal:
        """What taking the leader would save a month, if it is still open (proposed or
        approved for a pilot); alternatives are never added to it."""
        if self.leader is not None and self.leader.status in OPEN_STATUSES:
            return self.leader.savings_monthly_usd
        return Decimal(0)


OPEN_STATUSES = (Recommendation.Status.PROPOSED, Recommendation.Status.PILOT_APPROVED)
DECIDED_ACTIVE = (Recommendation.Status.PILOT_APPROVED, Recommendation.Status.VERIFIED)
CLOSED_STATUSES = (Recommendation.Status.REJECTED, Recommendation.Status.GATE_FAILED)


def recommendation_groups(
    *, queryset: QuerySet[Recommendation] | None = None
) -> list[RecommendationGroup]:
    """Recommendations per workload, and per serving pool for pool recommendations, largest open
    savings first. A pilot a manager approved (or a gate verified) leads its group; otherwise
    the recommender's best option does. ``queryset`` lets a caller load more with them (their
    events, say)."""
    by_subject: dict[tuple[str, int], list[Recommendation]] = defaultdict(list)
    if queryset is None:
        queryset = Recommendation.objects.all()
    for recommendation in queryset.select_related("workload", "pool"):
        if recommendation.workload_id is not None:
            by_subject[("workload", recommendation.workload_id)].append(recommendation)
        elif recommendation.pool_id is not None:
            by_subject[("pool", recommendation.pool_id)].append(recommendation)
    groups = []
    for items in by_subject.values():
        active = [r for r in items if r.status not in CLOSED_STATUSES]
        decided = [r for r in active if r.status in DECIDED_ACTIVE]
        pool = decided or active
        leader = min(pool, key=lambda r: (r.rank, -r.savings_monthly_usd, r.pk)) if pool else None
        groups.append(
            RecommendationGroup(
                workload=items[0].workload,
                pool=items[0].pool if items[0].workload is None else None,
                leader=leader,
                alternatives=sorted(
                    (r for r in active if r is not leader),
                    key=lambda r: (-r.savings_monthly_usd, r.pk),
                ),
                closed=[r for r in items if r.status in CLOSED_STATUSES],
            )
        )
    groups.sort(
        key=lambda g: (
            -g.open_savings,
            -(g.leader.savings_monthly_usd if g.leader else Decimal(0)),
            g.name,
        )
    )
    return groups


def changes_pool(recommendation: Recommendation, pool: str) -> bool:
    """Whether ``recommendation`` is a pool recommendation changing the pool named ``pool``
    (filed under it, or a consolidation taking it in)."""
    if recommendation.pool is None:
        return False
    return recommendation.pool.name == pool or pool in recommendation.details.get("pools", [])


def pool_groups_for(groups: list[RecommendationGroup], pool: str) -> list[RecommendationGroup]:
    """The groups holding a recommendation that changes ``pool`` (every group when empty)."""
    if not pool:
        return groups
    return [
        g
        for g in groups
        if g.pool is not None
        and any(
            changes_pool(r, pool)
            for r in [*([g.leader] if g.leader else []), *g.alternatives, *g.closed]
        )
    ]


@dataclass(frozen=True, kw_only=True)
class RecommendationRole:
    """Where a recommendation sits in the savings plan (`recommendations.plan.plan_roles`)."""

    leads: bool  # in the plan
    alternative_to: int | None  # the plan option it contradicts
    closed: bool
