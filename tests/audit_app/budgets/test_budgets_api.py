"""Budgets API: create, read, change and delete by role, refusals naming the field, and the
status figures against the hand-computed sample."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.test import Client

from audit_app.models import Budget
from tests.audit_app.budgets.budget_samples import (
    ingest_after_the_data,
    logged_in,
)

pytestmark = pytest.mark.django_db
NEW = {
    "name": "Web team",
    "scope": {"kind": "team", "value": "web"},
    "amount_usd": "150.00",
    "notify": {"emails": ["ann@example.com"], "webhooks": ["https://hooks.example.invalid/x"]},
}


@pytest.fixture
def sample(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ingest_after_the_data(monkeypatch)


_client = logged_in


def _post(client: Client, body: Any) -> Any:
    return client.post("/api/v1/budgets/", body, content_type="application/json")


def test_finops_creates_a_budget_and_reads_its_status(sample: None, finops_user: Any) -> None:
    response = _post(_client(finops_user), NEW)
    assert response.status_code == 201
    body = response.json()
    budget = Budget.objects.get()
    assert body["id"] == budget.pk
    assert body["url"] == f"http://testserver/api/v1/budgets/{budget.pk}/"
    assert (body["name"], body["scope"], body["period"], body["amount_usd"]) == (
        "Web team",
        {"kind": "team", "value": "web"},
        "month",
        "150.00",
    )
    assert (body["alert_at_pct"], body["on_forecast"], body["notify"]) == (
        [80, 100],
        True,
        # The webhook URL is a secret: its scheme, host and last four characters.
        {"emails": ["ann@example.com"], "webhooks": ["https://hooks.example.invalid/…/id/x"]},
    )
    assert body["created_by"] == finops_user.username
    # Team web in November up to the 12th: 10.00 + 10.00 (GPU share) + 2.25 + 100.00.
    assert (body["as_of"], body["period_start"], body["period_end"]) == (
        "2026-11-12",
        "2026-11-01",
        "2026-11-30",
    )
    assert body["actual_usd"] == "122.250000"
    assert body["pct_actual"] == "81.5"  # 122.25 / 150
    assert len(body["days"]) == 30
    last_spent = body["days"][11]
    assert (last_spent["day"], last_spent["actual_usd"], last_spent["forecast_usd"]) == (
        "2026-11-12",
        "122.250000",
        "122.250000",
    )
    assert body["days"][12]["actual_usd"] is None
    assert body["forecast_usd"] == body["days"][-1]["forecast_usd"]
    # 81.5 % spent is past the 80 % threshold; over on the forecast if it reaches 150.00.
    heading_over = Decimal(body["forecast_usd"]) >= Decimal(150)
    assert body["status"] == ("forecast_over" if heading_over else "warning")


def test_every_role_reads_the_list_with_status_figures(
    sample: None, finops_user: Any, engineer_user: Any, manager_user: Any
) -> None:
    _post(_client(finops_user), {**NEW, "amount_usd": "100", "on_forecast": False})
    _post(
        _client(finops_user),
        {
            "name": "AWS",
            "scope": {"kind": "provider", "value": "aws"},
            "amount_usd": "1000",
            "on_forecast": False,
        },
    )
    for user in (finops_user, engineer_user, manager_user):
        body = _client(user).get("/api/v1/budgets/").json()
        assert (body["count"], body["next"], body["previous"]) == (2, None, None)
        rows = [(r["name"], r["actual_usd"], r["status"]) for r in body["results"]]
        assert rows == [
            ("AWS", "20.000000", "ok"),  # the pool AWS bills: sales' share and the idle hour
            ("Web team", "122.250000", "over"),
        ]
        assert "days" not in body["results"][0]


def test_bad_input_is_a_400_naming_the_field(sample: None, manager_user: Any) -> None:
    client = _client(manager_user)
    cases = {
        "amount_usd": {**NEW, "amount_usd": "-1"},
        "scope.value": {**NEW, "scope": {"kind": "team", "value": "nobody"}},
        "period": {**NEW, "period": "fortnight"},
        "notify.webhooks": {**NEW, "notify": {"webhooks": ["ftp://example.com/hook"]}},
        "notify.emails": {**NEW, "notify": {"emails": ["ann at example"]}},
        "alert_at_pct": {**NEW, "alert_at_pct": [0, 50]},
    }
    for field, body in cases.items():
        response = _post(client, body)
        assert response.status_code == 400, field
        answer = response.json()
        assert list(answer["errors"]) == [field]
        assert answer["detail"] == f"{field}: {answer['errors'][field][0]}"
    not_an_object = _post(client, [NEW])
    assert not_an_object.status_code == 400
    assert not_an_object.json()["errors"] == {
        "non_field_errors": ["Send the budget as a JSON object."]
    }
    assert not Budget.objects.exists()


def test_writes_by_role(
    sample: None, finops_user: Any, engineer_user: Any, manager_user: Any, admin_user: Any
) -> None:
    engineer = _client(engineer_user)
    assert _post(engineer, NEW).status_code == 403
    assert _post(_client(admin_user), NEW).status_code == 201
    budget = Budget.objects.get()
    url = f"/api/v1/budgets/{budget.pk}/"
    patch = {"amount_usd": "99.50"}
    assert engineer.patch(url, patch, content_type="application/json").status_code == 403
    assert engineer.delete(url).status_code == 403
    assert engineer.get(url).status_code == 200
    changed = _client(manager_user).patch(url, patch, content_type="application/json")
    assert changed.status_code == 200
    assert (changed.json()["amount_usd"], changed.json()["name"]) == ("99.50", "Web team")
    refused = _client(manager_user).patch(
        url, {"scope": {"kind": "model", "value": "gpt-5"}}, content_type="application/json"
    )
    assert (refused.status_code, list(refused.json()["errors"])) == (400, ["scope.value"])
    assert _client(finops_user).delete(url).status_code == 204
    assert not Budget.objects.exists()
    assert _client(finops_user).get(url).status_code == 404
    assert Client().get("/api/v1/budgets/").status_code == 401


def test_the_schema_describes_the_budget_routes(sample: None, finops_user: Any) -> None:
    schema = (
        _client(finops_user)
        .get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
        .json()
    )
    assert set(schema["paths"]["/api/v1/budgets/"]) == {"get", "post"}
    assert set(schema["paths"]["/api/v1/budgets/{budget_id}/"]) == {"get", "patch", "delete"}
    output = schema["components"]["schemas"]["BudgetDetailOutput"]["properties"]
    assert {"actual_usd", "forecast_usd", "low_usd", "high_usd", "status", "days"} <= set(output)
