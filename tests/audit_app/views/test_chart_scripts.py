"""A page that draws a chart loads plotly.js and charts.js: a template including
`partials/chart.html` also includes `partials/chart_scripts.html`, or its charts stay blank."""

from __future__ import annotations

from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[3] / "templates"


def test_every_page_with_a_chart_loads_the_chart_scripts() -> None:
    with_charts = [p for p in TEMPLATES.rglob("*.html") if "partials/chart.html" in p.read_text()]
    assert len(with_charts) >= 5
    blank = [
        str(p.relative_to(TEMPLATES))
        for p in with_charts
        if "partials/chart_scripts.html" not in p.read_text()
    ]
    assert blank == []
