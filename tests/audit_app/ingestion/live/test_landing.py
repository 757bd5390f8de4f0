"""Landing live records: each record counted once, merged into one stream upload per source
and day exactly as a file of the same records lands, all or nothing, keys forgotten after the
window, deletion removes what a stream added. The records and their totals are worked out by
hand in `live_samples`."""

from __future__ import annotations

import io
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import OperationalError
from django.db.models import Sum

from audit_app.ingestion import ingest
from audit_app.ingestion.histograms import LatencyHistogram
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.live import landing, merge
from audit_app.ingestion.live.landing import live_keys_forget, live_land
from audit_app.ingestion.reading import RowReject
from audit_app.ingestion.uploads import upload_create, upload_delete
from audit_app.models import (
    DailyRollup,
    HourlyRollup,
    LiveBatch,
    LiveRecordKey,
    Upload,
    Workload,
    WorkloadDay,
)
from tests.audit_app.ingestion.live.live_samples import (
    ALL,
    BATCH_A,
    BATCH_B,
    TOTAL_CACHED,
    TOTAL_COST,
    TOTAL_INPUT,
    TOTAL_OUTPUT,
    TOTAL_REQUESTS,
    log_text,
    receive,
    records,
)

pytestmark = pytest.mark.django_db

DAY = date(2026, 12, 1)
T0 = datetime(2026, 12, 1, 10, 0, 5, tzinfo=UTC)
HOUR_9 = datetime(2026, 12, 1, 9, tzinfo=UTC)
HOUR_10 = datetime(2026, 12, 1, 10, tzinfo=UTC)
ROLLUP_SUMS = (
    "requests",
    "errors",
    "streaming_requests",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "logged_requests",
    "logged_cost_usd",
    "unlogged_input_tokens",
    "unlogged_cached_input_tokens",
    "unlogged_output_tokens",
)
HISTOGRAMS = ("ttft_histogram", "latency_histogram", "tpot_histogram")


def _stream() -> Upload:
    return Upload.objects.get(stream_source="otlp", stream_day=DAY)


def _hourly(upload: Upload) -> dict[tuple[Any, ...], HourlyRollup]:
    return {(r.hour, r.workload, r.model): r for r in HourlyRollup.objects.filter(upload=upload)}


def test_two_batches_with_overlapping_keys_count_each_record_once() -> None:
    a = receive(BATCH_A, at=T0)
    b = receive(BATCH_B, at=T0 + timedelta(seconds=10))
    landed = live_land(now=T0 + timedelta(seconds=12))
    assert (landed.batches, landed.records, landed.landed, landed.duplicates) == (2, 7, 5, 2)

    upload = _stream()
    assert (upload.kind, upload.status, upload.format) == ("token_log", "succeeded", "otel")
    assert upload.original_name == "otlp stream 2026-12-01"
    assert upload.sha256 == "stream:otlp:2026-12-01"
    assert not upload.file
    assert upload.requests == TOTAL_REQUESTS
    assert (upload.input_tokens, upload.cached_input_tokens) == (TOTAL_INPUT, TOTAL_CACHED)
    assert upload.output_tokens == TOTAL_OUTPUT
    assert upload.logged_cost_usd == TOTAL_COST
    assert (upload.rows_read, upload.rows_accepted, upload.rows_rejected) == (7, 5, 0)
    assert upload.last_received_at == T0 + timedelta(seconds=10)

    rows = _hourly(upload)
    assert set(rows) == {
        (HOUR_9, "chat", "gpt-4o-mini"),
        (HOUR_10, "chat", "gpt-4o-mini"),
        (HOUR_10, "evals", "gpt-4o"),
    }
    chat_9 = rows[(HOUR_9, "chat", "gpt-4o-mini")]
    assert (chat_9.requests, chat_9.input_tokens, chat_9.output_tokens) == (3, 3400, 340)
    assert chat_9.logged_cost_usd == Decimal("0.000714")
    chat_10 = rows[(HOUR_10, "chat", "gpt-4o-mini")]
    assert (chat_10.requests, chat_10.input_tokens, chat_10.logged_cost_usd) == (
        1,
        300,
        Decimal("0.000063"),
    )
    evals = rows[(HOUR_10, "evals", "gpt-4o")]
    assert (evals.requests, evals.logged_requests, evals.unlogged_input_tokens) == (1, 0, 500)

    a.refresh_from_db()
    b.refresh_from_db()
    assert (a.records_landed, a.records_duplicate, a.upload_id) == (3, 0, upload.pk)
    assert (b.records_landed, b.records_duplicate, b.upload_id) == (2, 2, upload.pk)
    assert a.landed_at == b.landed_at == T0 + timedelta(seconds=12)
    assert bytes(a.records) == b"" == bytes(b.records)  # the payload is dropped once landed
    assert LiveRecordKey.objects.filter(source="otlp").count() == 5
    assert Workload.objects.filter(name__in=["chat", "evals"]).count() == 2
    assert live_land().batches == 0  # nothing left: a second pass lands nothing


