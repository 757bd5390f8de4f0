"""Dashboard pages. Thin: each parses filters, calls selectors, builds charts, renders."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.views import View
from django.views.generic import TemplateView

from audit_app import charts
from audit_app.csv_export import csv_response
from audit_app.filters import FilterError, SpendFilters, parse_filters
from audit_app.models import Workload, WorkloadClass
from audit_app.permissions import UPLOADER_ROLES, Role, RoleRequiredMixin, has_role
from audit_app.selectors import (
    GROUP_BY_FIELDS,
    daily_rollups,
    daily_usage,
    filter_choices,
    hour_of_week_requests,
    potential_monthly_savings,
    spend_breakdown,
    spend_per_day,
    upload_list,
    uploads_per_day,
    with_gpu_cost,
    workload_stats,
)
from audit_app.selectors_billing import attributed_gpu_cost_by_workload, pool_reports
from audit_app.services.classification import current_override, effective_class

STACK_CHOICES = ("provider", "model", "team", "workload")
TOP_WORKLOADS = 10


@dataclass(frozen=True, kw_only=True)
class MonthComparison:
    this_month: Decimal
    last_month: Decimal
    this_label: str
    last_label: str

    @property
    def change_percent(self) -> float | None:
        if not self.last_month:
            return None
        return float((self.this_month - self.last_month) / self.last_month * 100)


def month_comparison(today: date) -> MonthComparison:
    first = today.replace(day=1)
    previous_last = first - timedelta(days=1)
    previous_first = previous_last.replace(day=1)
    this_month = spend_breakdown(
        group_by="provider", queryset=daily_rollups(start=first, end=today)
    ).total_usd
    last_month = spend_breakdown(
        group_by="provider", queryset=daily_rollups(start=previous_first, end=previous_last)
    ).total_usd
    return MonthComparison(
        this_month=this_month,
        last_month=last_month,
        this_label=f"{first:%B %Y} so far",
        last_label=f"{previous_first:%B %Y}",
    )


class FilteredPageMixin:
    """Parses the URL filters; a bad value re-renders the page with the error, not a 500."""

    request: HttpRequest

    def filters(self) -> tuple[SpendFilters, str | None]:
        try:
            return parse_filters(self.request.GET), None
        except FilterError as exc:
            return parse_filters({}), str(exc)


class OverviewView(RoleRequiredMixin, FilteredPageMixin, TemplateView):
    template_name = "audit/overview.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        filters, filter_error = self.filters()
        stack = self.request.GET.get("stack", "provider")
        if stack not in STACK_CHOICES:
            stack = "provider"
        queryset = filters.queryset()
        breakdown = spend_breakdown(group_by=stack, queryset=queryset)
        per_day = spend_per_day(
            dimension=stack, queryset=queryset, start=filters.start, end=filters.end
        )
        by_workload = (
            breakdown
            if stack == "workload"
            else spend_breakdown(group_by="workload", queryset=queryset)
        ).rows
        top = by_workload[:TOP_WORKLOADS]
        uploads = uploads_per_day(days=30)
        reports = pool_reports(start=filters.start, end=filters.end)
        usd_pools = [r for r in reports if r.currency == "USD"]
        workloads_in_pools = sorted({w for r in usd_pools for w in r.attribution.by_workload})
        gpu_by_workload = attributed_gpu_cost_by_workload(reports)
        class_split: dict[str, Decimal] = {c: Decimal(0) for c in WorkloadClass.values}
        classes = {
            w.name: effective_class(w)
            for w in Workload.objects.filter(name__in=[r.key for r in by_workload])
            .select_related("classification")
            .prefetch_related("overrides")
        }
        for row in by_workload:
            label = classes.get(row.key, WorkloadClass.UNKNOWN)
            class_split[label] += row.spend_usd + gpu_by_workload.get(row.key, Decimal(0))
        context.update(
            class_split=class_split,
            potential_savings=potential_monthly_savings(),
            pools=reports,
            pools_billed=sum((r.attribution.billed for r in usd_pools), Decimal(0)),
            pools_idle=sum((r.attribution.idle for r in usd_pools), Decimal(0)),
            pools_figure=charts.build_pool_attribution_figure(
                pools=[r.pool.name for r in usd_pools],
                by_workload={
                    w: [r.attribution.by_workload.get(w, Decimal(0)) for r in usd_pools]
                    for w in workloads_in_pools
                },
                idle=[r.attribution.idle for r in usd_pools],
            )
            if usd_pools
            else None,
        )
        context.update(
            filters=filters,
            filter_error=filter_error,
            choices=filter_choices(),
            stack=stack,
            stack_choices=STACK_CHOICES,
            breakdown=breakdown,
            months=month_comparison(timezone.now().date()),
            spend_figure=charts.build_spend_per_day_figure(
                days=per_day.days, series=per_day.series, dimension_label=stack
            ),
            top_figure=charts.build_top_workloads_figure(
                names=[row.key for row in top], spend=[row.spend_usd for row in top]
            ),
            has_spend=bool(breakdown.rows),
            uploads_total=uploads.total,
            uploads_figure=charts.build_uploads_per_day_figure(
                days=uploads.days, counts_by_kind=uploads.counts_by_kind
            ),
        )
        return context


class SpendCsvView(RoleRequiredMixin, FilteredPageMixin, View):
    """The overview's breakdown table as CSV (?group_by=...)."""

    def get(self, request: HttpRequest) -> HttpResponse:
        filters, _ = self.filters()
        group_by = request.GET.get("group_by", "provider")
        if group_by not in GROUP_BY_FIELDS:
            raise Http404("unknown group_by")
        breakdown = spend_breakdown(group_by=group_by, queryset=filters.queryset())
        return csv_response(
            filename=f"spend-by-{group_by}-{filters.start}-{filters.end}.csv",
            header=[
                group_by,
                "requests",
                "input_tokens",
                "output_tokens",
                "spend_usd",
                "logged_cost_usd",
                "estimated_cost_usd",
                "unpriced_requests",
            ],
            rows=(
                [
                    r.key,
                    r.requests,
                    r.input_tokens,
                    r.output_tokens,
                    r.spend_usd,
                    r.logged_cost_usd,
                    r.estimated_cost_usd,
                    r.unpriced_requests,
                ]
                for r in breakdown.rows
            ),
        )


