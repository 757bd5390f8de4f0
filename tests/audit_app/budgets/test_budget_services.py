"""Budget service: what it keeps, each refusal naming its field, who may write, the audit trail."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from audit_app.budgets.services import (
    BudgetRefused,
    budget_create,
    budget_delete,
    budget_update,
    scope_choices,
)
from audit_app.lib.errors import ErrorKind
from audit_app.models import AuditEvent, Budget, Workload
from tests.audit_app.budgets.budget_samples import ingest_budget_sample

pytestmark = pytest.mark.django_db
GOOD: dict[str, Any] = {
    "name": "Web team",
    "scope": {"kind": "team", "value": "web"},
    "period": "month",
    "amount_usd": "1500.50",
    "alert_at_pct": [100, 80, 80],
    "on_forecast": True,
    "notify": {
        "emails": ["ann@example.com", " bob@example.org "],
        "webhooks": ["https://hooks.example.invalid/T1", "http://127.0.0.1:9000/hook"],
    },
}


@pytest.fixture
def sample(db: Any) -> None:
    ingest_budget_sample()


def test_create_keeps_the_checked_values_and_records_it(sample: None, finops_user: Any) -> None:
    budget = budget_create(user=finops_user, data=GOOD)
    budget.refresh_from_db()
    assert (budget.name, budget.scope_kind, budget.scope_value, budget.period) == (
        "Web team",
        "team",
        "web",
        "month",
    )
    assert budget.amount_usd == Decimal("1500.50")
    assert budget.alert_at_pct == [80, 100]  # sorted, once each
    assert budget.notify_emails == ["ann@example.com", "bob@example.org"]
    assert budget.notify_webhooks == GOOD["notify"]["webhooks"]
    assert budget.created_by == finops_user
    event = AuditEvent.objects.get(action="budget_changed")
    assert (event.action, event.actor, event.object_id) == (
        "budget_changed",
        finops_user,
        str(budget.pk),
    )
    assert event.summary == "created budget Web team ($1500.50 a month)"
    assert event.details["amount_usd"] == "1500.50"


def test_defaults(sample: None) -> None:
    budget = budget_create(
        user=None, data={"name": "All", "scope": {"kind": "all"}, "amount_usd": 5}
    )
    assert (budget.period, budget.alert_at_pct, budget.on_forecast) == ("month", [80, 100], True)
    assert (budget.notify_emails, budget.notify_webhooks, budget.scope_value) == ([], [], "")
    assert AuditEvent.objects.get(action="budget_changed").actor_name == "command line"


@pytest.mark.parametrize(
    ("kind", "value", "stored"),
    [
        ("workload", "sales", "sales"),
        ("provider", "hosted_vllm", "hosted_vllm"),
        ("provider", "aws", "aws"),  # bills the GPU pool, has no traffic of its own
        ("provider", "OpenAI", "openai"),  # an alias of a provider with data
        ("model", "claude-sonnet", "claude-sonnet"),
        ("all", "", ""),
    ],
)
def test_every_known_scope_value_is_accepted(
    sample: None, kind: str, value: str, stored: str
) -> None:
    budget = budget_create(
        user=None, data={**GOOD, "scope": {"kind": kind, "value": value}, "notify": None}
    )
    assert (budget.scope_kind, budget.scope_value) == (kind, stored)


def test_scope_choices(sample: None) -> None:
    assert scope_choices() == {
        "team": ["ml", "web"],
        "workload": ["chat", "evals", "sales"],
        "provider": ["anthropic", "aws", "hosted_vllm", "openai"],
        "model": ["claude-sonnet", "gpt-4o", "llama-70b"],
    }


BAD: list[tuple[dict[str, Any], str]] = [
    ({"name": "  "}, "name"),
    ({"name": "x" * 201}, "name"),
    ({"name": None}, "name"),
    ({"name": "web\x00team"}, "name"),  # PostgreSQL keeps no NUL in text
    ({"amount_usd": 0}, "amount_usd"),
    ({"amount_usd": "-5"}, "amount_usd"),
    ({"amount_usd": "ten"}, "amount_usd"),
    ({"amount_usd": "NaN"}, "amount_usd"),
    ({"amount_usd": "Infinity"}, "amount_usd"),
    ({"amount_usd": "1.005"}, "amount_usd"),
    ({"amount_usd": "1e15"}, "amount_usd"),
    ({"amount_usd": True}, "amount_usd"),
    ({"amount_usd": [1]}, "amount_usd"),
    ({"scope": "team"}, "scope"),
    ({"scope": {"kind": "team", "value": "web", "extra": 1}}, "scope"),
    ({"scope": {"kind": "region", "value": "eu"}}, "scope.kind"),
    ({"scope": {"value": "web"}}, "scope.kind"),
    ({"scope": {"kind": "team", "value": "nobody"}}, "scope.value"),
    ({"scope": {"kind": "team"}}, "scope.value"),
    ({"scope": {"kind": "team", "value": 7}}, "scope.value"),
    ({"scope": {"kind": "all", "value": "web"}}, "scope.value"),
    ({"scope": {"kind": "workload", "value": "web"}}, "scope.value"),  # a team, not a workload
    ({"scope": {"kind": "provider", "value": "azure"}}, "scope.value"),
    ({"period": "week"}, "period"),
    ({"period": None}, "period"),
    ({"alert_at_pct": []}, "alert_at_pct"),
    ({"alert_at_pct": "80"}, "alert_at_pct"),
    ({"alert_at_pct": [0]}, "alert_at_pct"),
    ({"alert_at_pct": [1001]}, "alert_at_pct"),
    ({"alert_at_pct": [80.5]}, "alert_at_pct"),
    ({"alert_at_pct": ["lots"]}, "alert_at_pct"),
    ({"alert_at_pct": [True]}, "alert_at_pct"),
    ({"on_forecast": "yes"}, "on_forecast"),
    ({"notify": ["ann@example.com"]}, "notify"),
    ({"notify": {"slack": ["#x"]}}, "notify"),
    ({"notify": {"emails": ["not-an-address"]}}, "notify.emails"),
    ({"notify": {"emails": "ann@example.com"}}, "notify.emails"),
    ({"notify": {"emails": [3]}}, "notify.emails"),
    ({"notify": {"webhooks": ["https://example.com/a\x00b"]}}, "notify.webhooks"),
    ({"notify": {"emails": [f"u{i}@example.com" for i in range(21)]}}, "notify.emails"),
    ({"notify": {"webhooks": ["ftp://example.com/x"]}}, "notify.webhooks"),
    ({"notify": {"webhooks": ["javascript:alert(1)"]}}, "notify.webhooks"),
    ({"notify": {"webhooks": ["hooks.example.com/x"]}}, "notify.webhooks"),
    ({"notify": {"webhooks": ["https://example.com/" + "a" * 2000]}}, "notify.webhooks"),
    ({"colour": "red"}, "colour"),
]


@pytest.mark.parametrize(("change", "field"), BAD, ids=[f for _, f in BAD])
def test_each_bad_field_is_refused_by_name(
    sample: None, finops_user: Any, change: dict[str, Any], field: str
) -> None:
    with pytest.raises(BudgetRefused) as caught:
        budget_create(user=finops_user, data={**GOOD, **change})
    assert (caught.value.kind, caught.value.field) == (ErrorKind.INVALID, field)
    assert str(caught.value).startswith(field) or field == "name"
    assert not Budget.objects.exists()
    assert not AuditEvent.objects.filter(action="budget_changed").exists()


@pytest.mark.parametrize("missing", ["amount_usd", "scope", "name"])
def test_required_fields(sample: None, missing: str) -> None:
    data = {k: v for k, v in GOOD.items() if k != missing}
    with pytest.raises(BudgetRefused) as caught:
        budget_create(user=None, data=data)
    assert caught.value.field == missing


def test_a_second_budget_of_the_same_name_is_refused(sample: None) -> None:
    budget_create(user=None, data=GOOD)
    with pytest.raises(BudgetRefused) as caught:
        budget_create(user=None, data={**GOOD, "amount_usd": "9"})
    assert caught.value.field == "name"
    assert str(caught.value) == "A budget named 'Web team' already exists."


def test_engineers_may_not_write(sample: None, engineer_user: Any, finops_user: Any) -> None:
    with pytest.raises(BudgetRefused) as caught:
        budget_create(user=engineer_user, data=GOOD)
    assert caught.value.kind == ErrorKind.FORBIDDEN
    budget = budget_create(user=finops_user, data=GOOD)
    for write in (
        lambda: budget_update(budget=budget, user=engineer_user, data={"amount_usd": "1"}),
        lambda: budget_delete(budget=budget, user=engineer_user),
    ):
        with pytest.raises(BudgetRefused):
            write()
    budget.refresh_from_db()
    assert budget.amount_usd == Decimal("1500.50")


def test_update_changes_only_what_is_given_and_records_before_and_after(
    sample: None, manager_user: Any
) -> None:
    budget = budget_create(user=None, data=GOOD)
    budget_update(
        budget=budget, user=manager_user, data={"amount_usd": "2000", "on_forecast": False}
    )
    budget.refresh_from_db()
    assert (budget.amount_usd, budget.on_forecast, budget.name) == (
        Decimal("2000.00"),
        False,
        "Web team",
    )
    event = AuditEvent.objects.latest("pk")
    assert event.summary == "changed budget Web team: amount_usd, on_forecast"
    assert event.details["before"] == {"amount_usd": "1500.50", "on_forecast": True}
    assert event.details["after"] == {"amount_usd": "2000.00", "on_forecast": False}


def test_a_refused_update_changes_nothing(sample: None) -> None:
    budget = budget_create(user=None, data=GOOD)
    with pytest.raises(BudgetRefused) as caught:
        budget_update(budget=budget, user=None, data={"amount_usd": "3", "period": "year"})
    assert caught.value.field == "period"
    budget.refresh_from_db()
    assert budget.amount_usd == Decimal("1500.50")


def test_a_kept_scope_stays_valid_after_its_data_is_gone(sample: None) -> None:
    budget = budget_create(
        user=None, data={**GOOD, "scope": {"kind": "workload", "value": "sales"}}
    )
    Workload.objects.filter(name="sales").update(name="sales-renamed")
    budget_update(budget=budget, user=None, data={"amount_usd": "10"})
    budget.refresh_from_db()
    assert (budget.scope_value, budget.amount_usd) == ("sales", Decimal("10.00"))
    with pytest.raises(BudgetRefused) as caught:
        budget_update(
            budget=budget, user=None, data={"scope": {"kind": "workload", "value": "ghost"}}
        )
    assert caught.value.field == "scope.value"


def test_delete_is_recorded(sample: None, finops_user: Any) -> None:
    budget = budget_create(user=None, data=GOOD)
    pk = budget.pk
    budget_delete(budget=budget, user=finops_user)
    assert not Budget.objects.exists()
    event = AuditEvent.objects.latest("pk")
    assert (event.summary, event.object_id, event.actor) == (
        "deleted budget Web team ($1500.50 a month)",
        str(pk),
        finops_user,
    )