def test_a_batch_sent_twice_counts_once() -> None:
    receive(BATCH_A, at=T0)
    live_land(now=T0 + timedelta(seconds=1))
    receive(BATCH_A, at=T0 + timedelta(seconds=20))  # the client retried after a timeout
    again = live_land(now=T0 + timedelta(seconds=21))
    assert (again.records, again.landed, again.duplicates) == (3, 0, 3)
    upload = _stream()
    assert upload.requests == 3 and upload.rows_accepted == 3 and upload.rows_read == 6
    assert HourlyRollup.objects.filter(upload=upload).aggregate(n=Sum("requests"))["n"] == 3


def _file_upload(ids: tuple[str, ...]) -> Upload:
    upload = upload_create(
        source=io.BytesIO(log_text(ids)), original_name="same.csv", enqueue=False
    )
    return upload_ingest(upload_id=upload.pk)


def _rows_by_key(model: Any, upload: Upload, time_field: str) -> dict[tuple[Any, ...], Any]:
    keys = (time_field, "workload", "team", "provider", "model", "pool", "operation", "batch_api")
    return {tuple(getattr(r, k) for k in keys): r for r in model.objects.filter(upload=upload)}


def test_merging_micro_batches_equals_landing_the_records_as_one_file() -> None:
    receive(BATCH_A, at=T0)
    live_land(now=T0 + timedelta(seconds=1))
    receive(BATCH_B, at=T0 + timedelta(seconds=10))
    live_land(now=T0 + timedelta(seconds=11))  # t/5 merges into the 09:00 chat row
    stream = _stream()
    file = _file_upload(ALL)
    assert file.status == "succeeded"
    for model, time_field in ((HourlyRollup, "hour"), (DailyRollup, "day")):
        mine, theirs = (_rows_by_key(model, u, time_field) for u in (stream, file))
        assert set(mine) == set(theirs) and len(mine) == model.objects.filter(upload=stream).count()
        for key, row in mine.items():
            other = theirs[key]
            assert [getattr(row, f) for f in ROLLUP_SUMS] == [
                getattr(other, f) for f in ROLLUP_SUMS
            ], key
            for name in HISTOGRAMS:
                assert LatencyHistogram.from_bytes(bytes(getattr(row, name))) == (
                    LatencyHistogram.from_bytes(bytes(getattr(other, name)))
                ), (key, name)
    assert _rows_by_key(HourlyRollup, stream, "hour")[
        (HOUR_9, "chat", "support", "openai", "gpt-4o-mini", "", "chat", False)
    ].ttft_histogram  # three first-token times, merged from two passes
    days = {
        u: {
            (d.day, d.workload): (d.requests, d.minute_counts, d.hour_counts, d.callers)
            for d in WorkloadDay.objects.filter(upload=u)
        }
        for u in (stream, file)
    }
    assert days[stream] == days[file]
    chat_day = days[stream][(DAY, "chat")]
    assert chat_day[0] == 4 and chat_day[3] == ["svc-a", "svc-b"]
    assert chat_day[2][9] == 3 and chat_day[2][10] == 1  # hour counts: 09:00 x3, 10:00 x1
    assert chat_day[1][10] == 1 and chat_day[1][40] == 1 and chat_day[1][50] == 1
    sketches = {
        u: WorkloadDay.objects.get(upload=u, workload="chat").end_user_hashes
        for u in (stream, file)
    }
    assert sketches[stream] == sketches[file] and len(sketches[stream]) == 3  # u1, u2, u3
    # Hourly distinct end users: the larger of the two sides (u1 in pass 1; u3 in pass 2).
    chat_9 = _hourly(stream)[(HOUR_9, "chat", "gpt-4o-mini")]
    assert chat_9.distinct_end_users == 1
    for field in ("requests", "input_tokens", "output_tokens", "cached_input_tokens"):
        assert getattr(stream, field) == getattr(file, field)
    assert stream.logged_cost_usd == file.logged_cost_usd == TOTAL_COST


