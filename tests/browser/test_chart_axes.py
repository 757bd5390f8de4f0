"""Chromium: the figures drawn by the real plotly.js never show a negative tick for amounts that
cannot be negative, even when every value is zero (the gate's cost chart drew "$−1")."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from typing import Any

import pytest

from config.staticfiles import PLOTLY_STATIC_PATH
from tests.config.test_plotly_bundle import BUNDLE_TRACES
from tests.support.processes import REPO_ROOT

pytestmark = pytest.mark.browser


def _y_range(page: Any, figure: dict[str, Any]) -> list[float]:
    return page.evaluate(
        """async (figure) => {
            const element = document.createElement("div");
            document.body.appendChild(element);
            await Plotly.newPlot(element, figure.data, figure.layout);
            return element._fullLayout.yaxis.range;
        }""",
        json.loads(json.dumps(figure)),
    )


def test_all_zero_costs_never_draw_a_negative_axis(chromium: str, page: Any) -> None:
    from audit_app.reporting.charts import build_cost_comparison_figure, build_reconciliation_figure
    from benchmarks_app.charts import build_cost_by_mode_figure

    page.set_content("<html><body></body></html>")
    page.add_script_tag(path=str(REPO_ROOT / "static" / PLOTLY_STATIC_PATH))
    zero = Decimal(0)
    gate = build_cost_by_mode_figure(
        cost_by_mode={m: {"baseline": zero, "candidate": zero} for m in ("always_on", "autoscale")}
    )
    # Without a range mode plotly centres an all-zero axis on zero: [-1, 1], the "$−1" tick.
    unguarded = json.loads(json.dumps(gate))
    del unguarded["layout"]["yaxis"]["rangemode"]
    assert _y_range(page, unguarded) == [-1, 1]

    assert _y_range(page, gate) == [0, 1]
    recommendation = build_cost_comparison_figure(current=zero, projected=zero, target="batch")
    assert _y_range(page, recommendation) == [0, 1]
    reconciliation = build_reconciliation_figure(
        days=[date(2026, 11, 1)], billed=[zero], estimated=[zero]
    )
    assert _y_range(page, reconciliation) == [0, 1]


def test_the_bundle_draws_exactly_the_trace_types_it_names(chromium: str, page: Any) -> None:
    page.set_content("<html><body></body></html>")
    page.add_script_tag(path=str(REPO_ROOT / "static" / PLOTLY_STATIC_PATH))
    traces = page.evaluate("() => Object.keys(Plotly.PlotSchema.get().traces)")
    assert set(traces) == BUNDLE_TRACES
