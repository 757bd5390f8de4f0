"""Restated exports landing at the same time on PostgreSQL: the later landing always supersedes
the earlier one, whatever the interleaving (each landing locks its keys' rows first).

Needs PostgreSQL (DATABASE_URL); skips without it, fails with REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection, connections

from audit_app.costs.bills import bills_summary
from audit_app.ingestion import supersession
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create, upload_delete
from audit_app.models import BillingCharge, Upload
from tests.audit_app.ingestion.billing_exports.bills import focus_csv, focus_row

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
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
    one = _in_thread(lambda: upload_ingest(upload_id=first.pk, refresh=False), errors, "first")
    assert locked.wait(WAIT_SECONDS), f"the first landing never took its lock: {errors}"

    two = _in_thread(lambda: upload_ingest(upload_id=second.pk, refresh=False), errors)
    _wait_for(_waiting_on_a_lock, "the second landing to wait for the first one's lock")
    assert Upload.objects.get(pk=second.pk).status != Upload.Status.SUCCEEDED
    release.set()
    one.join(WAIT_SECONDS)
    two.join(WAIT_SECONDS)
    assert errors == []

    assert BillingCharge.objects.get(upload=first).superseded_by_id == second.pk
    assert BillingCharge.objects.get(upload=second).superseded_by_id is None
    assert bills_summary().billed_cost == {"USD": Decimal("2.00")}


def test_many_restatements_landing_at_once_leave_exactly_one_current(postgres_db: None) -> None:
    uploads = [_bill(f"{n}.00", f"bill-{n}.csv") for n in range(1, 6)]
    start = threading.Barrier(len(uploads))
    errors: list[BaseException] = []

    def land(upload_id: int) -> Callable[[], object]:
        def run() -> object:
            start.wait(WAIT_SECONDS)
            return upload_ingest(upload_id=upload_id, refresh=False)

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


def test_a_delete_racing_a_landing_never_leaves_two_current(postgres_db: None) -> None:
    first, middle = _bill("1.00", "first.csv"), _bill("2.00", "middle.csv")
    upload_ingest(upload_id=first.pk, refresh=False)
    upload_ingest(upload_id=middle.pk, refresh=False)
    last = _bill("3.00", "last.csv")
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def delete_middle() -> None:
        start.wait(WAIT_SECONDS)
        upload_delete(upload=Upload.objects.get(pk=middle.pk))

    def land_last() -> None:
        start.wait(WAIT_SECONDS)
        upload_ingest(upload_id=last.pk, refresh=False)

    threads = [_in_thread(delete_middle, errors), _in_thread(land_last, errors)]
    for thread in threads:
        thread.join(WAIT_SECONDS)
    assert errors == []
    assert BillingCharge.objects.get(upload=first).superseded_by_id == last.pk
    assert BillingCharge.objects.get(upload=last).superseded_by_id is None
    assert bills_summary().billed_cost == {"USD": Decimal("3.00")}