WORKLOAD_SORTS = {
    "name": lambda w: w.name,
    "requests": lambda w: w.requests,
    "input_tokens": lambda w: w.input_tokens,
    "output_tokens": lambda w: w.output_tokens,
    "spend": lambda w: w.total_usd,
    "p95_ttft": lambda w: (w.ttft.p95_ms is not None, w.ttft.p95_ms or 0.0),
    "p95_e2e": lambda w: (w.latency.p95_ms is not None, w.latency.p95_ms or 0.0),
}


def sorted_workloads(stats: list[Any], sort: str) -> tuple[list[Any], str]:
    descending = sort.startswith("-")
    key = sort.lstrip("-")
    if key not in WORKLOAD_SORTS:
        return stats, "-spend"
    return sorted(stats, key=WORKLOAD_SORTS[key], reverse=descending), sort


class WorkloadListView(RoleRequiredMixin, FilteredPageMixin, View):
    template_name = "audit/workloads.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        filters, filter_error = self.filters()
        reports = pool_reports(start=filters.start, end=filters.end)
        stats = with_gpu_cost(
            workload_stats(queryset=filters.queryset()), attributed_gpu_cost_by_workload(reports)
        )
        stats, sort = sorted_workloads(stats, request.GET.get("sort", "-spend"))
        if request.GET.get("export") == "csv":
            return csv_response(
                filename=f"workloads-{filters.start}-{filters.end}.csv",
                header=[
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
                ],
                rows=(
                    [
                        w.name,
                        " ".join(w.teams),
                        " ".join(w.providers),
                        " ".join(w.models),
                        w.requests,
                        w.input_tokens,
                        w.output_tokens,
                        w.total_usd,
                        w.spend_usd,
                        w.gpu_cost_usd,
                        _round(w.ttft.p95_ms),
                        _round(w.latency.p95_ms),
                        w.unpriced_requests,
                    ]
                    for w in stats
                ),
            )
        columns = [
            ("name", "Workload"),
            ("requests", "Requests"),
            ("input_tokens", "Input tokens"),
            ("output_tokens", "Output tokens"),
            ("spend", "Spend"),
            ("p95_ttft", "p95 TTFT"),
            ("p95_e2e", "p95 end-to-end"),
        ]
        headers = [
            {
                "key": key,
                "label": label,
                "active": sort.lstrip("-") == key,
                "descending": sort.startswith("-"),
                "query": filters.query_string(sort=("" if sort == f"-{key}" else "-") + key),
            }
            for key, label in columns
        ]
        context = {
            "filters": filters,
            "filter_error": filter_error,
            "choices": filter_choices(),
            "workloads": stats,
            "headers": headers,
            "sort": sort,
            "total_spend": sum((w.total_usd for w in stats), Decimal(0)),
            "idle_usd": sum(
                (r.attribution.idle for r in reports if r.currency == "USD"), Decimal(0)
            ),
        }
        return render(request, self.template_name, context)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


