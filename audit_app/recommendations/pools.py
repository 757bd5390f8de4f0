"""Pool recommendations: read each serving pool's bill, demand and workloads, price
what it could do (`audit_app.recommendations.pool_options`, pure) and keep the results as
`Recommendation` rows with a ``pool`` and no workload.

A pool is looked at when its idle cost over the analysis window, scaled to a month, is at least
`POOL_RECOMMENDATION_MIN_IDLE_USD`. One replica is the instance type on its bill, its price
and throughput for the model it serves most found by `audit_app.recommendations.pool_replicas`
(measured by a benchmark run, else catalogued, else the pool's stated capacity), each stated
with its source in the recommendation's assumptions. A pool above the floor with none of them
is named by `pools_without_throughput` with what to add, for the pools table to say so.

`audit_app.recommendations.plan` turns each plan into an option of the savings plan, and
`services.recommendations_refresh` stores it with the workloads' options.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import Sum

from audit_app.costs.billing import (
    PoolReport,
    charges_in_range,
    pool_charges,
    pool_reports,
    pool_rollups,
)
from audit_app.costs.costing import HOURS_IN_MONTH, Deployment
from audit_app.costs.rollups import rollups_in_range
from audit_app.ingestion.histograms import LatencyHistogram
from audit_app.lib.results_cache import cached
from audit_app.models import (
    ServingPool,
    Workload,
    WorkloadClass,
)
from audit_app.recommendations.options import (
    COLD_START_SECONDS,
    Usage,
    provider_options,
)
from audit_app.recommendations.pool_options import (
    PoolFacts,
    PoolPlan,
    PoolWorkload,
    autoscale_plan,
    consolidate_plan,
    monthly,
    offload_plan,
    rightsize_plan,
)
from audit_app.recommendations.pool_replicas import (
    NO_REPLICA_PRICE,
    NO_THROUGHPUT,
    pool_replica,
    replica_throughput,
)
from audit_app.recommendations.targets import (
    OptionTargets,
    min_savings,
    option_targets,
)
from audit_app.workloads.services import analysis_window, effective_class


@dataclass(frozen=True, kw_only=True)
class PricedPool:
    """A pool's facts for the pure layer, with what the service needs to store its plans."""

    pool: ServingPool
    facts: PoolFacts
    model: str  # the model it serves most
    report: PoolReport
    usage: dict[str, Usage]  # asynchronous workloads' tokens, for an offload tier
    measured: bool = False  # its throughput comes from a benchmark run


@dataclass(frozen=True, kw_only=True)
class PoolsRead:
    priced: list[PricedPool]
    # pool -> why it has no plan although it idles above the floor (no throughput or price)
    without_throughput: dict[str, str]


def headroom() -> Decimal:
    return Decimal(str(settings.POOL_HEADROOM))


def min_idle() -> Decimal:
    return Decimal(str(settings.POOL_RECOMMENDATION_MIN_IDLE_USD))


