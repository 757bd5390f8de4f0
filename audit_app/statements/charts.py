"""Plotly figure builders for statements, pure and Django-free like `reporting.charts`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from decimal import Decimal
from typing import Any

from audit_app.reporting.charts import BASE_LAYOUT, IDLE_COLOUR, Figure, bar, plotly_text


def build_team_months_figure(
    *,
    team: str,
    months: Sequence[date],
    direct: Sequence[Decimal],
    allocated: Sequence[Decimal],
) -> dict[str, Any]:
    """A team's last months stacked: its direct spend, and the shared cost allocated to it."""
    x = [f"{m:%Y-%m}" for m in months]
    figure = Figure(
        bar(
            name="Direct spend",
            x=x,
            y=[float(v) for v in direct],
            hovertemplate="%{y:$,.2f}<extra>%{fullData.name}</extra>",
        ),
        bar(
            name="Allocated shared cost",
            x=x,
            y=[float(v) for v in allocated],
            marker={"color": IDLE_COLOUR},
            hovertemplate="%{y:$,.2f}<extra>%{fullData.name}</extra>",
        ),
    )
    figure.update_layout(
        **BASE_LAYOUT,
        barmode="stack",
        title={"text": f"{plotly_text(team)}: cost per month"},
        xaxis={"title": {"text": "Month"}, "type": "category"},
        yaxis={"title": {"text": "Cost (USD)"}, "rangemode": "tozero", "tickprefix": "$"},
    )
    return figure.to_dict()
