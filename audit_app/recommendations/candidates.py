"""The savings plan's options over a window, read from the data: every move a workload or a
serving pool could make, each with the cost units of today's spend it re-prices, their price
after the change (the cost model's), its evidence and its risk. `planning` (pure) picks the plan.

One concern, though long: reading a window's options (what each re-prices, for how much, on
which evidence, at what risk); choosing among them is `planning`'s.

Its rules in full: `docs/methods.md`, section "The savings plan's options".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from decimal import Decimal
from typing import Any

from audit_app.costs.costing import HOURS_IN_MONTH, ScalingMode, cost_on_profile
from audit_app.costs.rollups import rollups_in_range
from audit_app.lib.formatting import money_unit
from audit_app.models import Workload, WorkloadClass
from audit_app.recommendations.evidence import (
    LatencyBounds,
    MeasuredPoint,
    gate_command,
    operating_point,
    unbounded,
)
from audit_app.recommendations.options import (
    COLD_START_SECONDS,
    Instance,
    Option,
    TargetKind,
    Throughput,
    Usage,
    batch_option,
    dedicated_price,
    model_class,
    provider_options,
    with_headroom,
)
from audit_app.recommendations.planning import Evidence, PlanOption
from audit_app.recommendations.pool_options import PoolKind, PoolPlan, summed
from audit_app.recommendations.pool_replicas import measured_points
from audit_app.recommendations.pools import PricedPool, headroom, pool_plans, priced_pools
from audit_app.recommendations.pools import plan_details as pool_plan_details
from audit_app.recommendations.targets import OptionTargets, min_savings, option_targets
from audit_app.reporting.filters import SpendFilters
from audit_app.reporting.selectors import hourly_output_tokens, workload_usage
from audit_app.reporting.spend import SpendLines, SpendRow, spend_lines
from audit_app.workloads.services import effective_class

UNMEASURED_CONFIDENCE = "Low until a benchmark gate measures this model on this hardware."


def pool_unit(pool: str) -> str:
    return f"pool:{pool}"


def api_unit(workload: str, provider: str, model: str) -> str:
    return f"api:{workload}|{provider}|{model}"


def monthly(amount: Decimal, hours: int) -> Decimal:
    return amount * HOURS_IN_MONTH / hours


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """One option over a window: the plan's view, what a recommendation stores, and why."""

    option: PlanOption
    lookup: dict[str, Any]  # the Recommendation it is stored as
    now_monthly: Decimal
    assumptions: tuple[str, ...]
    confidence: str
    risk: str
    gate_command: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    source_upload_ids: tuple[int, ...] = ()

    @property
    def savings_monthly(self) -> Decimal:
        return self.now_monthly - self.option.after_monthly


@dataclass(frozen=True, kw_only=True)
class WindowSpend:
    start: date
    end: date
    hours: int
    spend_monthly: Decimal
    units_now: dict[str, Decimal]  # each cost unit's spend, a month


def window_spend(*, start: date, end: date, lines: SpendLines | None = None) -> WindowSpend:
    """Today's spend over start..end as cost units, each scaled to a month."""
    hours = ((end - start).days + 1) * 24
    if lines is None:
        lines = spend_lines(SpendFilters(start=start, end=end))
    units: dict[str, Decimal] = defaultdict(Decimal)
    for (workload, provider, model, pool), row in lines.grouped(
        "workload", "provider", "model", "pool"
    ).items():
        units[pool_unit(pool) if pool else api_unit(workload, provider, model)] += row.spend_usd
    for (_day, pool), amount in lines.idle.items():
        units[pool_unit(pool)] += amount
    return WindowSpend(
        start=start,
        end=end,
        hours=hours,
        spend_monthly=monthly(sum(units.values(), Decimal(0)), hours),
        units_now={unit: monthly(amount, hours) for unit, amount in units.items()},
    )


