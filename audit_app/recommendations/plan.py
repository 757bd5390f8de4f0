"""The savings plan's options, read from the data: every move a workload or a serving pool could
make over a window, each with the cost units of today's spend it re-prices and their price
after the change (the cost model's), its evidence and its risk. `planning` (pure) picks the plan.

Cost units come from the one read model (`reporting.spend`): a pool's whole bill (its
workloads' GPU shares and its idle cost) is ``pool:<name>``; a workload's API spend on one
provider and model is ``api:<workload>|<provider>|<model>``. Their sum is the window's spend.

- Workload options (asynchronous and real-time workloads): the batch tier, other providers of
  the same open model, dedicated instances. A workload that leaves a pool leaves the pool
  right-sized for the rest (always on), or turned off when nothing is left. Real-time traffic
  moves only to instances run always on, and only with measured evidence: a benchmark point of
  the model on that hardware whose p95 TTFT and TPOT are within the workload's (its latency
  SLO replacing the TTFT bound when set). Without it the option needs a benchmark, and says
  which gate to run.
- Pool options (`pools.pool_plans`): right-size, autoscale, consolidate, offload. Autoscale
  is held back when cold starts would raise a real-time workload's p95 TTFT above its own (or
  its SLO); a consolidation moving real-time traffic to other hardware needs measured
  evidence like a workload move.

`plan_read` is what every surface shows: the plan over a window, from the stored
recommendations (the default window) or from the options re-read for another window.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from django.utils import timezone

from audit_app.costs.costing import (
    HOURS_IN_MONTH,
    ScalingMode,
    cost_on_profile,
)
from audit_app.models import Recommendation, RecommendationEvent, Workload, WorkloadClass
from audit_app.recommendations.options import (
    COLD_START_SECONDS,
    TargetKind,
    Usage,
    batch_option,
    dedicated_price,
    model_class,
    provider_options,
    with_headroom,
)
from audit_app.recommendations.planning import Evidence, Plan, PlanOption, plan_build
from audit_app.recommendations.pool_options import PoolKind, PoolPlan, summed
from audit_app.recommendations.pool_replicas import MeasuredPoint, measured_points
from audit_app.recommendations.pools import PricedPool, headroom, pool_plans, priced_pools
from audit_app.recommendations.pools import plan_details as pool_plan_details
from audit_app.recommendations.services import OptionTargets, min_savings, option_targets
from audit_app.reporting.filters import SpendFilters, date_window
from audit_app.reporting.selectors import (
    hourly_output_tokens,
    rollups_in_range,
    workload_usage,
)
from audit_app.reporting.spend import SpendLines, spend_lines
from audit_app.workloads.services import analysis_window, effective_class

# Days of data a verified change needs after its date before its saving is measured.
REALISED_MIN_DAYS = 7
REALISED_BEFORE_DAYS = 28


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
        unit = pool_unit(pool) if pool else api_unit(workload, provider, model)
        units[unit] += row.spend_usd
    for (_day, pool), amount in lines.idle.items():
        units[pool_unit(pool)] += amount
    total = sum(units.values(), Decimal(0))
    return WindowSpend(
        start=start,
        end=end,
        hours=hours,
        spend_monthly=monthly(total, hours),
        units_now={unit: monthly(amount, hours) for unit, amount in units.items()},
    )


# --- Evidence ------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class LatencyBounds:
    """What a real-time workload tolerates: its observed p95s (or its SLO for TTFT)."""

    workload: str
    ttft_ms: float | None
    tpot_ms: float | None
    slo: bool = False

    def sentence(self) -> str:
        parts = []
        if self.ttft_ms is not None:
            what = "latency SLO" if self.slo else "p95 TTFT"
            parts.append(f"{what} {self.ttft_ms:,.0f} ms")
        if self.tpot_ms is not None:
            parts.append(f"p95 TPOT {self.tpot_ms:,.1f} ms")
        return f"{self.workload}'s {' and '.join(parts) or 'latency (none observed)'}"


def operating_point(points: Sequence[MeasuredPoint], bounds: LatencyBounds) -> MeasuredPoint | None:
    """The highest-throughput measured point whose p95 TTFT and TPOT are within ``bounds``."""
    if bounds.ttft_ms is None and bounds.tpot_ms is None:
        return None
    fitting = [
        p
        for p in points
        if (
            bounds.ttft_ms is None
            or (p.p95_ttft_ms is not None and p.p95_ttft_ms <= bounds.ttft_ms)
        )
        and (
            bounds.tpot_ms is None
            or (p.p95_tpot_ms is not None and p.p95_tpot_ms <= bounds.tpot_ms)
        )
    ]
    return max(fitting, key=lambda p: (p.tokens_per_second, -p.run_id), default=None)


def gate_command(
    *,
    workload: str,
    model: str,
    hardware: str,
    accelerators: int | None,
    bounds: LatencyBounds,
    baseline: int | None,
    hosted_provider: str = "",
) -> str:
    """The `manage.py gate` line whose run would give a real-time move its evidence."""
    meta = [f"--meta-candidate model={model}"]
    if hosted_provider:
        meta += ["--meta-candidate serving=hosted", f"--meta-candidate provider={hosted_provider}"]
    else:
        meta += [f"--meta-candidate gpu_type='{hardware}'"]
        if accelerators:
            meta.append(f"--meta-candidate num_gpus={accelerators}")
    slo = []
    if bounds.ttft_ms is not None:
        slo.append(f"--slo-ttft-ms {bounds.ttft_ms:.0f}")
    if bounds.tpot_ms is not None:
        slo.append(f"--slo-tpot-ms {bounds.tpot_ms:.1f}")
    return " ".join(
        [
            "manage.py gate",
            f"--baseline {baseline if baseline is not None else 'BASELINE.json'}",
            "--candidate CANDIDATE.json",
            *meta,
            *slo,
            f"--traffic-workload {workload}",
        ]
    )


# --- Reading a window ------------------------------------------------------------------------
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


def _bounds_by_workload(
    start: date, end: date, workloads: Sequence[Workload]
) -> dict[str, LatencyBounds]:
    usage = {u.name: u for u in workload_usage(queryset=rollups_in_range(start=start, end=end))}
    out = {}
    for workload in workloads:
        u = usage.get(workload.name)
        ttft = u.ttft.p95_ms if u else None
        tpot = u.tpot.p95_ms if u else None
        slo = workload.latency_slo_ms
        out[workload.name] = LatencyBounds(
            workload=workload.name,
            ttft_ms=float(slo) if slo else ttft,
            tpot_ms=tpot,
            slo=bool(slo),
        )
    return out


def _remainder(ctx: _Context, pool: str, leaving: str) -> tuple[Decimal, bool, int, int | None]:
    """The pool's monthly cost once ``leaving`` has left: (cost, removed, peak, capacity)."""
    priced = ctx.pools.get(pool)
    if priced is None:
        return ctx.spend.units_now.get(pool_unit(pool), Decimal(0)), False, 0, None
    staying = [w for w in priced.facts.workloads if w.name != leaving and any(w.demand)]
    if not staying:
        return Decimal(0), True, 0, None
    demand = summed([w.demand for w in staying], priced.facts.hours)
    breakdown = cost_on_profile(
        deployment=priced.facts.deployment,
        demand_per_hour=with_headroom(demand, ctx.room),
        mode=ScalingMode.ALWAYS_ON,
    )
    capacity = int(breakdown.replicas_per_hour[0] * priced.facts.deployment.tokens_per_replica_hour)
    return monthly(breakdown.total_cost_usd, ctx.hours), False, max(demand), capacity


