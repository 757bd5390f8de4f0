"""Workload class override, recommendations and managers' decisions."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit_app.access.permissions import ALL_ROLES, Role
from audit_app.api.pagination import PAGE_PARAMETERS, PageOutput, paginate
from audit_app.api.spend import WorkloadDetailApi
from audit_app.lib.query_params import text_param
from audit_app.models import Recommendation, Workload
from audit_app.recommendations.plan import plan_as_dict, plan_read, plan_roles, plan_window
from audit_app.recommendations.services import recommendation_decide
from audit_app.reporting.selectors import (
    RecommendationRole,
    changes_pool,
    pool_groups_for,
    recommendation_groups,
)
from audit_app.workloads.services import (
    class_summary,
    workload_override,
)


class OverrideInput(serializers.Serializer):
    workload_class = serializers.CharField(allow_blank=True)
    reason = serializers.CharField()


class ClassOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    workload_class = serializers.CharField()
    computed_class = serializers.CharField()
    confidence = serializers.FloatField()
    evidence = serializers.ListField(child=serializers.CharField())
    override = serializers.DictField(allow_null=True)


def class_payload(workload: Workload) -> dict[str, Any]:
    return {"id": workload.pk, "name": workload.name, **class_summary(workload)}


class WorkloadApi(WorkloadDetailApi):
    """GET one workload's numbers; PATCH its class by hand (engineers and managers)."""

    roles_by_method = {"GET": ALL_ROLES, "PATCH": frozenset({Role.ENGINEER, Role.MANAGER})}

    @extend_schema(request=OverrideInput, responses=ClassOutput)
    def patch(self, request: Request, workload_id: int) -> Response:
        workload = get_object_or_404(Workload, pk=workload_id)
        data = OverrideInput(data=request.data)
        data.is_valid(raise_exception=True)
        workload_override(
            workload=workload,
            user=request.user,
            workload_class=data.validated_data["workload_class"],
            reason=data.validated_data["reason"],
        )
        return Response(ClassOutput(class_payload(workload)).data)


class EventOutput(serializers.Serializer):
    from_status = serializers.CharField()
    to_status = serializers.CharField()
    user = serializers.CharField(source="user.username", default=None)
    note = serializers.CharField()
    created_at = serializers.DateTimeField()


class RecommendationOutput(serializers.ModelSerializer):
    workload = serializers.CharField(
        source="workload.name", allow_null=True, default=None, help_text="Null for a pool's."
    )
    pool = serializers.CharField(
        source="pool.name",
        allow_null=True,
        default=None,
        help_text="The serving pool a pool recommendation is filed under; null for a workload's.",
    )
    details = serializers.JSONField(
        help_text="Pool recommendations: pools changed, scaling mode, cold-start risk per "
        "real-time workload, idle and moved dollars, and the hour-of-week chart series."
    )
    events = EventOutput(many=True)
    leads = serializers.SerializerMethodField(
        help_text="In the savings plan (GET /api/v1/plan/): the option the plan counts."
    )
    alternative_to = serializers.SerializerMethodField(
        help_text="Out of the plan because it contradicts a plan option: that option's id."
    )

    def _role(self, obj: Recommendation) -> RecommendationRole | None:
        roles: dict[int, RecommendationRole] = self.context.get("roles", {})
        return roles.get(obj.pk)

    def get_leads(self, obj: Recommendation) -> bool:
        role = self._role(obj)
        return bool(role and role.leads)

    def get_alternative_to(self, obj: Recommendation) -> int | None:
        role = self._role(obj)
        return role.alternative_to if role else None

    class Meta:
        model = Recommendation
        fields = [
            "id",
            "workload",
            "pool",
            "target_kind",
            "target",
            "current_monthly_usd",
            "projected_monthly_usd",
            "savings_monthly_usd",
            "assumptions",
            "confidence",
            "status",
            "leads",
            "alternative_to",
            "rank",
            "period_start",
            "period_end",
            "computed_at",
            "data_version",
            "source_upload_ids",
            "details",
            "created_at",
            "updated_at",
            "events",
        ]


class RecommendationPageOutput(PageOutput):
    results = RecommendationOutput(many=True)


class RecommendationListApi(APIView):
    """Recommendations grouped per workload (and per serving pool), largest open savings first,
    closed ones last; `leads` marks the savings plan's options and `alternative_to` the plan
    option one contradicts. `?pool=` keeps the pool recommendations changing that pool."""

    @extend_schema(
        parameters=[
            *PAGE_PARAMETERS,
            OpenApiParameter(
                "pool", str, description="Only the recommendations changing this serving pool."
            ),
        ],
        responses=RecommendationPageOutput,
        operation_id="v1_recommendations_list",
    )
    def get(self, request: Request) -> Response:
        pool = text_param(request.query_params, "pool")
        groups = recommendation_groups(
            queryset=Recommendation.objects.prefetch_related("events__user")
        )
        ordered = [
            r
            for g in pool_groups_for(groups, pool)
            for r in [*([g.leader] if g.leader else []), *g.alternatives, *g.closed]
            if not pool or changes_pool(r, pool)
        ]
        page = paginate(ordered, request)
        context = {"roles": plan_roles()}
        return Response(RecommendationPageOutput(page.envelope(page.items), context=context).data)