@dataclass(frozen=True, kw_only=True)
class _Context:
    start: date
    end: date
    hours: int
    spend: WindowSpend
    targets: OptionTargets
    pools: dict[str, PricedPool]
    bounds: dict[str, LatencyBounds]
    classes: dict[str, str]
    room: Decimal
    floor: Decimal

    def bounds_of(self, workload: str) -> LatencyBounds:
        return self.bounds.get(workload) or unbounded(workload)

    def now_of(self, units: frozenset[str]) -> Decimal:
        return sum((self.spend.units_now.get(u, Decimal(0)) for u in units), Decimal(0))


@dataclass(frozen=True, kw_only=True)
class _Move:
    """One way to serve a workload's traffic of one provider/model elsewhere, before the pool
    it leaves is accounted for."""

    kind: TargetKind
    target: str
    to: str
    cost_monthly: Decimal
    assumptions: tuple[str, ...]
    confidence: str
    evidence: Evidence
    realtime: bool
    needs_benchmark: bool
    risk: str
    gate: str = ""
    peak: int = 0
    capacity: int | None = None


def _bounds_by_workload(
    start: date, end: date, workloads: Sequence[Workload]
) -> dict[str, LatencyBounds]:
    usage = {u.name: u for u in workload_usage(queryset=rollups_in_range(start=start, end=end))}
    out = {}
    for workload in workloads:
        u = usage.get(workload.name)
        slo = workload.latency_slo_ms
        out[workload.name] = LatencyBounds(
            workload=workload.name,
            ttft_ms=float(slo) if slo else (u.ttft.p95_ms if u else None),
            tpot_ms=u.tpot.p95_ms if u else None,
            slo=bool(slo),
        )
    return out


def _remainder(ctx: _Context, pool: str, leaving: str) -> tuple[Decimal, bool]:
    """The pool's monthly cost once ``leaving`` has left, and whether it is turned off: off
    when nothing else runs on it, else right-sized always on for what stays unless that costs
    more than its bill today (then it stays as it is)."""
    today = ctx.spend.units_now.get(pool_unit(pool), Decimal(0))
    priced = ctx.pools.get(pool)
    if priced is None:
        return today, False
    staying = [w for w in priced.facts.workloads if w.name != leaving and any(w.demand)]
    if not staying:
        return Decimal(0), True
    demand = summed([w.demand for w in staying], priced.facts.hours)
    breakdown = cost_on_profile(
        deployment=priced.facts.deployment,
        demand_per_hour=with_headroom(demand, ctx.room),
        mode=ScalingMode.ALWAYS_ON,
    )
    return min(today, monthly(breakdown.total_cost_usd, ctx.hours)), False


def _leaving_pool(ctx: _Context, pool: str, workload: str) -> tuple[Decimal, bool, str]:
    """(the pool's cost after, whether it is turned off, the sentence saying so)."""
    rest, removed = _remainder(ctx, pool, workload)
    if removed:
        return rest, True, f"Nothing else runs on {pool}: it is turned off."
    if rest < ctx.spend.units_now.get(pool_unit(pool), Decimal(0)):
        return rest, False, f"{pool} is right-sized, always on, for the workloads left on it."
    return rest, False, f"{pool}'s bill stays as it is for the workloads left on it."


def _candidate(
    ctx: _Context, *, workload: Workload, provider: str, model: str, pool: str, move: _Move
) -> Candidate:
    """``move`` of ``workload``'s traffic of one provider/model, with the pool it leaves."""
    name = workload.name
    touches = {f"workload:{name}"}
    removes: set[str] = set()
    after = move.cost_monthly
    assumptions = move.assumptions
    if pool:
        units = frozenset({pool_unit(pool)})
        touches.add(pool_unit(pool))
        rest, removed, sentence = _leaving_pool(ctx, pool, name)
        after += rest
        assumptions = (*assumptions, sentence)
        if removed:
            removes.add(pool_unit(pool))
    else:
        units = frozenset({api_unit(name, provider, model)})
    option = PlanOption(
        key="",
        id=None,
        workload=name,
        workload_class=ctx.classes.get(name),
        from_pool=pool or None,
        to_pool=move.to,
        target_kind=move.kind.value,
        target=move.target,
        units=units,
        after_monthly=after,
        touches=frozenset(touches),
        removes=frozenset(removes),
        peak_demand=move.peak,
        peak_capacity=move.capacity,
        evidence=move.evidence,
        moves_realtime=move.realtime,
        needs_benchmark=move.needs_benchmark,
    )
    return Candidate(
        option=option,
        lookup={"workload": workload, "target_kind": move.kind.value, "target": move.target[:300]},
        now_monthly=ctx.now_of(units),
        assumptions=tuple(assumptions),
        confidence=move.confidence,
        risk=move.risk,
        gate_command=move.gate,
    )


