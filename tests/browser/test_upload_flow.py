"""Chromium: an engineer uploads a log through the page, watches the progress bar reach 100 %
while a real worker ingests it, and sees the overview's spend chart change."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from playwright.sync_api import Error as PlaywrightError

from audit_app.models import Upload
from tests.factories import TEST_PASSWORD
from tests.integration_support import tasks_sent_to_broker, worker_environment
from tests.support.processes import celery_worker

pytestmark = [
    pytest.mark.browser,
    pytest.mark.redis,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

ROWS = 120_000


def _write_log(path: Path) -> int:
    rng = np.random.default_rng(3)
    end = pd.Timestamp.now(tz="UTC").floor("D")
    started = end - pd.to_timedelta(rng.integers(3600, 10 * 86400, ROWS), unit="s")
    pd.DataFrame(
        {
            "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "ended_at": (started + pd.Timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "workload": rng.choice(["support-chat", "nightly-evals"], ROWS),
            "provider": "openai",
            "model": "gpt-4o-mini",
            "input_tokens": rng.integers(10, 3000, ROWS),
            "output_tokens": rng.integers(1, 500, ROWS),
        }
    ).to_csv(path, index=False)
    return ROWS


def _spend_traces(page: Any) -> int:
    page.wait_for_selector("#spend-per-day .main-svg")
    return page.locator("#spend-per-day .barlayer .trace").count()


def _progress(page: Any) -> int:
    """The progress bar's value, or -1 while there is none. The page reloads itself once the
    upload has finished; a read that races that reload waits for the new page and reads again."""
    script = (
        "document.querySelector('#upload-progress')"
        " ? document.querySelector('#upload-progress').value : -1"
    )
    for _attempt in range(20):
        try:
            return int(page.evaluate(script))
        except PlaywrightError as error:
            if "context was destroyed" not in str(error):
                raise
            page.wait_for_load_state("load")
    raise AssertionError("the upload page kept navigating")


def test_upload_progress_and_overview_chart(
    browser_page: Any, live_server: Any, engineer_user: Any, redis_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "requests.csv"
    rows = _write_log(log)
    page = browser_page
    page.goto(live_server.url + "/accounts/login/")
    page.get_by_label("Username").fill(engineer_user.username)
    page.get_by_label("Password").fill(TEST_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(live_server.url + "/")
    # No spend yet: the overview says so in words instead of drawing empty axes.
    assert "No spend between" in page.get_by_test_id("empty-window").inner_text()

    with (
        celery_worker(env=worker_environment(redis_url), tmp_path=tmp_path, pool="solo") as worker,
        tasks_sent_to_broker(),
    ):
        from config.celery import app

        # Tasks from the live server go to this test's worker queue.
        app.conf.task_default_queue = worker.queue
        try:
            page.goto(live_server.url + "/uploads/new/")
            page.get_by_label("File").set_input_files(str(log))
            page.get_by_role("button", name="Upload").click()
            page.wait_for_url("**/uploads/*/")
            seen = _progress(page)
            assert seen < 100  # the page came back before the ingest finished
            # Poll from Python: wait_for_function evaluates a string in the page, which the
            # site's content security policy (no eval) rightly refuses.
            seen_values = [seen]
            deadline = time.monotonic() + 120
            while seen_values[-1] != 100 and time.monotonic() < deadline:
                page.wait_for_timeout(250)
                seen_values.append(_progress(page))
            assert seen_values[-1] == 100, seen_values[-10:]
            page.wait_for_selector("text=succeeded", timeout=30_000)
        finally:
            app.conf.task_default_queue = "celery"
        assert "succeeded" in worker.wait_for_log("succeeded")

    upload = Upload.objects.get()
    assert upload.status == Upload.Status.SUCCEEDED
    assert upload.rows_accepted == rows
    page.goto(live_server.url + "/?stack=workload")
    assert _spend_traces(page) == 2