class WorkloadDetailView(RoleRequiredMixin, FilteredPageMixin, TemplateView):
    template_name = "audit/workload_detail.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        workload = get_object_or_404(Workload, pk=kwargs["workload_id"])
        filters, filter_error = self.filters()
        queryset = filters.queryset(workload=workload.name)
        stats = workload_stats(queryset=queryset)
        usage = daily_usage(queryset=queryset, start=filters.start, end=filters.end)
        gpu = [
            (r.pool.name, r.currency, r.attribution.by_workload[workload.name], r.attribution)
            for r in pool_reports(start=filters.start, end=filters.end)
            if workload.name in r.attribution.by_workload
        ]
        stats = with_gpu_cost(
            stats, {workload.name: sum((g[2] for g in gpu if g[1] == "USD"), Decimal(0))}
        )
        context.update(
            effective_class=effective_class(workload),
            classification=getattr(workload, "classification", None),
            override=current_override(workload),
            can_override=has_role(self.request.user, [Role.ENGINEER, Role.MANAGER]),
            recommendations=workload.recommendations.all(),
            gpu_costs=gpu,
            workload=workload,
            filters=filters,
            filter_error=filter_error,
            stats=stats[0] if stats else None,
            models=spend_breakdown(group_by="model", queryset=queryset),
            usage_figure=charts.build_daily_usage_figure(
                days=usage.days,
                spend=usage.spend_usd,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
            ),
            heatmap_figure=charts.build_hour_of_week_figure(
                matrix=hour_of_week_requests(
                    queryset=filters.hourly_queryset(workload=workload.name)
                )
            ),
        )
        if stats:
            s = stats[0]
            context["latency_figure"] = charts.build_latency_figure(
                percentiles={
                    "TTFT": [s.ttft.p50_ms, s.ttft.p95_ms, s.ttft.p99_ms],
                    "End-to-end": [s.latency.p50_ms, s.latency.p95_ms, s.latency.p99_ms],
                    "TPOT": [s.tpot.p50_ms, s.tpot.p95_ms, s.tpot.p99_ms],
                }
            )
        return context


class UploadListView(RoleRequiredMixin, TemplateView):
    template_name = "audit/uploads.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["uploads"] = upload_list()
        context["can_upload"] = has_role(self.request.user, UPLOADER_ROLES)
        return context