# --- Dedicated instances -------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class _Throughput:
    tokens_per_second: float  # per replica of the instance
    evidence: Evidence
    source: str
    point: MeasuredPoint | None = None


def _instance_throughput(
    *,
    instance: Instance,
    hardware: str,
    model: str,
    bounds: LatencyBounds,
    realtime: bool,
    catalogued: Throughput | None,
) -> _Throughput | None:
    """Measured (for real-time work: the operating point within its latency; else the best
    point), else catalogued for the model's size class, else None."""
    points = measured_points(model=model, hardware=hardware)
    if realtime:
        point = operating_point(points, bounds)
    else:
        point = max(points, key=lambda p: p.tokens_per_second, default=None)
    accelerators = instance.accelerator_count or 1
    if point is not None:
        per_replica = point.tokens_per_second / point.accelerators * accelerators
        return _Throughput(
            tokens_per_second=per_replica,
            evidence=Evidence.MEASURED,
            point=point,
            source=f"{per_replica:,.0f} output tokens/s per {instance.name} for {model}: "
            f"measured, benchmark run {point.run_id} ({point.run_name}), point {point.point} "
            f"({point.load}): p95 TTFT {point.p95_ttft_ms or 0:,.0f} ms, p95 TPOT "
            f"{point.p95_tpot_ms or 0:,.1f} ms.",
        )
    if catalogued is None:
        return None
    return _Throughput(
        tokens_per_second=catalogued.tokens_per_second,
        evidence=Evidence.CATALOGUED,
        source=f"{catalogued.tokens_per_second:,.0f} output tokens/s per {instance.name} for a "
        f"{catalogued.model_class.upper()} model: {catalogued.source} ({catalogued.source_date}; "
        f"{catalogued.notes}). Catalogued, not measured.",
    )


def _instance_words(
    *,
    throughput: _Throughput,
    realtime: bool,
    replicas: int,
    busy: float,
    bounds: LatencyBounds,
    model: str,
    hardware: str,
    room: Decimal,
    peak: int,
) -> tuple[str, str, str]:
    """(the sizing sentence, the risk, the confidence) of a dedicated-instance move."""
    if not realtime:
        return (
            "Scaled to zero when idle, following the hourly output tokens, with a "
            f"{COLD_START_SECONDS:.0f} s cold start per replica added.",
            "Asynchronous work: cold starts delay only work nobody waits on; the busiest hour "
            f"keeps {replicas} replica(s) {busy:.0%} busy at the {throughput.evidence.value} "
            "throughput.",
            "Medium: throughput measured on this hardware."
            if throughput.evidence is Evidence.MEASURED
            else f"{UNMEASURED_CONFIDENCE[:-1]}: the throughput is an assumption.",
        )
    sizing = (
        f"Always on at {replicas} replica(s): the busiest hour ({peak:,} output tokens) plus "
        f"{room:.0%} headroom."
    )
    if throughput.point is not None:
        return (
            sizing,
            f"Measured: {throughput.point.sentence()}, within {bounds.sentence()}; the busiest "
            f"hour keeps {replicas} replica(s) {busy:.0%} busy at that point's throughput.",
            "Medium: latency and throughput measured on this hardware; a pilot confirms them "
            "on the workload's own traffic.",
        )
    return (
        sizing,
        f"Unmeasured: no benchmark run of {model} on {hardware} meets {bounds.sentence()}; "
        "the throughput is catalogued. It counts once a run passes the gate below.",
        UNMEASURED_CONFIDENCE,
    )


