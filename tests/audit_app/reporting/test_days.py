"""The day rule with a frozen clock: complete days across a day and a month boundary, a record
landing late in the day, a bill with future-dated lines, a non-UTC reporting zone, one record
dated today moving no default figure, and the CLI and the pages giving the same window.

The sample (`budget_samples`) spends until 12 November 2026; read at 15:00 UTC that day, the
12th is still running (its $100.00 chat request is "today so far") and the 11th is the last
complete day."""

from __future__ import annotations

import io
import json
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from audit_app.budgets.anomaly_service import anomaly_list
from audit_app.budgets.status import budget_status
from audit_app.costs.billing import pool_reports
from audit_app.costs.bills import bills_summary
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.lib.days import last_complete_day
from audit_app.models import BillingCharge, Budget, Upload
from audit_app.reporting.days import default_end, partial_days, same_days_end
from audit_app.reporting.filters import SpendFilters, date_window, parse_filters
from audit_app.reporting.spend import month_comparison, spend_report
from tests.audit_app.budgets.budget_samples import HEADER, ingest_budget_sample, logged_in

NOV_12_AFTERNOON = datetime(2026, 11, 12, 15, tzinfo=UTC)


def _freeze(monkeypatch: pytest.MonkeyPatch, moment: datetime) -> None:
    monkeypatch.setattr(timezone, "now", lambda: moment)


# --- The rule, pure ----------------------------------------------------------------------------
def test_a_day_completes_at_midnight(settings: Any) -> None:
    settings.REPORT_TIMEZONE = "UTC"
    assert last_complete_day(datetime(2026, 12, 6, 23, 59, 59, tzinfo=UTC)) == date(2026, 12, 5)
    assert last_complete_day(datetime(2026, 12, 7, 0, 0, tzinfo=UTC)) == date(2026, 12, 6)
    # Across a month boundary: on 1 December, 30 November is the last complete day.
    assert last_complete_day(datetime(2026, 12, 1, 0, 30, tzinfo=UTC)) == date(2026, 11, 30)
    days = partial_days(datetime(2026, 12, 7, 3, tzinfo=UTC))
    assert (days.first, days.last, days.label) == (
        date(2026, 12, 7),
        date(2026, 12, 7),
        "Today so far",
    )


def test_a_reporting_zone_behind_utc_completes_its_day_later(settings: Any) -> None:
    settings.REPORT_TIMEZONE = "America/Los_Angeles"
    # 03:00 UTC on 7 December is 19:00 on the 6th in Los Angeles: the 6th is still running.
    assert last_complete_day(datetime(2026, 12, 7, 3, tzinfo=UTC)) == date(2026, 12, 5)
    days = partial_days(datetime(2026, 12, 7, 3, tzinfo=UTC))
    assert (days.first, days.last) == (date(2026, 12, 6), date(2026, 12, 7))
    # Midnight in Los Angeles (08:00 UTC) completes it.
    assert last_complete_day(datetime(2026, 12, 7, 8, tzinfo=UTC)) == date(2026, 12, 6)


def test_a_reporting_zone_ahead_of_utc_waits_for_the_utc_day(settings: Any) -> None:
    settings.REPORT_TIMEZONE = "Asia/Tokyo"
    # 20:00 UTC on 6 December is 05:00 on the 7th in Tokyo; the UTC-dated 6th still gets rows.
    assert last_complete_day(datetime(2026, 12, 6, 20, tzinfo=UTC)) == date(2026, 12, 5)
    assert last_complete_day(datetime(2026, 12, 7, 0, tzinfo=UTC)) == date(2026, 12, 6)


@pytest.mark.parametrize(
    ("start", "last", "period_end", "previous", "expected"),
    [
        # Dec 1-5 against Nov 1-5.
        (date(2026, 12, 1), date(2026, 12, 5), date(2026, 12, 31), 11, date(2026, 11, 5)),
        # March 1-30 against all of February (28 days), not into March.
        (date(2026, 3, 1), date(2026, 3, 30), date(2026, 3, 31), 2, date(2026, 2, 28)),
        # A complete November against all of October, its 31st included.
        (date(2026, 11, 1), date(2026, 11, 30), date(2026, 11, 30), 10, date(2026, 10, 31)),
    ],
)
def test_same_days_of_the_previous_month(
    start: date, last: date, period_end: date, previous: int, expected: date
) -> None:
    previous_start = date(start.year, previous, 1)
    previous_end = start - timedelta(days=1)
    assert (
        same_days_end(
            start=start,
            last=last,
            period_end=period_end,
            previous_start=previous_start,
            previous_end=previous_end,
        )
        == expected
    )


# --- With data ---------------------------------------------------------------------------------
@pytest.fixture
def sample(db: Any, settings: Any) -> None:
    settings.REPORT_TIMEZONE = "UTC"
    ingest_budget_sample()


