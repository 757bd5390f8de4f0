"""Budgets API: list and create, read, change and delete one; every answer carries the
budget's status in its current period (spent, forecast with its band, ok / warning /
forecast_over / over).

Every role reads; finops analysts and managers write. Input is checked by the service
(`audit_app.budgets.services`), whose refusals name the field (``scope.value``,
``notify.webhooks``, ...) and are answered 400 by `audit_app.api.errors`."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from audit_app.access.permissions import ALL_ROLES, BUDGET_WRITER_ROLES, RolesByMethod
from audit_app.api.pagination import PAGE_PARAMETERS, PageOutput, paginate
from audit_app.api.spend import MONEY
from audit_app.budgets.services import budget_create, budget_delete, budget_update
from audit_app.budgets.status import (
    BUDGET_STATUSES,
    BudgetStatus,
    budget_status,
    default_as_of,
)
from audit_app.lib.masking import mask_webhook
from audit_app.models import Budget


class ScopeSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=Budget.ScopeKind.choices)
    value = serializers.CharField(
        allow_blank=True,
        required=False,
        help_text='A team, workload, provider or model with data; "" (or absent) for all.',
    )


class NotifySerializer(serializers.Serializer):
    emails = serializers.ListField(child=serializers.EmailField(), required=False)
    webhooks = serializers.ListField(
        child=serializers.URLField(), required=False, help_text="http(s) URLs."
    )


class BudgetInput(serializers.Serializer):
    """A budget's fields (documentation: the service checks them, naming the field at fault).
    On PATCH every field is optional and the others stay as they are."""

    name = serializers.CharField(max_length=200)
    scope = ScopeSerializer()
    period = serializers.ChoiceField(choices=Budget.Period.choices, default="month")
    amount_usd = serializers.DecimalField(
        max_digits=14, decimal_places=2, min_value=Decimal("0.01")
    )
    alert_at_pct = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=1000),
        default=[80, 100],
        help_text="Whole percentages of the amount that alert.",
    )
    on_forecast = serializers.BooleanField(
        default=True, help_text="Alert (and show forecast_over) when the forecast crosses too."
    )
    notify = NotifySerializer(required=False)


class ForecastDayOutput(serializers.Serializer):
    day = serializers.DateField()
    actual_usd = serializers.DecimalField(
        **MONEY, allow_null=True, help_text="Spent from the period's start; null after as_of."
    )
    forecast_usd = serializers.DecimalField(**MONEY)
    low_usd = serializers.DecimalField(**MONEY)
    high_usd = serializers.DecimalField(**MONEY)


class BudgetOutput(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.URLField()
    name = serializers.CharField()
    scope = ScopeSerializer()
    period = serializers.ChoiceField(choices=Budget.Period.choices)
    amount_usd = serializers.DecimalField(max_digits=14, decimal_places=2, coerce_to_string=True)
    alert_at_pct = serializers.ListField(child=serializers.IntegerField())
    on_forecast = serializers.BooleanField()
    notify = NotifySerializer()
    created_by = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    as_of = serializers.DateField(
        help_text="The last day counted: the last complete day with data by default, never "
        "after the last complete day."
    )
    period_start = serializers.DateField()
    period_end = serializers.DateField()
    actual_usd = serializers.DecimalField(**MONEY, help_text="Spent period_start..as_of.")
    forecast_usd = serializers.DecimalField(**MONEY, help_text="Projected period total.")
    low_usd = serializers.DecimalField(**MONEY)
    high_usd = serializers.DecimalField(**MONEY)
    pct_actual = serializers.DecimalField(max_digits=12, decimal_places=1, coerce_to_string=True)
    pct_forecast = serializers.DecimalField(max_digits=12, decimal_places=1, coerce_to_string=True)
    status = serializers.ChoiceField(choices=BUDGET_STATUSES)
    forecast_method = serializers.CharField()
    previous_start = serializers.DateField(help_text="The previous period's first day.")
    previous_same_end = serializers.DateField(
        help_text="The last of the previous period's days like period_start..as_of."
    )
    previous_same_days_usd = serializers.DecimalField(
        **MONEY,
        help_text="Spent previous_start..previous_same_end: the same days of the previous "
        "period (its whole once this period is complete).",
    )
    previous_period_usd = serializers.DecimalField(
        **MONEY, help_text="The previous period's whole spend."
    )


class BudgetDetailOutput(BudgetOutput):
    days = ForecastDayOutput(many=True, help_text="Every day of the period, cumulative.")


class BudgetPageOutput(PageOutput):
    results = BudgetOutput(many=True)


def budget_payload(
    budget: Budget, state: BudgetStatus, request: Request, *, days: bool = False
) -> dict[str, Any]:
    creator = budget.created_by
    payload: dict[str, Any] = {
        "id": budget.pk,
        "url": reverse("api-budget-detail", args=[budget.pk], request=request),
        "name": budget.name,
        "scope": {"kind": budget.scope_kind, "value": budget.scope_value},
        "period": budget.period,
        "amount_usd": budget.amount_usd,
        "alert_at_pct": budget.alert_at_pct,
        "on_forecast": budget.on_forecast,
        "notify": {
            "emails": budget.notify_emails,
            "webhooks": [mask_webhook(url) for url in budget.notify_webhooks],
        },
        "created_by": creator.get_username() if creator else None,
        "created_at": budget.created_at,
        "updated_at": budget.updated_at,
        "as_of": state.as_of,
        "period_start": state.period_start,
        "period_end": state.period_end,
        "actual_usd": state.actual_usd,
        "forecast_usd": state.forecast_usd,
        "low_usd": state.low_usd,
        "high_usd": state.high_usd,
        "pct_actual": state.pct_actual,
        "pct_forecast": state.pct_forecast,
        "status": state.status,
        "forecast_method": state.forecast.method,
        "previous_start": state.previous_start,
        "previous_same_end": state.previous_same_end,
        "previous_same_days_usd": state.previous_same_days_usd,
        "previous_period_usd": state.previous_period_usd,
    }
    if days:
        payload["days"] = [
            {
                "day": d.day,
                "actual_usd": d.actual_usd,
                "forecast_usd": d.forecast_usd,
                "low_usd": d.low_usd,
                "high_usd": d.high_usd,
            }
            for d in state.forecast.days
        ]
    return payload


def _json_object(request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise ValidationError({"non_field_errors": ["Send the budget as a JSON object."]})
    return dict(request.data)


def _detail(budget: Budget, request: Request, **kwargs: Any) -> Response:
    state = budget_status(budget)
    body = BudgetDetailOutput(budget_payload(budget, state, request, days=True)).data
    return Response(body, **kwargs)


# Every role reads; finops analysts and managers write.
BUDGET_ROLES: RolesByMethod = {
    "GET": ALL_ROLES,
    "POST": BUDGET_WRITER_ROLES,
    "PATCH": BUDGET_WRITER_ROLES,
    "DELETE": BUDGET_WRITER_ROLES,
}


class BudgetListCreateApi(APIView):
    """Budgets by name, each with its status in its current period; POST creates one
    (finops and manager roles)."""

    roles_by_method = BUDGET_ROLES

    @extend_schema(
        parameters=PAGE_PARAMETERS, responses=BudgetPageOutput, operation_id="v1_budgets_list"
    )
    def get(self, request: Request) -> Response:
        page = paginate(Budget.objects.select_related("created_by").order_by("name"), request)
        as_of = default_as_of()
        results = [
            budget_payload(budget, budget_status(budget, as_of=as_of), request)
            for budget in page.items
        ]
        return Response(BudgetPageOutput(page.envelope(results)).data)

    @extend_schema(request=BudgetInput, responses={201: BudgetDetailOutput})
    def post(self, request: Request) -> Response:
        budget = budget_create(user=request.user, data=_json_object(request))
        return _detail(budget, request, status=status.HTTP_201_CREATED)


class BudgetDetailApi(APIView):
    """One budget with its forecast day by day; PATCH changes the fields given, DELETE
    removes it and its alerts (finops and manager roles)."""

    roles_by_method = BUDGET_ROLES

    def _budget(self, budget_id: int) -> Budget:
        return get_object_or_404(Budget.objects.select_related("created_by"), pk=budget_id)

    @extend_schema(responses=BudgetDetailOutput)
    def get(self, request: Request, budget_id: int) -> Response:
        return _detail(self._budget(budget_id), request)

    @extend_schema(request=BudgetInput(partial=True), responses=BudgetDetailOutput)
    def patch(self, request: Request, budget_id: int) -> Response:
        budget = budget_update(
            budget=self._budget(budget_id), user=request.user, data=_json_object(request)
        )
        return _detail(budget, request)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, budget_id: int) -> Response:
        budget_delete(budget=self._budget(budget_id), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