def _instance_moves(
    ctx: _Context, *, workload: str, model: str, pool: str, demand: Sequence[int], realtime: bool
) -> list[_Move]:
    """Dedicated instances for one workload's traffic of ``model``: scaled to zero for
    asynchronous work, always on (sized for the busiest hour) for real-time work."""
    if not any(demand):
        return []
    size = model_class(model)
    catalogued = {
        o.instance.name: o.throughput
        for o in ctx.targets.offers
        if o.throughput.model_class == size
    }
    current = ctx.pools[pool].facts.replica if pool in ctx.pools else ""
    baseline = next((p.run_id for p in measured_points(model=model, hardware=current)), None)
    bounds = ctx.bounds_of(workload)
    moves = []
    for instance in ctx.targets.instances.values():
        hardware = f"{instance.name} ({instance.accelerator})"
        throughput = (
            _instance_throughput(
                instance=instance,
                hardware=hardware,
                model=model,
                bounds=bounds,
                realtime=realtime,
                catalogued=catalogued.get(instance.name),
            )
            if hardware != current
            else None
        )
        if throughput is not None:
            moves.append(
                _instance_move(
                    ctx,
                    instance=instance,
                    throughput=throughput,
                    demand=demand,
                    realtime=realtime,
                    bounds=bounds,
                    model=model,
                    baseline=baseline,
                )
            )
    return moves


def _instance_move(
    ctx: _Context,
    *,
    instance: Instance,
    throughput: _Throughput,
    demand: Sequence[int],
    realtime: bool,
    bounds: LatencyBounds,
    model: str,
    baseline: int | None,
) -> _Move:
    hardware = f"{instance.name} ({instance.accelerator})"
    price = dedicated_price(
        instance=instance,
        tokens_per_second=throughput.tokens_per_second,
        demand=demand,
        always_on=realtime,
        headroom=ctx.room,
    )
    sizing, risk, confidence = _instance_words(
        throughput=throughput,
        realtime=realtime,
        replicas=price.replicas,
        busy=price.peak / price.capacity if price.capacity else 0.0,
        bounds=bounds,
        model=model,
        hardware=hardware,
        room=ctx.room,
        peak=price.peak,
    )
    needs = realtime and throughput.evidence is not Evidence.MEASURED
    return _Move(
        kind=TargetKind.DEDICATED_HARDWARE,
        target=f"{hardware}, {'always on' if realtime else 'scale to zero'}",
        to=instance.name,
        cost_monthly=price.monthly,
        assumptions=(
            throughput.source,
            f"{money_unit(instance.usd_per_hour)}/hour on demand "
            f"({instance.source}, {instance.source_date}).",
            sizing,
        ),
        confidence=confidence,
        evidence=throughput.evidence,
        realtime=realtime,
        needs_benchmark=needs,
        risk=risk,
        gate=gate_command(
            bounds=bounds,
            model=model,
            hardware=instance.accelerator,
            accelerators=instance.accelerator_count,
            baseline=baseline,
        )
        if needs
        else "",
        peak=price.peak,
        capacity=price.capacity,
    )


# --- Priced per token ----------------------------------------------------------------------
def _token_move(option: Option, *, provider: str, bounds: LatencyBounds, realtime: bool) -> _Move:
    """A batch tier or another provider's listing, as a move with its risk."""
    listing = option.kind is TargetKind.CHEAPER_PROVIDER
    to = option.target.split(" ", 1)[0] if listing else provider
    needs = realtime and listing
    if needs:
        risk = (
            f"Unmeasured: no benchmark run of the model on {to} meets {bounds.sentence()}. It "
            "counts once a run passes the gate below."
        )
    elif option.kind is TargetKind.BATCH_API:
        risk = "Asynchronous work: results arrive within 24 hours instead of seconds."
    else:
        risk = (
            "Asynchronous work: latency is not at stake; quality and quantisation on "
            f"{to} want an evaluation."
        )
    return _Move(
        kind=option.kind,
        target=option.target,
        to=to,
        cost_monthly=option.projected_monthly,
        assumptions=option.assumptions,
        confidence=option.confidence,
        evidence=Evidence.CATALOGUED,
        realtime=realtime,
        needs_benchmark=needs,
        risk=risk,
    )