def _entry_option(
    ctx: _Context,
    *,
    workload: Workload,
    provider: str,
    model: str,
    pool: str,
    kind: TargetKind,
    target: str,
    to: str,
    cost_monthly: Decimal,
    assumptions: Sequence[str],
    confidence: str,
    evidence: Evidence,
    realtime: bool,
    needs_benchmark: bool,
    risk: str,
    gate: str = "",
    peak: int = 0,
    capacity: int | None = None,
) -> Candidate:
    name = workload.name
    touches = {f"workload:{name}"}
    removes: set[str] = set()
    after = cost_monthly
    if pool:
        units = {pool_unit(pool)}
        touches.add(pool_unit(pool))
        rest, removed, _, _ = _remainder(ctx, pool, name)
        after += rest
        if removed:
            removes.add(pool_unit(pool))
            assumptions = (*assumptions, f"Nothing else runs on {pool}: it is turned off.")
        elif pool in ctx.pools:
            assumptions = (
                *assumptions,
                f"{pool} is right-sized, always on, for the workloads left on it.",
            )
        else:
            assumptions = (
                *assumptions,
                f"{pool}'s bill stays: no throughput is known to right-size it.",
            )
    else:
        units = {api_unit(name, provider, model)}
    option = PlanOption(
        key="",
        id=None,
        workload=name,
        workload_class=ctx.classes.get(name),
        from_pool=pool or None,
        to_pool=to,
        target_kind=kind.value,
        target=target,
        units=frozenset(units),
        after_monthly=after,
        touches=frozenset(touches),
        removes=frozenset(removes),
        peak_demand=peak,
        peak_capacity=capacity,
        evidence=evidence,
        moves_realtime=realtime,
        needs_benchmark=needs_benchmark,
    )
    now = sum((ctx.spend.units_now.get(u, Decimal(0)) for u in units), Decimal(0))
    return Candidate(
        option=option,
        lookup={"workload": workload, "target_kind": kind.value, "target": target[:300]},
        now_monthly=now,
        assumptions=tuple(assumptions),
        confidence=confidence,
        risk=risk,
        gate_command=gate,
    )