def test_a_micro_batch_lands_whole_or_not_at_all(monkeypatch: pytest.MonkeyPatch) -> None:
    a = receive(BATCH_A, at=T0)
    receive(BATCH_B, at=T0 + timedelta(seconds=1))
    real_insert = merge.insert_all

    def fail_on_workload_days(model: Any, rows: Any, **kwargs: Any) -> int:
        if model is WorkloadDay:  # the rollups are written by now
            raise OperationalError("the database went away")
        return real_insert(model, rows, **kwargs)

    monkeypatch.setattr(merge, "insert_all", fail_on_workload_days)
    with pytest.raises(OperationalError):
        live_land(now=T0 + timedelta(seconds=2))
    assert not Upload.objects.exists()
    assert not HourlyRollup.objects.exists() and not DailyRollup.objects.exists()
    assert not LiveRecordKey.objects.exists()
    assert LiveBatch.objects.filter(landed_at__isnull=True).count() == 2
    a.refresh_from_db()
    assert len(records(BATCH_A)) == 3 and bytes(a.records)  # still there to land

    monkeypatch.setattr(merge, "insert_all", real_insert)
    landed = live_land(now=T0 + timedelta(seconds=3))
    assert (landed.landed, landed.duplicates) == (5, 2)
    assert _stream().requests == TOTAL_REQUESTS


def test_a_record_resent_after_the_window_counts_again(settings: Any) -> None:
    settings.LIVE_DEDUP_WINDOW_DAYS = 7
    receive(("t/1",), at=T0)
    live_land(now=T0)
    six_days = T0 + timedelta(days=6)
    receive(("t/1",), at=six_days)
    assert live_land(now=six_days).duplicates == 1  # within the window: the same record
    eight_days = T0 + timedelta(days=8)
    receive(("t/1",), at=eight_days)
    again = live_land(now=eight_days)
    assert (again.landed, again.keys_forgotten) == (1, 1)  # the key was forgotten first
    later = Upload.objects.get(stream_source="otlp", stream_day=date(2026, 12, 9))
    assert later.requests == 1 and later.input_tokens == 1000
    assert LiveRecordKey.objects.get().seen_at == eight_days


