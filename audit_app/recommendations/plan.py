"""The savings plan every surface shows: the options of a window with their status, priced
and chosen by `planning`, with each option's risk, gate line and realised saving.

`plan_read` reads the recommendations' own window from the stored recommendations (each keeps
its option in ``details["plan"]``, written by the refresh from `candidates`), and any other
window from the options re-read for it, matched to the stored ones for their status. The
overview, the Recommendations page, a workload's page, `GET /api/v1/plan/` and
`manage.py plan` format what it returns (`plan_as_dict`, `plan_rows`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import date
from decimal import Decimal
from typing import Any

from django.utils import timezone

from audit_app.lib.results_cache import cached
from audit_app.models import Recommendation
from audit_app.recommendations.candidates import (
    WindowSpend,
    pool_unit,
    window_options,
    window_spend,
)
from audit_app.recommendations.planning import Evidence, Plan, PlanOption, plan_build
from audit_app.recommendations.realised import RealisedSaving, realised_saving
from audit_app.recommendations.targets import min_savings
from audit_app.reporting.filters import date_window
from audit_app.reporting.selectors import RecommendationRole
from audit_app.workloads.services import analysis_window


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


@dataclass(frozen=True, kw_only=True)
class _Options:
    spend: WindowSpend
    options: list[PlanOption]
    recommendations: dict[str, Recommendation]  # option key -> its stored recommendation
    risks: dict[str, str]
    gates: dict[str, str]


def _stored_options(stored: list[Recommendation], *, start: date, end: date) -> _Options:
    """The recommendations' own window: the options the refresh stored."""
    out = _Options(
        spend=cached(
            "plan_window_spend", f"{start}|{end}", lambda: window_spend(start=start, end=end)
        ),
        options=[],
        recommendations={},
        risks={},
        gates={},
    )
    for r in stored:
        option = stored_option(r)
        if option is None:
            continue
        out.options.append(option)
        out.recommendations[option.key] = r
        out.risks[option.key] = r.details["plan"].get("risk", "")
        out.gates[option.key] = r.details["plan"].get("gate_command", "")
    return out


def _window_options(stored: list[Recommendation], *, start: date, end: date) -> _Options:
    """Another window: its options re-read, each with the status of the recommendation it is
    stored as (proposed when none is)."""
    read = cached(
        "plan_window_options", f"{start}|{end}", lambda: window_options(start=start, end=end)
    )
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
    out = _Options(spend=read.spend, options=[], recommendations={}, risks={}, gates={})
    for index, candidate in enumerate(read.candidates):
        row = rows.get(option_key(candidate.lookup))
        key = f"r{row.pk}" if row is not None else f"n{index}"
        out.options.append(
            replace(
                candidate.option,
                key=key,
                id=row.pk if row is not None else None,
                status=row.status if row is not None else Recommendation.Status.PROPOSED,
            )
        )
        if row is not None:
            out.recommendations[key] = row
        out.risks[key] = candidate.risk
        out.gates[key] = candidate.gate_command
    return out


def _realised(
    stored: list[Recommendation], by_key: dict[str, Recommendation], *, last_day: date
) -> dict[str, RealisedSaving]:
    """Every verified change's measured saving, keyed as its option (added to ``by_key``)."""
    keys = {r.pk: k for k, r in by_key.items()}
    out = {}
    for r in stored:
        measured = (
            realised_saving(r, last_day=last_day)
            if r.status == Recommendation.Status.VERIFIED
            else None
        )
        if measured is not None:
            key = keys.get(r.pk, f"r{r.pk}")
            out[key] = measured
            by_key.setdefault(key, r)
    return out


def plan_read(*, start: date | None = None, end: date | None = None) -> PlanRead:
    """The savings plan over start..end (default: the recommendations' analysis window)."""
    window = analysis_window()
    if window is None:
        today = timezone.now().date()
        return _empty(start or today, end or today)
    start, end = start or window[0], end or window[1]
    stored = list(Recommendation.objects.select_related("workload", "pool"))
    read = (
        _stored_options(stored, start=start, end=end)
        if (start, end) == window
        else _window_options(stored, start=start, end=end)
    )
    realised = _realised(stored, read.recommendations, last_day=window[1])
    plan = plan_build(
        read.options,
        spend_monthly=read.spend.spend_monthly,
        units_now=read.spend.units_now,
        min_savings=min_savings(),
        realised={
            k: v.savings_monthly for k, v in realised.items() if v.savings_monthly is not None
        },
    )
    return PlanRead(
        start=start,
        end=end,
        plan=plan,
        recommendations=read.recommendations,
        risks=read.risks,
        gate_commands=read.gates,
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


@dataclass(frozen=True, kw_only=True)
class PoolStep:
    """A pool's step in the savings plan: the in-plan option that changes it (a pool plan, or a
    workload leaving it) and its share of the plan's savings."""

    recommendation: Recommendation
    savings: Decimal
    workload: str | None


def pool_steps(read: PlanRead | None = None) -> dict[str, PoolStep]:
    """Each pool's step in the plan, by pool name (pools the plan leaves alone have none)."""
    read = read or plan_read()
    steps: dict[str, PoolStep] = {}
    for p in read.plan.options:
        row = read.recommendations.get(p.option.key)
        if not p.in_plan or row is None:
            continue
        for touch in sorted(p.option.touches):
            if touch.startswith("pool:"):
                steps[touch.removeprefix("pool:")] = PoolStep(
                    recommendation=row, savings=p.savings_monthly, workload=p.option.workload
                )
    return steps


def plan_roles(read: PlanRead | None = None) -> dict[int, RecommendationRole]:
    """Each stored recommendation's place in the plan: in it (``leads``), an alternative to
    the plan's option it contradicts, or closed (rejected, gate failed)."""
    read = read or plan_read()
    closed = {Recommendation.Status.REJECTED, Recommendation.Status.GATE_FAILED}
    roles = {}
    for p in read.plan.options:
        row = read.recommendations.get(p.option.key)
        if row is not None:
            roles[row.pk] = RecommendationRole(
                leads=p.in_plan,
                alternative_to=_id_of(read, p.alternative_to),
                closed=row.status in closed,
            )
    return roles
