"""Reconciliation and serving-pool attribution API."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from audit_app.api.pagination import PAGE_PARAMETERS, PageOutput, paginate
from audit_app.api.spend import FILTER_PARAMETERS, MONEY, DecimalOptions
from audit_app.costs.billing import (
    ReconciliationTotal,
    parse_flagged,
    parse_threshold,
    pool_reports,
    reconciliation,
    reconciliation_totals,
)
from audit_app.recommendations.plan import PoolStep, pool_steps
from audit_app.recommendations.pools import pools_without_throughput
from audit_app.reporting.filters import parse_filters

PERCENT: DecimalOptions = {
    "max_digits": 24,
    "decimal_places": 2,
    "coerce_to_string": True,
}


class ReconciliationRowOutput(serializers.Serializer):
    day = serializers.DateField()
    provider = serializers.CharField()
    model = serializers.CharField()
    currency = serializers.CharField()
    billed = serializers.DecimalField(**MONEY)
    estimated = serializers.DecimalField(
        **MONEY, allow_null=True, help_text="null: no estimate (see note)"
    )
    variance = serializers.DecimalField(
        **MONEY, allow_null=True, help_text="null when there is no estimate"
    )
    variance_percent = serializers.DecimalField(**PERCENT, allow_null=True)
    flagged = serializers.BooleanField()
    note = serializers.CharField()
    log_requests = serializers.IntegerField()
    unpriced_requests = serializers.IntegerField()
    bill_upload_ids = serializers.ListField(child=serializers.IntegerField())
    log_upload_ids = serializers.ListField(child=serializers.IntegerField())


class ReconciliationTotalOutput(serializers.Serializer):
    currency = serializers.CharField()
    rows = serializers.IntegerField()
    flagged = serializers.IntegerField()
    billed = serializers.DecimalField(**MONEY)
    estimated = serializers.DecimalField(**MONEY, allow_null=True)
    variance = serializers.DecimalField(**MONEY)
    variance_percent = serializers.DecimalField(**PERCENT, allow_null=True)
    billed_no_estimate = serializers.DecimalField(**MONEY)


class ReconciliationProviderTotalOutput(ReconciliationTotalOutput):
    provider = serializers.CharField()


class ReconciliationTotalsOutput(serializers.Serializer):
    overall = ReconciliationTotalOutput(many=True)
    by_provider = ReconciliationProviderTotalOutput(many=True)


class ReconciliationOutput(PageOutput):
    """Flag count and totals over every row, and one page of the rows (``results``)."""

    start = serializers.DateField()
    end = serializers.DateField()
    threshold_percent = serializers.DecimalField(max_digits=8, decimal_places=2)
    flagged_only = serializers.BooleanField()
    flagged = serializers.IntegerField()
    totals = ReconciliationTotalsOutput()
    results = ReconciliationRowOutput(many=True)


def _total(total: ReconciliationTotal) -> dict[str, Any]:
    return {**total.__dict__, "variance_percent": total.variance_percent}


class ReconciliationApi(APIView):
    """Billed token charges vs token-log estimates per provider x model x day, with totals per
    currency and per provider. A line with requests but no cost in the logs has no estimate
    (``estimated`` null) and is never flagged."""

    @extend_schema(
        parameters=[
            *FILTER_PARAMETERS[:2],
            OpenApiParameter("threshold", float, description="Flag above this %."),
            OpenApiParameter(
                "flagged", str, enum=["1", "true", "0", "false"], description="Flagged rows only."
            ),
            *PAGE_PARAMETERS,
        ],
        responses=ReconciliationOutput,
    )
    def get(self, request: Request) -> Response:
        filters = parse_filters(request.query_params)
        threshold = parse_threshold(request.query_params)
        flagged_only = parse_flagged(request.query_params)
        rows = reconciliation(
            start=filters.start,
            end=filters.end,
            threshold_percent=threshold,
            flagged_only=flagged_only,
        )
        totals = reconciliation_totals(rows)
        page = paginate(rows, request)
        data = {
            "start": filters.start,
            "end": filters.end,
            "threshold_percent": threshold,
            "flagged_only": flagged_only,
            "flagged": sum(1 for r in rows if r.flagged),
            "totals": {
                "overall": [_total(t) for t in totals.overall],
                "by_provider": [_total(t) for t in totals.by_provider],
            },
            **page.envelope(
                [
                    {
                        **r.__dict__,
                        "variance": r.variance,
                        "variance_percent": r.variance_percent,
                        "flagged": r.flagged,
                        "note": r.note,
                    }
                    for r in page.items
                ]
            ),
        }
        return Response(ReconciliationOutput(data).data)


class PoolBestRecommendationOutput(serializers.Serializer):
    id = serializers.IntegerField()
    workload = serializers.CharField(
        allow_null=True, help_text="The workload whose move changes the pool; null: a pool plan."
    )
    target_kind = serializers.CharField()
    savings_monthly_usd = serializers.DecimalField(**MONEY)
    status = serializers.CharField()
    url = serializers.CharField(help_text="The recommendation's API detail")


class PoolOutput(serializers.Serializer):
    name = serializers.CharField()
    currency = serializers.CharField()
    billed = serializers.DecimalField(**MONEY)
    attributed = serializers.DecimalField(**MONEY)
    idle = serializers.DecimalField(**MONEY)
    utilisation = serializers.FloatField(allow_null=True)
    hours_billed = serializers.IntegerField(
        help_text="Billed hours of the window through the last complete day."
    )
    hours_with_traffic = serializers.IntegerField()
    scheduled = serializers.DecimalField(
        **MONEY,
        help_text="Billed for hours after the last complete day (any window): not yet spent, "
        "in no other figure until their day completes.",
    )
    hours_scheduled = serializers.IntegerField()
    tokens = serializers.IntegerField()
    by_workload = serializers.DictField(child=serializers.DecimalField(**MONEY))
    instance_types = serializers.ListField(child=serializers.CharField())
    bill_upload_ids = serializers.ListField(child=serializers.IntegerField())
    best_recommendation = PoolBestRecommendationOutput(
        allow_null=True,
        help_text="The pool's step in the savings plan (a pool plan, or a workload leaving it) "
        "with its share of the plan's savings, as the pools table shows it; null: none.",
    )
    next_step_note = serializers.CharField(
        allow_null=True,
        help_text="Why the pool has no priced next step although it idles above the floor.",
    )


class PoolPageOutput(PageOutput):
    results = PoolOutput(many=True)


class PoolListApi(APIView):
    """Each serving pool's bill, attributed to workloads by token share, and its idle cost.
    Attributed plus idle equals billed to the cent."""

    @extend_schema(
        parameters=[*FILTER_PARAMETERS[:2], *PAGE_PARAMETERS],
        responses=PoolPageOutput,
        operation_id="v1_pools_list",
    )
    def get(self, request: Request) -> Response:
        filters = parse_filters(request.query_params)
        page = paginate(pool_reports(start=filters.start, end=filters.end), request)
        best = pool_steps()
        # Read only when a pool has no priced step (a cache miss reads every pool's demand).
        unknown = (
            pools_without_throughput() if any(r.pool.name not in best for r in page.items) else {}
        )
        results = [
            {
                "name": r.pool.name,
                "currency": r.currency,
                "billed": r.attribution.billed,
                "attributed": r.attribution.attributed,
                "idle": r.attribution.idle,
                "utilisation": r.attribution.utilisation,
                "hours_billed": r.attribution.hours_billed,
                "hours_with_traffic": r.attribution.hours_with_traffic,
                "scheduled": r.scheduled,
                "hours_scheduled": r.hours_scheduled,
                "tokens": r.attribution.tokens,
                "by_workload": r.by_workload,
                "instance_types": r.instance_types,
                "bill_upload_ids": r.upload_ids,
                "best_recommendation": _best(best.get(r.pool.name), request),
                "next_step_note": None if r.pool.name in best else unknown.get(r.pool.name),
            }
            for r in page.items
        ]
        return Response(PoolPageOutput(page.envelope(results)).data)


def _best(step: PoolStep | None, request: Request) -> dict[str, Any] | None:
    if step is None:
        return None
    recommendation = step.recommendation
    return {
        "id": recommendation.pk,
        "workload": step.workload,
        "target_kind": recommendation.target_kind,
        "savings_monthly_usd": step.savings,
        "status": recommendation.status,
        "url": reverse("api-recommendation-detail", args=[recommendation.pk], request=request),
    }