def _instance_candidates(
    ctx: _Context,
    *,
    workload: Workload,
    provider: str,
    model: str,
    pool: str,
    demand: Sequence[int],
    realtime: bool,
) -> list[Candidate]:
    """Dedicated instances for one workload's traffic of ``model``: scaled to zero for
    asynchronous work, always on (sized for the busiest hour) for real-time work."""
    size = model_class(model)
    if not any(demand):
        return []
    bounds = ctx.bounds.get(workload.name) or LatencyBounds(
        workload=workload.name, ttft_ms=None, tpot_ms=None
    )
    catalogued = {
        o.instance.name: o.throughput
        for o in ctx.targets.offers
        if o.throughput.model_class == size
    }
    current_hw = ctx.pools[pool].facts.replica if pool in ctx.pools else ""
    out = []
    for instance in ctx.targets.instances.values():
        hardware = f"{instance.name} ({instance.accelerator})"
        if hardware == current_hw:
            continue
        accelerators = instance.accelerator_count or 1
        points = measured_points(model=model, hardware=hardware)
        point = (
            operating_point(points, bounds)
            if realtime
            else max(points, key=lambda p: p.tokens_per_second, default=None)
        )
        sources: list[str] = []
        if point is not None:
            per_replica = point.tokens_per_second / point.accelerators * accelerators
            evidence = Evidence.MEASURED
            sources.append(
                f"{per_replica:,.0f} output tokens/s per {instance.name} for {model}: measured, "
                f"benchmark run {point.run_id} ({point.run_name}), point {point.point} "
                f"({point.load}): p95 TTFT {point.p95_ttft_ms or 0:,.0f} ms, p95 TPOT "
                f"{point.p95_tpot_ms or 0:,.1f} ms."
            )
        elif size in ("8b", "70b") and instance.name in catalogued:
            t = catalogued[instance.name]
            per_replica = t.tokens_per_second
            evidence = Evidence.CATALOGUED
            sources.append(
                f"{per_replica:,.0f} output tokens/s per {instance.name} for a "
                f"{(size or '').upper()} model: {t.source} ({t.source_date}; {t.notes}). "
                "Catalogued, not measured."
            )
        else:
            continue
        price = dedicated_price(
            instance=instance,
            tokens_per_second=per_replica,
            demand=demand,
            always_on=realtime,
            headroom=ctx.room,
        )
        replicas, capacity, peak = price.replicas, price.capacity, price.peak
        busy = peak / capacity if capacity else 0.0
        sources.append(
            f"${instance.usd_per_hour}/hour on demand ({instance.source}, {instance.source_date})."
        )
        needs_benchmark = realtime and evidence is not Evidence.MEASURED
        baseline = (
            next((p.run_id for p in measured_points(model=model, hardware=current_hw)), None)
            if current_hw
            else None
        )
        if realtime:
            sources.append(
                f"Always on at {replicas} replica(s): the busiest hour ({peak:,} output tokens) "
                f"plus {ctx.room:.0%} headroom."
            )
            if evidence is Evidence.MEASURED and point is not None:
                risk = (
                    f"Measured: run {point.run_id} point {point.point} ({point.load}) has p95 TTFT "
                    f"{point.p95_ttft_ms or 0:,.0f} ms and p95 TPOT {point.p95_tpot_ms or 0:,.1f} "
                    f"ms, within {bounds.sentence()}; the busiest hour keeps {replicas} "
                    f"replica(s) {busy:.0%} busy at that point's throughput."
                )
                confidence = "Medium: latency and throughput measured on this hardware; confirm "
                "with a pilot."
            else:
                risk = (
                    f"Unmeasured: no benchmark run of {model} on {hardware} meets "
                    f"{bounds.sentence()}; the throughput is catalogued. It counts once a run "
                    "passes the gate below."
                )
                confidence = "Low until a benchmark gate measures this model on this hardware."
        else:
            sources.append(
                "Scaled to zero when idle, following the hourly output tokens, with a "
                f"{COLD_START_SECONDS:.0f} s cold start per replica added."
            )
            risk = (
                "Asynchronous work: cold starts delay only work nobody waits on; the busiest "
                f"hour keeps {replicas} replica(s) {busy:.0%} busy at the {evidence.value} "
                "throughput."
            )
            confidence = (
                "Medium: throughput measured on this hardware."
                if evidence is Evidence.MEASURED
                else "Low until a benchmark gate measures this model on this hardware: the "
                "throughput is an assumption."
            )
        target = f"{hardware}, {'always on' if realtime else 'scale to zero'}"
        out.append(
            _entry_option(
                ctx,
                workload=workload,
                provider=provider,
                model=model,
                pool=pool,
                kind=TargetKind.DEDICATED_HARDWARE,
                target=target,
                to=instance.name,
                cost_monthly=price.monthly,
                assumptions=sources,
                confidence=confidence,
                evidence=evidence,
                realtime=realtime,
                needs_benchmark=needs_benchmark,
                risk=risk,
                gate=gate_command(
                    workload=workload.name,
                    model=model,
                    hardware=instance.accelerator,
                    accelerators=instance.accelerator_count,
                    bounds=bounds,
                    baseline=baseline,
                )
                if needs_benchmark
                else "",
                peak=peak,
                capacity=capacity,
            )
        )
    return out


