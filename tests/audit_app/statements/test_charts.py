"""The team's months chart: two stacked series, plotly-valid, labels escaped."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import plotly.graph_objects as go

from audit_app.statements.charts import build_team_months_figure


def test_team_months_figure_stacks_direct_and_allocated() -> None:
    figure = build_team_months_figure(
        team="<b>web</b>",
        months=[date(2026, 10, 1), date(2026, 11, 1)],
        direct=[Decimal("2.00"), Decimal("7.90")],
        allocated=[Decimal(0), Decimal("11.75")],
    )
    go.Figure(figure)  # plotly.py accepts every property
    direct, allocated = figure["data"]
    assert direct["x"] == allocated["x"] == ["2026-10", "2026-11"]
    assert (direct["y"], allocated["y"]) == ([2.0, 7.9], [0.0, 11.75])
    assert figure["layout"]["barmode"] == "stack"
    assert "<b>" not in figure["layout"]["title"]["text"]
    assert figure["layout"]["yaxis"]["rangemode"] == "tozero"
