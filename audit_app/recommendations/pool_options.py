"""What a serving pool could do about its idle spend, priced for a month.

Pure module (no Django): a `PoolFacts` per pool in, `PoolPlan`s out.

Its rules in full: `docs/methods.md`, section "Serving pools' options".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum

from audit_app.costs.costing import (
    HOURS_IN_MONTH,
    SECONDS_PER_HOUR,
    CostBreakdown,
    Deployment,
    ScalingMode,
    cost_on_profile,
)
from audit_app.recommendations.options import with_headroom

HOURS_PER_WEEK = 168
DEFAULT_HEADROOM = Decimal("0.2")
# The percentile a real-time workload's latency is judged on.
P95 = 0.95


class PoolKind(StrEnum):
    """The pool values of `Recommendation.TargetKind`."""

    RIGHTSIZE = "pool_rightsize"
    AUTOSCALE = "pool_autoscale"
    CONSOLIDATE = "pool_consolidate"
    OFFLOAD = "pool_offload"


@dataclass(frozen=True, kw_only=True)
class PoolWorkload:
    """One workload's traffic on a pool over the window."""

    name: str
    realtime: bool
    asynchronous: bool
    attributed_usd: Decimal  # its share of the pool's bill over the window
    demand: tuple[int, ...]  # its output tokens per hour of the window
    requests: tuple[int, ...]  # its requests per hour of the window
    latency_slo_ms: int | None = None
    # Its TTFT quantile in ms (from its own histogram) for q in [0, 1]; None when unknown.
    ttft_quantile: Callable[[float], float | None] = field(
        default=lambda q: None, compare=False, repr=False
    )


@dataclass(frozen=True, kw_only=True)
class PoolFacts:
    """One pool over the analysis window, as the service read it."""

    name: str
    models: tuple[str, ...]
    replica: str  # what one replica is: "p5.48xlarge (NVIDIA H100 80GB)"
    deployment: Deployment
    assumptions: tuple[str, ...]  # where the throughput, price and cold start come from
    billed_usd: Decimal
    idle_usd: Decimal
    provisioned: tuple[int, ...]  # replicas billed in each hour of the window
    workloads: tuple[PoolWorkload, ...]
    first_hour_of_week: int = 0  # hour of week (0 = Monday 00:00 UTC) of the window's first hour

    @property
    def hours(self) -> int:
        return len(self.provisioned)

    @property
    def demand(self) -> tuple[int, ...]:
        return summed([w.demand for w in self.workloads], self.hours)


@dataclass(frozen=True, kw_only=True)
class ColdStartRisk:
    """What cold starts would do to one real-time workload's TTFT under a plan."""

    workload: str
    cold_start_seconds: float
    share: float  # of its requests arriving while a replica they need is still starting
    p95_ttft_ms: float | None  # today
    p95_ttft_with_cold_starts_ms: float | None
    latency_slo_ms: int | None = None

    @property
    def breaks_slo(self) -> bool:
        later = self.p95_ttft_with_cold_starts_ms
        return self.latency_slo_ms is not None and later is not None and later > self.latency_slo_ms

    @property
    def in_p95(self) -> bool:
        """5 % or more of its requests wait for a cold start: its p95 TTFT is one."""
        return self.share >= 1 - P95

    @property
    def sentence(self) -> str:
        now = f"{self.p95_ttft_ms:,.0f} ms" if self.p95_ttft_ms is not None else "unknown"
        later = (
            f"{self.p95_ttft_with_cold_starts_ms:,.0f} ms"
            if self.p95_ttft_with_cold_starts_ms is not None
            else "unknown"
        )
        where = "in its p95 TTFT" if self.in_p95 else "below its p95 TTFT"
        slo = ""
        if self.latency_slo_ms is not None:
            verdict = "over" if self.breaks_slo else "within"
            slo = f" ({verdict} its {self.latency_slo_ms:,} ms SLO)"
        return (
            f"Real-time workload {self.workload}: {self.share:.1%} of its requests would wait for "
            f"a {self.cold_start_seconds:.0f} s cold start ({where}); p95 TTFT {now} today, "
            f"{later} with cold starts{slo}."
        )


@dataclass(frozen=True, kw_only=True)
class WeekChart:
    """Replicas per hour of week (mean over the window's weeks): demanded (fractional: the
    tokens over one replica's hourly capacity), provisioned before and after."""

    demanded: tuple[float, ...]
    before: tuple[float, ...]
    after: tuple[float, ...]