def _entry_moves(
    ctx: _Context,
    *,
    workload: Workload,
    key: tuple[str, str, str],
    row: SpendRow,
    batch_requests: int,
    realtime: bool,
) -> list[_Move]:
    """Every move of one workload's traffic of one provider/model (``key`` with its pool)."""
    provider, model, pool = key
    usage = Usage(
        provider=provider,
        model=model,
        spend=row.api_spend_usd,
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        batch_share=batch_requests / row.requests if row.requests else 0.0,
    )
    options = list(provider_options(usage, hours=ctx.hours, listings=ctx.targets.listings))
    if not realtime and not pool:
        price = ctx.targets.prices.find(provider=provider, model=model, day=ctx.end)
        found = batch_option(usage, hours=ctx.hours, price=price)
        options = [found, *options] if found is not None else options
    bounds = ctx.bounds_of(workload.name)
    moves = [_token_move(o, provider=provider, bounds=bounds, realtime=realtime) for o in options]
    moves = [
        replace(m, gate=gate_command(bounds=bounds, model=model, hosted_provider=m.to))
        if m.needs_benchmark
        else m
        for m in moves
    ]
    demand = hourly_output_tokens(
        queryset=rollups_in_range(start=ctx.start, end=ctx.end, workload=workload.name).filter(
            provider=provider, model=model
        ),
        start=ctx.start,
        end=ctx.end,
    )
    return moves + _instance_moves(
        ctx, workload=workload.name, model=model, pool=pool, demand=demand, realtime=realtime
    )


def _workload_candidates(
    ctx: _Context, workload: Workload, rows: dict[tuple[str, str, str], SpendRow]
) -> list[Candidate]:
    """Every move of a classified workload's traffic; ``rows`` is its spend per (provider,
    model, pool). A workload whose spend could not save the minimum is skipped unread."""
    cls = ctx.classes.get(workload.name)
    if cls not in (WorkloadClass.ASYNC, WorkloadClass.REALTIME):
        return []
    if not any(pool for _p, _m, pool in rows) and (
        monthly(sum((r.spend_usd for r in rows.values()), Decimal(0)), ctx.hours) < ctx.floor
    ):
        return []
    batch: dict[tuple[str, str], int] = defaultdict(int)
    for item in (
        rollups_in_range(start=ctx.start, end=ctx.end, workload=workload.name)
        .filter(batch_api=True)
        .values("provider", "model", "requests")
    ):
        batch[(item["provider"], item["model"])] += item["requests"]
    out = []
    for key, row in sorted(rows.items()):
        if row.spend_usd <= 0:
            continue
        provider, model, pool = key
        for move in _entry_moves(
            ctx,
            workload=workload,
            key=key,
            row=row,
            batch_requests=batch[(provider, model)],
            realtime=cls == WorkloadClass.REALTIME,
        ):
            out.append(
                _candidate(
                    ctx, workload=workload, provider=provider, model=model, pool=pool, move=move
                )
            )
    return out


# --- Pools ---------------------------------------------------------------------------------
def _pool_demand(plan: PoolPlan, pools: dict[str, PricedPool]) -> list[int]:
    facts = [pools[name].facts for name in plan.pools if name in pools]
    if plan.kind is PoolKind.OFFLOAD:
        staying = [w.demand for f in facts for w in f.workloads if not w.asynchronous]
        return list(summed(staying, facts[0].hours))
    return list(summed([f.demand for f in facts], facts[0].hours))


def _queueing(ctx: _Context, plan: PoolPlan, evidence: Evidence) -> tuple[int, int, str]:
    """(the busiest hour's demand, what the plan serves then, the sentence)."""
    demand = _pool_demand(plan, ctx.pools)
    hour = max(range(len(demand)), key=lambda h: demand[h]) if demand else 0
    peak = demand[hour] if demand else 0
    replicas = plan.replicas_per_hour[hour] if plan.replicas_per_hour else 0
    capacity = int(replicas * ctx.pools[plan.pool].facts.deployment.tokens_per_replica_hour)
    busy = peak / capacity if capacity else 0.0
    return (
        peak,
        capacity,
        f"Queueing: the busiest hour needs {peak:,} output tokens; {replicas} replica(s) of "
        f"{plan.pool} serve {capacity:,} ({busy:.0%} busy) at the {evidence.value} throughput.",
    )


