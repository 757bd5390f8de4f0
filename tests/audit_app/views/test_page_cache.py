"""Pages served from the results cache follow the data: a change shows at once, and one
request reads the data version once (audit_app.lib.results_cache)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.core.cache import caches
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext

from audit_app.derived import warm_defaults
from audit_app.ingestion.uploads import upload_delete
from audit_app.lib import results_cache
from audit_app.reporting.selectors import data_date_range
from tests.audit_app.costs.test_billing_selectors import _bill_upload, _charge, _ingest
from tests.audit_app.ingestion.ingest_samples import SAMPLE_CSV
from tests.audit_app.lib.test_results_cache import LOCMEM

pytestmark = pytest.mark.django_db

H0 = datetime(2026, 11, 2, 0, tzinfo=UTC)
RANGE = "start=2026-11-02&end=2026-11-02"


@pytest.fixture
def cache_on() -> Any:
    with override_settings(CACHES=LOCMEM):
        caches["results"].clear()
        yield caches["results"]
        caches["results"].clear()


def _gpt4o(response: Any) -> Any:
    [row] = [r for r in response.context["rows"] if r.model == "gpt-4o"]
    return row


def _table_rows(response: Any) -> str:
    html = response.content.decode()
    table = html[html.index('id="reconciliation-table"') :]
    return table[: table.index("</table>")]


def test_the_reconciliation_page_follows_a_change(
    cache_on: Any, client: Client, finops_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        logs = _ingest(SAMPLE_CSV, "sample.csv")
        bill = _bill_upload()
    # Billed 0.0175 for gpt-4o on 2 Nov. The sample's logs estimate gpt-4o at 0.0175 (0.01
    # logged + 0.0075 priced) and gpt-4o-mini at 0.0750003, which no bill line of its own names,
    # so it joins the gpt-4o line (tests/audit_app/costs/test_billing_selectors.py has both).
    _charge(
        bill,
        start=H0,
        cost="0.0175",
        provider="openai",
        meter_kind="token",
        period_end=H0 + timedelta(hours=24),
        tags={"model": "gpt-4o"},
    )
    client.force_login(finops_user)
    page = client.get(f"/reconciliation/?{RANGE}")
    first = _gpt4o(page)
    assert (first.billed, first.estimated) == (Decimal("0.0175"), Decimal("0.0925003"))
    again = client.get(f"/reconciliation/?{RANGE}")
    assert _gpt4o(again).estimated == Decimal("0.0925003")
    # The table's rows are rendered once per data version (`{% data_fragment %}`) ...
    assert _table_rows(again) == _table_rows(page)
    assert "no requests in the token logs" not in _table_rows(page)
    # The token logs are deleted: the bill line has no request in the logs any more.
    with django_capture_on_commit_callbacks(execute=True):
        upload_delete(upload=logs, user=None)
    after_page = client.get(f"/reconciliation/?{RANGE}")
    # ... and afresh after the change: the rendered rows say what the rows say.
    assert "no requests in the token logs" in _table_rows(after_page)
    after = _gpt4o(after_page)
    assert (after.estimated, after.flagged, after.note) == (
        None,
        True,
        "no requests in the token logs",
    )
    api = client.get(f"/api/v1/reconciliation/?{RANGE}").json()
    [row] = [r for r in api["results"] if r["model"] == "gpt-4o"]
    assert (row["estimated"], row["flagged"]) == (None, True)


@pytest.fixture
def sample_client(
    cache_on: Any, client: Client, finops_user: Any, django_capture_on_commit_callbacks: Any
) -> Client:
    """A signed-in finops client, the sample logs ingested, the cache on."""
    with django_capture_on_commit_callbacks(execute=True):
        _ingest(SAMPLE_CSV, "sample.csv")
    client.force_login(finops_user)
    return client


def test_a_page_reads_the_data_version_once(sample_client: Client) -> None:
    client = sample_client
    client.get(f"/?{RANGE}")
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"/?{RANGE}")
    assert response.status_code == 200
    reads = [q for q in queries.captured_queries if "audit_app_dataversion" in q["sql"]]
    # The overview reads spend, filter choices, pools and the data's date range from the
    # cache: five cached reads, one look at the version.
    assert len(reads) == 1


def test_a_change_inside_a_request_is_read_back_at_once(cache_on: Any) -> None:
    results_cache.request_started()
    try:
        before = results_cache.data_token()
        assert results_cache.data_token() == before  # read once per request
        results_cache.data_changed()
        after = results_cache.data_token()
        assert after != before
        assert after == results_cache.current_version().token
    finally:
        results_cache.request_finished()
    # Outside a request every read asks the database.
    results_cache.data_changed()
    assert results_cache.data_token() == results_cache.current_version().token != after


def test_the_warm_up_serves_the_first_visitor_of_a_year(
    cache_on: Any, client: Client, finops_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        _ingest(SAMPLE_CSV, "sample.csv")
    last = data_date_range()[1]  # type: ignore[index]
    year = f"start={last - timedelta(days=364)}&end={last}"
    warm_defaults()  # what the worker runs after each refresh
    client.force_login(finops_user)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"/workloads/?{year}")
    assert response.status_code == 200
    assert sorted(w.name for w in response.context["workloads"]) == ["chat", "evals", "tool"]
    rollup_reads = [q for q in queries.captured_queries if "rollup" in q["sql"]]
    assert rollup_reads == []  # served from the cache: no rollup was read
    # So is the overview, by default and over the year (month comparison included).
    for url in ("/", f"/?{year}"):
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        assert [q for q in queries.captured_queries if "rollup" in q["sql"]] == [], url
    # The page links the quick windows, the year among them, ending on the last data day.
    html = client.get("/workloads/").content.decode()
    for days in (7, 30, 90, 365):
        start = last - timedelta(days=days - 1)
        assert f'<a href="?start={start}&amp;end={last}"' in html, days
    assert 'aria-current="page">30 days</a>' in html  # the default window is the 30 days


def test_the_reconciliation_page_lists_100_rows_a_page(client: Client, finops_user: Any) -> None:
    bill = _bill_upload()
    # 101 bill lines, one a day for 101 days, none in the token logs: 101 flagged rows, each
    # billed its day's number of cents (day 0 is billed $0.01, day 100 $1.01).
    for day in range(101):
        _charge(
            bill,
            start=H0 + timedelta(days=day),
            cost=f"{(day + 1) / 100:.2f}",
            provider="openai",
            meter_kind="token",
            period_end=H0 + timedelta(days=day, hours=1),
            tags={"model": "gpt-4o"},
        )
    client.force_login(finops_user)
    window = "start=2026-11-02&end=2027-02-10"  # 2 Nov + 100 days
    first = client.get(f"/reconciliation/?{window}")
    assert len(first.context["rows"]) == 101  # totals and the count cover every row
    shown = list(first.context["page"].object_list)
    assert len(shown) == 100
    assert shown[0].billed == Decimal("1.01")  # largest variance first
    html = first.content.decode()
    assert "1–100 of 101 shown" in html
    assert html.count('<tr class="flagged">') == 100
    second = client.get(f"/reconciliation/?{window}&page=2")
    [last] = second.context["page"].object_list
    assert last.billed == Decimal("0.01")
    assert "page 2 of 2" in second.content.decode()
