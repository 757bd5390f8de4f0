"""Base layout and overview page."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

from tests.factories import UploadFactory


@pytest.mark.django_db
def test_overview_empty_state_tells_a_new_user_what_to_do(client: Client, finops_user: Any) -> None:
    client.force_login(finops_user)
    html = client.get("/").content.decode()
    assert "Get started" in html
    assert "manage.py ingest PATH" in html
    assert 'id="uploads-per-day-data"' in html  # the chart still draws, with zeros


@pytest.mark.django_db
def test_overview_chart_carries_the_database_counts(client: Client, finops_user: Any) -> None:
    UploadFactory()
    UploadFactory()
    client.force_login(finops_user)
    response = client.get("/")
    html = response.content.decode()
    assert "Get started" not in html
    figure = response.context["uploads_figure"]
    assert sum(figure["data"][0]["y"]) == 2
    # The JSON in the page is the figure itself, for charts.js to draw.
    start = html.index('id="uploads-per-day-data"')
    payload = html[html.index(">", start) + 1 : html.index("</script>", start)]
    assert json.loads(payload)["data"][0]["y"] == figure["data"][0]["y"]


@pytest.mark.django_db
def test_navigation_lists_every_section_and_marks_the_current_one(
    client: Client, finops_user: Any
) -> None:
    client.force_login(finops_user)
    html = client.get("/uploads/").content.decode()
    for label in [
        "Overview",
        "Workloads",
        "Uploads",
        "Recommendations",
        "Benchmarks",
        "Reconciliation",
        "API docs",
    ]:
        assert f">{label}</a>" in html
    assert '<a href="/uploads/" aria-current="page">Uploads</a>' in html
    assert 'class="skip-link" href="#main"' in html
    assert "<h1>Uploads</h1>" in html


@pytest.mark.django_db
def test_uploads_page_lists_uploads(client: Client, engineer_user: Any) -> None:
    UploadFactory(original_name="october-spend.csv", rows_accepted=1234)
    client.force_login(engineer_user)
    html = client.get("/uploads/").content.decode()
    assert "october-spend.csv" in html
    assert ">1,234<" in html


def test_plotly_js_is_served_from_the_vendored_partial_bundle() -> None:
    found = finders.find("vendor/plotly/plotly-audit.min.js")
    assert found and found.endswith("static/vendor/plotly/plotly-audit.min.js")
    with open(found, encoding="utf-8") as handle:
        assert "plotly.js (bar, heatmap, histogram, scatter - minified)" in handle.read(2000)
    assert not finders.find("vendor/plotly/plotly.min.js")
    assert finders.find("js/charts.js")


@pytest.mark.django_db
def test_pages_load_no_script_from_another_host(client: Client, finops_user: Any) -> None:
    client.force_login(finops_user)
    html = client.get("/").content.decode()
    assert '<script src="/static/vendor/plotly/plotly-audit.min.js"' in html
    assert "https://" not in html and "http://" not in html