def _cold_start_block(ctx: _Context, plan: PoolPlan) -> str:
    """Why the plan's cold starts keep it out ("" when they do not)."""
    for r in plan.risks:
        bound = ctx.bounds.get(r.workload)
        limit = bound.ttft_ms if bound else None
        later = r.p95_ttft_with_cold_starts_ms
        if r.share > 0 and (limit is None or later is None or later > limit):
            what = "its latency SLO" if bound is not None and bound.slo else "its p95 TTFT"
            return (
                f"cold starts would raise {r.workload}'s p95 TTFT to {later or 0:,.0f} ms, "
                f"above {what} ({limit or 0:,.0f} ms)"
            )
    return ""


def _consolidation_evidence(
    ctx: _Context, priced: PricedPool, plan: PoolPlan
) -> tuple[bool, list[str], str]:
    """For a consolidation moving real-time work to other hardware: (measured for every such
    workload, the sentences, the gate line for the first that is not)."""
    host = ctx.pools[plan.pool].facts
    moved = [
        (name, w)
        for name in plan.pools
        if name != plan.pool and name in ctx.pools and ctx.pools[name].facts.replica != host.replica
        for w in ctx.pools[name].facts.workloads
        if w.realtime
    ]
    points = measured_points(model=priced.model, hardware=host.replica)
    measured, sentences, gate = True, [], ""
    for pool, w in moved:
        bounds = ctx.bounds_of(w.name)
        point = operating_point(points, bounds)
        if point is not None:
            sentences.append(f"Measured: {point.sentence()}, within {bounds.sentence()}.")
            continue
        measured = False
        sentences.append(
            f"Unmeasured: no benchmark run of {priced.model} on {host.replica} meets "
            f"{bounds.sentence()}; it counts once a run passes the gate below."
        )
        current = ctx.pools[pool].facts.replica
        gate = gate or gate_command(
            bounds=bounds,
            model=priced.model,
            hardware=host.replica.split("(")[-1].rstrip(")"),
            accelerators=host.deployment.accelerators_per_replica,
            baseline=next(
                (p.run_id for p in measured_points(model=priced.model, hardware=current)), None
            ),
        )
    return measured, sentences, gate


def _pool_confidence(*, needs_benchmark: bool, blocked: str, evidence: Evidence) -> str:
    if needs_benchmark:
        return "Low until a benchmark gate measures the model on the host pool's hardware."
    if blocked:
        return f"Low: {blocked}."
    if evidence is Evidence.MEASURED:
        return "High: measured demand and bill; throughput per replica from a benchmark run."
    return "Medium: measured demand and bill; throughput per replica catalogued or stated."


