"""The budget page's chart: where the period will land against the amount. Pure (no Django),
built like `audit_app.reporting.charts` (its BASE_LAYOUT, drawn by static/js/charts.js)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from audit_app.budgets.forecast import Forecast
from audit_app.reporting.charts import BASE_LAYOUT, Figure, scatter

ACTUAL_COLOUR = "#1f4e79"
FORECAST_COLOUR = "#d17a00"
BAND_FILL = "rgba(209, 122, 0, 0.18)"
AMOUNT_COLOUR = "#b3261e"


def _floats(values: list[Decimal | None]) -> list[float | None]:
    return [None if v is None else float(v) for v in values]


def build_budget_forecast_figure(*, forecast: Forecast, amount: Decimal) -> dict[str, Any]:
    """Cumulative spend over the period: the actual line up to as_of, the forecast line, the
    low–high band as a filled area, and a horizontal line at the budget's amount."""
    x = [d.day.isoformat() for d in forecast.days]
    figure = Figure()
    figure.add_trace(
        scatter(
            name="Low",
            x=x,
            y=_floats([d.low_usd for d in forecast.days]),
            mode="lines",
            line={"width": 0, "color": FORECAST_COLOUR},
            showlegend=False,
            hoverinfo="skip",
        )
    )
    figure.add_trace(
        scatter(
            name="Forecast band (low–high)",
            x=x,
            y=_floats([d.high_usd for d in forecast.days]),
            mode="lines",
            line={"width": 0, "color": FORECAST_COLOUR},
            fill="tonexty",
            fillcolor=BAND_FILL,
            hovertemplate="%{y:$,.2f}<extra>high</extra>",
        )
    )
    figure.add_trace(
        scatter(
            name="Forecast",
            x=x,
            y=_floats([d.forecast_usd for d in forecast.days]),
            mode="lines",
            line={"color": FORECAST_COLOUR, "dash": "dash"},
            hovertemplate="%{y:$,.2f}<extra>forecast</extra>",
        )
    )
    figure.add_trace(
        scatter(
            name="Spent",
            x=x,
            y=_floats([d.actual_usd for d in forecast.days]),
            mode="lines",
            line={"color": ACTUAL_COLOUR, "width": 3},
            hovertemplate="%{y:$,.2f}<extra>spent</extra>",
        )
    )
    figure.add_trace(
        scatter(
            name=f"Budget ${amount:,.2f}",
            x=[x[0], x[-1]] if x else [],
            y=[float(amount)] * (2 if x else 0),
            mode="lines",
            line={"color": AMOUNT_COLOUR, "width": 2},
            hovertemplate="%{y:$,.2f}<extra>budget</extra>",
        )
    )
    figure.update_layout(
        **BASE_LAYOUT,
        title={"text": "Spend over the period: spent, forecast and its band"},
        xaxis={"title": {"text": "Day (UTC)"}, "type": "date"},
        yaxis={
            "title": {"text": "Cumulative spend (USD)"},
            "rangemode": "tozero",
            "tickprefix": "$",
        },
    )
    return figure.to_dict()
