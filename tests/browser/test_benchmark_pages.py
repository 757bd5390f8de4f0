"""Chromium at 1280 px: a run of several load points and a gate over two such runs fit the
window (long model, run and file names wrap, wide tables scroll inside their box), and the gate
page draws the Pareto chart with the SLO line and the operating points."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks_app.services import gate_evaluate
from tests.benchmarks_app.curve_samples import CANDIDATE_POINTS, import_curve
from tests.factories import TEST_PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTH = 1280
# Names with no space to break at: only `overflow-wrap: anywhere` keeps them in the window.
LONG_MODEL = "an-organisation-with-a-long-name/" + "Llama-3.1-405B-Instruct-FP8-dynamic-" * 6
LONG_NAME = "nightly-sweep-" + "h100-sxm5-tp8-" * 12


def _log_in(page: Any, live_server: Any, user: Any, path: str) -> None:
    page.goto(f"{live_server.url}/accounts/login/?next={path}")
    page.get_by_label("Username").fill(user.username)
    page.get_by_label("Password").fill(TEST_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"**{path}")


def _page_width(page: Any) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth"))


def test_run_and_gate_pages_fit_1280_px_and_draw_the_pareto_chart(
    browser_page: Any, live_server: Any, engineer_user: Any
) -> None:
    baseline = import_curve(prefix="baseline-" + "x" * 150, model=LONG_MODEL, name=LONG_NAME)
    candidate = import_curve(
        CANDIDATE_POINTS, prefix="candidate-" + "y" * 150, model=LONG_MODEL, name=LONG_NAME
    )
    gate = gate_evaluate(baseline=baseline, candidate=candidate, slo_tpot_ms=35, user=None)
    page = browser_page
    page.set_viewport_size({"width": WIDTH, "height": 900})

    _log_in(page, live_server, engineer_user, f"/benchmarks/runs/{baseline.pk}/")
    page.wait_for_selector("#run-curve .main-svg")
    assert page.locator("#points-table tbody tr").count() == 2
    assert "49 of 150 requests failed at concurrency 4 (32.7 %)" in (
        page.locator("#failures").inner_text()
    )
    assert _page_width(page) <= WIDTH
    # The wide points table scrolls inside its own box, never the page.
    box = page.locator("#points-table").evaluate("t => t.parentElement.clientWidth")
    assert box <= WIDTH

    page.goto(f"{live_server.url}/benchmarks/runs/{baseline.pk}/?point=1")
    assert page.locator("#point-heading").inner_text() == "Metrics at concurrency 16"
    assert _page_width(page) <= WIDTH

    page.goto(f"{live_server.url}/benchmarks/gates/{gate.pk}/")
    page.wait_for_selector("#pareto .main-svg")
    page.wait_for_selector("#cost-by-mode .main-svg")
    assert page.get_by_test_id("verdict").inner_text() == "FAIL"
    legend = page.locator("#pareto .legend").text_content()
    assert "Baseline" in legend and "Candidate" in legend and "operating point" in legend
    assert page.locator("#pareto .annotation").text_content() == "SLO p95 TPOT ≤ 35 ms"
    # Two lines of two points each and two operating-point stars.
    assert page.locator("#pareto .scatterlayer .trace").count() == 3
    assert page.locator("#pareto .scatterlayer .point").count() == 6
    assert _page_width(page) <= WIDTH

    page.goto(f"{live_server.url}/benchmarks/")
    page.wait_for_selector("#runs-table")
    assert _page_width(page) <= WIDTH
