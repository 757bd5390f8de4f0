"""Selectors: every non-trivial read the audit app makes. They return frozen dataclasses."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Count, Max, Min, Q, QuerySet, Sum
from django.db.models.functions import ExtractHour, ExtractIsoWeekDay, TruncDate
from django.utils import timezone

from audit_app.costs.price_cards import price_book
from audit_app.costs.pricing import MIXED_THRESHOLDS, TokenUsage, token_cost
from audit_app.ingestion.histograms import LatencyHistogram
from audit_app.lib.results_cache import cached, query_key
from audit_app.models import (
    DailyRollup,
    HourlyRollup,
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
    return list(Upload.objects.select_related("uploaded_by", "billing_source")[:limit])


# --- Spend ---------------------------------------------------------------------------------
# Money is read through `audit_app.reporting.spend` (the one read model); these are its parts.
@dataclass(frozen=True, kw_only=True)
class UnpricedModel:
    provider: str
    model: str
    requests: int
    input_tokens: int
    output_tokens: int


def hosted_pooled_q(pooled: Iterable[str]) -> Q:
    """Rollups logged without a pool whose model a serving pool runs but which a hosted API
    served (a card prices that provider's model, `PriceBook.prices_model`): they are priced
    from cards, not costed from the pool's GPU bills."""
    book = price_book()
    pairs = (
        HourlyRollup.objects.filter(pool="", model__in=list(pooled))
        .values_list("provider", "model")
        .distinct()
        .order_by()
    )
    hosted = Q(pk__in=[])
    for provider, model in pairs:
        if book.prices_model(provider=provider, model=model):
            hosted |= Q(provider=provider, model=model)
    return hosted


def rollups_in_range(
    *, start: date | None = None, end: date | None = None, **filters: Any
) -> QuerySet[HourlyRollup]:
    """Hourly rollups of succeeded uploads whose hour falls on days start..end (inclusive,
    UTC). Only for views that need the hour; sums per day or range read `daily_rollups`."""
    queryset = HourlyRollup.objects.filter(upload__status=Upload.Status.SUCCEEDED)
    if start is not None:
        queryset = queryset.filter(hour__gte=datetime.combine(start, time.min, tzinfo=UTC))
    if end is not None:
        queryset = queryset.filter(
            hour__lt=datetime.combine(end + timedelta(days=1), time.min, tzinfo=UTC)
        )
    return _filtered(queryset, filters)


def _filtered(queryset: QuerySet[Any], filters: dict[str, Any]) -> QuerySet[Any]:
    """The queryset narrowed by the filters that have a value (empty ones mean "all")."""
    return queryset.filter(**{k: v for k, v in filters.items() if v not in (None, "")})


Rollups = QuerySet[HourlyRollup] | QuerySet[DailyRollup]


def daily_rollups(
    *, start: date | None = None, end: date | None = None, **filters: Any
) -> QuerySet[DailyRollup]:
    """Daily rollups of succeeded uploads on days start..end (inclusive, UTC): the same sums
    as the hourly ones over whole days, in ~24 times fewer rows."""
    queryset = DailyRollup.objects.filter(upload__status=Upload.Status.SUCCEEDED)
    if start is not None:
        queryset = queryset.filter(day__gte=start)
    if end is not None:
        queryset = queryset.filter(day__lte=end)
    return _filtered(queryset, filters)


@dataclass(frozen=True, kw_only=True)
class PricedGroup:
    """Sums of one group of rollups (by the requested dimensions), with its cost priced."""

    dims: tuple[Any, ...]
    requests: int
    input_tokens: int
    output_tokens: int
    logged_cost_usd: Decimal
    estimated_cost_usd: Decimal
    unpriced_requests: int
    unpriced_input_tokens: int
    unpriced_output_tokens: int
    provider: str
    model: str
    self_hosted_requests: int  # costed from GPU bills, not in this group's dollars
    self_hosted: bool = False  # served by a serving pool (by its pool, or its model + provider)

    @property
    def spend_usd(self) -> Decimal:
        return self.logged_cost_usd + self.estimated_cost_usd


def priced_groups(queryset: Rollups, dims: Sequence[str]) -> list[PricedGroup]:
    """Rollups summed per ``dims`` (rollup fields, or ``day``) and priced.

    Pricing needs provider, model, day and batch flag, so groups are finer than ``dims``; each
    comes back with its own dims so callers add them up as they like. Not cached itself (a
    year of daily groups is large): the summaries built from it are.
    """
    fields = list(dict.fromkeys([*dims, "provider", "model", "day", "batch_api", "pool"]))
    # Self-hosted requests are costed from GPU bills (costs.billing), never from cards.
    pooled = {
        str(model)
        for models in ServingPool.objects.values_list("models_served", flat=True)
        for model in models
    }
    if queryset.model is HourlyRollup:
        queryset = queryset.annotate(day=TruncDate("hour"))
    grouped = (
        queryset.values(*fields)
        .annotate(
            n_requests=Sum("requests"),
            n_input=Sum("input_tokens"),
            n_output=Sum("output_tokens"),
            logged=Sum("logged_cost_usd"),
            n_logged=Sum("logged_requests"),
            un_input=Sum("unlogged_input_tokens"),
            un_cached=Sum("unlogged_cached_input_tokens"),
            un_output=Sum("unlogged_output_tokens"),
            un_creation=Sum("unlogged_cache_creation_input_tokens"),
            long_input=Sum("unlogged_long_context_input_tokens"),
            long_cached=Sum("unlogged_long_context_cached_input_tokens"),
            long_creation=Sum("unlogged_long_context_cache_creation_input_tokens"),
            long_output=Sum("unlogged_long_context_output_tokens"),
            # One key, one day: one card, so one threshold unless a card changed between
            # uploads of that day (then MIXED_THRESHOLDS: no tier applies).
            threshold_low=Min("long_context_threshold_tokens"),
            threshold_high=Max("long_context_threshold_tokens"),
        )
        .order_by()
    )
    book = price_book()
    out: list[PricedGroup] = []
    for g in grouped:
        unlogged = g["n_requests"] - g["n_logged"]
        estimated = Decimal(0)
        unpriced = unpriced_in = unpriced_out = 0
        # A model a pool serves is self-hosted unless a hosted API served the request.
        self_hosted = bool(g["pool"]) or (
            g["model"] in pooled and not book.prices_model(provider=g["provider"], model=g["model"])
        )
        if unlogged and not self_hosted:
            price = book.find(provider=g["provider"], model=g["model"], day=g["day"])
            if price is None:
                unpriced, unpriced_in, unpriced_out = unlogged, g["un_input"], g["un_output"]
            else:
                estimated = token_cost(price, _unlogged_usage(g, requests=unlogged))
        out.append(
            PricedGroup(
                dims=tuple(g[d] for d in dims),
                requests=g["n_requests"],
                input_tokens=g["n_input"],
                output_tokens=g["n_output"],
                logged_cost_usd=g["logged"] or Decimal(0),
                estimated_cost_usd=estimated,
                unpriced_requests=unpriced,
                unpriced_input_tokens=unpriced_in,
                unpriced_output_tokens=unpriced_out,
                provider=g["provider"],
                model=g["model"],
                self_hosted_requests=unlogged if self_hosted else 0,
                self_hosted=self_hosted,
            )
        )
    return out


def _unlogged_usage(g: Mapping[str, Any], *, requests: int) -> TokenUsage:
    """What a priced group's unlogged requests used, as `token_cost` prices it."""
    return TokenUsage(
        input_tokens=g["un_input"],
        cached_input_tokens=g["un_cached"],
        output_tokens=g["un_output"],
        batch_api=g["batch_api"],
        cache_creation_input_tokens=g["un_creation"],
        requests=requests,
        long_context_input_tokens=g["long_input"],
        long_context_cached_input_tokens=g["long_cached"],
        long_context_cache_creation_input_tokens=g["long_creation"],
        long_context_output_tokens=g["long_output"],
        long_context_threshold=(
            g["threshold_low"] if g["threshold_low"] == g["threshold_high"] else MIXED_THRESHOLDS
        ),
    )


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
