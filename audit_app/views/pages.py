"""Dashboard pages. Thin: each parses filters, calls selectors, builds charts, renders."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.views import View
from django.views.generic import TemplateView

from audit_app.access.permissions import RoleRequiredMixin, has_role, method_roles
from audit_app.ingestion.live.selectors import live_pending
from audit_app.lib import formatting
from audit_app.lib.csv_export import csv_response
from audit_app.lib.query_params import choice_param, int_param
from audit_app.reporting import charts
from audit_app.reporting.filters import SpendFilters, parse_filters
from audit_app.reporting.overview import overview_read
from audit_app.reporting.selectors import (
    filter_choices,
    upload_list,
)
from audit_app.reporting.spend import (
    GROUP_BY_FIELDS,
    IDLE_LABEL,
    STACK_CHOICES,
    SpendBreakdown,
    WorkloadStats,
    spend_report,
)
from audit_app.views.query import QueryParamsMixin
from audit_app.views.recommendations import WorkloadOverrideView
from audit_app.views.uploads import UploadCreateView
from audit_app.workloads.selectors import WORKLOAD_SORT_CHOICES, workload_page, workload_table

# The workloads page lists this many workloads a page (?page=2, ...), in the chosen order.
WORKLOADS_PER_PAGE = 100


class OverviewView(RoleRequiredMixin, QueryParamsMixin, TemplateView):
    """The overview: formats what `reporting.overview.overview_read` computes."""

    template_name = "audit/overview.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        filters = self.param(parse_filters)
        stack = self.param(choice_param, "stack", STACK_CHOICES, default="provider")
        read = overview_read(filters, stack)
        usd_pools = read.usd_pools
        context.update(
            report=read.report,
            class_split=read.class_split,
            plan=read.plan,
            pools=read.pools,
            pool_best={row.report.pool.name: row.best for row in read.pool_rows if row.best},
            pool_rows=[(row.report, row.best, row.no_throughput) for row in read.pool_rows],
            pools_no_throughput=read.pools_no_throughput,
            pools_billed=read.pools_billed,
            pools_idle=read.pools_idle,
            pools_scheduled=read.pools_scheduled,
            pools_figure=charts.build_pool_attribution_figure(
                pools=[r.pool.name for r in usd_pools],
                by_workload=read.pool_workloads,
                idle=[r.attribution.idle for r in usd_pools],
            )
            if usd_pools
            else None,
            filters=filters,
            choices=filter_choices(),
            stack=stack,
            stack_choices=STACK_CHOICES,
            breakdown=read.breakdown,
            breakdown_rows=read.breakdown_rows,
            breakdown_rest=read.breakdown_rest,
            months=read.months,
            spend_figure=charts.build_spend_per_day_figure(
                days=read.per_day.days,
                series=read.per_day.series,
                dimension_label=stack,
                idle=read.per_day.idle,
                idle_label=IDLE_LABEL,
            ),
            top_figure=charts.build_top_workloads_figure(
                names=[row.key for row in read.top], spend=[row.spend_usd for row in read.top]
            ),
            empty_window=f"No spend between {filters.start} and {filters.end}.",
            has_spend=not read.report.is_empty,
            uploads_total=read.uploads.total,
            uploads_figure=charts.build_uploads_per_day_figure(
                days=read.uploads.days, counts_by_kind=read.uploads.counts_by_kind
            ),
        )
        return context


SPEND_CSV_HEADER = [
    "requests",
    "input_tokens",
    "output_tokens",
    "spend_usd",
    "api_spend_usd",
    "gpu_cost_usd",
    "logged_cost_usd",
    "estimated_cost_usd",
    "unpriced_requests",
]
IDLE_CSV_KEY = "(idle GPU, no workload)"


def spend_csv_rows(breakdown: SpendBreakdown) -> list[list[object]]:
    """The breakdown's rows, then idle GPU cost as a row of its own, so the column adds up to
    the same total as the page and the API."""
    rows: list[list[object]] = [
        [
            r.key,
            r.requests,
            r.input_tokens,
            r.output_tokens,
            r.spend_usd,
            r.api_spend_usd,
            r.gpu_cost_usd,
            r.logged_cost_usd,
            r.estimated_cost_usd,
            r.unpriced_requests,
        ]
        for r in breakdown.rows
    ]
    if breakdown.idle_gpu_usd:
        idle = breakdown.idle_gpu_usd
        rows.append([IDLE_CSV_KEY, 0, 0, 0, idle, 0, idle, 0, 0, 0])
    return rows


class SpendCsvView(RoleRequiredMixin, QueryParamsMixin, View):
    """The overview's breakdown table as CSV (?group_by=...)."""

    def get(self, request: HttpRequest) -> HttpResponse:
        filters = self.param(parse_filters)
        group_by = self.param(choice_param, "group_by", GROUP_BY_FIELDS, default="provider")
        if refused := self.csv_refused():
            return refused
        breakdown = spend_report(filters).breakdown(group_by)
        return csv_response(
            filename=f"spend-by-{group_by}-{filters.start}-{filters.end}.csv",
            header=[group_by, *SPEND_CSV_HEADER],
            rows=spend_csv_rows(breakdown),
        )


