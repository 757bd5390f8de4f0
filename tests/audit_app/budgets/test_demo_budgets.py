"""The demo's budgets: sized on the demo's spend so each status shows, made once."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from audit_app.budgets.status import budget_statuses
from audit_app.demo.budgets import DEMO_EMAIL, DEMO_WEBHOOK, demo_budgets_ensure
from audit_app.demo.seed import demo_data_load
from audit_app.derived import derived_refresh
from audit_app.models import Budget

pytestmark = pytest.mark.django_db


def test_demo_budgets_show_each_status_and_are_made_once(tmp_path: Path) -> None:
    today = date(2026, 11, 20)  # the data runs to the 19th: November has days left
    result = demo_data_load(days=30, scale=0.02, directory=tmp_path, today=today)
    derived_refresh()  # as `manage.py seed_demo` does
    assert [b.name for b in result.budgets] == [
        "All inference spend",
        "Customer experience",
        "GPU pools billed by AWS",
        "Claude Sonnet 4.5 this quarter",
    ]
    states = {s.name: s for s in budget_statuses(date(2026, 11, 19))}
    got = {name: (s.scope_kind, s.scope_value, s.period, s.status) for name, s in states.items()}
    assert got == {
        "All inference spend": ("all", "", "month", "ok"),
        "Customer experience": ("team", "customer-experience", "month", "forecast_over"),
        "GPU pools billed by AWS": ("provider", "aws", "month", "warning"),
        "Claude Sonnet 4.5 this quarter": (
            "model",
            "claude-sonnet-4-5-20250929",
            "quarter",
            "ok",
        ),
    }
    heading_over = states["Customer experience"]
    assert heading_over.actual_usd < heading_over.amount_usd <= heading_over.forecast_usd
    aws = states["GPU pools billed by AWS"]
    assert aws.actual_usd > 0  # the pools' bills reach the provider AWS bills them under
    notified = Budget.objects.get(name="Customer experience")
    assert (notified.notify_emails, notified.notify_webhooks) == ([DEMO_EMAIL], [DEMO_WEBHOOK])
    assert all(b.amount_usd > Decimal(0) for b in Budget.objects.all())

    amounts = dict(Budget.objects.values_list("name", "amount_usd"))
    again = demo_data_load(days=30, scale=0.02, directory=tmp_path, today=today)
    derived_refresh()  # as `manage.py seed_demo` does
    assert (again.skipped, again.budgets) == (True, ())
    assert demo_budgets_ensure(today=today) == []
    assert dict(Budget.objects.values_list("name", "amount_usd")) == amounts


def test_data_ending_on_a_months_last_day_gets_quarter_budgets(tmp_path: Path) -> None:
    demo_data_load(days=30, workloads=2, scale=0.02, directory=tmp_path, today=date(2026, 12, 1))
    derived_refresh()  # as `manage.py seed_demo` does
    periods = dict(Budget.objects.values_list("name", "period"))
    # Two workloads of the customer-experience team, on OpenAI and Anthropic: no model of the
    # quarter budget, and a bill with the pools but no pool traffic.
    assert periods["All inference spend"] == "quarter"
    assert periods["Customer experience"] == "quarter"
    state = next(s for s in budget_statuses(date(2026, 11, 30)) if s.name == "Customer experience")
    assert state.status == "forecast_over"
    assert "Claude Sonnet 4.5 this quarter" not in periods
