"""The chart partial: a figure with no data point is a sentence, not empty axes."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from django.template.loader import render_to_string
from django.test import Client

from audit_app.reporting.charts import build_spend_per_day_figure

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


@pytest.mark.django_db
def test_the_overview_of_an_empty_window_draws_no_empty_axes(
    client: Client, finops_user: Any
) -> None:
    client.force_login(finops_user)
    html = client.get("/?start=2026-11-01&end=2026-11-30").content.decode()
    # Spend per day and top workloads have no point: a sentence, no figure data for them.
    assert "No spend between 2026-11-01 and 2026-11-30." in html
    assert 'id="spend-per-day-data"' not in html and 'id="top-workloads-data"' not in html
    # Uploads per day is a line of zeros over 30 days: zero is a value, so it is drawn.
    assert 'id="uploads-per-day-data"' in html