@dataclass(frozen=True, kw_only=True)
class PoolPlan:
    kind: PoolKind
    pool: str  # the pool the recommendation is filed under (the host, for consolidate)
    pools: tuple[str, ...]  # every pool it changes
    target: str
    mode: ScalingMode
    replicas_per_hour: tuple[int, ...]
    current_monthly: Decimal
    modelled_monthly: Decimal  # what the cost model prices the plan at
    idle_monthly: Decimal
    moved_monthly: dict[str, Decimal]  # workload -> its attributed share moved off, a month
    assumptions: tuple[str, ...]
    risks: tuple[ColdStartRisk, ...]
    needs_gate: bool  # the hardware a workload runs on changes
    chart: WeekChart

    @property
    def savings_monthly(self) -> Decimal:
        """``current − modelled``: the pools' bills today less the cost model's price after."""
        return self.current_monthly - self.modelled_monthly

    @property
    def projected_monthly(self) -> Decimal:
        return self.modelled_monthly

    @property
    def risk(self) -> str:
        if self.risks:
            return " ".join(r.sentence for r in self.risks)
        if self.mode is ScalingMode.ALWAYS_ON:
            return "No cold starts: capacity stays on every hour with the stated headroom."
        return "No real-time workload on the pool: cold starts delay only asynchronous work."


def monthly(amount: Decimal, hours: int) -> Decimal:
    return amount * HOURS_IN_MONTH / hours


def summed(series: Sequence[Sequence[int]], hours: int) -> tuple[int, ...]:
    """Hour-by-hour sum of equal-length series (``hours`` zeros when there are none)."""
    out = [0] * hours
    for values in series:
        for hour, value in enumerate(values):
            out[hour] += value
    return tuple(out)


def cold_start_risk(
    workload: PoolWorkload, *, replicas_per_hour: Sequence[int], cold_start_seconds: float
) -> ColdStartRisk:
    """Share of ``workload``'s requests that meet a cold start, and its p95 TTFT with them.

    In an hour where ``a`` replicas are added to reach ``R``, requests arrive evenly and are
    spread evenly over the replicas, so ``a / R`` of those in the first ``C`` seconds wait for a
    cold start: ``requests_h × min(C, 3600) / 3600 × a / R``. The first hour is taken as warm,
    as the cost model does. A waiting request is taken to wait longer than any request does
    today, so with ``f`` the share waiting, the p95 is today's quantile ``0.95 / (1 − f)`` when
    ``f < 5 %``, else about the cold start itself (``C`` s plus today's p95).
    """
    window = min(cold_start_seconds, SECONDS_PER_HOUR) / SECONDS_PER_HOUR
    waiting = 0.0
    for hour in range(1, len(replicas_per_hour)):
        added = replicas_per_hour[hour] - replicas_per_hour[hour - 1]
        if added > 0:
            waiting += workload.requests[hour] * window * added / replicas_per_hour[hour]
    total = sum(workload.requests)
    share = waiting / total if total else 0.0
    today = workload.ttft_quantile(P95)
    if share < 1 - P95:
        later = workload.ttft_quantile(P95 / (1 - share)) if share else today
    else:
        later = cold_start_seconds * 1000 + (today or 0.0)
    return ColdStartRisk(
        workload=workload.name,
        cold_start_seconds=cold_start_seconds,
        share=share,
        p95_ttft_ms=today,
        p95_ttft_with_cold_starts_ms=later,
        latency_slo_ms=workload.latency_slo_ms,
    )


def week_mean(values: Sequence[float], first_hour_of_week: int) -> tuple[float, ...]:
    """Mean of ``values`` (one per hour from ``first_hour_of_week``) per hour of week."""
    sums = [0.0] * HOURS_PER_WEEK
    counts = [0] * HOURS_PER_WEEK
    for hour, value in enumerate(values):
        slot = (first_hour_of_week + hour) % HOURS_PER_WEEK
        sums[slot] += float(value)
        counts[slot] += 1
    return tuple(round(s / c, 3) if c else 0.0 for s, c in zip(sums, counts, strict=True))


