"""Chromium: a FinOps analyst opens the reconciliation page and sees the discrepancy flagged."""

from __future__ import annotations

from typing import Any

import pytest

from audit_app.costs.price_cards import price_cards_seed
from tests.audit_app.costs.test_billing_selectors import H0, H, _bill_upload, _charge, _ingest
from tests.audit_app.ingestion.ingest_samples import SAMPLE_CSV
from tests.factories import TEST_PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_reconciliation_page_flags_the_discrepancy(
    browser_page: Any, live_server: Any, finops_user: Any
) -> None:
    # Transactional tests empty the tables, data-migration rows included: put the cards back.
    price_cards_seed()
    _ingest(SAMPLE_CSV, "sample.csv")
    bill = _bill_upload()
    # The logs put gpt-4o at $0.0175 that day; the bill agrees. gpt-4o-mini is billed 33 % over.
    _charge(
        bill,
        start=H0,
        cost="0.0175",
        provider="openai",
        meter_kind="token",
        period_end=H0 + 24 * H,
        tags={"model": "gpt-4o"},
    )
    _charge(
        bill,
        start=H0,
        cost="0.10",
        provider="openai",
        meter_kind="token",
        period_end=H0 + 24 * H,
        tags={"model": "gpt-4o-mini"},
    )

    page = browser_page
    page.goto(
        live_server.url + "/accounts/login/?next=/reconciliation/%3Fstart%3D2026-11-01"
        "%26end%3D2026-11-03"
    )
    page.get_by_label("Username").fill(finops_user.username)
    page.get_by_label("Password").fill(TEST_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_selector("#reconciliation-chart .main-svg")

    assert page.get_by_test_id("flagged-count").inner_text() == "1"
    flagged = page.locator("#reconciliation-table tr.flagged")
    assert flagged.count() == 1
    assert "gpt-4o-mini" in flagged.inner_text()
    assert "33.3 %" in flagged.inner_text()
    # The row links to the uploads behind its numbers.
    flagged.get_by_role("link", name=f"bill {bill.pk}").click()
    page.wait_for_url(f"**/uploads/{bill.pk}/")
    assert "bill.csv" in page.locator("h1").inner_text()
