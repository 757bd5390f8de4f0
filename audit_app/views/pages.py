"""Dashboard pages. Thin: each calls a selector and renders a template."""

from __future__ import annotations

from typing import Any

from django.views.generic import TemplateView

from audit_app.charts import build_uploads_per_day_figure
from audit_app.permissions import UPLOADER_ROLES, RoleRequiredMixin, has_role
from audit_app.selectors import upload_list, uploads_per_day


class OverviewView(RoleRequiredMixin, TemplateView):
    template_name = "audit/overview.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        per_day = uploads_per_day(days=30)
        context["uploads_total"] = per_day.total
        context["uploads_figure"] = build_uploads_per_day_figure(
            days=per_day.days, counts_by_kind=per_day.counts_by_kind
        )
        return context


class UploadListView(RoleRequiredMixin, TemplateView):
    template_name = "audit/uploads.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["uploads"] = upload_list()
        context["can_upload"] = has_role(self.request.user, UPLOADER_ROLES)
        return context


class WorkloadListView(RoleRequiredMixin, TemplateView):
    template_name = "audit/workloads.html"


class RecommendationListView(RoleRequiredMixin, TemplateView):
    template_name = "audit/recommendations.html"


class ReconciliationView(RoleRequiredMixin, TemplateView):
    template_name = "audit/reconciliation.html"
