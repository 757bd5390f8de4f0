"""Recommendations pages, the managers' decisions, and workload class overrides."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views import View
from django.views.generic import TemplateView

from audit_app.access.permissions import Role, RoleRequiredMixin, has_role, method_roles
from audit_app.costs.rollups import rollups_in_range
from audit_app.lib.derived_state import derived_state
from audit_app.lib.query_params import text_param
from audit_app.models import Recommendation, Upload, Workload
from audit_app.recommendations.plan import plan_read, plan_rows
from audit_app.recommendations.pools import min_idle
from audit_app.recommendations.services import (
    DecisionRefused,
    recommendation_decide,
)
from audit_app.recommendations.targets import min_savings
from audit_app.reporting import charts
from audit_app.reporting.selectors import hour_of_week_requests
from audit_app.views.query import QueryParamsMixin
from audit_app.workloads.services import OverrideRefused, workload_override


class RecommendationListView(RoleRequiredMixin, QueryParamsMixin, TemplateView):
    template_name = "audit/recommendations.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        pool = self.param(text_param, "pool")
        read = plan_read()
        rows = plan_rows(read, pool=pool)
        context["read"] = read
        context["plan"] = read.plan
        context["sections"] = [
            {"id": "plan", "title": "In the plan", "rows": [r for r in rows if r.in_plan]},
            {
                "id": "needs-benchmark",
                "title": "Needs a benchmark (counts nothing until a run meets the latency)",
                "rows": [r for r in rows if not r.in_plan and r.option.needs_benchmark],
            },
            {
                "id": "left-out",
                "title": "Left out of the plan, and why",
                "rows": [r for r in rows if not r.in_plan and not r.option.needs_benchmark],
            },
        ]
        context["plan_figure"] = charts.build_savings_plan_figure(
            after=read.plan.after_monthly,
            shares=[
                (
                    f"{r.option.workload or 'pool ' + (r.option.from_pool or '')}: {r.kind}",
                    r.savings,
                )
                for r in rows
                if r.in_plan
            ],
        )
        context["pool_filter"] = pool
        context["state"] = derived_state()
        context["min_savings"] = min_savings()
        context["min_idle"] = min_idle()
        return context


class RecommendationDetailView(RoleRequiredMixin, TemplateView):
    template_name = "audit/recommendation_detail.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        recommendation = get_object_or_404(
            Recommendation.objects.select_related("workload", "pool"),
            pk=kwargs["recommendation_id"],
        )
        read = plan_read()
        planned = next((row for row in plan_rows(read) if row.option.id == recommendation.pk), None)
        context.update(
            recommendation=recommendation,
            planned=planned,
            plan_details=recommendation.details.get("plan", {}),
            sources=Upload.objects.filter(pk__in=recommendation.source_upload_ids).order_by("pk"),
            events=recommendation.events.select_related("user"),
            can_decide=has_role(self.request.user, method_roles(RecommendationDecisionView, "POST"))
            and recommendation.status == Recommendation.Status.PROPOSED,
            cost_figure=charts.build_cost_comparison_figure(
                current=recommendation.current_monthly_usd,
                projected=recommendation.projected_monthly_usd,
                # A pool's target is a sentence; the bar is labelled with its kind.
                target=recommendation.target
                if recommendation.workload is not None
                else recommendation.get_target_kind_display(),
            ),
            shape_figure=self._shape_figure(recommendation),
        )
        return context

    @staticmethod
    def _shape_figure(recommendation: Recommendation) -> dict[str, Any]:
        """A pool's replicas per hour of week before and after; a workload's traffic shape."""
        if recommendation.workload is None:
            chart = recommendation.details.get("chart", {})
            return charts.build_pool_replicas_figure(
                demanded=chart.get("demanded", []),
                before=chart.get("before", []),
                after=chart.get("after", []),
            )
        queryset = rollups_in_range(
            start=recommendation.period_start,
            end=recommendation.period_end,
            workload=recommendation.workload.name,
        )
        return charts.build_hour_of_week_figure(matrix=hour_of_week_requests(queryset=queryset))


class RecommendationDecisionView(RoleRequiredMixin, View):
    """POST from the detail page: approve a pilot, or reject with a note (managers)."""

    roles_by_method = {"*": frozenset({Role.MANAGER})}

    def post(self, request: HttpRequest, recommendation_id: int) -> HttpResponse:
        recommendation = get_object_or_404(Recommendation, pk=recommendation_id)
        decision = request.POST.get("decision", "")
        try:
            recommendation_decide(
                recommendation=recommendation,
                user=request.user,
                decision=decision,
                note=request.POST.get("note", ""),
            )
        except DecisionRefused as exc:
            messages.error(request, str(exc))
        else:
            verb = "approved for a pilot" if decision == "approve" else "rejected"
            messages.success(request, f"Recommendation {verb}.")
        return HttpResponseRedirect(reverse("recommendation-detail", args=[recommendation_id]))


class WorkloadOverrideView(RoleRequiredMixin, View):
    """POST from the workload page: set or clear the class by hand (engineers, managers)."""

    roles_by_method = {"*": frozenset({Role.ENGINEER, Role.MANAGER})}

    def post(self, request: HttpRequest, workload_id: int) -> HttpResponse:
        workload = Workload.objects.filter(pk=workload_id).first()
        if workload is None:
            raise Http404("no such workload")
        try:
            workload_override(
                workload=workload,
                user=request.user,
                workload_class=request.POST.get("workload_class", ""),
                reason=request.POST.get("reason", ""),
            )
        except OverrideRefused as exc:
            messages.error(request, str(exc))
        else:
            messages.success(
                request, "Class saved; recommendations are being refreshed in the background."
            )
        return HttpResponseRedirect(reverse("workload-detail", args=[workload_id]))
