"""Chromium: deleting an upload goes through its confirmation page, with no script involved."""

from __future__ import annotations

import io
from typing import Any

import pytest

from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import Upload
from tests.audit_app.ingestion.ingest_samples import SAMPLE_CSV
from tests.factories import TEST_PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_delete_confirm_cancel_then_delete(
    browser_page: Any, live_server: Any, engineer_user: Any
) -> None:
    # The engineer's own upload: engineers delete only what they uploaded.
    upload = upload_create(
        source=io.BytesIO(SAMPLE_CSV), original_name="log.csv", user=engineer_user, enqueue=False
    )
    assert upload_ingest(upload_id=upload.pk).status == "succeeded"
    page = browser_page
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(engineer_user.username)
    page.get_by_label("Password").fill(TEST_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(live_server.url + "/")
    page.goto(f"{live_server.url}/uploads/{upload.pk}/")
    page.get_by_role("link", name="Delete this upload and everything it added…").click()
    page.wait_for_url(f"{live_server.url}/uploads/{upload.pk}/delete/")
    assert page.locator("h1").inner_text() == f"Delete upload {upload.pk}?"
    # SAMPLE_CSV's accepted rows: chat 2, evals 1, tool 1
    # (tests/audit_app/ingestion/ingest_samples.py)
    rows = page.locator("#workloads-touched ~ table tbody tr").all_inner_texts()
    assert [" ".join(r.split()) for r in rows] == ["chat 2", "evals 1", "tool 1"]

    page.get_by_role("link", name="Cancel").click()
    page.wait_for_url(f"{live_server.url}/uploads/{upload.pk}/")
    assert Upload.objects.filter(pk=upload.pk).exists()

    page.goto(f"{live_server.url}/uploads/{upload.pk}/delete/")
    page.get_by_role("button", name=f"Delete upload {upload.pk}").click()
    page.wait_for_url(f"{live_server.url}/uploads/")
    assert f"Deleted upload {upload.pk} (log.csv)" in page.locator(".messages").inner_text()
    assert not Upload.objects.filter(pk=upload.pk).exists()