def _workloads(
    pool: ServingPool, report: PoolReport, *, start: date, end: date, hours: int
) -> tuple[list[PoolWorkload], dict[str, Usage], str]:
    """The pool's workloads (demand, requests, TTFT), the asynchronous ones' token usage and
    the model with the most output tokens."""
    origin = datetime.combine(start, time.min, tzinfo=UTC)
    queryset = pool_rollups(pool, rollups_in_range(start=start, end=end))
    demand: dict[str, list[int]] = defaultdict(lambda: [0] * hours)
    requests: dict[str, list[int]] = defaultdict(lambda: [0] * hours)
    tokens: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_model: dict[str, int] = defaultdict(int)
    for row in (
        queryset.values("hour", "workload", "model")
        .annotate(o=Sum("output_tokens"), i=Sum("input_tokens"), n=Sum("requests"))
        .order_by()
    ):
        index = int((row["hour"] - origin).total_seconds() // 3600)
        if not 0 <= index < hours:
            continue
        demand[row["workload"]][index] += row["o"]
        requests[row["workload"]][index] += row["n"]
        tokens[row["workload"]][0] += row["i"]
        tokens[row["workload"]][1] += row["o"]
        by_model[row["model"]] += row["o"]
    histograms: dict[str, list[Any]] = defaultdict(list)
    for name, blob in queryset.values_list("workload", "ttft_histogram").order_by():
        histograms[name].append(blob)
    model = max(sorted(by_model), key=lambda m: by_model[m]) if by_model else ""
    attributed = report.by_workload
    workloads = Workload.objects.filter(name__in=list(demand)).select_related("classification")
    out: list[PoolWorkload] = []
    usage: dict[str, Usage] = {}
    for workload in workloads.prefetch_related("overrides"):
        name = workload.name
        kind = effective_class(workload)
        ttft = LatencyHistogram.merge_bytes(histograms[name])
        out.append(
            PoolWorkload(
                name=name,
                realtime=kind == WorkloadClass.REALTIME,
                asynchronous=kind == WorkloadClass.ASYNC,
                attributed_usd=attributed.get(name, Decimal(0)),
                demand=tuple(demand[name]),
                requests=tuple(requests[name]),
                ttft_quantile=ttft.quantile,
                latency_slo_ms=workload.latency_slo_ms,
            )
        )
        if kind == WorkloadClass.ASYNC:
            usage[name] = Usage(
                provider=pool.name,
                model=model,
                spend=Decimal(0),
                input_tokens=tokens[name][0],
                output_tokens=tokens[name][1],
                batch_share=0.0,
            )
    return out, usage, model


def _priced_pool(
    report: PoolReport, *, start: date, end: date, targets: OptionTargets
) -> PricedPool | str | None:
    """The pool's facts for the pure layer; why not (`NO_THROUGHPUT`, `NO_REPLICA_PRICE`) when
    it has traffic but no throughput or replica price is known; None when it has no USD bill or
    no traffic."""
    if report.currency != "USD" or not report.instance_types or not report.attribution.billed:
        return None
    hours = ((end - start).days + 1) * 24
    pool = report.pool
    workloads, usage, model = _workloads(pool, report, start=start, end=end, hours=hours)
    if not workloads:
        return None
    charges = list(
        pool_charges(pool, charges_in_range(start=start, end=end)).filter(currency="USD")
    )
    replica = pool_replica(
        charges,
        instance_type=report.instance_types[0],
        instances=targets.instances,
        origin=datetime.combine(start, time.min, tzinfo=UTC),
        hours=hours,
    )
    throughput = (
        replica_throughput(pool, model=model, replica=replica, offers=targets.offers)
        if replica is not None
        else None
    )
    if replica is None:
        return NO_REPLICA_PRICE
    if throughput is None:
        return NO_THROUGHPUT
    accelerators = replica.accelerators or 1
    facts = PoolFacts(
        name=pool.name,
        models=(model,),
        replica=replica.name,
        deployment=Deployment(
            tokens_per_second=throughput.tokens_per_second,
            accelerators_per_replica=accelerators,
            usd_per_accelerator_hour=replica.usd_per_hour / accelerators,
            cold_start_seconds=COLD_START_SECONDS,
        ),
        assumptions=(throughput.assumption, replica.price_source),
        billed_usd=report.attribution.billed,
        idle_usd=report.attribution.idle,
        provisioned=replica.provisioned,
        workloads=tuple(workloads),
        first_hour_of_week=start.weekday() * 24,
    )
    return PricedPool(
        pool=pool,
        facts=facts,
        model=model,
        report=report,
        usage=usage,
        measured=throughput.measured,
    )


def pools_read(*, start: date, end: date, targets: OptionTargets) -> PoolsRead:
    """Every pool billed in USD over start..end with traffic: priced when a replica's price and
    throughput are known (`pool_replicas`), else named among those without a throughput."""
    priced: list[PricedPool] = []
    unknown: dict[str, str] = {}
    idle_floor = min_idle()
    hours = ((end - start).days + 1) * 24
    for report in pool_reports(start=start, end=end):
        read = _priced_pool(report, start=start, end=end, targets=targets)
        if isinstance(read, PricedPool):
            priced.append(read)
        elif read is not None and monthly(report.attribution.idle, hours) >= idle_floor:
            unknown[report.pool.name] = read
    return PoolsRead(priced=priced, without_throughput=unknown)


def priced_pools(*, start: date, end: date, targets: OptionTargets) -> list[PricedPool]:
    return pools_read(start=start, end=end, targets=targets).priced


def pools_without_throughput() -> dict[str, str]:
    """The pools idling above the floor over the analysis window (the refresh's) that get no
    plan because no throughput is known: the pools table and API say so. Cached per data
    version."""
    window = analysis_window()
    if window is None:
        return {}
    start, end = window
    return cached(
        "pools_without_throughput",
        f"{start}|{end}",
        lambda: pools_read(start=start, end=end, targets=option_targets()).without_throughput,
    )


def _offload(priced: PricedPool, *, targets: OptionTargets, room: Decimal) -> PoolPlan | None:
    """Move the pool's asynchronous workloads to the cheapest per-token listing of its model."""
    if not priced.usage:
        return None
    hours = priced.facts.hours
    total = Usage(
        provider=priced.pool.name,
        model=priced.model,
        spend=Decimal(0),
        input_tokens=sum(u.input_tokens for u in priced.usage.values()),
        output_tokens=sum(u.output_tokens for u in priced.usage.values()),
        batch_share=0.0,
    )
    options = provider_options(total, hours=hours, listings=targets.listings)
    if not options:
        return None
    best = min(options, key=lambda o: (o.projected_monthly, o.target))
    return offload_plan(
        priced.facts,
        tier=best.target,
        tier_usd=best.projected_monthly * hours / HOURS_IN_MONTH,
        tier_sources=best.assumptions[:1],
        headroom=room,
    )


def pool_plans(
    pools: list[PricedPool], *, targets: OptionTargets
) -> list[tuple[PricedPool, PoolPlan]]:
    """Every plan for pools idling above the floor, each with the pool it is filed under."""
    room = headroom()
    floor = min_savings()
    idle_floor = min_idle()
    eligible = [p for p in pools if monthly(p.facts.idle_usd, p.facts.hours) >= idle_floor]
    by_name = {p.pool.name: p for p in pools}
    plans: list[tuple[PricedPool, PoolPlan]] = []
    for priced in eligible:
        for plan in (
            rightsize_plan(priced.facts, headroom=room),
            autoscale_plan(priced.facts, headroom=room),
            _offload(priced, targets=targets, room=room),
        ):
            if plan is not None:
                plans.append((priced, plan))
    by_model: dict[str, list[PricedPool]] = defaultdict(list)
    for priced in pools:
        by_model[priced.model.lower().rsplit("/", 1)[-1]].append(priced)
    for group in by_model.values():
        if len(group) < 2 or not any(p in eligible for p in group):
            continue
        plan = consolidate_plan([p.facts for p in group], headroom=room)
        if plan is not None:
            plans.append((by_name[plan.pool], plan))
    return [(p, plan) for p, plan in plans if plan.savings_monthly >= floor]


def _money(amount: Decimal) -> Decimal:
    return amount.quantize(Decimal("0.01"))


def plan_details(plan: PoolPlan) -> dict[str, Any]:
    """What the pages, API and CLI show beyond the money columns: chart series, risk, claims."""
    return {
        "pools": list(plan.pools),
        "mode": plan.mode.value,
        "replicas_after": max(plan.replicas_per_hour),
        "risk": plan.risk,
        "cold_starts": [
            {
                "workload": r.workload,
                "cold_start_seconds": r.cold_start_seconds,
                "share": round(r.share, 6),
                "share_percent": round(r.share * 100, 2),
                "in_p95": r.in_p95,
                "p95_ttft_ms": r.p95_ttft_ms,
                "p95_ttft_with_cold_starts_ms": r.p95_ttft_with_cold_starts_ms,
                "latency_slo_ms": r.latency_slo_ms,
                "breaks_slo": r.breaks_slo,
            }
            for r in plan.risks
        ],
        "needs_gate": plan.needs_gate,
        "modelled_monthly_usd": str(_money(plan.modelled_monthly)),
        "idle_monthly_usd": str(_money(plan.idle_monthly)),
        "moved_monthly_usd": {name: str(_money(v)) for name, v in plan.moved_monthly.items()},
        "chart": {
            "demanded": list(plan.chart.demanded),
            "before": list(plan.chart.before),
            "after": list(plan.chart.after),
        },
    }
