"""The chart partial: a figure with no data point is a sentence, not empty axes."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from django.template.loader import render_to_string

from audit_app.charts import build_spend_per_day_figure

DAYS = [date(2026, 11, 1), date(2026, 11, 2)]


def _render(**context: object) -> str:
    return render_to_string(
        "partials/chart.html", {"chart_id": "spend", "title": "Spend", **context}
    )


def test_an_empty_figure_says_so_and_sends_no_figure() -> None:
    empty = build_spend_per_day_figure(days=DAYS, series={}, dimension_label="provider")
    html = _render(figure=empty)
    assert "No data in this window." in html
    assert "data-figure" not in html
    assert "application/json" not in html  # the figure's JSON stays out of the page
    assert 'id="spend-caption">Spend<' in html

    custom = _render(figure=empty, empty_message="No spend between 2026-11-01 and 2026-11-30.")
    assert "No spend between 2026-11-01 and 2026-11-30." in custom
    assert "No data in this window." not in custom

    assert "No data in this window." in _render(figure=None)


def test_a_figure_with_data_is_drawn() -> None:
    figure = build_spend_per_day_figure(
        days=DAYS, series={"openai": [Decimal("1.5"), Decimal(0)]}, dimension_label="provider"
    )
    html = _render(figure=figure, summary="stacked by provider")
    assert 'data-figure="spend-data"' in html
    assert '<script id="spend-data" type="application/json">' in html
    assert "No data in this window." not in html
    assert "Spend: stacked by provider" in html
