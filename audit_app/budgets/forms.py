"""The Budgets page's form: plain text fields turned into the API's JSON object, so the one
check is the service's (`audit_app.budgets.services.budget_values`); its refusals are shown
beside the field they name."""

from __future__ import annotations

import re
from typing import Any

from django import forms

from audit_app.lib.masking import mask_webhook
from audit_app.models import Budget

# The service's field names -> this form's fields.
FORM_FIELD = {
    "name": "name",
    "scope": "scope_kind",
    "scope.kind": "scope_kind",
    "scope.value": "scope_value",
    "period": "period",
    "amount_usd": "amount_usd",
    "alert_at_pct": "alert_at_pct",
    "on_forecast": "on_forecast",
    "notify": "emails",
    "notify.emails": "emails",
    "notify.webhooks": "webhooks",
}
_LIST_SEPARATORS = re.compile(r"[\s,;]+")


def _items(text: str) -> list[str]:
    return [item for item in _LIST_SEPARATORS.split(text) if item]


class BudgetForm(forms.Form):
    name = forms.CharField(label="Name", max_length=200)
    scope_kind = forms.ChoiceField(label="Scope", choices=Budget.ScopeKind.choices, initial="all")
    scope_value = forms.CharField(
        label="Scope value",
        required=False,
        help_text="The team, workload, provider or model; empty for all spend.",
        widget=forms.TextInput(attrs={"list": "scope-values"}),
    )
    period = forms.ChoiceField(label="Period", choices=Budget.Period.choices, initial="month")
    amount_usd = forms.CharField(
        label="Amount (USD)", widget=forms.NumberInput(attrs={"step": "0.01", "min": "0.01"})
    )
    alert_at_pct = forms.CharField(
        label="Alert at (% of the amount)",
        initial="80, 100",
        help_text="Whole percentages, separated by commas.",
    )
    on_forecast = forms.BooleanField(
        label="Alert on the forecast too", required=False, initial=True
    )
    emails = forms.CharField(
        label="Email to",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 50}),
        help_text="Addresses, one a line.",
    )
    webhooks = forms.CharField(
        label="Webhooks",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 50}),
        help_text="http(s) URLs, one a line; Slack-compatible JSON is POSTed to each.",
    )

    @classmethod
    def for_budget(cls, budget: Budget, **kwargs: Any) -> BudgetForm:
        return cls(
            initial={
                "name": budget.name,
                "scope_kind": budget.scope_kind,
                "scope_value": budget.scope_value,
                "period": budget.period,
                "amount_usd": budget.amount_usd,
                "alert_at_pct": ", ".join(str(p) for p in budget.alert_at_pct),
                "on_forecast": budget.on_forecast,
                "emails": "\n".join(budget.notify_emails),
                # Masked: sent back unchanged, each stands for the stored URL.
                "webhooks": "\n".join(mask_webhook(url) for url in budget.notify_webhooks),
            },
            **kwargs,
        )

    def budget_data(self) -> dict[str, Any]:
        """The API's JSON object from the cleaned fields (call after is_valid)."""
        data = self.cleaned_data
        return {
            "name": data["name"],
            "scope": {"kind": data["scope_kind"], "value": data.get("scope_value", "")},
            "period": data["period"],
            "amount_usd": data["amount_usd"],
            "alert_at_pct": _items(data["alert_at_pct"]),
            "on_forecast": bool(data.get("on_forecast")),
            "notify": {
                "emails": _items(data.get("emails", "")),
                "webhooks": _items(data.get("webhooks", "")),
            },
        }

    def refuse(self, field: str, message: str) -> None:
        """Show a service refusal beside the form field it names."""
        self.add_error(FORM_FIELD.get(field), message)
