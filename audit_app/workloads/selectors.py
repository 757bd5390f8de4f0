"""What the workloads pages show: the sorted list with its totals, and one workload's figures.

The pages (`audit_app.views.pages`) only format what these return; the API and the CLI read the
same `reporting.spend` figures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db.models import Prefetch
from django.shortcuts import get_object_or_404

from audit_app.costs.attribution import PoolAttribution
from audit_app.costs.billing import pool_reports
from audit_app.models import Workload, WorkloadClassification, WorkloadOverride
from audit_app.recommendations.plan import PlanRow, plan_read, plan_rows
from audit_app.reporting.filters import SpendFilters
from audit_app.reporting.selectors import hour_of_week_requests
from audit_app.reporting.spend import (
    DailySpend,
    SpendBreakdown,
    WorkloadStats,
    spend_report,
    workload_list,
    workload_stats,
)
from audit_app.workloads.services import current_override, effective_class

WORKLOAD_SORTS: dict[str, Callable[[WorkloadStats], Any]] = {
    "name": lambda w: w.name,
    "requests": lambda w: w.requests,
    "input_tokens": lambda w: w.input_tokens,
    "output_tokens": lambda w: w.output_tokens,
    "spend": lambda w: w.spend_usd,
    "p95_ttft": lambda w: (w.ttft.p95_ms is not None, w.ttft.p95_ms or 0.0),
    "p95_e2e": lambda w: (w.latency.p95_ms is not None, w.latency.p95_ms or 0.0),
}
# ?sort=<key> sorts ascending, ?sort=-<key> descending.
WORKLOAD_SORT_CHOICES = (*WORKLOAD_SORTS, *(f"-{key}" for key in WORKLOAD_SORTS))


def sorted_workloads(stats: list[WorkloadStats], sort: str) -> list[WorkloadStats]:
    """``stats`` in the order ``sort`` (a `WORKLOAD_SORT_CHOICES` entry) names."""
    return sorted(stats, key=WORKLOAD_SORTS[sort.lstrip("-")], reverse=sort.startswith("-"))


@dataclass(frozen=True, kw_only=True)
class WorkloadTable:
    """Every workload with requests in the filters' range, sorted, and the range's totals:
    the workloads' spend (attributed) plus idle GPU cost, which is no workload's, is the
    total."""

    workloads: list[WorkloadStats]
    total_usd: Decimal
    attributed_usd: Decimal
    idle_gpu_usd: Decimal


def workload_table(filters: SpendFilters, *, sort: str) -> WorkloadTable:
    report = spend_report(filters)
    return WorkloadTable(
        workloads=sorted_workloads(workload_list(filters), sort),
        total_usd=report.total_usd,
        attributed_usd=report.breakdown("workload").attributed_usd,
        idle_gpu_usd=report.idle_gpu_usd,
    )


@dataclass(frozen=True, kw_only=True)
class PoolShare:
    """A serving pool this workload ran on: what of the pool's bill is attributed to it (in
    the bill's currency) and the pool's own attribution (billed, idle, utilisation)."""

    pool: str
    currency: str
    amount: Decimal
    attribution: PoolAttribution[Any]


@dataclass(frozen=True, kw_only=True)
class WorkloadPage:
    """One workload over the filters' range: its class, the overrides' newest, its totals
    (None without requests), its models, its pools, its plan options, daily usage and
    requests by hour of week."""

    workload: Workload
    effective_class: str
    classification: WorkloadClassification | None
    override: WorkloadOverride | None
    stats: WorkloadStats | None
    models: SpendBreakdown
    pools: list[PoolShare]
    plan_rows: list[PlanRow]
    daily: DailySpend
    hour_of_week: list[list[int]]


def workload_page(workload_id: int, filters: SpendFilters) -> WorkloadPage:
    """Everything the workload page shows (404 for an unknown id)."""
    # The classification and the overrides (newest first) in the same two queries the class,
    # the classification panel and the override form all read.
    workload = get_object_or_404(
        Workload.objects.select_related("classification").prefetch_related(
            Prefetch("overrides", queryset=WorkloadOverride.objects.select_related("user"))
        ),
        pk=workload_id,
    )
    mine = filters.for_workload(workload.name)
    report = spend_report(mine)
    stats = workload_stats(mine, workload_id=workload.pk)
    gpu_by_pool = {row.key: row.gpu_cost_usd for row in report.breakdown("pool").rows}
    pools = [
        PoolShare(
            pool=r.pool.name,
            currency=r.currency,
            # USD pools: the share the spend report attributes; other currencies are not
            # converted, so the pool report's own share in the bill's currency.
            amount=gpu_by_pool.get(r.pool.name, Decimal(0))
            if r.currency == "USD"
            else r.by_workload[workload.name],
            attribution=r.attribution,
        )
        for r in pool_reports(start=filters.start, end=filters.end)
        if workload.name in r.by_workload
    ]
    return WorkloadPage(
        workload=workload,
        effective_class=effective_class(workload),
        classification=getattr(workload, "classification", None),
        override=current_override(workload),
        stats=stats if stats.requests else None,
        models=report.breakdown("model"),
        pools=pools,
        plan_rows=plan_rows(plan_read(), workload=workload.name),
        daily=report.daily,
        hour_of_week=hour_of_week_requests(queryset=mine.hourly_queryset()),
    )
