"""Chromium: names from uploads are shown as text, never run as script."""

from __future__ import annotations

import io
from typing import Any

import pytest

from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import Workload
from tests.factories import TEST_PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
HOSTILE = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'


def test_hostile_workload_name_is_escaped(
    browser_page: Any, live_server: Any, finops_user: Any
) -> None:
    name = HOSTILE.replace('"', "'")  # a CSV cell without quotes to escape
    log = (
        "started_at,ended_at,workload,provider,model,input_tokens,output_tokens\n"
        f"2026-11-02T10:00:00Z,2026-11-02T10:00:01Z,{name},openai,gpt-4o,10,10\n"
    ).encode()
    upload = upload_create(source=io.BytesIO(log), original_name=f"{name}.csv", enqueue=False)
    assert upload_ingest(upload_id=upload.pk).status == "succeeded"
    workload = Workload.objects.get(name=name)

    page = browser_page
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(finops_user.username)
    page.get_by_label("Password").fill(TEST_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(live_server.url + "/")
    for path in (
        "/?start=2026-11-01&end=2026-11-03&stack=workload",
        "/workloads/?start=2026-11-01&end=2026-11-03",
        f"/workloads/{workload.pk}/?start=2026-11-01&end=2026-11-03",
        "/uploads/",
        f"/uploads/{upload.pk}/",
    ):
        page.goto(live_server.url + path)
        page.wait_for_load_state("networkidle")
        assert page.evaluate("window.__xss === undefined"), path
        assert page.locator("img[src='x']").count() == 0, path
    # The name is there, as text.
    page.goto(f"{live_server.url}/workloads/{workload.pk}/?start=2026-11-01&end=2026-11-03")
    assert name in page.locator("h1").inner_text()


LINK = '<a href="https://evil.example/phish">CLICK-ME</a>'


def test_workload_name_with_a_link_is_text_in_the_overview_charts(
    browser_page: Any, live_server: Any, finops_user: Any
) -> None:
    """plotly.js draws <a href> in trace names and category ticks as a live link; the overview's
    charts must show the name as the text it is."""
    cell = '"' + LINK.replace('"', '""') + '"'
    log = (
        "started_at,ended_at,workload,provider,model,input_tokens,output_tokens\n"
        f"2026-11-02T10:00:00Z,2026-11-02T10:00:01Z,{cell},openai,gpt-4o,10,10\n"
        # A second workload, so the spend chart has a legend.
        "2026-11-02T11:00:00Z,2026-11-02T11:00:01Z,chat,openai,gpt-4o,20,20\n"
    ).encode()
    upload = upload_create(source=io.BytesIO(log), original_name="link.csv", enqueue=False)
    assert upload_ingest(upload_id=upload.pk).status == "succeeded"
    assert Workload.objects.filter(name=LINK).exists()

    page = browser_page
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(finops_user.username)
    page.get_by_label("Password").fill(TEST_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(live_server.url + "/")
    page.goto(f"{live_server.url}/?start=2026-11-01&end=2026-11-03&stack=workload")
    for chart in ("spend-per-day", "top-workloads"):
        page.wait_for_selector(f"#{chart}[data-drawn='true']")
        links = page.evaluate(
            "id => Array.from(document.querySelectorAll(`#${id} svg a`))"
            ".map(a => a.getAttribute('xlink:href') || a.getAttribute('href'))",
            chart,
        )
        assert links == [], chart
    legend = page.locator("#spend-per-day .legendtext").all_text_contents()
    assert sorted(legend) == sorted([LINK, "chat"])
    ticks = page.locator("#top-workloads .ytick text").all_text_contents()
    assert sorted(ticks) == sorted([LINK, "chat"])