def _workload_candidates(ctx: _Context, workload: Workload, lines: SpendLines) -> list[Candidate]:
    cls = ctx.classes.get(workload.name)
    if cls not in (WorkloadClass.ASYNC, WorkloadClass.REALTIME):
        return []
    realtime = cls == WorkloadClass.REALTIME
    rows = {
        (provider, model, pool): row
        for (name, provider, model, pool), row in lines.grouped(
            "workload", "provider", "model", "pool"
        ).items()
        if name == workload.name
    }
    queryset = rollups_in_range(start=ctx.start, end=ctx.end, workload=workload.name)
    batch: dict[tuple[str, str], int] = defaultdict(int)
    for item in queryset.filter(batch_api=True).values("provider", "model", "requests"):
        batch[(item["provider"], item["model"])] += item["requests"]
    bounds = ctx.bounds.get(workload.name) or LatencyBounds(
        workload=workload.name, ttft_ms=None, tpot_ms=None
    )
    out: list[Candidate] = []
    for (provider, model, pool), row in sorted(rows.items()):
        if row.spend_usd <= 0:
            continue
        usage = Usage(
            provider=provider,
            model=model,
            spend=row.api_spend_usd,
            input_tokens=row.input_tokens,
            output_tokens=row.output_tokens,
            batch_share=batch[(provider, model)] / row.requests if row.requests else 0.0,
        )
        options = []
        if not realtime and not pool:
            price = ctx.targets.prices.find(provider=provider, model=model, day=ctx.end)
            found = batch_option(usage, hours=ctx.hours, price=price)
            if found is not None:
                options.append(found)
        options.extend(provider_options(usage, hours=ctx.hours, listings=ctx.targets.listings))
        for option in options:
            listing = option.kind is TargetKind.CHEAPER_PROVIDER
            to = option.target.split(" ", 1)[0] if listing else provider
            needs = realtime and listing
            if realtime:
                risk = (
                    f"Unmeasured: no benchmark run of {model} on {to} meets {bounds.sentence()}. "
                    "It counts once a run passes the gate below."
                )
            elif option.kind is TargetKind.BATCH_API:
                risk = "Asynchronous work: results arrive within 24 hours instead of seconds."
            else:
                risk = (
                    "Asynchronous work: latency is not at stake; quality and quantisation on "
                    f"{to} want an evaluation."
                )
            out.append(
                _entry_option(
                    ctx,
                    workload=workload,
                    provider=provider,
                    model=model,
                    pool=pool,
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
                    gate=gate_command(
                        workload=workload.name,
                        model=model,
                        hardware="",
                        accelerators=None,
                        bounds=bounds,
                        baseline=None,
                        hosted_provider=to,
                    )
                    if needs
                    else "",
                )
            )
        demand = hourly_output_tokens(
            queryset=queryset.filter(provider=provider, model=model), start=ctx.start, end=ctx.end
        )
        out.extend(
            _instance_candidates(
                ctx,
                workload=workload,
                provider=provider,
                model=model,
                pool=pool,
                demand=demand,
                realtime=realtime,
            )
        )
    return out


def _pool_demand(plan: PoolPlan, pools: dict[str, PricedPool]) -> list[int]:
    facts = [pools[name].facts for name in plan.pools if name in pools]
    if plan.kind is PoolKind.OFFLOAD:
        staying = [w.demand for f in facts for w in f.workloads if not w.asynchronous]
        return list(summed(staying, facts[0].hours))
    return list(summed([f.demand for f in facts], facts[0].hours))