def _pool_candidate(ctx: _Context, priced: PricedPool, plan: PoolPlan) -> Candidate:
    evidence = Evidence.MEASURED if ctx.pools[plan.pool].measured else Evidence.CATALOGUED
    peak, capacity, queueing = _queueing(ctx, plan, evidence)
    risk = [queueing]
    risk.append(
        "No cold starts: capacity stays on every hour."
        if plan.mode is ScalingMode.ALWAYS_ON
        else plan.risk
    )
    blocked = _cold_start_block(ctx, plan) if plan.mode is not ScalingMode.ALWAYS_ON else ""
    needs_benchmark, gate, moves_realtime = False, "", False
    if plan.kind is PoolKind.CONSOLIDATE:
        measured, sentences, gate = _consolidation_evidence(ctx, priced, plan)
        risk.extend(sentences)
        moves_realtime = bool(sentences)
        needs_benchmark = not measured
        evidence = Evidence.MEASURED if sentences and measured else evidence
    units = frozenset(pool_unit(p) for p in plan.pools)
    others = [p for p in plan.pools if p != plan.pool]
    consolidate = plan.kind is PoolKind.CONSOLIDATE
    option = PlanOption(
        key="",
        id=None,
        workload=None,
        workload_class=None,
        from_pool=", ".join(others) if consolidate else plan.pool,
        to_pool=plan.target.split(" to ", 1)[-1].split(";", 1)[0]
        if plan.kind is PoolKind.OFFLOAD
        else plan.pool,
        target_kind=plan.kind.value,
        target=plan.target,
        units=units,
        after_monthly=plan.modelled_monthly,
        touches=units | frozenset(f"workload:{w}" for w in plan.moved_monthly),
        removes=frozenset(pool_unit(p) for p in others) if consolidate else frozenset(),
        receives=frozenset({pool_unit(plan.pool)}) if consolidate else frozenset(),
        peak_demand=peak,
        peak_capacity=capacity,
        evidence=evidence,
        moves_realtime=moves_realtime,
        needs_benchmark=needs_benchmark,
        blocked=blocked,
    )
    return Candidate(
        option=option,
        lookup={
            "pool": priced.pool,
            "workload": None,
            "target_kind": plan.kind.value,
            "target": plan.target[:300],
        },
        now_monthly=ctx.now_of(units),
        assumptions=plan.assumptions,
        confidence=_pool_confidence(
            needs_benchmark=needs_benchmark, blocked=blocked, evidence=evidence
        ),
        risk=" ".join(risk),
        gate_command=gate,
        details={**pool_plan_details(plan), "models": [priced.model]},
        source_upload_ids=tuple(priced.report.upload_ids),
    )


# --- A window's options --------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class WindowOptions:
    spend: WindowSpend
    candidates: list[Candidate]


def window_options(
    *, start: date, end: date, targets: OptionTargets | None = None
) -> WindowOptions:
    """Every option over start..end with its figures, evidence and risk."""
    targets = targets or option_targets()
    lines = spend_lines(SpendFilters(start=start, end=end))
    spend = window_spend(start=start, end=end, lines=lines)
    workloads = list(
        Workload.objects.select_related("classification").prefetch_related("overrides")
    )
    pools = {p.pool.name: p for p in priced_pools(start=start, end=end, targets=targets)}
    ctx = _Context(
        start=start,
        end=end,
        hours=spend.hours,
        spend=spend,
        targets=targets,
        pools=pools,
        bounds=_bounds_by_workload(start, end, workloads),
        classes={w.name: str(effective_class(w)) for w in workloads},
        room=headroom(),
        floor=min_savings(),
    )
    rows: dict[str, dict[tuple[str, str, str], SpendRow]] = defaultdict(dict)
    for (name, provider, model, pool), row in lines.grouped(
        "workload", "provider", "model", "pool"
    ).items():
        rows[name][(provider, model, pool)] = row
    candidates: list[Candidate] = []
    for workload in workloads:
        candidates.extend(_workload_candidates(ctx, workload, rows.get(workload.name, {})))
    for priced, plan in pool_plans(list(pools.values()), targets=targets):
        candidates.append(_pool_candidate(ctx, priced, plan))
    return WindowOptions(spend=spend, candidates=candidates)


def stored_plan_fields(candidate: Candidate) -> dict[str, Any]:
    """What a recommendation stores of its option for the plan (details["plan"])."""
    o = candidate.option
    return {
        "workload_class": o.workload_class,
        "from_pool": o.from_pool,
        "to_pool": o.to_pool,
        "units": sorted(o.units),
        "after_monthly_usd": str(o.after_monthly),
        "touches": sorted(o.touches),
        "removes": sorted(o.removes),
        "receives": sorted(o.receives),
        "peak_demand": o.peak_demand,
        "peak_capacity": o.peak_capacity,
        "evidence": o.evidence.value,
        "moves_realtime": o.moves_realtime,
        "needs_benchmark": o.needs_benchmark,
        "blocked": o.blocked,
        "risk": candidate.risk,
        "gate_command": candidate.gate_command,
    }