def _chart(
    facts: Sequence[PoolFacts], deployment: Deployment, after: Sequence[int], demand: Sequence[int]
) -> WeekChart:
    capacity = float(deployment.tokens_per_replica_hour)
    first = facts[0].first_hour_of_week
    return WeekChart(
        demanded=week_mean([d / capacity for d in demand], first),
        before=week_mean(summed([f.provisioned for f in facts], len(demand)), first),
        after=week_mean(after, first),
    )


def _plan(
    *,
    kind: PoolKind,
    facts: Sequence[PoolFacts],
    host: PoolFacts,
    breakdown: CostBreakdown,
    target: str,
    demand: Sequence[int],
    moved: dict[str, Decimal],
    assumptions: Sequence[str],
    risks: Sequence[ColdStartRisk] = (),
    needs_gate: bool = False,
    extra_monthly: Decimal = Decimal(0),
) -> PoolPlan:
    hours = host.hours
    current = monthly(sum((f.billed_usd for f in facts), Decimal(0)), hours)
    idle = monthly(sum((f.idle_usd for f in facts), Decimal(0)), hours)
    moved_monthly = {name: monthly(amount, hours) for name, amount in moved.items()}
    return PoolPlan(
        kind=kind,
        pool=host.name,
        pools=tuple(f.name for f in facts),
        target=target,
        mode=breakdown.mode,
        replicas_per_hour=breakdown.replicas_per_hour,
        current_monthly=current,
        modelled_monthly=monthly(breakdown.total_cost_usd, hours) + extra_monthly,
        idle_monthly=idle,
        moved_monthly=moved_monthly,
        assumptions=(*host.assumptions, *assumptions),
        risks=tuple(risks),
        needs_gate=needs_gate,
        chart=_chart(facts, host.deployment, breakdown.replicas_per_hour, demand),
    )


def _headroom_sentence(headroom: Decimal) -> str:
    return (
        f"Each hour is sized for its demand plus {headroom:.0%} headroom "
        "(attributed output tokens per hour over the window)."
    )


def rightsize_plan(facts: PoolFacts, *, headroom: Decimal = DEFAULT_HEADROOM) -> PoolPlan | None:
    """Always-on at the fewest replicas serving the peak hour; None if that is no fewer than
    the pool has at its busiest today, or the pool served nothing."""
    demand = facts.demand
    if not any(demand):
        return None
    breakdown = cost_on_profile(
        deployment=facts.deployment,
        demand_per_hour=with_headroom(demand, headroom),
        mode=ScalingMode.ALWAYS_ON,
    )
    replicas = breakdown.replicas_per_hour[0]
    if replicas >= max(facts.provisioned):
        return None
    peak = max(demand)
    return _plan(
        kind=PoolKind.RIGHTSIZE,
        facts=[facts],
        host=facts,
        breakdown=breakdown,
        target=f"{facts.name}: {replicas} × {facts.replica} always on",
        demand=demand,
        moved={},
        assumptions=(
            _headroom_sentence(headroom),
            f"Peak hour {peak:,} output tokens; × {1 + headroom} needs {replicas} replica(s) of "
            f"{facts.deployment.tokens_per_replica_hour:,.0f} tokens/hour. No hardware changes, "
            "so no benchmark gate is needed.",
        ),
    )


def autoscale_plan(facts: PoolFacts, *, headroom: Decimal = DEFAULT_HEADROOM) -> PoolPlan | None:
    """Replicas following demand: the cheaper of autoscale (at least one) and scale to zero,
    with every real-time workload's cold-start risk; None when the pool served nothing."""
    demand = facts.demand
    if not any(demand):
        return None
    sized = with_headroom(demand, headroom)
    breakdown = min(
        (
            cost_on_profile(deployment=facts.deployment, demand_per_hour=sized, mode=mode)
            for mode in (ScalingMode.AUTOSCALE, ScalingMode.SCALE_TO_ZERO)
        ),
        # Equal cost: the one that keeps a replica warm.
        key=lambda b: (b.total_cost_usd, b.mode is ScalingMode.SCALE_TO_ZERO),
    )
    seconds = facts.deployment.cold_start_seconds
    risks = [
        cold_start_risk(
            w, replicas_per_hour=breakdown.replicas_per_hour, cold_start_seconds=seconds
        )
        for w in facts.workloads
        if w.realtime
    ]
    return _plan(
        kind=PoolKind.AUTOSCALE,
        facts=[facts],
        host=facts,
        breakdown=breakdown,
        target=f"{facts.name}: {facts.replica}, {breakdown.mode.label}",
        demand=demand,
        moved={},
        assumptions=(
            _headroom_sentence(headroom),
            f"{seconds:.0f} s cold start per replica added, billed as busy time. No hardware "
            "changes, so no benchmark gate is needed.",
        ),
        risks=risks,
    )