def _pool_candidate(ctx: _Context, priced: PricedPool, plan: PoolPlan) -> Candidate:
    host = ctx.pools[plan.pool]
    demand = _pool_demand(plan, ctx.pools)
    capacity_per_replica = host.facts.deployment.tokens_per_replica_hour
    peak_hour = max(range(len(demand)), key=lambda h: demand[h]) if demand else 0
    peak = demand[peak_hour] if demand else 0
    replicas = plan.replicas_per_hour[peak_hour] if plan.replicas_per_hour else 0
    capacity = int(replicas * capacity_per_replica)
    evidence = Evidence.MEASURED if host.measured else Evidence.CATALOGUED
    busy = peak / capacity if capacity else 0.0
    queueing = (
        f"Queueing: the busiest hour needs {peak:,} output tokens; {replicas} replica(s) of "
        f"{plan.pool} serve {capacity:,} ({busy:.0%} busy) at the {evidence.value} throughput."
    )
    needs_benchmark = False
    blocked = ""
    gate = ""
    moved_realtime = []
    if plan.kind is PoolKind.CONSOLIDATE:
        for name in plan.pools:
            if name == plan.pool or name not in ctx.pools:
                continue
            if ctx.pools[name].facts.replica == host.facts.replica:
                continue  # same hardware: nothing to measure
            moved_realtime += [w for w in ctx.pools[name].facts.workloads if w.realtime]
    risk_parts = [queueing]
    if plan.mode is ScalingMode.ALWAYS_ON:
        risk_parts.append("No cold starts: capacity stays on every hour.")
    else:
        risk_parts.append(plan.risk)
        for r in plan.risks:
            bound = ctx.bounds.get(r.workload)
            limit = bound.ttft_ms if bound else None
            later = r.p95_ttft_with_cold_starts_ms
            if r.share > 0 and (limit is None or later is None or later > limit):
                what = "its latency SLO" if bound is not None and bound.slo else "its p95 TTFT"
                blocked = (
                    f"cold starts would raise {r.workload}'s p95 TTFT to "
                    f"{later or 0:,.0f} ms, above {what} ({limit or 0:,.0f} ms)"
                )
    for w in moved_realtime:
        bounds = ctx.bounds.get(w.name) or LatencyBounds(
            workload=w.name, ttft_ms=None, tpot_ms=None
        )
        points = measured_points(model=priced.model, hardware=host.facts.replica)
        point = operating_point(points, bounds)
        if point is None:
            needs_benchmark = True
            evidence = Evidence.CATALOGUED if not host.measured else evidence
            risk_parts.append(
                f"Unmeasured: no benchmark run of {priced.model} on {host.facts.replica} meets "
                f"{bounds.sentence()}; it counts once a run passes the gate below."
            )
            baseline_hw = ctx.pools[[n for n in plan.pools if n != plan.pool][0]].facts.replica
            gate = gate_command(
                workload=w.name,
                model=priced.model,
                hardware=host.facts.replica.split("(")[-1].rstrip(")"),
                accelerators=host.facts.deployment.accelerators_per_replica,
                bounds=bounds,
                baseline=next(
                    (p.run_id for p in measured_points(model=priced.model, hardware=baseline_hw)),
                    None,
                ),
            )
        else:
            evidence = Evidence.MEASURED
            risk_parts.append(
                f"Measured: run {point.run_id} point {point.point} ({point.load}) meets "
                f"{bounds.sentence()}."
            )
    units = frozenset(pool_unit(p) for p in plan.pools)
    removes: frozenset[str] = frozenset()
    receives: frozenset[str] = frozenset()
    to_pool = plan.pool
    from_pool = plan.pool
    if plan.kind is PoolKind.CONSOLIDATE:
        removes = frozenset(pool_unit(p) for p in plan.pools if p != plan.pool)
        receives = frozenset({pool_unit(plan.pool)})
        from_pool = ", ".join(p for p in plan.pools if p != plan.pool)
    elif plan.kind is PoolKind.OFFLOAD:
        to_pool = plan.target.split(" to ", 1)[-1].split(";", 1)[0]
    option = PlanOption(
        key="",
        id=None,
        workload=None,
        workload_class=None,
        from_pool=from_pool,
        to_pool=to_pool,
        target_kind=plan.kind.value,
        target=plan.target,
        units=units,
        after_monthly=plan.modelled_monthly,
        touches=units | frozenset(f"workload:{w}" for w in plan.moved_monthly),
        removes=removes,
        receives=receives,
        peak_demand=peak,
        peak_capacity=capacity,
        evidence=evidence,
        moves_realtime=bool(moved_realtime),
        needs_benchmark=needs_benchmark,
        blocked=blocked,
    )
    now = sum((ctx.spend.units_now.get(u, Decimal(0)) for u in units), Decimal(0))
    if needs_benchmark:
        confidence = "Low until a benchmark gate measures the model on the host pool's hardware."
    elif blocked:
        confidence = f"Low: {blocked}."
    elif evidence is Evidence.MEASURED:
        confidence = "High: measured demand and bill; throughput per replica from a benchmark run."
    else:
        confidence = (
            "Medium: measured demand and bill; throughput per replica catalogued or stated."
        )
    return Candidate(
        option=option,
        lookup={
            "pool": priced.pool,
            "workload": None,
            "target_kind": plan.kind.value,
            "target": plan.target[:300],
        },
        now_monthly=now,
        assumptions=plan.assumptions,
        confidence=confidence,
        risk=" ".join(risk_parts),
        gate_command=gate,
        details={**pool_plan_details(plan), "models": [priced.model]},
        source_upload_ids=tuple(priced.report.upload_ids),
    )


