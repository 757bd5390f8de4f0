"""The Anomalies page (with the volume / mix / price chart) and the Alerts page, where every
role acknowledges an alert with a note."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views import View
from django.views.generic import TemplateView

from audit_app.access.permissions import ALL_ROLES, RoleRequiredMixin
from audit_app.budgets.alerts import AcknowledgeRefused, alert_acknowledge
from audit_app.budgets.anomaly_service import (
    ANOMALY_SORTS,
    AnomalyRow,
    anomaly_query,
    anomaly_rows,
)
from audit_app.models import Alert
from audit_app.reporting import charts
from audit_app.views.query import QueryParamsMixin

# The chart shows the anomalies with the largest changes; the table lists them all.
CHART_ANOMALIES = 20
ALERTS_SHOWN = 500


def anomaly_chart(rows: list[AnomalyRow]) -> dict[str, Any]:
    biggest = sorted(rows, key=lambda r: (-abs(r.change_usd), r.day, r.workload, r.model))
    shown = sorted(biggest[:CHART_ANOMALIES], key=lambda r: (r.day, r.workload, r.model))
    return charts.build_anomaly_causes_figure(
        labels=[f"{r.day:%m-%d} {r.workload} / {r.model}" for r in shown],
        volume=[r.cause.volume_usd for r in shown],
        mix=[r.cause.mix_usd for r in shown],
        price=[r.cause.price_usd for r in shown],
    )


class AnomalyListView(RoleRequiredMixin, QueryParamsMixin, TemplateView):
    template_name = "audit/anomalies.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        query = self.param(anomaly_query)
        rows = anomaly_rows(query)
        context.update(
            start=query.start,
            end=query.end,
            sort=query.sort,
            sorts=ANOMALY_SORTS,
            min_usd=query.min_change_usd,
            anomalies=rows,
            figure=anomaly_chart(rows),
            chart_limited=len(rows) > CHART_ANOMALIES,
            chart_count=CHART_ANOMALIES,
        )
        return context


class AlertListView(RoleRequiredMixin, TemplateView):
    template_name = "audit/alerts.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        alerts = Alert.objects.select_related("budget", "acknowledged_by").prefetch_related(
            "deliveries"
        )
        context.update(
            alerts=alerts[:ALERTS_SHOWN],
            open_count=Alert.objects.filter(acknowledged_at__isnull=True).count(),
        )
        return context


class AlertAcknowledgeView(RoleRequiredMixin, View):
    """POST from the Alerts page: acknowledge with a note (every role)."""

    roles_by_method = {"POST": ALL_ROLES}

    def post(self, request: HttpRequest, alert_id: int) -> HttpResponse:
        alert = get_object_or_404(Alert, pk=alert_id)
        try:
            alert_acknowledge(alert=alert, user=request.user, note=request.POST.get("note", ""))
        except AcknowledgeRefused as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Alert {alert_id} acknowledged.")
        return HttpResponseRedirect(reverse("alerts") + f"#alert-{alert_id}")
