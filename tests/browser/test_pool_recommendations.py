"""Chromium at 1280 px: on the demo organisation, the overview's pools table links each pool's
best next step, and a pool recommendation's page draws the replicas chart (demanded, provisioned
now and after) and states its risk, and the Recommendations page shows the one plan, all within
the window."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest

from audit_app.demo.seed import demo_data_load
from audit_app.derived import derived_refresh
from audit_app.models import Recommendation
from tests.factories import TEST_PASSWORD
from tests.support.catalog import catalog_ensure

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTH = 1280


def _page_width(page: Any) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth"))


def test_pool_next_steps_fit_1280_px_and_draw_the_replicas_chart(
    browser_page: Any, live_server: Any, finops_user: Any, tmp_path: Path
) -> None:
    catalog_ensure()
    demo_data_load(days=30, scale=0.02, directory=tmp_path, today=date(2026, 11, 20))
    derived_refresh()  # as `manage.py seed_demo` does
    autoscale = Recommendation.objects.get(pool__name="h100-pool", target_kind="pool_autoscale")
    page = browser_page
    page.set_viewport_size({"width": WIDTH, "height": 900})
    page.goto(f"{live_server.url}/accounts/login/?next=/")
    page.get_by_label("Username").fill(finops_user.username)
    page.get_by_label("Password").fill(TEST_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_selector("#pools-table")
    steps = page.get_by_test_id("pool-next-step")
    assert steps.count() == 2
    assert "saves $" in steps.nth(0).inner_text()
    assert page.get_by_test_id("idle-next-steps").is_visible()
    assert _page_width(page) <= WIDTH

    page.goto(f"{live_server.url}/recommendations/{autoscale.pk}/")
    page.wait_for_selector("#pool-replicas .main-svg")
    legend = page.locator("#pool-replicas .legend").text_content()
    assert "Demanded" in legend and "Provisioned now" in legend and "Provisioned after" in legend
    assert "sales-copilot" in page.get_by_test_id("risk").inner_text()
    assert _page_width(page) <= WIDTH

    page.goto(f"{live_server.url}/recommendations/")
    page.wait_for_selector("#plan-table")
    # The plan's headline, then its options, the ones waiting for a benchmark (with the gate
    # to run) and those left out, each saying why.
    assert page.get_by_test_id("total-savings").is_visible()
    assert (
        page.locator("#needs-benchmark-table code").first.inner_text().startswith("manage.py gate")
    )
    assert page.locator('tr[data-pool="h100-pool"]').count() >= 1
    assert _page_width(page) <= WIDTH