@dataclass(frozen=True, kw_only=True)
class WindowOptions:
    spend: WindowSpend
    candidates: list[Candidate]
    pool_plans: list[tuple[PricedPool, PoolPlan]]


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
    classes = {w.name: str(effective_class(w)) for w in workloads}
    pools = {p.pool.name: p for p in priced_pools(start=start, end=end, targets=targets)}
    ctx = _Context(
        start=start,
        end=end,
        hours=spend.hours,
        spend=spend,
        targets=targets,
        pools=pools,
        bounds=_bounds_by_workload(start, end, workloads),
        classes=classes,
        room=headroom(),
    )
    candidates: list[Candidate] = []
    for workload in workloads:
        candidates.extend(_workload_candidates(ctx, workload, lines))
    plans = pool_plans(list(pools.values()), targets=targets)
    for priced, plan in plans:
        candidates.append(_pool_candidate(ctx, priced, plan))
    return WindowOptions(spend=spend, candidates=candidates, pool_plans=plans)


# --- The plan ------------------------------------------------------------------------------
def option_key(lookup: dict[str, Any]) -> str:
    subject = lookup.get("workload") or lookup.get("pool")
    kind = "w" if lookup.get("workload") is not None else "p"
    return f"{kind}{getattr(subject, 'pk', '')}|{lookup['target_kind']}|{lookup['target']}"


def stored_option(recommendation: Recommendation) -> PlanOption | None:
    """The plan's view of a stored recommendation (None: stored before plans were kept)."""
    data = recommendation.details.get("plan")
    if not data:
        return None
    return PlanOption(
        key=f"r{recommendation.pk}",
        id=recommendation.pk,
        workload=recommendation.workload.name if recommendation.workload else None,
        workload_class=data.get("workload_class"),
        from_pool=data.get("from_pool"),
        to_pool=data.get("to_pool"),
        target_kind=recommendation.target_kind,
        target=recommendation.target,
        units=frozenset(data.get("units", [])),
        after_monthly=Decimal(data["after_monthly_usd"]),
        touches=frozenset(data.get("touches", [])),
        removes=frozenset(data.get("removes", [])),
        receives=frozenset(data.get("receives", [])),
        peak_demand=int(data.get("peak_demand", 0)),
        peak_capacity=data.get("peak_capacity"),
        evidence=Evidence(data.get("evidence", Evidence.CATALOGUED)),
        moves_realtime=bool(data.get("moves_realtime")),
        needs_benchmark=bool(data.get("needs_benchmark")),
        blocked=data.get("blocked", ""),
        status=recommendation.status,
    )


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


@dataclass(frozen=True, kw_only=True)
class RealisedSaving:
    """A verified change's saving measured from spend before and after its date."""

    change_date: date
    before_start: date
    before_end: date
    after_start: date
    after_end: date
    before_usd_per_million: Decimal | None
    after_usd_per_million: Decimal | None
    monthly_tokens: int
    savings_monthly: Decimal | None  # None until a week of data follows the change
    note: str


def _cost_and_tokens(
    recommendation: Recommendation, *, start: date, end: date
) -> tuple[Decimal, int]:
    if recommendation.workload is not None:
        lines = spend_lines(
            SpendFilters(start=start, end=end, workload=recommendation.workload.name)
        )
        rows = lines.grouped("workload")
        cost = sum((r.spend_usd for r in rows.values()), Decimal(0))
        tokens = sum(r.input_tokens + r.output_tokens for r in rows.values())
        return cost, tokens
    pools = set(
        recommendation.details.get("pools")
        or [recommendation.pool.name if recommendation.pool else ""]
    )
    lines = spend_lines(SpendFilters(start=start, end=end))
    cost = Decimal(0)
    tokens = 0
    for (pool,), row in lines.grouped("pool").items():
        if pool in pools:
            cost += row.spend_usd
            tokens += row.input_tokens + row.output_tokens
    cost += sum((v for (_d, p), v in lines.idle.items() if p in pools), Decimal(0))
    return cost, tokens


