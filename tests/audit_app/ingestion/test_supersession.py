"""Restated billing exports: a newer upload of the same provider, billing account and billing
period supersedes the older one's charges for that period only; deleting restores.

The last section lands restatements at the same time on PostgreSQL: the later landing always
supersedes the earlier one, whatever the interleaving (each landing locks its keys' rows first).
Those tests need PostgreSQL (DATABASE_URL); they skip without it, fail with REQUIRE_SERVICES=1.

Expected totals are added up from the files with the csv module, or by hand in comments.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection, connections
from django.db.models import Sum

from audit_app.costs.billing import (
    charges_in_range,
    pool_reports,
    reconciliation,
    unknown_meters,
)
from audit_app.costs.bills import bills_summary, upload_billing
from audit_app.ingestion import supersession
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create, upload_delete
from audit_app.models import BillingCharge, ServingPool, Upload
from tests.audit_app.ingestion.billing_exports.bills import (
    billed_total_by_csv,
    focus_csv,
    focus_row,
    ingest_bill,
    restated_sample,
)

pytestmark = pytest.mark.django_db

OCT = ("2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z")
NOV = ("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z")
OCT_START = datetime(2026, 10, 1, tzinfo=UTC)
NOV_START = datetime(2026, 11, 1, tzinfo=UTC)


def _billed_in(start: date, end: date) -> Decimal:
    return charges_in_range(start=start, end=end).aggregate(s=Sum("billed_cost"))["s"] or Decimal(0)


def _nov(billed: str, *, day: int = 2, **kw: str) -> dict[str, str]:
    return focus_row(
        billed=billed,
        start=f"2026-11-{day:02d}T00:00:00Z",
        end=f"2026-11-{day:02d}T01:00:00Z",
        period=NOV,
        **kw,
    )


def _oct(billed: str, *, day: int = 2, **kw: str) -> dict[str, str]:
    return focus_row(
        billed=billed,
        start=f"2026-10-{day:02d}T00:00:00Z",
        end=f"2026-10-{day:02d}T01:00:00Z",
        period=OCT,
        **kw,
    )


# --- The real FOCUS sample, restated with one cost changed -------------------------------------


def test_the_focus_sample_restated_counts_only_the_newer_file_and_delete_restores() -> None:
    original, changed = restated_sample()
    first_total = billed_total_by_csv(original)
    second_total = billed_total_by_csv(changed)
    # The sample's BilledCost adds up to 20.52022672899; the restatement raised one line by 1.
    assert first_total == Decimal("20.52022672899")
    assert second_total == Decimal("21.52022672899")
    september = (date(2024, 9, 1), date(2024, 10, 31))

    first = ingest_bill(original, "focus-sep.csv")
    assert bills_summary().billed_cost == {"USD": first_total}
    assert _billed_in(*september) == first_total

    second = ingest_bill(changed, "focus-sep-restated.csv")
    # Before restatements were resolved both files counted: 42.04 instead of 21.52.
    assert bills_summary().billed_cost == {"USD": second_total}
    assert _billed_in(*september) == second_total
    assert not BillingCharge.objects.filter(upload=first, superseded_by__isnull=True).exists()
    assert BillingCharge.objects.filter(upload=first, superseded_by=second).count() == 1000

    upload_delete(upload=second)
    assert bills_summary().billed_cost == {"USD": first_total}
    assert _billed_in(*september) == first_total
    assert not BillingCharge.objects.filter(upload=first, superseded_by__isnull=False).exists()


def test_the_sample_holds_four_periods_each_replaced_whole() -> None:
    original, changed = restated_sample()
    first = ingest_bill(original, "focus-sep.csv")
    second = ingest_bill(changed, "focus-sep-restated.csv")
    periods = [
        (p.provider, p.account, p.period_start.date(), p.upload_id, p.superseded_upload_ids)
        for p in bills_summary().periods
    ]
    # From the file: AWS 942 rows, Microsoft 51 and Oracle 6 in September, one Oracle row billed
    # in October's period.
    assert periods == [
        ("aws", "1234567890123", date(2024, 9, 1), second.pk, [first.pk]),
        (
            "azure",
            "/providers/Microsoft.Billing/billingAccounts/8611537",
            date(2024, 9, 1),
            second.pk,
            [first.pk],
        ),
        ("oracle", "20209880", date(2024, 9, 1), second.pk, [first.pk]),
        ("oracle", "20209880", date(2024, 10, 1), second.pk, [first.pk]),
    ]
    assert upload_billing(first).superseded == "wholly"
    assert upload_billing(second).superseded == ""
    assert [(r.upload_id, r.provider, r.lines) for r in upload_billing(second).replaced] == [
        (first.pk, "aws", 942),
        (first.pk, "azure", 51),
        (first.pk, "oracle", 6),
        (first.pk, "oracle", 1),
    ]


# --- Keys: period and account ------------------------------------------------------------------


def test_a_file_of_another_billing_period_does_not_supersede() -> None:
    ingest_bill(focus_csv(_nov("10.00"), _nov("2.50", day=3)), "nov.csv")
    ingest_bill(focus_csv(_oct("7.25")), "oct.csv")
    # 10.00 + 2.50 (November) + 7.25 (October)
    assert bills_summary().billed_cost == {"USD": Decimal("19.75")}
    assert not BillingCharge.objects.filter(superseded_by__isnull=False).exists()


def test_another_account_or_provider_for_the_same_period_does_not_supersede() -> None:
    ingest_bill(focus_csv(_nov("10.00")), "acct-1.csv")
    ingest_bill(focus_csv(_nov("4.00", account="acct-2")), "acct-2.csv")
    ingest_bill(focus_csv(_nov("1.00", provider="Microsoft")), "azure.csv")
    # 10.00 + 4.00 + 1.00
    assert bills_summary().billed_cost == {"USD": Decimal("15.00")}


def test_an_older_oct_nov_upload_restated_by_a_nov_only_file_keeps_october() -> None:
    both = ingest_bill(
        focus_csv(_oct("7.00"), _oct("1.00", day=9), _nov("10.00"), _nov("3.00", day=5)),
        "oct-nov.csv",
    )
    nov = ingest_bill(focus_csv(_nov("12.00"), _nov("0.40", day=6)), "nov-restated.csv")
    # October from the first file (7.00 + 1.00), November from the second (12.00 + 0.40).
    assert bills_summary().billed_cost == {"USD": Decimal("20.40")}
    assert _billed_in(date(2026, 10, 1), date(2026, 10, 31)) == Decimal("8.00")
    assert _billed_in(date(2026, 11, 1), date(2026, 11, 30)) == Decimal("12.40")

    older = upload_billing(both)
    assert older.superseded == "partly"
    assert [(p.period_start, p.lines, p.superseded_by_id) for p in older.periods] == [
        (OCT_START, 2, None),
        (NOV_START, 2, nov.pk),
    ]
    assert older.superseding_upload_ids == [nov.pk]
    newer = upload_billing(nov)
    assert [(r.upload_id, r.period_start, r.lines) for r in newer.replaced] == [
        (both.pk, NOV_START, 2)
    ]
    summary = bills_summary()
    assert [(p.period_start, p.upload_id, p.superseded_upload_ids) for p in summary.periods] == [
        (OCT_START, both.pk, []),
        (NOV_START, nov.pk, [both.pk]),
    ]


def test_a_nov_only_upload_restated_by_an_oct_nov_file_is_wholly_superseded() -> None:
    nov = ingest_bill(focus_csv(_nov("12.00")), "nov.csv")
    both = ingest_bill(focus_csv(_oct("7.00"), _nov("10.00")), "oct-nov.csv")
    # 7.00 + 10.00: the newer file states both months.
    assert bills_summary().billed_cost == {"USD": Decimal("17.00")}
    assert upload_billing(nov).superseded == "wholly"
    assert upload_billing(nov).superseding_upload_ids == [both.pk]


# --- Chains and deletion ------------------------------------------------------------------------


def test_deleting_the_middle_of_three_restatements_hands_its_charges_on() -> None:
    a = ingest_bill(focus_csv(_nov("1.00")), "a.csv")
    b = ingest_bill(focus_csv(_nov("2.00")), "b.csv")
    c = ingest_bill(focus_csv(_nov("3.00")), "c.csv")
    assert bills_summary().billed_cost == {"USD": Decimal("3.00")}
    assert BillingCharge.objects.get(upload=a).superseded_by == b
    assert BillingCharge.objects.get(upload=b).superseded_by == c

    upload_delete(upload=b)
    assert BillingCharge.objects.get(upload=a).superseded_by == c
    assert bills_summary().billed_cost == {"USD": Decimal("3.00")}

    upload_delete(upload=c)
    assert BillingCharge.objects.get(upload=a).superseded_by is None
    assert bills_summary().billed_cost == {"USD": Decimal("1.00")}


def test_deleting_the_oldest_changes_nothing_that_counts() -> None:
    a = ingest_bill(focus_csv(_nov("1.00")), "a.csv")
    b = ingest_bill(focus_csv(_nov("2.00")), "b.csv")
    upload_delete(upload=a)
    assert BillingCharge.objects.get(upload=b).superseded_by is None
    assert bills_summary().billed_cost == {"USD": Decimal("2.00")}


def test_an_upload_that_fails_supersedes_nothing() -> None:
    ingest_bill(focus_csv(_nov("1.00")), "a.csv")
    broken = focus_csv(_nov("5.00")).replace(b"BilledCost,", b"Billed,", 1)
    upload = upload_create(
        source=io.BytesIO(broken),
        original_name="broken.csv",
        kind=Upload.Kind.BILLING,
        enqueue=False,
    )
    assert upload_ingest(upload_id=upload.pk).status == Upload.Status.FAILED
    assert bills_summary().billed_cost == {"USD": Decimal("1.00")}
    assert not BillingCharge.objects.filter(superseded_by__isnull=False).exists()


# --- Everything that reads charges follows ------------------------------------------------------


def test_pools_reconciliation_and_unknown_meters_read_current_charges_only() -> None:
    ServingPool.objects.create(name="gpu", resource_ids=["i-gpu"])

    def bill(gpu: str, tokens: str, unknown: str) -> bytes:
        return focus_csv(
            _nov(gpu, resource="i-gpu", usage_type="BoxUsage:p5.48xlarge"),
            _nov(
                tokens,
                service="Amazon Bedrock",
                usage_type="USE1-Claude3.5Sonnet-input-tokens",
            ),
            _nov(unknown, service="Amazon Bedrock", usage_type="USE1-MysteryModel-tokens"),
        )

    ingest_bill(bill("98.32", "3.60", "0.50"), "nov.csv")
    ingest_bill(bill("90.00", "4.00", "0.75"), "nov-restated.csv")
    day = date(2026, 11, 2)

    [pool] = pool_reports(start=day, end=day)
    assert pool.attribution.billed == Decimal("90.00")
    [token_row] = reconciliation(start=day, end=day)
    assert token_row.billed == Decimal("4.00")
    [meter] = unknown_meters(start=day, end=day)
    assert (meter.lines, meter.billed) == (1, Decimal("0.75"))


def test_deleting_a_restatement_in_the_admin_restores_the_previous_upload(
    admin_user: Any,
) -> None:
    from django.test import Client

    first = ingest_bill(focus_csv(_nov("1.00")), "a.csv")
    second = ingest_bill(focus_csv(_nov("2.00")), "b.csv")
    third = ingest_bill(focus_csv(_nov("3.00")), "c.csv")
    client = Client()
    client.force_login(admin_user)
    # The middle one by the delete view: a bare cascade would make the first count again.
    response = client.post(f"/admin/audit_app/upload/{second.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert BillingCharge.objects.get(upload=first).superseded_by == third
    assert bills_summary().billed_cost == {"USD": Decimal("3.00")}
    # Then the newest by the list's bulk action.
    response = client.post(
        "/admin/audit_app/upload/",
        {"action": "delete_selected", "_selected_action": [third.pk], "post": "yes"},
    )
    assert response.status_code == 302
    assert BillingCharge.objects.get(upload=first).superseded_by is None
    assert bills_summary().billed_cost == {"USD": Decimal("1.00")}


# --- Landings racing on PostgreSQL ---------------------------------------------------------------

WAIT_SECONDS = 30


def _bill(amount: str, name: str) -> Upload:
    content = focus_csv(
        focus_row(billed=amount, start="2026-11-02T00:00:00Z", end="2026-11-02T01:00:00Z")
    )
    return upload_create(
        source=io.BytesIO(content),
        original_name=name,
        kind=Upload.Kind.BILLING,
        enqueue=False,
    )


def _in_thread(
    target: Callable[[], object], errors: list[BaseException], name: str = ""
) -> threading.Thread:
    def run() -> None:
        try:
            target()
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, daemon=True, name=name or None)
    thread.start()
    return thread


def _waiting_on_a_lock() -> bool:
    """Another connection of this test database is waiting for a row or transaction lock."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0] > 0


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_landing_waits_for_the_one_holding_its_period_and_then_supersedes_it(
    postgres_db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = _bill("1.00", "first.csv"), _bill("2.00", "second.csv")
    locked, release = threading.Event(), threading.Event()
    original_lock = supersession._lock

    def lock_then_hold(keys: Any) -> None:
        original_lock(keys)
        if threading.current_thread().name == "first":
            locked.set()
            assert release.wait(WAIT_SECONDS)

    monkeypatch.setattr(supersession, "_lock", lock_then_hold)
    errors: list[BaseException] = []
    one = _in_thread(lambda: upload_ingest(upload_id=first.pk), errors, "first")
    assert locked.wait(WAIT_SECONDS), f"the first landing never took its lock: {errors}"

    two = _in_thread(lambda: upload_ingest(upload_id=second.pk), errors)
    _wait_for(_waiting_on_a_lock, "the second landing to wait for the first one's lock")
    assert Upload.objects.get(pk=second.pk).status != Upload.Status.SUCCEEDED
    release.set()
    one.join(WAIT_SECONDS)
    two.join(WAIT_SECONDS)
    assert errors == []

    assert BillingCharge.objects.get(upload=first).superseded_by_id == second.pk
    assert BillingCharge.objects.get(upload=second).superseded_by_id is None
    assert bills_summary().billed_cost == {"USD": Decimal("2.00")}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_many_restatements_landing_at_once_leave_exactly_one_current(postgres_db: None) -> None:
    uploads = [_bill(f"{n}.00", f"bill-{n}.csv") for n in range(1, 6)]
    start = threading.Barrier(len(uploads))
    errors: list[BaseException] = []

    def land(upload_id: int) -> Callable[[], object]:
        def run() -> object:
            start.wait(WAIT_SECONDS)
            return upload_ingest(upload_id=upload_id)

        return run

    threads = [_in_thread(land(u.pk), errors) for u in uploads]
    for thread in threads:
        thread.join(WAIT_SECONDS)
    assert errors == []

    charges = {c.upload_id: c.superseded_by_id for c in BillingCharge.objects.all()}
    landed_at = dict(Upload.objects.values_list("pk", "finished_at"))
    current = [upload for upload, successor in charges.items() if successor is None]
    # One chain in landing order: every upload but the last to land is superseded by the one
    # that landed next, so no two uploads point at the same successor.
    order = sorted(charges, key=lambda pk: landed_at[pk])
    assert current == [order[-1]]
    assert [charges[pk] for pk in order[:-1]] == order[1:]
    winner = Upload.objects.get(pk=current[0])
    amount = Decimal(winner.original_name.removeprefix("bill-").removesuffix(".csv"))
    assert bills_summary().billed_cost == {"USD": amount}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_delete_racing_a_landing_never_leaves_two_current(postgres_db: None) -> None:
    first, middle = _bill("1.00", "first.csv"), _bill("2.00", "middle.csv")
    upload_ingest(upload_id=first.pk)
    upload_ingest(upload_id=middle.pk)
    last = _bill("3.00", "last.csv")
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def delete_middle() -> None:
        start.wait(WAIT_SECONDS)
        upload_delete(upload=Upload.objects.get(pk=middle.pk))

    def land_last() -> None:
        start.wait(WAIT_SECONDS)
        upload_ingest(upload_id=last.pk)

    threads = [_in_thread(delete_middle, errors), _in_thread(land_last, errors)]
    for thread in threads:
        thread.join(WAIT_SECONDS)
    assert errors == []
    assert BillingCharge.objects.get(upload=first).superseded_by_id == last.pk
    assert BillingCharge.objects.get(upload=last).superseded_by_id is None
    assert bills_summary().billed_cost == {"USD": Decimal("3.00")}
