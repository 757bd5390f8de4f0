"""`manage.py budgets`: every budget's spent, forecast and status, as JSON or a table."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from audit_app.budgets.services import budget_create
from tests.audit_app.budgets.budget_samples import ingest_budget_sample

pytestmark = pytest.mark.django_db


@pytest.fixture
def budgets(db: Any, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    monkeypatch.setattr(timezone, "now", lambda: datetime(2026, 12, 1, 9, tzinfo=UTC))
    ingest_budget_sample()
    made = [
        budget_create(
            user=None,
            data={
                "name": "Everything",
                "scope": {"kind": "all"},
                "period": "quarter",
                "amount_usd": "40",
                "on_forecast": False,
            },
        ),
        budget_create(
            user=None,
            data={
                "name": "Chat",
                "scope": {"kind": "workload", "value": "chat"},
                "amount_usd": 500,
            },
        ),
    ]
    return [b.pk for b in made]


def _json(*args: str) -> list[dict[str, Any]]:
    out = StringIO()
    call_command("budgets", "--json", *args, stdout=out)
    rows: list[dict[str, Any]] = json.loads(out.getvalue())
    return rows


def test_json_on_a_given_day(budgets: list[int]) -> None:
    everything, chat = budgets
    rows = _json("--as-of", "2026-11-10")
    assert [set(row) for row in rows] == [
        {
            "id",
            "name",
            "scope",
            "period",
            "amount_usd",
            "as_of",
            "actual_usd",
            "previous_same_days_usd",
            "previous_period_usd",
            "forecast_usd",
            "status",
        }
    ] * 2
    by_name = {row.pop("name"): row for row in rows}
    previous = {
        name: (row.pop("as_of"), row.pop("previous_same_days_usd"), row.pop("previous_period_usd"))
        for name, row in by_name.items()
    }
    assert previous == {
        # The third quarter has no data.
        "Everything": ("2026-11-10", "0.000000", "0.000000"),
        # October 1-10 spent nothing; October 20 spent 4.00.
        "Chat": ("2026-11-10", "0.000000", "4.000000"),
    }
    forecast = {name: row.pop("forecast_usd") for name, row in by_name.items()}
    assert by_name == {
        # The quarter up to 10 November: 4.00 in October and 37.75 in November, past 40.00.
        "Everything": {
            "id": everything,
            "scope": {"kind": "all", "value": ""},
            "period": "quarter",
            "amount_usd": "40.00",
            "actual_usd": "41.750000",
            "status": "over",
        },
        # Chat in November up to the 10th: 10.00 + 2.25, far below 80 % of 500.
        "Chat": {
            "id": chat,
            "scope": {"kind": "workload", "value": "chat"},
            "period": "month",
            "amount_usd": "500.00",
            "actual_usd": "12.250000",
            "status": "forecast_over"
            if Decimal(forecast["Chat"]) >= 500
            else ("warning" if Decimal(forecast["Chat"]) >= 400 else "ok"),
        },
    }
    for value in forecast.values():
        assert Decimal(value) == Decimal(value).quantize(Decimal("0.000001"))


def test_default_day_is_the_last_with_data(budgets: list[int]) -> None:
    rows = {row["name"]: row for row in _json()}
    assert rows["Chat"]["actual_usd"] == "112.250000"  # the 12 November request counts
    assert rows["Everything"]["actual_usd"] == "141.750000"


def test_table(budgets: list[int]) -> None:
    out = StringIO()
    call_command("budgets", "--as-of", "2026-11-10", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == [
        "budget",
        "scope",
        "amount_usd",
        "actual_usd",
        "forecast_usd",
        "status",
    ]
    assert lines[1].split()[:4] == ["Chat", "workload:chat", "500.00", "12.250000"]
    assert lines[2].split()[:4] == ["Everything", "all", "40.00", "41.750000"]
    assert lines[2].split()[-1] == "over"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("yesterday", "as_of='yesterday' is not a date (use YYYY-MM-DD)"),
        (
            "1999-12-31",
            "as_of='1999-12-31' is outside 2000-01-01 to 2100-12-31, the days we handle",
        ),
    ],
)
def test_a_bad_day_is_refused(budgets: list[int], value: str, message: str) -> None:
    with pytest.raises(CommandError) as caught:
        call_command("budgets", "--json", "--as-of", value)
    assert str(caught.value) == message