def realised_saving(recommendation: Recommendation, *, last_day: date) -> RealisedSaving | None:
    """Cost per 1M tokens before and after the day the change was verified, times the volume
    of a month at the after-window's rate; None when it is not verified."""
    event = (
        RecommendationEvent.objects.filter(
            recommendation=recommendation, to_status=Recommendation.Status.VERIFIED
        )
        .order_by("-created_at")
        .first()
    )
    if event is None:
        return None
    change = event.created_at.date()
    before_start, before_end = (
        change - timedelta(days=REALISED_BEFORE_DAYS),
        change - timedelta(days=1),
    )
    after_start, after_end = change, last_day
    before_cost, before_tokens = _cost_and_tokens(
        recommendation, start=before_start, end=before_end
    )
    days_after = (after_end - after_start).days + 1
    before_rate = before_cost / before_tokens * 1_000_000 if before_tokens else None
    if days_after < REALISED_MIN_DAYS:
        return RealisedSaving(
            change_date=change,
            before_start=before_start,
            before_end=before_end,
            after_start=after_start,
            after_end=after_end,
            before_usd_per_million=before_rate,
            after_usd_per_million=None,
            monthly_tokens=0,
            savings_monthly=None,
            note=f"{max(days_after, 0)} day(s) of data since the change on {change}: the saving "
            f"is measured once {REALISED_MIN_DAYS} days follow it.",
        )
    after_cost, after_tokens = _cost_and_tokens(recommendation, start=after_start, end=after_end)
    after_rate = after_cost / after_tokens * 1_000_000 if after_tokens else None
    monthly_tokens = int(after_tokens * HOURS_IN_MONTH / (days_after * 24))
    if before_rate is None or after_rate is None:
        saving = None
        note = "No tokens before or after the change: nothing to compare."
    else:
        saving = (before_rate - after_rate) * monthly_tokens / 1_000_000
        note = (
            f"${before_rate:,.2f} per 1M tokens from {before_start} to {before_end}, "
            f"${after_rate:,.2f} from {after_start} to {after_end}, times "
            f"{monthly_tokens:,} tokens a month."
        )
    return RealisedSaving(
        change_date=change,
        before_start=before_start,
        before_end=before_end,
        after_start=after_start,
        after_end=after_end,
        before_usd_per_million=before_rate,
        after_usd_per_million=after_rate,
        monthly_tokens=monthly_tokens,
        savings_monthly=saving,
        note=note,
    )


@dataclass(frozen=True, kw_only=True)
class PlanRead:
    start: date
    end: date
    plan: Plan
    recommendations: dict[str, Recommendation]  # option key -> its stored recommendation
    risks: dict[str, str]
    gate_commands: dict[str, str]
    realised: dict[str, RealisedSaving]


def _empty(start: date, end: date) -> PlanRead:
    zero = Decimal("0.00")
    return PlanRead(
        start=start,
        end=end,
        plan=Plan(
            spend_monthly=zero,
            after_monthly=zero,
            savings_monthly=zero,
            open_monthly=zero,
            in_progress_monthly=zero,
            realised_monthly=zero,
            needs_benchmark_monthly=zero,
        ),
        recommendations={},
        risks={},
        gate_commands={},
        realised={},
    )


def plan_window(params: Mapping[str, str]) -> tuple[date | None, date | None]:
    """``start`` and ``end`` as pages, the API and the CLI give them: none for the
    recommendations' own window, else the dated window every page reads (`date_window`)."""
    if not (params.get("start") or params.get("end")):
        return None, None
    return date_window(params)


def plan_read(*, start: date | None = None, end: date | None = None) -> PlanRead:
    """The savings plan over start..end (default: the recommendations' analysis window)."""
    window = analysis_window()
    if window is None:
        today = timezone.now().date()
        return _empty(start or today, end or today)
    default = start is None and end is None or (start, end) == window
    start = start or window[0]
    end = end or window[1]
    stored = list(Recommendation.objects.select_related("workload", "pool"))
    options: list[PlanOption] = []
    by_key: dict[str, Recommendation] = {}
    risks: dict[str, str] = {}
    gates: dict[str, str] = {}
    if default and (start, end) == window:
        spend = window_spend(start=start, end=end)
        for r in stored:
            option = stored_option(r)
            if option is None:
                continue
            options.append(option)
            by_key[option.key] = r
            risks[option.key] = r.details.get("plan", {}).get("risk", "")
            gates[option.key] = r.details.get("plan", {}).get("gate_command", "")
    else:
        read = window_options(start=start, end=end)
        spend = read.spend
        rows = {
            option_key(
                {
                    "workload": r.workload,
                    "pool": r.pool if r.workload is None else None,
                    "target_kind": r.target_kind,
                    "target": r.target,
                }
            ): r
            for r in stored
        }
        for index, candidate in enumerate(read.candidates):
            key = option_key(candidate.lookup)
            row = rows.get(key)
            option_key_ = f"r{row.pk}" if row is not None else f"n{index}"
            options.append(
                replace(
                    candidate.option,
                    key=option_key_,
                    id=row.pk if row is not None else None,
                    status=row.status if row is not None else Recommendation.Status.PROPOSED,
                )
            )
            if row is not None:
                by_key[option_key_] = row
            risks[option_key_] = candidate.risk
            gates[option_key_] = candidate.gate_command
    realised: dict[str, RealisedSaving] = {}
    for key, r in by_key.items():
        if r.status == Recommendation.Status.VERIFIED:
            measured = realised_saving(r, last_day=window[1])
            if measured is not None:
                realised[key] = measured
    plan = plan_build(
        options,
        spend_monthly=spend.spend_monthly,
        units_now=spend.units_now,
        min_savings=min_savings(),
        realised={
            k: v.savings_monthly for k, v in realised.items() if v.savings_monthly is not None
        },
    )
    return PlanRead(
        start=start,
        end=end,
        plan=plan,
        recommendations=by_key,
        risks=risks,
        gate_commands=gates,
        realised=realised,
    )