class RecommendationDetailApi(APIView):
    @extend_schema(responses=RecommendationOutput)
    def get(self, request: Request, recommendation_id: int) -> Response:
        recommendation = get_object_or_404(Recommendation, pk=recommendation_id)
        context = {"roles": plan_roles()}
        return Response(RecommendationOutput(recommendation, context=context).data)


class DecisionInput(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["approve", "reject"])
    note = serializers.CharField(allow_blank=True, default="")


class RecommendationDecisionApi(APIView):
    """A manager approves a pilot or rejects with a note; anyone else gets 403."""

    roles_by_method = {"POST": frozenset({Role.MANAGER})}

    @extend_schema(request=DecisionInput, responses=RecommendationOutput)
    def post(self, request: Request, recommendation_id: int) -> Response:
        recommendation = get_object_or_404(Recommendation, pk=recommendation_id)
        data = DecisionInput(data=request.data)
        data.is_valid(raise_exception=True)
        decided = recommendation_decide(
            recommendation=recommendation,
            user=request.user,
            decision=data.validated_data["decision"],
            note=data.validated_data["note"],
        )
        context = {"roles": plan_roles()}
        return Response(RecommendationOutput(decided, context=context).data)


class RealisedOutput(serializers.Serializer):
    change_date = serializers.DateField()
    before = serializers.ListField(child=serializers.DateField(), help_text="First and last day.")
    after = serializers.ListField(child=serializers.DateField(), help_text="First and last day.")
    before_usd_per_million_tokens = serializers.CharField(allow_null=True)
    after_usd_per_million_tokens = serializers.CharField(allow_null=True)
    monthly_tokens = serializers.IntegerField()
    savings_monthly_usd = serializers.CharField(
        allow_null=True, help_text="Null until a week of data follows the change."
    )
    note = serializers.CharField()


class PlanOptionOutput(serializers.Serializer):
    id = serializers.IntegerField(allow_null=True, help_text="The recommendation's id.")
    workload = serializers.CharField(allow_null=True)
    workload_class = serializers.CharField(allow_null=True)
    from_pool = serializers.CharField(allow_null=True)
    to_pool = serializers.CharField(
        allow_null=True, help_text="The pool or provider that receives the traffic."
    )
    target_kind = serializers.CharField()
    target = serializers.CharField()
    now_monthly_usd = serializers.CharField(help_text="What it changes costs today, a month.")
    after_monthly_usd = serializers.CharField(help_text="The same after the change.")
    savings_monthly_usd = serializers.CharField(
        help_text="In the plan, its share of the plan's savings; otherwise what it alone saves."
    )
    in_plan = serializers.BooleanField()
    alternative_to = serializers.IntegerField(allow_null=True)
    out_reason = serializers.CharField(allow_null=True)
    evidence = serializers.ChoiceField(choices=["measured", "catalogued", "none"])
    needs_benchmark = serializers.BooleanField()
    status = serializers.CharField()
    risk = serializers.CharField()
    gate_command = serializers.CharField(allow_null=True)
    realised = RealisedOutput(allow_null=True)


class PlanOutput(serializers.Serializer):
    start = serializers.DateField()
    end = serializers.DateField()
    spend_monthly_usd = serializers.CharField()
    after_monthly_usd = serializers.CharField()
    savings_monthly_usd = serializers.CharField()
    open_monthly_usd = serializers.CharField()
    in_progress_monthly_usd = serializers.CharField()
    realised_monthly_usd = serializers.CharField()
    needs_benchmark_monthly_usd = serializers.CharField()
    heuristic = serializers.BooleanField(
        help_text="True when a group of options was too large for the exact search."
    )
    options = PlanOptionOutput(many=True)


class PlanApi(APIView):
    """The savings plan: one feasible set of options (at most one per workload and pool, none
    contradicting another), its after-state and its savings, split into open, in progress and
    realised; every other option with why it is out. Money as decimal strings."""

    @extend_schema(
        parameters=[
            OpenApiParameter("start", str, description="YYYY-MM-DD (default: the analysis window)"),
            OpenApiParameter("end", str, description="YYYY-MM-DD"),
        ],
        responses=PlanOutput,
    )
    def get(self, request: Request) -> Response:
        start, end = plan_window(request.query_params)
        return Response(plan_as_dict(plan_read(start=start, end=end)))
