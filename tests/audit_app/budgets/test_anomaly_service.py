"""Anomalies per workload × model × day from ingested token logs (anomaly_samples: the planted
×5 day and its cause worked out by hand), through the service, the API, the page and the
command."""

from __future__ import annotations

import io
import json
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from audit_app.budgets.anomaly_service import anomaly_list, anomaly_window, usage_series
from audit_app.lib.query_params import ParameterError
from tests.audit_app.budgets.anomaly_samples import (
    CHANGE_USD,
    EXPECTED_USD,
    FIRST_DAY,
    LAST_DAY,
    PER_REQUEST_USD,
    PLANTED_DAY,
    PLANTED_USD,
    ingest_sample,
)

pytestmark = pytest.mark.django_db
LAST_WEEK = (date(2026, 11, 2), LAST_DAY)


@pytest.fixture
def sample(db: Any) -> None:
    assert ingest_sample().status == "succeeded"


def test_usage_series_are_the_read_models_lines_with_zero_days(sample: None) -> None:
    series = usage_series(FIRST_DAY, LAST_DAY)
    assert sorted(series) == [("batch", "gpt-4o"), ("chat", "gpt-4o")]
    chat = {u.day: u for u in series[("chat", "gpt-4o")]}
    assert len(chat) == 35
    assert (chat[PLANTED_DAY].requests, chat[PLANTED_DAY].tokens) == (50, 50 * 110_000)
    assert chat[PLANTED_DAY].spend_usd == PLANTED_USD
    assert chat[FIRST_DAY + timedelta(days=7)].spend_usd == 9 * PER_REQUEST_USD
    batch = series[("batch", "gpt-4o")]
    assert [u.requests for u in batch if u.requests] == [20] * 5
    monday = batch[0]
    assert (monday.day, monday.requests, monday.tokens, monday.spend_usd) == (
        FIRST_DAY,
        0,
        0,
        Decimal(0),
    )


def test_the_planted_day_is_the_one_anomaly_and_its_cause_is_volume(sample: None) -> None:
    rows = anomaly_list(*LAST_WEEK)
    assert [(r.day, r.workload, r.model) for r in rows] == [(PLANTED_DAY, "chat", "gpt-4o")]
    row = rows[0]
    assert (row.spend_usd, row.expected_usd) == (PLANTED_USD, EXPECTED_USD)
    assert row.score >= 5
    assert row.cause.volume_usd.quantize(Decimal("0.01")) == CHANGE_USD
    assert abs(row.cause.mix_usd) < Decimal("0.01")
    assert abs(row.cause.price_usd) < Decimal("0.01")
    assert row.cause.volume_usd + row.cause.mix_usd + row.cause.price_usd == CHANGE_USD
    assert row.key == "2026-11-04|chat|gpt-4o"


def test_a_window_without_the_planted_day_has_no_anomaly(sample: None) -> None:
    assert anomaly_list(date(2026, 11, 5), LAST_DAY) == []


def test_days_before_the_first_day_with_data_are_unknown_not_zero(sample: None) -> None:
    # The window starts with the data, so its history reaches back four weeks into days with
    # no data at all. Were they zero days, the first two weeks (chat at $3.15 to $3.85 a day,
    # the Sunday batch at $7.00) would each be a jump from $0; unknown, they are not judged
    # (fewer than two references) and the planted day stays the one anomaly.
    rows = anomaly_list(FIRST_DAY, LAST_DAY)
    assert [(r.day, r.workload) for r in rows] == [(PLANTED_DAY, "chat")]
    assert anomaly_list(FIRST_DAY - timedelta(days=60), FIRST_DAY - timedelta(days=1)) == []


def test_window_defaults_and_refusals(sample: None) -> None:
    assert anomaly_window({}) == (LAST_DAY - timedelta(days=29), LAST_DAY)
    assert anomaly_window({"start": "2026-11-01"}) == (date(2026, 11, 1), LAST_DAY)
    with pytest.raises(ParameterError, match=r"start \(2026-11-09\) is after end") as refused:
        anomaly_window({"start": "2026-11-09", "end": "2026-11-08"})
    assert refused.value.field == "start"
    with pytest.raises(ParameterError, match="end='2026-13-01' is not a date") as refused:
        anomaly_window({"end": "2026-13-01"})
    assert refused.value.field == "end"


EXPECTED_JSON = [
    {
        "day": "2026-11-04",
        "workload": "chat",
        "model": "gpt-4o",
        "spend_usd": "17.500000",
        "expected_usd": "3.500000",
        "cause": {"volume_usd": "14.000000", "mix_usd": "0.000000", "price_usd": "0.000000"},
    }
]


def _without_score(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for row in rows:
        assert isinstance(row.pop("score"), float)
    return rows


def test_api_lists_the_anomaly_in_the_issue_shape(sample: None, finops_user: Any) -> None:
    client = Client()
    client.force_login(finops_user)
    body = client.get("/api/v1/anomalies/", {"start": "2026-11-02", "end": "2026-11-08"}).json()
    assert (body["count"], body["start"], body["end"]) == (1, "2026-11-02", "2026-11-08")
    assert _without_score(body["results"]) == EXPECTED_JSON
    refused = client.get("/api/v1/anomalies/", {"start": "2026-11-09", "end": "2026-11-08"})
    assert refused.status_code == 400
    assert list(refused.json()["errors"]) == ["start"]


def test_command_prints_the_issue_shape(sample: None) -> None:
    out = io.StringIO()
    call_command("anomalies", "--json", "--start", "2026-11-02", "--end", "2026-11-08", stdout=out)
    assert _without_score(json.loads(out.getvalue())) == EXPECTED_JSON
    table = io.StringIO()
    call_command("anomalies", "--start", "2026-11-02", stdout=table)
    assert "2026-11-04 chat" in table.getvalue()
    assert table.getvalue().rstrip().endswith("1 anomalies from 2026-11-02 to 2026-11-08")
    with pytest.raises(CommandError, match="start='yesterday' is not a date"):
        call_command("anomalies", "--start", "yesterday")


def test_page_shows_the_table_and_the_decomposition_chart(sample: None, manager_user: Any) -> None:
    client = Client()
    client.force_login(manager_user)
    response = client.get("/anomalies/", {"start": "2026-11-02", "end": "2026-11-08"})
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('data-testid="anomaly"') == 1
    assert "$17.50" in html and "$3.50" in html and "$14.00" in html
    figure = response.context["figure"]
    # Shares of the $14.00 change: all volume; the dollars ride along for the hover.
    traces = {t["name"]: (t["y"], t["customdata"]) for t in figure["data"]}
    assert traces["Volume"] == ([100.0], [14.0])
    assert traces["Mix"] == ([0.0], [0.0]) and traces["Price"] == ([0.0], [0.0])
    assert figure["layout"]["barmode"] == "relative"
    bad = client.get("/anomalies/", {"end": "nonsense"})
    assert bad.status_code == 400
    assert "end=&#x27;nonsense&#x27; is not a date" in bad.content.decode()


def test_page_without_anomalies_says_so(db: Any, engineer_user: Any) -> None:
    client = Client()
    client.force_login(engineer_user)
    html = client.get("/anomalies/").content.decode()
    assert "No anomalies from" in html
