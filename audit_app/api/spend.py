"""Spend and workload API: the same selectors as the pages."""

from __future__ import annotations

from typing import Any, TypedDict

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from audit_app.api.pagination import PAGE_PARAMETERS, PageOutput, paginate
from audit_app.lib.formatting import metric
from audit_app.lib.query_params import choice_param
from audit_app.models import Workload
from audit_app.reporting.filters import parse_filters
from audit_app.reporting.selectors import LatencySummary
from audit_app.reporting.spend import (
    GROUP_BY_FIELDS,
    SpendRow,
    WorkloadStats,
    spend_report,
    workload_list,
    workload_stats,
)
from audit_app.workloads.services import class_summary


class DecimalOptions(TypedDict):
    """Keyword arguments shared by the API's DecimalFields."""

    max_digits: int
    decimal_places: int
    coerce_to_string: bool


MONEY: DecimalOptions = {"max_digits": 24, "decimal_places": 6, "coerce_to_string": True}
FILTER_PARAMETERS = [
    OpenApiParameter("start", str, description="First day, YYYY-MM-DD (UTC)."),
    OpenApiParameter("end", str, description="Last day, YYYY-MM-DD (UTC), inclusive."),
    OpenApiParameter("team", str),
    OpenApiParameter("provider", str),
    OpenApiParameter("model", str),
]


class SpendRowOutput(serializers.Serializer):
    key = serializers.CharField()
    requests = serializers.IntegerField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    spend_usd = serializers.DecimalField(
        **MONEY, help_text="api_spend_usd + gpu_cost_usd: what this group cost."
    )
    api_spend_usd = serializers.DecimalField(
        **MONEY, help_text="Token-priced usage: the logs' cost, else price cards."
    )
    gpu_cost_usd = serializers.DecimalField(
        **MONEY, help_text="Share of serving-pool GPU bills, by tokens per hour."
    )
    logged_cost_usd = serializers.DecimalField(**MONEY)
    estimated_cost_usd = serializers.DecimalField(**MONEY)
    unpriced_requests = serializers.IntegerField()


class UnpricedModelOutput(serializers.Serializer):
    provider = serializers.CharField()
    model = serializers.CharField()
    requests = serializers.IntegerField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()


class SpendOutput(PageOutput):
    """The whole range's totals, and one page of its rows (``results``)."""

    group_by = serializers.CharField()
    start = serializers.DateField()
    end = serializers.DateField()
    total_usd = serializers.DecimalField(**MONEY, help_text="Σ rows' spend_usd + idle_gpu_usd.")
    api_spend_usd = serializers.DecimalField(**MONEY)
    gpu_cost_usd = serializers.DecimalField(**MONEY)
    idle_gpu_usd = serializers.DecimalField(
        **MONEY,
        help_text="Serving pools' idle cost: no workload's; 0 when team/provider/model is set.",
    )
    unpriced_models = UnpricedModelOutput(many=True)
    results = SpendRowOutput(many=True)


def spend_row_payload(row: SpendRow) -> dict[str, Any]:
    return {
        **row.__dict__,
        "spend_usd": row.spend_usd,
        "api_spend_usd": row.api_spend_usd,
    }


class SpendApi(APIView):
    """Spend grouped by workload, team, model, provider, pool or day over a date range."""

    @extend_schema(
        parameters=[
            OpenApiParameter("group_by", str, enum=list(GROUP_BY_FIELDS), default="workload"),
            *FILTER_PARAMETERS,
            *PAGE_PARAMETERS,
        ],
        responses=SpendOutput,
    )
    def get(self, request: Request) -> Response:
        group_by = choice_param(
            request.query_params, "group_by", GROUP_BY_FIELDS, default="workload"
        )
        filters = parse_filters(request.query_params)
        breakdown = spend_report(filters).breakdown(group_by)
        page = paginate(breakdown.rows, request)
        data = {
            "group_by": group_by,
            "start": filters.start,
            "end": filters.end,
            "total_usd": breakdown.total_usd,
            "api_spend_usd": breakdown.api_spend_usd,
            "gpu_cost_usd": breakdown.gpu_cost_usd,
            "idle_gpu_usd": breakdown.idle_gpu_usd,
            "unpriced_models": [m.__dict__ for m in breakdown.unpriced_models],
            **page.envelope([spend_row_payload(row) for row in page.items]),
        }
        return Response(SpendOutput(data).data)


class LatencyOutput(serializers.Serializer):
    p50_ms = serializers.FloatField(allow_null=True)
    p95_ms = serializers.FloatField(allow_null=True)
    p99_ms = serializers.FloatField(allow_null=True)
    count = serializers.IntegerField()