def consolidate_plan(
    pools: Sequence[PoolFacts], *, headroom: Decimal = DEFAULT_HEADROOM
) -> PoolPlan | None:
    """Two or more pools' demand on the replica that serves it cheapest, always on; None when
    it needs as many replicas as the pools have together at their busiest."""
    if len(pools) < 2:
        return None
    hours = pools[0].hours
    demand = summed([p.demand for p in pools], hours)
    if not any(demand):
        return None
    sized = with_headroom(demand, headroom)
    host, breakdown = min(
        (
            (
                p,
                cost_on_profile(
                    deployment=p.deployment, demand_per_hour=sized, mode=ScalingMode.ALWAYS_ON
                ),
            )
            for p in pools
        ),
        key=lambda pair: (pair[1].total_cost_usd, pair[0].name),
    )
    if breakdown.replicas_per_hour[0] >= sum(max(p.provisioned) for p in pools):
        return None
    moved = {w.name: w.attributed_usd for p in pools if p is not host for w in p.workloads}
    others = ", ".join(p.name for p in pools if p is not host)
    return _plan(
        kind=PoolKind.CONSOLIDATE,
        facts=pools,
        host=host,
        breakdown=breakdown,
        target=(
            f"{others} into {host.name}: {breakdown.replicas_per_hour[0]} × {host.replica} "
            "always on"
        ),
        demand=demand,
        moved=moved,
        assumptions=(
            _headroom_sentence(headroom),
            f"The pools serve the same model ({', '.join(sorted(set(pools[0].models)))}); their "
            "hourly demand is added. Workloads moving to other hardware need a benchmark gate.",
        ),
        needs_gate=True,
    )


def offload_plan(
    facts: PoolFacts,
    *,
    tier: str,
    tier_usd: Decimal,
    tier_sources: Sequence[str] = (),
    headroom: Decimal = DEFAULT_HEADROOM,
) -> PoolPlan | None:
    """Asynchronous workloads to a per-token ``tier`` (a batch API or a throughput pool) that
    would charge ``tier_usd`` for their traffic over the window, the rest right-sized always on
    (no replica when nothing real-time is left); None when the pool has no asynchronous
    workload."""
    moving = [w for w in facts.workloads if w.asynchronous]
    if not moving:
        return None
    staying = [w for w in facts.workloads if not w.asynchronous]
    rest = summed([w.demand for w in staying], facts.hours)
    breakdown = cost_on_profile(
        deployment=facts.deployment,
        demand_per_hour=with_headroom(rest, headroom),
        mode=ScalingMode.ALWAYS_ON,
    )
    names = ", ".join(w.name for w in moving)
    moved_tokens = sum(sum(w.demand) for w in moving)
    return _plan(
        kind=PoolKind.OFFLOAD,
        facts=[facts],
        host=facts,
        breakdown=breakdown,
        target=(
            f"{facts.name}: {names} to {tier}; {breakdown.replicas_per_hour[0]} × "
            f"{facts.replica} always on for the rest"
        ),
        demand=facts.demand,
        moved={w.name: w.attributed_usd for w in moving},
        assumptions=(
            _headroom_sentence(headroom),
            f"{moved_tokens:,} output tokens of asynchronous work in the window move to {tier}, "
            f"${tier_usd:,.2f} over the window for their tokens.",
            *tier_sources,
        ),
        extra_monthly=monthly(tier_usd, facts.hours),
    )


def replicas_from_cost(hourly_cost: Sequence[Decimal], usd_per_replica_hour: Decimal) -> list[int]:
    """Replicas billed in each hour: the hour's cost over one replica's hourly price, rounded
    to the nearest whole replica."""
    if usd_per_replica_hour <= 0:
        raise ValueError("usd_per_replica_hour must be positive")
    return [math.floor(cost / usd_per_replica_hour + Decimal("0.5")) for cost in hourly_cost]
