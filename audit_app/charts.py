"""Plotly figure builders: one ``build_<chart>_figure`` per chart, pure and Django-free.

Each returns a figure as a JSON-ready dict that ``static/js/charts.js`` draws with plotly.js.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date
from typing import Any

import plotly.graph_objects as go

_LAYOUT: dict[str, Any] = {
    "margin": {"l": 56, "r": 16, "t": 40, "b": 48},
    "font": {"family": "system-ui, sans-serif", "size": 13},
    "paper_bgcolor": "#ffffff",
    "plot_bgcolor": "#ffffff",
    "hovermode": "x unified",
    "legend": {"orientation": "h", "y": -0.2},
}


def figure_to_dict(figure: go.Figure) -> dict[str, Any]:
    """JSON-safe plain data (plotly's own encoder handles dates and numpy values)."""
    return json.loads(figure.to_json())


def build_uploads_per_day_figure(
    *, days: Sequence[date], counts_by_kind: dict[str, Sequence[int]]
) -> dict[str, Any]:
    """Stacked bars: how many files were uploaded each day, one trace per upload kind."""
    figure = go.Figure()
    for kind, counts in counts_by_kind.items():
        figure.add_trace(go.Bar(name=kind, x=[d.isoformat() for d in days], y=list(counts)))
    figure.update_layout(
        **_LAYOUT,
        barmode="stack",
        title={"text": "Uploads per day"},
        xaxis={"title": {"text": "Day (UTC)"}, "type": "date"},
        yaxis={"title": {"text": "Uploads"}, "rangemode": "tozero", "dtick": 1},
    )
    return figure_to_dict(figure)
