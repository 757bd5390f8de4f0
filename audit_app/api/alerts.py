"""Anomalies and alerts API: the same services as the pages and commands."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit_app.access.permissions import ALL_ROLES
from audit_app.api.pagination import PAGE_PARAMETERS, PageOutput, paginate
from audit_app.api.spend import MONEY
from audit_app.budgets.alerts import alert_acknowledge
from audit_app.budgets.anomaly_service import (
    ANOMALY_SORTS,
    anomaly_payload,
    anomaly_query,
    anomaly_rows,
)
from audit_app.models import Alert


class CauseOutput(serializers.Serializer):
    volume_usd = serializers.DecimalField(**MONEY, help_text="Change from the number of requests.")
    mix_usd = serializers.DecimalField(**MONEY, help_text="Change from tokens per request.")
    price_usd = serializers.DecimalField(**MONEY, help_text="Change from cost per token.")


class AnomalyOutput(serializers.Serializer):
    day = serializers.DateField()
    workload = serializers.CharField()
    model = serializers.CharField()
    spend_usd = serializers.DecimalField(**MONEY)
    expected_usd = serializers.DecimalField(
        **MONEY, help_text="From the same weekday of the previous weeks (median)."
    )
    score = serializers.FloatField(
        allow_null=True, help_text="Robust z-score (median and MAD); null when unbounded."
    )
    cause = CauseOutput(help_text="volume + mix + price = spend_usd − expected_usd.")


class AnomalyPageOutput(PageOutput):
    start = serializers.DateField()
    end = serializers.DateField()
    results = AnomalyOutput(many=True)


class AnomalyListApi(APIView):
    """Spend anomalies per workload × model × day (complete days only), newest day first or by
    ``sort``, with their cause; ``min_usd`` leaves out smaller changes."""

    @extend_schema(
        parameters=[
            OpenApiParameter("start", str, description="First day, YYYY-MM-DD (UTC)."),
            OpenApiParameter("end", str, description="Last day, YYYY-MM-DD (UTC), inclusive."),
            OpenApiParameter(
                "sort",
                str,
                enum=list(ANOMALY_SORTS),
                default="day",
                description="day: newest first; change: the most dollars over expected first; "
                "score: the highest score first.",
            ),
            OpenApiParameter(
                "min_usd", str, description="Only changes of at least this many USD (default 0)."
            ),
            *PAGE_PARAMETERS,
        ],
        responses=AnomalyPageOutput,
    )
    def get(self, request: Request) -> Response:
        query = anomaly_query(request.query_params)
        page = paginate(anomaly_rows(query), request)
        data = {
            "start": query.start.isoformat(),
            "end": query.end.isoformat(),
            **page.envelope([anomaly_payload(row) for row in page.items]),
        }
        return Response(data)


class DeliveryOutput(serializers.Serializer):
    channel = serializers.CharField()
    target = serializers.CharField(
        source="shown_target", help_text="An email address, or a webhook URL masked."
    )
    status = serializers.CharField()
    attempts = serializers.IntegerField()
    last_error = serializers.CharField()
    last_attempt_at = serializers.DateTimeField(allow_null=True)
    sent_at = serializers.DateTimeField(allow_null=True)


class AlertOutput(serializers.ModelSerializer):
    budget = serializers.CharField(source="budget.name", default=None, allow_null=True)
    acknowledged_by = serializers.CharField(
        source="acknowledged_by.username", default=None, allow_null=True
    )
    deliveries = DeliveryOutput(many=True)

    class Meta:
        model = Alert
        fields = [
            "id",
            "kind",
            "budget_id",
            "budget",
            "period_start",
            "threshold_pct",
            "anomaly_key",
            "message",
            "details",
            "created_at",
            "acknowledged_by",
            "acknowledged_at",
            "acknowledgement_note",
            "deliveries",
        ]


class AlertPageOutput(PageOutput):
    results = AlertOutput(many=True)


def alerts_queryset() -> Any:
    return Alert.objects.select_related("budget", "acknowledged_by").prefetch_related("deliveries")


class AlertListApi(APIView):
    """Alerts, newest first: budget crossings and anomalies, with each delivery's state."""

    @extend_schema(parameters=PAGE_PARAMETERS, responses=AlertPageOutput)
    def get(self, request: Request) -> Response:
        page = paginate(alerts_queryset(), request)
        return Response(AlertPageOutput(page.envelope(page.items)).data)


class AcknowledgeInput(serializers.Serializer):
    note = serializers.CharField(
        allow_blank=True, default="", help_text="Required: what was done about it."
    )


class AlertAcknowledgeApi(APIView):
    """Acknowledge an alert with a note (every role); 409 when it was acknowledged already."""

    roles_by_method = {"POST": ALL_ROLES}

    @extend_schema(request=AcknowledgeInput, responses=AlertOutput)
    def post(self, request: Request, alert_id: int) -> Response:
        alert = get_object_or_404(Alert, pk=alert_id)
        data = AcknowledgeInput(data=request.data)
        data.is_valid(raise_exception=True)
        alert_acknowledge(alert=alert, user=request.user, note=data.validated_data["note"])
        return Response(AlertOutput(alerts_queryset().get(pk=alert_id)).data)
