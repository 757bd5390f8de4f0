"""Budgets pages per role: the list with statuses, the create form for writers, a budget's page
with its forecast chart, edit and delete; refusals shown beside their field."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils.html import escape

from audit_app.budgets.services import budget_create
from audit_app.models import Budget
from tests.audit_app.budgets.budget_samples import (
    ingest_after_the_data,
    logged_in,
)

pytestmark = pytest.mark.django_db
FORM = {
    "name": "Web team",
    "scope_kind": "team",
    "scope_value": "web",
    "period": "month",
    "amount_usd": "150",
    "alert_at_pct": "80, 100",
    "on_forecast": "on",
    "emails": "ann@example.com\nbob@example.org",
    "webhooks": "https://hooks.example.invalid/x",
}


@pytest.fixture
def sample(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ingest_after_the_data(monkeypatch)


_client = logged_in


def _budget() -> Budget:
    return budget_create(
        user=None,
        data={
            "name": "AWS <pools>",
            "scope": {"kind": "provider", "value": "aws"},
            "amount_usd": "25",
            "on_forecast": False,
        },
    )


@pytest.mark.parametrize("role", ["finops", "manager"])
def test_writers_see_the_form_and_create(sample: None, request: Any, role: str) -> None:
    client = _client(request.getfixturevalue(f"{role}_user"))
    page = client.get("/budgets/").content.decode()
    assert 'data-testid="budget-form"' in page
    assert "No budget yet." in page
    assert '<a href="/budgets/" aria-current="page">Budgets</a>' in page
    response = client.post("/budgets/", FORM)
    budget = Budget.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/budgets/{budget.pk}/"
    assert budget.notify_emails == ["ann@example.com", "bob@example.org"]
    assert (budget.alert_at_pct, budget.on_forecast) == ([80, 100], True)
    listing = client.get("/budgets/").content.decode()
    assert f'<a href="/budgets/{budget.pk}/">Web team</a>' in listing
    assert "$150.00" in listing and "$122.25" in listing  # amount and spent (81.5 %)


def test_engineers_read_but_may_not_write(sample: None, engineer_user: Any) -> None:
    budget = _budget()
    client = _client(engineer_user)
    listing = client.get("/budgets/").content.decode()
    assert 'data-testid="budget-form"' not in listing
    assert "AWS &lt;pools&gt;" in listing
    assert "$20.00" in listing  # the pool AWS bills
    detail = client.get(f"/budgets/{budget.pk}/").content.decode()
    assert 'id="budget-forecast"' in detail
    assert 'data-testid="budget-form"' not in detail
    assert f"/budgets/{budget.pk}/delete/" not in detail
    assert client.post("/budgets/", FORM).status_code == 403
    assert client.post(f"/budgets/{budget.pk}/", FORM).status_code == 403
    assert client.post(f"/budgets/{budget.pk}/delete/").status_code == 403
    assert Budget.objects.get().name == "AWS <pools>"


def test_a_refusal_is_shown_beside_its_field(sample: None, finops_user: Any) -> None:
    client = _client(finops_user)
    cases = {
        "scope_value": {**FORM, "scope_value": "nobody"},
        "webhooks": {**FORM, "webhooks": "ftp://example.com/hook"},
        "emails": {**FORM, "emails": "ann at example"},
        "amount_usd": {**FORM, "amount_usd": "0"},
        "alert_at_pct": {**FORM, "alert_at_pct": "80, 2000"},
    }
    for field, form in cases.items():
        response = client.post("/budgets/", form)
        assert response.status_code == 400, field
        errors = response.context["form"].errors
        assert list(errors) == [field], field
        shown = f'<p class="error" role="alert">{escape(errors[field][0])}</p>'
        assert shown in response.content.decode()
    assert not Budget.objects.exists()


def test_detail_page_edits_and_deletes(sample: None, manager_user: Any) -> None:
    budget = _budget()
    client = _client(manager_user)
    page = client.get(f"/budgets/{budget.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="budget-forecast-data"' in html  # the chart's figure
    assert 'value="AWS &lt;pools&gt;"' in html  # the edit form, filled in
    figure = page.context["figure"]
    names = [trace["name"] for trace in figure["data"]]
    assert names == ["Low", "Forecast band (low–high)", "Forecast", "Spent", "Budget $25.00"]
    assert figure["data"][1]["fill"] == "tonexty"
    assert page.context["state"].actual_usd == 20  # Decimal("20.00")
    refused = client.post(f"/budgets/{budget.pk}/", {**FORM, "period": "decade"})
    assert refused.status_code == 400
    assert "period" in refused.context["form"].errors
    saved = client.post(f"/budgets/{budget.pk}/", {**FORM, "name": "Renamed"})
    assert saved.status_code == 302
    budget.refresh_from_db()
    assert (budget.name, budget.scope_kind, budget.scope_value) == ("Renamed", "team", "web")
    assert client.post(f"/budgets/{budget.pk}/delete/").status_code == 302
    assert not Budget.objects.exists()
    assert client.get(f"/budgets/{budget.pk}/").status_code == 404


SLACK = "https://hooks.slack.com/services/T0001/B0002/abcdEFGHijklMNOPqrst9876"
SLACK_SHOWN = "https://hooks.slack.com/…/9876"


def _budget_with_a_webhook() -> Budget:
    return budget_create(
        user=None,
        data={
            "name": "Chat",
            "scope": {"kind": "all"},
            "amount_usd": "25",
            "notify": {"emails": [], "webhooks": [SLACK]},
        },
    )


@pytest.mark.parametrize("role", ["engineer", "manager", "finops"])
def test_webhook_urls_are_masked_for_every_role(sample: None, request: Any, role: str) -> None:
    budget = _budget_with_a_webhook()
    client = _client(request.getfixturevalue(f"{role}_user"))
    for path in (
        "/budgets/",
        f"/budgets/{budget.pk}/",
        "/api/v1/budgets/",
        f"/api/v1/budgets/{budget.pk}/",
    ):
        text = client.get(path).content.decode()
        assert "abcdEFGHijklMNOPqrst" not in text, path
    answer = client.get(f"/api/v1/budgets/{budget.pk}/").json()
    assert answer["notify"]["webhooks"] == [SLACK_SHOWN]
    assert SLACK_SHOWN in client.get(f"/budgets/{budget.pk}/").content.decode()


def test_writers_edit_without_overwriting_a_masked_webhook(sample: None, finops_user: Any) -> None:
    budget = _budget_with_a_webhook()
    client = _client(finops_user)
    # The page's form holds the masked URL; saved as it is, the real URL stays.
    form = client.get(f"/budgets/{budget.pk}/").context["form"]
    assert form.initial["webhooks"] == SLACK_SHOWN
    saved = client.post(
        f"/budgets/{budget.pk}/",
        {
            **FORM,
            "name": "Chat 2",
            "scope_kind": "all",
            "scope_value": "",
            "webhooks": form.initial["webhooks"],
        },
    )
    assert saved.status_code == 302, saved.context["form"].errors
    budget.refresh_from_db()
    assert (budget.name, budget.notify_webhooks) == ("Chat 2", [SLACK])
    # The API the same: a PATCH without notify keeps it, the masked value sent back too.
    api = f"/api/v1/budgets/{budget.pk}/"
    kept = client.patch(api, {"amount_usd": "30"}, content_type="application/json")
    assert kept.status_code == 200
    budget.refresh_from_db()
    assert budget.notify_webhooks == [SLACK]
    shown = client.get(api).json()["notify"]
    new = "https://hooks.example.com/services/new-hook"
    patched = client.patch(
        api,
        {"notify": {"emails": [], "webhooks": [*shown["webhooks"], new]}},
        content_type="application/json",
    )
    assert patched.status_code == 200
    budget.refresh_from_db()
    assert budget.notify_webhooks == [SLACK, new]
    # A masked URL that stands for none of them is refused, naming the field.
    refused = client.patch(
        api,
        {"notify": {"webhooks": ["https://hooks.slack.com/…/0000"]}},
        content_type="application/json",
    )
    assert (refused.status_code, list(refused.json()["errors"])) == (400, ["notify.webhooks"])
    budget.refresh_from_db()
    assert budget.notify_webhooks == [SLACK, new]