class WorkloadOutput(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField()
    name = serializers.CharField()
    teams = serializers.ListField(child=serializers.CharField())
    providers = serializers.ListField(child=serializers.CharField())
    models = serializers.ListField(child=serializers.CharField())
    requests = serializers.IntegerField()
    # The metaclass moves declared fields off the class, so `Serializer.errors` is not shadowed.
    errors = serializers.IntegerField()  # type: ignore[assignment]
    streaming_requests = serializers.IntegerField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    spend_usd = serializers.DecimalField(**MONEY, help_text="api_spend_usd + gpu_cost_usd.")
    api_spend_usd = serializers.DecimalField(**MONEY)
    gpu_cost_usd = serializers.DecimalField(**MONEY)
    unpriced_requests = serializers.IntegerField()
    p95_ttft_ms = serializers.FloatField(allow_null=True)
    p95_e2e_ms = serializers.FloatField(allow_null=True)
    ttft = LatencyOutput()
    latency = LatencyOutput()
    tpot = LatencyOutput()
    workload_class = serializers.CharField()
    computed_class = serializers.CharField()
    confidence = serializers.FloatField()
    evidence = serializers.ListField(child=serializers.CharField())
    override = serializers.DictField(allow_null=True)


class WorkloadPageOutput(PageOutput):
    results = WorkloadOutput(many=True)


class DailyOutput(serializers.Serializer):
    day = serializers.DateField()
    requests = serializers.IntegerField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    spend_usd = serializers.DecimalField(**MONEY)
    api_spend_usd = serializers.DecimalField(**MONEY)
    gpu_cost_usd = serializers.DecimalField(**MONEY)


class WorkloadDetailOutput(WorkloadOutput):
    start = serializers.DateField()
    end = serializers.DateField()
    daily = DailyOutput(many=True)


def _latency(summary: LatencySummary) -> dict[str, Any]:
    """Percentiles rounded by the one rule for measured figures (`formatting.metric`)."""
    return {
        "p50_ms": metric(summary.p50_ms),
        "p95_ms": metric(summary.p95_ms),
        "p99_ms": metric(summary.p99_ms),
        "count": summary.count,
    }


def workload_payload(
    stats: WorkloadStats, request: Request | None, workload: Workload | None = None
) -> dict[str, Any]:
    if workload is None and stats.id is not None:
        workload = Workload.objects.select_related("classification").filter(pk=stats.id).first()
    classes = class_summary(workload) if workload else {}
    return {
        **{
            k: classes.get(k)
            for k in ("workload_class", "computed_class", "confidence", "evidence", "override")
        },
        **{k: v for k, v in stats.__dict__.items() if k not in ("ttft", "latency", "tpot")},
        "spend_usd": stats.spend_usd,
        "url": reverse("api-workload-detail", args=[stats.id], request=request),
        "p95_ttft_ms": metric(stats.ttft.p95_ms),
        "p95_e2e_ms": metric(stats.latency.p95_ms),
        "ttft": _latency(stats.ttft),
        "latency": _latency(stats.latency),
        "tpot": _latency(stats.tpot),
    }


class WorkloadListApi(APIView):
    """Workloads with requests, tokens, spend (API + GPU share) and p95 latency over a date
    range."""

    @extend_schema(
        parameters=[*FILTER_PARAMETERS, *PAGE_PARAMETERS],
        responses=WorkloadPageOutput,
        operation_id="v1_workloads_list",
    )
    def get(self, request: Request) -> Response:
        filters = parse_filters(request.query_params)
        page = paginate([s for s in workload_list(filters) if s.id is not None], request)
        workloads = (
            Workload.objects.select_related("classification")
            .prefetch_related("overrides__user")
            .in_bulk([s.id for s in page.items])
        )
        results = [workload_payload(s, request, workloads.get(s.id)) for s in page.items]
        return Response(WorkloadPageOutput(page.envelope(results)).data)


class WorkloadDetailApi(APIView):
    """One workload: totals, latency percentiles and daily spend and tokens."""

    @extend_schema(parameters=FILTER_PARAMETERS, responses=WorkloadDetailOutput)
    def get(self, request: Request, workload_id: int) -> Response:
        workload = get_object_or_404(Workload, pk=workload_id)
        filters = parse_filters(request.query_params).for_workload(workload.name)
        payload = workload_payload(workload_stats(filters, workload_id=workload.pk), request)
        daily = spend_report(filters).daily
        payload.update(
            start=filters.start,
            end=filters.end,
            daily=[
                {
                    "day": day,
                    "requests": r,
                    "input_tokens": i,
                    "output_tokens": o,
                    "spend_usd": a + g,
                    "api_spend_usd": a,
                    "gpu_cost_usd": g,
                }
                for day, r, i, o, a, g in zip(
                    daily.days,
                    daily.requests,
                    daily.input_tokens,
                    daily.output_tokens,
                    daily.api_spend_usd,
                    daily.gpu_cost_usd,
                    strict=True,
                )
            ],
        )
        return Response(WorkloadDetailOutput(payload).data)