def test_an_old_key_still_stored_is_renewed_not_refused(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window holds even when forgetting lags behind (it deletes in bounded chunks)."""
    settings.LIVE_DEDUP_WINDOW_DAYS = 7
    monkeypatch.setattr(landing, "FORGET_ROUNDS", 0)
    receive(("t/1", "t/2"), at=T0)
    live_land(now=T0)
    eight_days = T0 + timedelta(days=8)
    receive(("t/1", "t/2", "t/4"), at=eight_days)
    LiveRecordKey.objects.filter(key="t/2").update(seen_at=eight_days - timedelta(days=1))
    again = live_land(now=eight_days)
    assert (again.landed, again.duplicates, again.keys_forgotten) == (2, 1, 0)  # t/1 and t/4
    assert LiveRecordKey.objects.get(key="t/1").seen_at == eight_days
    assert LiveRecordKey.objects.get(key="t/1").upload_id == again.streams[0].upload_id


def test_forgetting_deletes_only_keys_past_the_window(settings: Any) -> None:
    settings.LIVE_DEDUP_WINDOW_DAYS = 7
    receive(("t/1",), at=T0)
    live_land(now=T0)
    receive(("t/2",), at=T0 + timedelta(days=3))
    live_land(now=T0 + timedelta(days=3))
    assert live_keys_forget(now=T0 + timedelta(days=7, seconds=1)) == 1
    assert list(LiveRecordKey.objects.values_list("key", flat=True)) == ["t/2"]


def test_records_received_either_side_of_midnight_make_two_stream_uploads() -> None:
    receive(("t/1", "t/2"), at=datetime(2026, 12, 1, 23, 59, 59, tzinfo=UTC))
    receive(("t/4",), at=datetime(2026, 12, 2, 0, 0, 1, tzinfo=UTC))
    receive(("t/5",), at=datetime(2026, 12, 2, 0, 0, 3, tzinfo=UTC), source="litellm")
    landed = live_land(now=datetime(2026, 12, 2, 0, 0, 5, tzinfo=UTC))
    assert [(s.source, s.day, s.landed) for s in landed.streams] == [
        ("litellm", date(2026, 12, 2), 1),
        ("otlp", date(2026, 12, 1), 2),
        ("otlp", date(2026, 12, 2), 1),
    ]
    uploads = {(u.stream_source, u.stream_day): u for u in Upload.objects.exclude(stream_source="")}
    assert uploads[("otlp", DAY)].requests == 2
    assert uploads[("otlp", DAY)].input_tokens == 3000
    assert uploads[("otlp", date(2026, 12, 2))].input_tokens == 300
    assert uploads[("litellm", date(2026, 12, 2))].format == "litellm-callback"
    assert uploads[("litellm", date(2026, 12, 2))].original_name == "litellm stream 2026-12-02"
    # A record is filed by the day it was received, not the day it started (all 2026-12-01).
    assert HourlyRollup.objects.filter(upload=uploads[("otlp", date(2026, 12, 2))]).get().hour == (
        HOUR_10
    )


def test_rejects_at_receipt_add_up_on_the_stream_upload() -> None:
    bad = RowReject(line=2, field="gen_ai.usage.input_tokens", value="-3", reason="negative")
    receive(("t/1",), at=T0, rejects=[bad], ignored=4)
    receive(("t/2",), at=T0 + timedelta(seconds=1), rejects=[bad, bad])
    live_land(now=T0 + timedelta(seconds=2))
    upload = _stream()
    # Read: 1 record + 1 reject + 4 spans that were not LLM calls, then 1 + 2.
    assert (upload.rows_read, upload.rows_accepted, upload.rows_rejected) == (9, 2, 3)
    assert [r["field"] for r in upload.rejects] == ["gen_ai.usage.input_tokens"] * 3


def test_stored_rejects_are_capped_as_a_file_uploads_are(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(landing, "MAX_STORED_REJECTS", 4)
    bad = RowReject(line=2, field="f", value="v", reason="r")
    receive(("t/1",), at=T0, rejects=[bad] * 3)
    live_land(now=T0)
    receive(("t/2",), at=T0 + timedelta(seconds=1), rejects=[bad] * 3)
    live_land(now=T0 + timedelta(seconds=1))
    upload = _stream()
    assert upload.rows_rejected == 6 and len(upload.rejects) == 4


def test_a_batch_that_cannot_be_decoded_lands_as_rejected_and_keeps_its_payload() -> None:
    good = receive(("t/1",), at=T0)
    broken = receive(("t/2", "t/4"), at=T0 + timedelta(seconds=1))
    LiveBatch.objects.filter(pk=broken.pk).update(records=b"not zlib")
    landed = live_land(now=T0 + timedelta(seconds=2))
    assert landed.landed == 1
    upload = _stream()
    assert (upload.requests, upload.rows_rejected) == (1, 2)
    assert "could not be decoded" in upload.rejects[-1]["reason"]
    broken.refresh_from_db()
    good.refresh_from_db()
    assert broken.landed_at is not None and bytes(broken.records) == b"not zlib"
    assert bytes(good.records) == b""


def test_a_pass_stops_at_its_bound_and_the_next_lands_the_rest() -> None:
    receive(("t/1", "t/2"), at=T0)
    receive(("t/4",), at=T0 + timedelta(seconds=1))
    receive(("t/5",), at=T0 + timedelta(seconds=2))
    first = live_land(max_records=3, now=T0 + timedelta(seconds=3))
    assert (first.batches, first.landed, first.more) == (2, 3, True)
    second = live_land(max_records=3, now=T0 + timedelta(seconds=4))
    assert (second.batches, second.landed, second.more) == (1, 1, False)
    # One batch always lands, even one larger than the bound.
    receive(ALL, at=T0 + timedelta(seconds=5))
    assert live_land(max_records=1, now=T0 + timedelta(seconds=6)).records == 5


def test_live_land_due_runs_passes_while_batches_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(landing, "MAX_RECORDS_PER_PASS", 1)
    monkeypatch.setattr(landing, "live_land", _bounded(landing.live_land))
    for i, key in enumerate(("t/1", "t/2", "t/4")):
        receive((key,), at=T0 + timedelta(seconds=i))
    passes = landing.live_land_due(budget_seconds=60)
    assert [p.landed for p in passes] == [1, 1, 1]
    assert _stream().requests == 3


def _bounded(land: Any) -> Any:
    def one_record(**kwargs: Any) -> Any:
        return land(max_records=1, **kwargs)

    return one_record


# --- Deleting a stream upload -----------------------------------------------------------------


def test_deleting_a_stream_upload_removes_what_it_added_and_nothing_else(
    django_capture_on_commit_callbacks: Any,
) -> None:
    file = _file_upload(("t/1",))  # a file upload naming "chat" too
    receive(BATCH_A, at=T0)
    receive(("t/4",), at=T0 + timedelta(days=1))  # the next day's stream
    live_land(now=T0 + timedelta(days=1))
    stream = _stream()
    other = Upload.objects.get(stream_source="otlp", stream_day=date(2026, 12, 2))
    before_other = HourlyRollup.objects.filter(upload=other).count()
    with django_capture_on_commit_callbacks(execute=True):
        upload_delete(upload=stream)
    assert not Upload.objects.filter(pk=stream.pk).exists()
    for model in (HourlyRollup, DailyRollup, WorkloadDay, LiveBatch):
        assert not model.objects.filter(upload_id=stream.pk).exists()
    assert sorted(LiveRecordKey.objects.values_list("key", flat=True)) == ["t/4"]
    assert not Workload.objects.filter(name="evals").exists()  # only the stream named it
    assert Workload.objects.filter(name="chat").exists()  # the file and the next day do too
    assert HourlyRollup.objects.filter(upload=file).aggregate(n=Sum("requests"))["n"] == 1
    assert HourlyRollup.objects.filter(upload=other).count() == before_other
    # Its keys went with it: the same records sent again count again, in a new stream upload.
    receive(BATCH_A, at=T0 + timedelta(hours=1))
    assert live_land(now=T0 + timedelta(days=1, seconds=1)).landed == 3
    assert _stream().pk != stream.pk and _stream().requests == 3


def test_a_stream_upload_is_never_queued_for_ingest() -> None:
    receive(("t/1",), at=T0)
    live_land(now=T0)
    upload = _stream()
    from audit_app.tasks import ingest_upload

    assert ingest_upload(upload.pk) == "succeeded"  # a stray task changes nothing
    assert ingest.upload_ingest(upload_id=upload.pk).requests == 1
    assert HourlyRollup.objects.filter(upload=upload).aggregate(n=Sum("requests"))["n"] == 1
    from audit_app.ingestion.requeue import uploads_to_requeue

    assert uploads_to_requeue(now=T0 + timedelta(days=30), stale_after_seconds=0) == []


# --- Names past the cardinality limits --------------------------------------------------------


def test_a_stream_keeps_the_names_it_has_and_folds_new_ones_past_the_limit(settings: Any) -> None:
    settings.MAX_WORKLOADS_PER_UPLOAD = 3
    receive(("t/1", "t/3"), at=T0)  # chat, evals
    live_land(now=T0)
    many = [
        r.__class__(**{**r.__dict__, "workload": f"w{i}", "request_id": f"x/{i}"})
        for i, r in enumerate(records(("t/4",)) * 3)
    ]
    receive(many, at=T0 + timedelta(seconds=1))
    landed = live_land(now=T0 + timedelta(seconds=1))
    assert landed.landed == 3
    upload = _stream()
    names = set(DailyRollup.objects.filter(upload=upload).values_list("workload", flat=True))
    bucket = "other (workloads over the limit)"
    assert names == {"chat", "evals", bucket}
    assert upload.requests == 5 and upload.input_tokens == 1000 + 500 + 3 * 300
    assert len(upload.notes) == 1 and bucket in upload.notes[0]
    receive(
        [r.__class__(**{**r.__dict__, "request_id": "y/1", "workload": "w9"}) for r in many[:1]],
        at=T0 + timedelta(seconds=2),
    )
    live_land(now=T0 + timedelta(seconds=2))
    assert len(_stream().notes) == 1  # the same note is not repeated
    assert HourlyRollup.objects.filter(upload=upload, workload=bucket).get().requests == 4