def _ingest_row(row: str, name: str) -> None:
    upload = upload_create(
        source=io.BytesIO(HEADER + row.encode() + b"\n"), original_name=name, enqueue=False
    )
    upload_ingest(upload_id=upload.pk)


def test_default_windows_end_at_the_last_complete_day(
    sample: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _freeze(monkeypatch, NOV_12_AFTERNOON)
    assert default_end() == date(2026, 11, 11)
    assert date_window({}) == (date(2026, 10, 13), date(2026, 11, 11))
    # The 12th's $100.00 is today so far, in no default figure.
    assert month_comparison().today_usd == Decimal("100.00")
    assert spend_report(parse_filters({})).total_usd == Decimal("41.75")
    # Once the 12th completes, it is the default window's last day.
    _freeze(monkeypatch, datetime(2026, 11, 13, 0, 0, 1, tzinfo=UTC))
    assert date_window({}) == (date(2026, 10, 14), date(2026, 11, 12))
    assert spend_report(parse_filters({})).total_usd == Decimal("141.75")
    assert month_comparison().today_usd == Decimal(0)


def test_a_zone_behind_utc_keeps_the_utc_day_out_until_its_own_midnight(
    sample: None, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.REPORT_TIMEZONE = "America/New_York"
    # 03:00 UTC on the 13th is 22:00 on the 12th in New York: the 12th is not complete yet.
    _freeze(monkeypatch, datetime(2026, 11, 13, 3, tzinfo=UTC))
    assert date_window({})[1] == date(2026, 11, 11)
    _freeze(monkeypatch, datetime(2026, 11, 13, 5, tzinfo=UTC))
    assert date_window({})[1] == date(2026, 11, 12)


def test_a_record_landing_late_in_the_day_counts_when_its_day_completes(
    sample: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _freeze(monkeypatch, datetime(2026, 11, 12, 23, 59, 30, tzinfo=UTC))
    _ingest_row("2026-11-12T23:59:00Z,2026-11-12T23:59:01Z,chat,web,openai,gpt-4o,1,1,0.50,", "a")
    assert month_comparison().today_usd == Decimal("100.50")
    assert month_comparison().this_month == Decimal("37.75")
    _freeze(monkeypatch, datetime(2026, 11, 13, 0, 0, 30, tzinfo=UTC))
    assert month_comparison().today_usd == Decimal(0)
    assert month_comparison().this_month == Decimal("138.25")  # 37.75 + 100.00 + 0.50


def test_the_month_so_far_compares_the_same_days(
    sample: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _freeze(monkeypatch, NOV_12_AFTERNOON)
    months = month_comparison()
    # November 1-11 against October 1-11 (nothing), with October's whole $4.00 beside it.
    assert (months.first, months.last, months.complete) == (
        date(2026, 11, 1),
        date(2026, 11, 11),
        False,
    )
    assert (months.previous_start, months.previous_same_end) == (
        date(2026, 10, 1),
        date(2026, 10, 11),
    )
    assert (months.this_month, months.previous_same_days, months.previous_month) == (
        Decimal("37.75"),
        Decimal(0),
        Decimal("4.00"),
    )
    # The data start on 20 October: October's same days are only partly known, so no change.
    assert months.previous_data_from == date(2026, 10, 20)
    assert months.change_percent is None
    # With data from September, October 1-11 is known: $5.00 against November's $37.75.
    _ingest_row("2026-09-30T10:00:00Z,2026-09-30T10:00:01Z,chat,web,openai,gpt-4o,1,1,1.00,", "s")
    _ingest_row("2026-10-05T10:00:00Z,2026-10-05T10:00:01Z,chat,web,openai,gpt-4o,1,1,5.00,", "o")
    months = month_comparison()
    assert (months.previous_data_from, months.previous_same_days, months.previous_month) == (
        None,
        Decimal("5.00"),
        Decimal("9.00"),
    )
    assert months.change_percent == pytest.approx((37.75 - 5) / 5 * 100)
    # Read on 1 December (a month boundary): the month holding the last complete day with data.
    _freeze(monkeypatch, datetime(2026, 12, 1, 9, tzinfo=UTC))
    months = month_comparison()
    assert (months.first, months.last, months.complete) == (
        date(2026, 11, 1),
        date(2026, 11, 12),  # the last complete day with data
        False,
    )
    assert months.this_month == Decimal("137.75")
    assert (months.previous_same_days, months.previous_month) == (Decimal("5.00"), Decimal("9.00"))


def test_a_bill_with_future_dated_lines_is_scheduled(
    sample: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _freeze(monkeypatch, NOV_12_AFTERNOON)
    bill = Upload.objects.create(
        kind=Upload.Kind.BILLING,
        original_name="ahead.csv",
        sha256="d" * 64,
        status=Upload.Status.SUCCEEDED,
        file="x",
    )
    first = datetime(2026, 11, 11, 0, tzinfo=UTC)
    BillingCharge.objects.bulk_create(
        BillingCharge(
            upload=bill,
            billing_period_start=datetime(2026, 11, 1, tzinfo=UTC),
            billing_period_end=datetime(2026, 12, 1, tzinfo=UTC),
            provider="aws",
            charge_category="Usage",
            currency="USD",
            period_start=first + timedelta(hours=hour),
            period_end=first + timedelta(hours=hour + 1),
            billed_cost=Decimal("1.00"),
            resource_id="i-1",
            meter_kind="gpu_instance",
            line=10 + hour,
        )
        for hour in range(72)  # the 11th (complete), the 12th (today) and the 13th (tomorrow)
    )
    window = SpendFilters(start=date(2026, 11, 1), end=date(2026, 11, 13))
    [report] = pool_reports(start=window.start, end=window.end)
    # Nov 4's two hours and the 11th's 24 count; the 12th and 13th's 48 are scheduled.
    assert (report.attribution.hours_billed, report.attribution.billed) == (26, Decimal("44.00"))
    assert (report.hours_scheduled, report.scheduled) == (48, Decimal("48.00"))
    assert bills_summary().scheduled_cost == {"USD": Decimal("48.00")}
    # Spend so far: the idle hour of Nov 4 and the 11th's idle day, none of the scheduled.
    assert spend_report(window).idle_gpu_usd == Decimal("34.00")
    budget = Budget.objects.create(name="all", scope_kind="all", amount_usd=Decimal("1000"))
    assert budget_status(budget).actual_usd == Decimal("37.75") + Decimal("24.00")
    # When the 12th completes, its 24 hours count; the 13th's are still scheduled.
    _freeze(monkeypatch, datetime(2026, 11, 13, 1, tzinfo=UTC))
    [report] = pool_reports(start=window.start, end=window.end)
    assert (report.attribution.hours_billed, report.hours_scheduled) == (50, 24)
    assert bills_summary().scheduled_cost == {"USD": Decimal("24.00")}
    assert spend_report(window).idle_gpu_usd == Decimal("58.00")


def _figures() -> dict[str, Any]:
    """Every default figure of the overview, budgets and anomalies, as the API gives them."""
    budget = Budget.objects.get(name="all")
    state = budget_status(budget)
    start, end = date_window({})
    months = month_comparison()
    return {
        "total": spend_report(parse_filters({})).total_usd,
        "month": months.this_month,
        "same_days": months.previous_same_days,
        "spent": state.actual_usd,
        "forecast": (state.forecast_usd, state.low_usd, state.high_usd),
        "anomalies": [(a.key, a.spend_usd) for a in anomaly_list(start, end)],
    }


def test_a_small_record_dated_today_moves_no_default_figure(
    sample: None, finops_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The data's last day, the 12th, is complete; a record dated the 13th is the first of it.
    _freeze(monkeypatch, NOV_12_AFTERNOON + timedelta(days=1))
    Budget.objects.create(name="all", scope_kind="all", amount_usd=Decimal("1000"))
    before = _figures()
    page_before = logged_in(finops_user).get("/").content.decode()
    today_before = month_comparison().today_usd
    _ingest_row("2026-11-13T14:00:00Z,2026-11-13T14:00:01Z,new,web,openai,gpt-4o,1,1,0.001,", "b")
    assert _figures() == before
    assert month_comparison().today_usd == today_before + Decimal("0.001")
    page = logged_in(finops_user).get("/").content.decode()
    for testid in ("total-spend", "month-this", "month-same-days", "month-last"):
        marker = f'data-testid="{testid}">'
        assert page.split(marker)[1].split("<")[0] == page_before.split(marker)[1].split("<")[0]
    # The month so far is the all-spend budget's spent, to the cent and below.
    assert before["month"] == before["spent"]


def test_the_cli_and_the_pages_give_the_same_default_window(
    sample: None, finops_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _freeze(monkeypatch, NOV_12_AFTERNOON)
    out = io.StringIO()
    call_command("workloads", "--json", stdout=out)
    printed = {row["name"]: Decimal(row["spend_usd"]) for row in json.loads(out.getvalue())}
    client = logged_in(finops_user)
    api = client.get("/api/v1/workloads/").json()["results"]
    assert printed == {row["name"]: Decimal(row["spend_usd"]) for row in api}
    # Without the 12th: chat spent 4.00 + 10.00 + 2.25 in the window, not the 12th's 100.00.
    assert printed["chat"] == Decimal("16.25")
    spend = client.get("/api/v1/spend/").json()
    assert (spend["start"], spend["end"]) == ("2026-10-13", "2026-11-11")
    html = client.get("/").content.decode()
    assert 'name="start" value="2026-10-13"' in html
    assert 'name="end" value="2026-11-11"' in html
    out = io.StringIO()
    call_command("anomalies", "--json", stdout=out)
    assert "2026-11-12" not in out.getvalue()
