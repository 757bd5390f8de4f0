"""Chromium: an engineer uploads a baseline and a candidate run and reads the gate's verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.factories import TEST_PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks"


def test_upload_two_runs_and_read_the_verdict(
    browser_page: Any, live_server: Any, engineer_user: Any
) -> None:
    page = browser_page
    page.goto(f"{live_server.url}/accounts/login/?next=/benchmarks/")
    page.get_by_label("Username").fill(engineer_user.username)
    page.get_by_label("Password").fill(TEST_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/benchmarks/")
    for name, utilisation in (("baseline", "80"), ("candidate", "85")):
        page.goto(f"{live_server.url}/benchmarks/")
        page.get_by_label("Result file").set_input_files(str(FIXTURES / f"vllm_{name}.json"))
        page.get_by_label("Name", exact=True).fill(name)
        page.get_by_label("GPU utilization % (when no telemetry is attached)").fill(utilisation)
        page.get_by_role("button", name="Import run").click()
        page.wait_for_url("**/benchmarks/runs/*/")
        page.wait_for_selector("#latency-distribution .main-svg")
    page.goto(f"{live_server.url}/benchmarks/")
    for field, name in (("Baseline run", "baseline"), ("Candidate run", "candidate")):
        select = page.get_by_label(field)
        label = select.locator("option", has_text=f"{name} (vllm").inner_text()
        select.select_option(label=label)
    page.get_by_role("button", name="Run the gate").click()
    page.wait_for_url("**/benchmarks/gates/*/")
    page.wait_for_selector("#cost-by-mode .main-svg")
    assert page.get_by_test_id("verdict").inner_text() == "PASS"
    assert page.locator("#checks-table tr.flagged").count() == 0
    assert page.locator("#checks-table tbody tr").count() >= 10
