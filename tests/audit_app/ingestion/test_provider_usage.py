"""Provider reports as spend (`audit_app.ingestion.provider_usage`): the one coverage rule both
ways (a token log landing takes over its provider days, its deletion gives them back), a deleted
report gives its days back to the report before it, and reconciliation compares the report
against the logs where both cover a day. Figures worked out by hand in each test."""

from __future__ import annotations

import io
from datetime import date
from decimal import Decimal

import pytest

from audit_app.costs.billing import reconciliation
from audit_app.ingestion.billing_exports.provider_reports import (
    DocCost,
    DocUsage,
    report_document,
)
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create, upload_delete
from audit_app.models import DailyRollup, HourlyRollup, ProviderUsage, Upload
from audit_app.reporting.filters import SpendFilters
from audit_app.reporting.spend import spend_breakdown

pytestmark = pytest.mark.django_db

NOV2, NOV3, NOV4 = date(2026, 11, 2), date(2026, 11, 3), date(2026, 11, 4)
# One gpt-4o request on Nov 2, logged at $0.01 (1,000 in / 100 out).
LOG = (
    b"started_at,ended_at,workload,team,caller,provider,model,input_tokens,output_tokens,"
    b"cost_usd,status,request_id\n"
    b"2026-11-02T10:00:00Z,2026-11-02T10:00:01Z,chat,web,web-api,openai,gpt-4o,1000,100,"
    b"0.01,success,r1\n"
)


def _cost(day: date, amount: str) -> DocCost:
    return DocCost(
        day=day,
        line_item="gpt-4o, input",
        model="gpt-4o",
        project_id="proj_web",
        project_name="Web",
        amount=Decimal(amount),
        currency="USD",
        service_tier="",
        token_type="",
    )


def _usage(day: date, tokens: int = 10_000) -> DocUsage:
    return DocUsage(
        day=day,
        model="gpt-4o",
        project_id="proj_web",
        api_key_id="key_a",
        batch=False,
        service_tier="",
        requests=10,
        input_tokens=tokens,
        output_tokens=0,
        cached_input_tokens=0,
        cache_write_tokens=0,
    )


def _report(days: list[date], amount: str, *, follows: int | None = None) -> Upload:
    document = report_document(
        provider="openai",
        account="openai-source-1",
        start=days[0],
        end=date.fromordinal(days[-1].toordinal() + 1),
        costs=[_cost(day, amount) for day in days],
        usage=[_usage(day) for day in days],
        follows=follows,
    )
    upload = upload_create(
        source=io.BytesIO(document),
        original_name="report.json",
        kind="billing",
        requested_format="openai-costs-api",
        enqueue=False,
    )
    return upload_ingest(upload_id=upload.pk)


def _log() -> Upload:
    upload = upload_create(source=io.BytesIO(LOG), original_name="log.csv", enqueue=False)
    return upload_ingest(upload_id=upload.pk)


def _spend_by_day() -> dict[str, Decimal]:
    filters = SpendFilters(start=NOV2, end=NOV4)
    return {
        str(row.key): row.api_spend_usd
        for row in spend_breakdown(group_by="day", filters=filters).rows
    }


def _report_rollup_days() -> set[date]:
    return set(DailyRollup.objects.filter(upload__kind="billing").values_list("day", flat=True))


def test_a_report_alone_is_the_spend_of_its_days() -> None:
    report = _report([NOV2, NOV3], "2.50")

    assert report.status == "succeeded"
    assert _spend_by_day() == {"2026-11-02": Decimal("2.50"), "2026-11-03": Decimal("2.50")}
    row = DailyRollup.objects.get(day=NOV2)
    # The project's name is its workload; the key is not a team.
    assert (row.workload, row.team, row.requests, row.logged_cost_usd) == (
        "Web",
        "",
        10,
        Decimal("2.50"),
    )
    assert HourlyRollup.objects.filter(upload=report).count() == 2


def test_a_token_log_takes_over_its_day_and_gives_it_back_when_deleted() -> None:
    _report([NOV2, NOV3], "2.50")

    log = _log()

    # Nov 2: the log's $0.01, never the report's $2.50 beside it; Nov 3: still the report.
    assert _report_rollup_days() == {NOV3}
    assert _spend_by_day() == {"2026-11-02": Decimal("0.01"), "2026-11-03": Decimal("2.50")}

    upload_delete(upload=log)

    assert _report_rollup_days() == {NOV2, NOV3}
    assert _spend_by_day() == {"2026-11-02": Decimal("2.50"), "2026-11-03": Decimal("2.50")}


def test_a_report_landing_on_a_logged_day_adds_no_spend() -> None:
    _log()

    _report([NOV2, NOV3], "2.50")

    assert _report_rollup_days() == {NOV3}
    assert _spend_by_day() == {"2026-11-02": Decimal("0.01"), "2026-11-03": Decimal("2.50")}


def test_a_later_report_restates_and_its_deletion_gives_the_days_back() -> None:
    first = _report([NOV2, NOV3], "2.50")
    second = _report([NOV3], "4.00", follows=first.pk)

    assert _spend_by_day() == {"2026-11-02": Decimal("2.50"), "2026-11-03": Decimal("4.00")}
    assert ProviderUsage.objects.get(upload=first, day=NOV3).superseded_by_id == second.pk

    upload_delete(upload=second)

    assert _spend_by_day() == {"2026-11-02": Decimal("2.50"), "2026-11-03": Decimal("2.50")}
    assert ProviderUsage.objects.get(upload=first, day=NOV3).superseded_by_id is None


def test_reconciliation_compares_the_report_with_the_logs_where_both_cover() -> None:
    report = _report([NOV2, NOV3], "2.50")
    log = _log()

    rows = {(r.day, r.model): r for r in reconciliation(start=NOV2, end=NOV3)}

    both = rows[(NOV2, "gpt-4o")]
    assert (both.billed, both.estimated) == (Decimal("2.50"), Decimal("0.01"))
    assert both.bill_upload_ids == [report.pk] and both.log_upload_ids == [log.pk]
    # Nov 3 has no token log: the report's own rollups are never its estimate.
    alone = rows[(NOV3, "gpt-4o")]
    assert (alone.billed, alone.estimated, alone.note) == (
        Decimal("2.50"),
        None,
        "no requests in the token logs",
    )
