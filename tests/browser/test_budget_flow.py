"""Chromium: a finops analyst creates a budget on the Budgets page and sees its forecast band."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.utils import timezone

from audit_app.models import Budget
from tests.audit_app.budgets.budget_samples import ingest_budget_sample
from tests.factories import TEST_PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_create_a_budget_and_see_the_forecast_band(
    browser_page: Any, live_server: Any, finops_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After the sample's last day (12 November): November's spend is counted up to then.
    monkeypatch.setattr(timezone, "now", lambda: datetime(2026, 12, 1, 9, tzinfo=UTC))
    ingest_budget_sample()
    page = browser_page
    page.goto(f"{live_server.url}/accounts/login/?next=/budgets/")
    page.get_by_label("Username").fill(finops_user.username)
    page.get_by_label("Password").fill(TEST_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/budgets/")
    assert "No budget yet." in page.locator("main").inner_text()

    page.get_by_label("Name").fill("Web team")
    page.get_by_label("Scope", exact=True).select_option("team")
    page.get_by_label("Scope value").fill("web")
    page.get_by_label("Amount (USD)").fill("150")
    page.get_by_label("Email to").fill("ann@example.com")
    page.get_by_role("button", name="Create budget").click()

    budget = Budget.objects.get()
    page.wait_for_url(f"{live_server.url}/budgets/{budget.pk}/")
    assert "Budget Web team created." in page.locator(".messages").inner_text()
    # Team web in November up to the 12th: 10.00 + 10.00 (GPU share) + 2.25 + 100.00.
    assert page.get_by_test_id("actual").inner_text() == "$122.25"
    page.wait_for_selector("#budget-forecast .main-svg")
    # The low–high band is a filled area under the high line, down to the low line.
    band = page.locator("#budget-forecast .scatterlayer path.js-fill")
    assert band.count() == 1
    assert len(band.first.get_attribute("d") or "") > 20
    legend = page.locator("#budget-forecast .legend").text_content() or ""
    for name in ("Forecast band (low–high)", "Forecast", "Spent", "Budget $150.00"):
        assert name in legend

    page.get_by_role("link", name="All budgets").click()
    row = page.get_by_test_id("budget-row")
    assert row.count() == 1
    assert "Web team" in row.inner_text() and "$150.00" in row.inner_text()
    assert budget.notify_emails == ["ann@example.com"]