def plan_as_dict(read: PlanRead) -> dict[str, Any]:
    """The plan as the API and `manage.py plan --json` give it (money as decimal strings)."""
    plan = read.plan
    return {
        "start": read.start.isoformat(),
        "end": read.end.isoformat(),
        "spend_monthly_usd": str(plan.spend_monthly),
        "after_monthly_usd": str(plan.after_monthly),
        "savings_monthly_usd": str(plan.savings_monthly),
        "open_monthly_usd": str(plan.open_monthly),
        "in_progress_monthly_usd": str(plan.in_progress_monthly),
        "realised_monthly_usd": str(plan.realised_monthly),
        "needs_benchmark_monthly_usd": str(plan.needs_benchmark_monthly),
        "heuristic": plan.heuristic,
        "options": [
            {
                "id": p.option.id,
                "workload": p.option.workload,
                "workload_class": p.option.workload_class,
                "from_pool": p.option.from_pool,
                "to_pool": p.option.to_pool,
                "target_kind": p.option.target_kind,
                "target": p.option.target,
                "now_monthly_usd": str(p.now_monthly),
                "after_monthly_usd": str(p.now_monthly - p.savings_monthly),
                "savings_monthly_usd": str(p.savings_monthly),
                "in_plan": p.in_plan,
                "alternative_to": _id_of(read, p.alternative_to),
                "out_reason": p.out_reason or None,
                "evidence": p.option.evidence.value,
                "needs_benchmark": p.option.needs_benchmark,
                "status": p.option.status,
                "risk": read.risks.get(p.option.key, ""),
                "gate_command": read.gate_commands.get(p.option.key) or None,
                "realised": _realised_dict(read.realised.get(p.option.key)),
            }
            for p in sorted(
                plan.options,
                key=lambda p: (not p.in_plan, -p.savings_monthly, p.option.key),
            )
        ],
    }


def _id_of(read: PlanRead, key: str | None) -> int | None:
    if key is None:
        return None
    row = read.recommendations.get(key)
    return row.pk if row is not None else None


def _realised_dict(measured: RealisedSaving | None) -> dict[str, Any] | None:
    if measured is None:
        return None
    return {
        "change_date": measured.change_date.isoformat(),
        "before": [measured.before_start.isoformat(), measured.before_end.isoformat()],
        "after": [measured.after_start.isoformat(), measured.after_end.isoformat()],
        "before_usd_per_million_tokens": _dec(measured.before_usd_per_million),
        "after_usd_per_million_tokens": _dec(measured.after_usd_per_million),
        "monthly_tokens": measured.monthly_tokens,
        "savings_monthly_usd": _dec(measured.savings_monthly),
        "note": measured.note,
    }


def _dec(value: Decimal | None) -> str | None:
    return None if value is None else str(value.quantize(Decimal("0.01")))


@dataclass(frozen=True, kw_only=True)
class PlanRow:
    """One option as the pages list it: the plan's figures with its words."""

    option: PlanOption
    kind: str
    now: Decimal
    after: Decimal
    savings: Decimal
    in_plan: bool
    reason: str
    alternative_to: int | None
    risk: str
    gate: str
    status: str
    pool: str
    realised: RealisedSaving | None


def plan_rows(read: PlanRead, *, pool: str = "", workload: str = "") -> list[PlanRow]:
    """The plan's options, in the plan first (largest share first), narrowed to those that
    change ``pool`` or move ``workload`` when given."""
    kinds = dict(Recommendation.TargetKind.choices)
    statuses = dict(Recommendation.Status.choices)
    rows = []
    for p in sorted(
        read.plan.options, key=lambda p: (not p.in_plan, -p.savings_monthly, p.option.key)
    ):
        o = p.option
        if pool and pool_unit(pool) not in o.touches | o.receives:
            continue
        if workload and f"workload:{workload}" not in o.touches:
            continue
        rows.append(
            PlanRow(
                option=o,
                kind=kinds.get(o.target_kind, o.target_kind),
                now=p.now_monthly,
                after=p.now_monthly - p.savings_monthly,
                savings=p.savings_monthly,
                in_plan=p.in_plan,
                reason=p.out_reason,
                alternative_to=_id_of(read, p.alternative_to),
                risk=read.risks.get(o.key, ""),
                gate=read.gate_commands.get(o.key, ""),
                status=statuses.get(o.status, o.status),
                pool=o.from_pool or "",
                realised=read.realised.get(o.key),
            )
        )
    return rows
