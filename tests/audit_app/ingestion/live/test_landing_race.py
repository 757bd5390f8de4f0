"""Two workers landing at once on PostgreSQL: each batch is taken by one of them (SKIP LOCKED),
and a record both hold (sent twice, in batches each worker took) is counted once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection, connections
from django.db.models import Sum

from audit_app.ingestion.live import landing
from audit_app.ingestion.live.landing import live_land
from audit_app.models import HourlyRollup, LiveBatch, LiveRecordKey, Upload
from tests.audit_app.ingestion.live.live_samples import receive, records

WAIT_SECONDS = 30
T0 = datetime(2026, 12, 1, 23, 59, 0, tzinfo=UTC)
# 200 distinct records: record i has i + 1 input tokens, so all of them hold 20,100. Batch j
# holds records 10j .. 10j + 19: each record but the first ten and last ten is in two batches.
KEYS = 200
BATCHES = 19
EXPECTED_INPUT = KEYS * (KEYS + 1) // 2


def _record(i: int) -> Any:
    base = records(("t/4",))[0]
    return replace(
        base,
        request_id=f"race/{i}",
        workload=f"w{i % 5}",
        input_tokens=i + 1,
        started_at=base.started_at + timedelta(minutes=i),
        ended_at=base.ended_at + timedelta(minutes=i),
        first_token_at=None,
    )


def _batches() -> None:
    # Received across midnight: the batches go to two stream uploads of the same source.
    for j in range(BATCHES):
        receive([_record(i) for i in range(10 * j, 10 * j + 20)], at=T0 + timedelta(seconds=10 * j))


def _in_thread(target: Callable[[], object], errors: list[BaseException]) -> threading.Thread:
    def run() -> None:
        try:
            target()
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _assert_each_record_counted_once() -> None:
    assert not LiveBatch.objects.filter(landed_at__isnull=True).exists()
    streams = Upload.objects.exclude(stream_source="")
    assert streams.count() == 2
    assert streams.aggregate(n=Sum("requests"))["n"] == KEYS
    assert streams.aggregate(n=Sum("input_tokens"))["n"] == EXPECTED_INPUT
    assert HourlyRollup.objects.aggregate(n=Sum("requests"))["n"] == KEYS
    assert LiveRecordKey.objects.count() == KEYS
    totals = LiveBatch.objects.aggregate(landed=Sum("records_landed"), dup=Sum("records_duplicate"))
    assert (totals["landed"], totals["dup"]) == (KEYS, BATCHES * 20 - KEYS)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_workers_landing_at_once_count_each_record_once(postgres_db: None) -> None:
    _batches()
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def worker() -> None:
        start.wait(WAIT_SECONDS)
        while live_land(max_records=40).batches:
            pass

    threads = [_in_thread(worker, errors) for _ in range(2)]
    for thread in threads:
        thread.join(WAIT_SECONDS)
    assert errors == []
    _assert_each_record_counted_once()


def _waiting_on_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND wait_event_type = 'Lock'"
        )
        return bool(cursor.fetchone()[0])


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_second_worker_skips_the_batches_the_first_holds(
    postgres_db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first worker holds its micro-batch mid-landing; the second takes the other batches
    at once (it does not wait for the first one's), then waits to merge until the first has
    landed, and finds the records both hold already counted."""
    _batches()
    holding, release = threading.Event(), threading.Event()
    groups = landing._groups

    def hold_the_first(batches: Any) -> Any:
        if threading.current_thread().name == "first":
            holding.set()
            assert release.wait(WAIT_SECONDS)
        return groups(batches)

    monkeypatch.setattr(landing, "_groups", hold_the_first)
    errors: list[BaseException] = []
    taken: dict[str, list[int]] = {}

    def land(name: str, max_records: int) -> Callable[[], None]:
        def run() -> None:
            threading.current_thread().name = name
            taken[name] = [s.batches for s in live_land(max_records=max_records).streams]

        return run

    first = _in_thread(land("first", 100), errors)  # batches 0-4
    assert holding.wait(WAIT_SECONDS), errors
    second = _in_thread(land("second", 10_000), errors)  # all the others
    deadline = time.monotonic() + WAIT_SECONDS
    while not _waiting_on_a_lock():  # it claimed its batches and waits to merge
        assert time.monotonic() < deadline and not errors, errors
        time.sleep(0.05)
    release.set()
    first.join(WAIT_SECONDS)
    second.join(WAIT_SECONDS)
    assert errors == []
    assert sum(taken["first"]) == 5 and sum(taken["second"]) == BATCHES - 5
    _assert_each_record_counted_once()
