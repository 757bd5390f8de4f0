"""Budgets pages: the list with each budget's status and a form to create one, a budget's page
with its forecast band, edit and delete. Every role reads; finops analysts and managers write
(`BUDGET_WRITER_ROLES`), others are refused with a 403."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views import View

from audit_app.access.permissions import ALL_ROLES, BUDGET_WRITER_ROLES, RoleRequiredMixin
from audit_app.budgets.charts import build_budget_forecast_figure
from audit_app.budgets.delivery import failing_webhooks
from audit_app.budgets.forms import BudgetForm
from audit_app.budgets.services import (
    BudgetRefused,
    budget_create,
    budget_delete,
    budget_update,
    scope_choices,
)
from audit_app.budgets.status import budget_status, budget_statuses, default_as_of
from audit_app.lib.errors import ErrorKind
from audit_app.lib.masking import mask_webhook
from audit_app.models import Budget


def _scope_values() -> list[str]:
    return sorted({value for values in scope_choices().values() for value in values})


def _saved(form: BudgetForm, save: Any) -> Budget | None:
    """``save(data)`` with the form's budget; None (the refusal on the form) when refused."""
    if not form.is_valid():
        return None
    try:
        budget: Budget = save(form.budget_data())
    except BudgetRefused as exc:
        if exc.kind is ErrorKind.FORBIDDEN:
            raise PermissionDenied(str(exc)) from None
        form.refuse(exc.field, str(exc))
        return None
    return budget


class BudgetListView(RoleRequiredMixin, View):
    template_name = "audit/budgets.html"
    roles_by_method = {"GET": ALL_ROLES, "POST": BUDGET_WRITER_ROLES}

    def get(self, request: HttpRequest) -> HttpResponse:
        return self._render(request, BudgetForm())

    def post(self, request: HttpRequest) -> HttpResponse:
        form = BudgetForm(request.POST)
        budget = _saved(form, lambda data: budget_create(user=request.user, data=data))
        if budget is None:
            return self._render(request, form, status=400)
        messages.success(request, f"Budget {budget.name} created.")
        return HttpResponseRedirect(reverse("budget-detail", args=[budget.pk]))

    def _render(self, request: HttpRequest, form: BudgetForm, *, status: int = 200) -> HttpResponse:
        as_of = default_as_of()
        failing = failing_webhooks()
        context = {
            "statuses": budget_statuses(as_of),
            "failing": list(failing.values()),
            "failing_budgets": {
                b.pk for b in Budget.objects.all() if set(b.notify_webhooks) & set(failing)
            },
            "as_of": as_of,
            "form": form,
            "can_write": self.may("POST"),
            "scope_values": _scope_values(),
        }
        return render(request, self.template_name, context, status=status)


class BudgetDetailView(RoleRequiredMixin, View):
    """GET: the budget, its forecast band chart, and (for writers) the edit form; POST: save
    the edit."""

    template_name = "audit/budget_detail.html"
    roles_by_method = {"GET": ALL_ROLES, "POST": BUDGET_WRITER_ROLES}

    def get(self, request: HttpRequest, budget_id: int) -> HttpResponse:
        budget = get_object_or_404(Budget, pk=budget_id)
        return self._render(request, budget, BudgetForm.for_budget(budget))

    def post(self, request: HttpRequest, budget_id: int) -> HttpResponse:
        budget = get_object_or_404(Budget, pk=budget_id)
        form = BudgetForm(request.POST)
        saved = _saved(
            form, lambda data: budget_update(budget=budget, user=request.user, data=data)
        )
        if saved is None:
            return self._render(request, budget, form, status=400)
        messages.success(request, f"Budget {saved.name} saved.")
        return HttpResponseRedirect(reverse("budget-detail", args=[saved.pk]))

    def _render(
        self, request: HttpRequest, budget: Budget, form: BudgetForm, *, status: int = 200
    ) -> HttpResponse:
        budget.refresh_from_db()  # a refused edit leaves the stored budget as it was
        state = budget_status(budget)
        failing = failing_webhooks()
        context = {
            "budget": budget,
            "state": state,
            "webhooks": [
                {"url": mask_webhook(url), "failing": failing.get(url)}
                for url in budget.notify_webhooks
            ],
            "figure": build_budget_forecast_figure(
                forecast=state.forecast, amount=budget.amount_usd
            ),
            "form": form,
            "can_write": self.may("POST"),
            "scope_values": _scope_values(),
        }
        return render(request, self.template_name, context, status=status)


class BudgetDeleteView(RoleRequiredMixin, View):
    """POST from the budget's page (its Delete button sits behind a "Delete this budget"
    disclosure): delete the budget and its alerts."""

    roles_by_method = {"*": BUDGET_WRITER_ROLES}

    def post(self, request: HttpRequest, budget_id: int) -> HttpResponse:
        budget = get_object_or_404(Budget, pk=budget_id)
        name = budget.name
        budget_delete(budget=budget, user=request.user)
        messages.success(request, f"Budget {name} deleted.")
        return HttpResponseRedirect(reverse("budgets"))