WORKLOAD_CSV_HEADER = [
    "workload",
    "teams",
    "providers",
    "models",
    "requests",
    "input_tokens",
    "output_tokens",
    "spend_usd",
    "api_spend_usd",
    "gpu_cost_usd",
    "p95_ttft_ms",
    "p95_e2e_ms",
    "unpriced_requests",
]
# The workloads table's sortable columns: (sort key, heading).
WORKLOAD_COLUMNS = (
    ("name", "Workload"),
    ("requests", "Requests"),
    ("input_tokens", "Input tokens"),
    ("output_tokens", "Output tokens"),
    ("spend", "Spend"),
    ("p95_ttft", "p95 TTFT"),
    ("p95_e2e", "p95 end-to-end"),
)


def workload_csv_rows(stats: list[WorkloadStats], idle_gpu_usd: Decimal) -> list[list[object]]:
    """One row per workload, then idle GPU cost as a row of its own, so the spend column adds up
    to the page's total."""
    rows: list[list[object]] = [
        [
            w.name,
            " ".join(w.teams),
            " ".join(w.providers),
            " ".join(w.models),
            w.requests,
            w.input_tokens,
            w.output_tokens,
            w.spend_usd,
            w.api_spend_usd,
            w.gpu_cost_usd,
            formatting.metric(w.ttft.p95_ms),
            formatting.metric(w.latency.p95_ms),
            w.unpriced_requests,
        ]
        for w in stats
    ]
    if idle_gpu_usd:
        rows.append([IDLE_CSV_KEY, "", "", "", 0, 0, 0, idle_gpu_usd, 0, idle_gpu_usd, "", "", 0])
    return rows


def workload_sort_headers(filters: SpendFilters, sort: str) -> list[dict[str, object]]:
    """The table's headings, each with the query that sorts by it (descending first, ascending
    when it already sorts descending)."""
    return [
        {
            "key": key,
            "label": label,
            "active": sort.lstrip("-") == key,
            "descending": sort.startswith("-"),
            "query": filters.query_string(sort=("" if sort == f"-{key}" else "-") + key),
        }
        for key, label in WORKLOAD_COLUMNS
    ]


class WorkloadListView(RoleRequiredMixin, QueryParamsMixin, View):
    template_name = "audit/workloads.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        filters = self.param(parse_filters)
        sort = self.param(choice_param, "sort", WORKLOAD_SORT_CHOICES, default="-spend")
        export_csv = self.wants_csv()
        if export_csv and (refused := self.csv_refused()):
            return refused
        table = workload_table(filters, sort=sort)
        if export_csv:
            return csv_response(
                filename=f"workloads-{filters.start}-{filters.end}.csv",
                header=WORKLOAD_CSV_HEADER,
                rows=workload_csv_rows(table.workloads, table.idle_gpu_usd),
            )
        paginator = Paginator(table.workloads, WORKLOADS_PER_PAGE)
        page = paginator.page(
            self.param(int_param, "page", default=1, minimum=1, maximum=paginator.num_pages)
        )
        context = {
            "filters": filters,
            "choices": filter_choices(),
            "workloads": page.object_list,
            "page": page,
            "page_query": filters.query_string(sort=sort),
            "headers": workload_sort_headers(filters, sort),
            "sort": sort,
            "total_spend": table.total_usd,
            "attributed_spend": table.attributed_usd,
            "idle_usd": table.idle_gpu_usd,
        }
        return self.render_to_response(context)


class WorkloadDetailView(RoleRequiredMixin, QueryParamsMixin, TemplateView):
    template_name = "audit/workload_detail.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        filters = self.param(parse_filters)
        shown = workload_page(kwargs["workload_id"], filters)
        stats, daily = shown.stats, shown.daily
        context.update(
            effective_class=shown.effective_class,
            classification=shown.classification,
            override=shown.override,
            can_override=has_role(self.request.user, method_roles(WorkloadOverrideView, "POST")),
            plan_rows=shown.plan_rows,
            gpu_costs=shown.pools,
            workload=shown.workload,
            filters=filters,
            stats=stats,
            models=shown.models,
            usage_figure=charts.build_daily_usage_figure(
                days=daily.days,
                api_spend=daily.api_spend_usd,
                gpu_cost=daily.gpu_cost_usd,
                input_tokens=daily.input_tokens,
                output_tokens=daily.output_tokens,
            ),
            heatmap_figure=charts.build_hour_of_week_figure(matrix=shown.hour_of_week),
            latency_figure=charts.build_latency_figure(
                percentiles={
                    "TTFT": [stats.ttft.p50_ms, stats.ttft.p95_ms, stats.ttft.p99_ms],
                    "TPOT": [stats.tpot.p50_ms, stats.tpot.p95_ms, stats.tpot.p99_ms],
                    "End-to-end": [
                        stats.latency.p50_ms,
                        stats.latency.p95_ms,
                        stats.latency.p99_ms,
                    ],
                }
            )
            if stats
            else None,
        )
        return context


class UploadListView(RoleRequiredMixin, TemplateView):
    template_name = "audit/uploads.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["uploads"] = upload_list()
        context["can_upload"] = has_role(self.request.user, method_roles(UploadCreateView, "POST"))
        context["live_pending"] = live_pending()
        context["land_every_seconds"] = settings.LIVE_LAND_EVERY_SECONDS
        return context
