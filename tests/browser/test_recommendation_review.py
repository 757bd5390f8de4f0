"""Chromium: a manager opens a recommendation, sees its charts and approves a pilot."""

from __future__ import annotations

import io
from typing import Any

import pytest

from audit_app.costs.price_cards import price_cards_seed
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import Recommendation, Workload, WorkloadOverride
from audit_app.recommendations.services import recommendations_refresh
from tests.audit_app.recommendations.test_services import EVALS
from tests.factories import TEST_PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_manager_approves_a_pilot(
    browser_page: Any, live_server: Any, manager_user: Any, engineer_user: Any, settings: Any
) -> None:
    settings.RECOMMENDATION_MIN_SAVINGS_USD = 0  # the sample saves $0.64 a month
    price_cards_seed()  # a transactional flush removed the migration's cards
    upload = upload_create(source=io.BytesIO(EVALS.encode()), original_name="e.csv", enqueue=False)
    upload_ingest(upload_id=upload.pk)
    WorkloadOverride.objects.create(
        workload=Workload.objects.get(name="evals"),
        workload_class="async",
        reason="nightly",
        user=engineer_user,
    )
    recommendations_refresh()
    recommendation = Recommendation.objects.get(target_kind="batch_api")

    page = browser_page
    page.goto(f"{live_server.url}/accounts/login/?next=/recommendations/")
    page.get_by_label("Username").fill(manager_user.username)
    page.get_by_label("Password").fill(TEST_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("link", name=recommendation.target).click()
    page.wait_for_selector("#cost-comparison .main-svg")
    page.wait_for_selector("#traffic-shape .main-svg")
    assert page.get_by_test_id("status").inner_text() == "Proposed"

    page.get_by_label("Note (required to reject)").fill("Pilot it on the nightly run")
    page.get_by_role("button", name="Approve a pilot").click()
    page.wait_for_selector("text=Recommendation approved for a pilot.")
    assert page.get_by_test_id("status").inner_text() == "Pilot approved"
    assert "Pilot it on the nightly run" in page.locator("table").last.inner_text()
    assert Recommendation.objects.get(pk=recommendation.pk).status == "pilot_approved"
