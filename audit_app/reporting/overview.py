"""The overview's figures for one window, filters and stack, computed once here so the page
(and any other front end) only formats them: spend by workload class, the breakdown table,
the serving pools' billed, idle and scheduled cost, the month so far like for like
(`spend.month_comparison`), and today so far: the partial days after the last complete day
(`reporting.days`), shown apart from every full-day figure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from audit_app.costs.billing import PoolReport, pool_reports
from audit_app.models import WorkloadClass
from audit_app.recommendations.plan import Plan, PoolStep, plan_read, pool_steps
from audit_app.recommendations.pools import pools_without_throughput
from audit_app.reporting.filters import SpendFilters
from audit_app.reporting.selectors import UploadsPerDay, uploads_per_day
from audit_app.reporting.spend import (
    MonthComparison,
    SpendBreakdown,
    SpendReport,
    SpendRow,
    SpendSeries,
    month_comparison,
    spend_report,
)
from audit_app.workloads.services import effective_classes

TOP_WORKLOADS = 10
# The breakdown table lists this many rows, then one row adding up the others.
TOP_BREAKDOWN_ROWS = 25
ZERO = Decimal(0)


@dataclass(frozen=True, kw_only=True)
class PoolRow:
    report: PoolReport
    best: PoolStep | None  # the plan's priced next step for the pool
    no_throughput: str  # why it has none: no throughput known for its hardware


@dataclass(frozen=True, kw_only=True)
class OverviewRead:
    filters: SpendFilters
    stack: str
    report: SpendReport
    breakdown: SpendBreakdown
    breakdown_rows: list[SpendRow]
    breakdown_rest: SpendRow | None
    per_day: SpendSeries
    top: list[SpendRow]
    class_split: dict[str, Decimal]
    plan: Plan
    pools: list[PoolReport]
    usd_pools: list[PoolReport]
    pool_rows: list[PoolRow]
    pools_no_throughput: list[tuple[str, str]]
    pools_billed: Decimal
    pools_idle: Decimal
    pools_scheduled: Decimal
    pool_workloads: dict[str, Sequence[Decimal]]  # workload -> GPU cost in each USD pool
    months: MonthComparison  # with today so far
    uploads: UploadsPerDay


def _class_split(rows: list[SpendRow]) -> dict[str, Decimal]:
    split: dict[str, Decimal] = {c: ZERO for c in WorkloadClass.values}
    classes = effective_classes()
    for row in rows:
        split[classes.get(row.key, WorkloadClass.UNKNOWN)] += row.spend_usd
    return split


def overview_read(filters: SpendFilters, stack: str) -> OverviewRead:
    """Every figure the overview shows for ``filters``, its breakdown stacked by ``stack``."""
    report = spend_report(filters)
    breakdown = report.breakdown(stack)
    rows, rest = breakdown.head(TOP_BREAKDOWN_ROWS)
    by_workload = report.breakdown("workload").rows
    reports = pool_reports(start=filters.start, end=filters.end)
    usd_pools = [r for r in reports if r.currency == "USD"]
    plan = plan_read()
    best = pool_steps(plan)
    # Read only when a pool has no priced step (a cache miss reads every pool's demand).
    unpriced = {r.pool.name for r in reports} - set(best)
    notes = pools_without_throughput() if unpriced else {}
    no_throughput = {name: note for name, note in notes.items() if name in unpriced}
    workloads = sorted({w for r in usd_pools for w in r.by_workload})
    return OverviewRead(
        filters=filters,
        stack=stack,
        report=report,
        breakdown=breakdown,
        breakdown_rows=rows,
        breakdown_rest=rest,
        per_day=report.series[stack],
        top=by_workload[:TOP_WORKLOADS],
        class_split=_class_split(by_workload),
        plan=plan.plan,
        pools=reports,
        usd_pools=usd_pools,
        pool_rows=[
            PoolRow(
                report=r,
                best=best.get(r.pool.name),
                no_throughput=no_throughput.get(r.pool.name, ""),
            )
            for r in reports
        ],
        pools_no_throughput=sorted(no_throughput.items()),
        pools_billed=sum((r.attribution.billed for r in usd_pools), ZERO),
        pools_idle=sum((r.attribution.idle for r in usd_pools), ZERO),
        pools_scheduled=sum((r.scheduled for r in usd_pools), ZERO),
        pool_workloads={w: [r.by_workload.get(w, ZERO) for r in usd_pools] for w in workloads},
        months=month_comparison(),
        uploads=uploads_per_day(days=30),
    )
