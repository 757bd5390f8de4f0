"""`audit_app.lib.bulk.insert_all`: COPY on PostgreSQL, bulk_create elsewhere, same rows either way.

Each test writes the same rows once with `insert_all` and once with Django's own `bulk_create`
(of `Model(**row)`), and compares every column read back, so a type COPY sent wrongly (a
decimal, a time zone, raw bytes, JSON, a default) shows up as a difference.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.db import DataError, OperationalError, connection, transaction

from audit_app.ingestion.histograms import LatencyHistogram
from audit_app.lib.bulk import insert_all
from audit_app.models import HourlyRollup, WorkloadDay
from tests.factories import UploadFactory

pytestmark = pytest.mark.django_db


def _hourly(upload: Any, n: int) -> dict[str, Any]:
    row = {
        "upload_id": upload.pk,
        "hour": datetime(2026, 3, 1, n % 24, tzinfo=UTC),
        "workload": f'wl-{n} ünïcode\ttab "quote" \\ back',
        "provider": "openai",
        "model": "gpt-4o",
        "batch_api": bool(n % 3 == 0),
        "requests": n * 1_000_000_007,  # beyond 32 bits
        "input_tokens": n,
        "logged_cost_usd": Decimal("123456.123456789") * n,  # 15 digits: exact on SQLite too
        "distinct_end_users": n,
        "latency_histogram": LatencyHistogram.from_values([1.5 * (n + 1), 900.0]).to_bytes(),
    }
    if n % 2 == 0:  # the others leave team and ttft_histogram to their defaults
        row["team"] = "search"
        row["ttft_histogram"] = LatencyHistogram.from_values([0.0]).to_bytes()
    return row


def _columns(model: type, upload: Any) -> list[tuple[Any, ...]]:
    names = [f.attname for f in model._meta.concrete_fields if f.name not in ("id", "upload")]
    rows = model.objects.filter(upload=upload).values_list(*names)
    out = [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in rows]
    return sorted(out, key=repr)


def _compare(model: type, build: Any, count: int) -> None:
    ours, django = UploadFactory(), UploadFactory()
    assert insert_all(model, [build(ours, n) for n in range(count)]) == count
    model.objects.bulk_create([model(**build(django, n)) for n in range(count)])
    got = _columns(model, ours)
    assert len(got) == count
    assert got == _columns(model, django)


def test_hourly_rollups_match_bulk_create() -> None:
    _compare(HourlyRollup, _hourly, 50)
    row = HourlyRollup.objects.filter(workload__startswith="wl-7 ").first()
    assert row is not None
    assert row.requests == 7_000_000_049
    assert row.logged_cost_usd == Decimal("864192.864197523")
    assert LatencyHistogram.from_bytes(bytes(row.latency_histogram)) == (
        LatencyHistogram.from_values([12.0, 900.0])
    )


def test_json_and_dates_match_bulk_create() -> None:
    def build(upload: Any, n: int) -> dict[str, Any]:
        return {
            "upload_id": upload.pk,
            "day": date(2026, 3, 1 + n),
            "workload": f"wl-{n}",
            "requests": n,
            "minute_counts": [n] * 60,
            "hour_counts": list(range(24)),
            "callers": ["a'b", 'c"d', "e\\f", "<script>"],
        }  # end_user_hashes: its default, []

    _compare(WorkloadDay, build, 5)
    stored = WorkloadDay.objects.filter(workload="wl-2")
    assert [(d.day, d.minute_counts[0], d.callers) for d in stored] == [
        (date(2026, 3, 3), 2, ["a'b", 'c"d', "e\\f", "<script>"])
    ] * 2


def test_nothing_to_insert() -> None:
    assert insert_all(HourlyRollup, []) == 0


def test_a_field_the_model_lacks_is_refused(postgres_db: None) -> None:
    with pytest.raises(TypeError, match="no field 'upload'"):
        insert_all(HourlyRollup, [{**_hourly(UploadFactory(), 1), "upload": 1}])


def test_postgresql_still_checks_lengths(postgres_db: None) -> None:
    """Types are sent without their modifiers; the server still refuses a name too long."""
    assert connection.vendor == "postgresql"
    row = {**_hourly(UploadFactory(), 1), "provider": "p" * 65}  # max_length 64
    with pytest.raises(DataError), transaction.atomic():
        insert_all(HourlyRollup, [row])
    assert not HourlyRollup.objects.exists()


def test_a_lost_connection_during_copy_is_django_operational_error(
    postgres_db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ingest task retries on django.db's OperationalError (PostgreSQL restarted while an
    upload lands), so COPY must surface psycopg's error as that, as bulk_create does."""
    import psycopg

    def server_gone(*args: Any, **kwargs: Any) -> Any:
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    row = _hourly(UploadFactory(), 1)
    monkeypatch.setattr(psycopg.Cursor, "copy", server_gone)
    with pytest.raises(OperationalError, match="server closed"):
        insert_all(HourlyRollup, [row])
