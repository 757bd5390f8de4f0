"""Upload and ingest services on the database."""

from __future__ import annotations

import hashlib
import io
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings

from audit_app.filters import whole_range
from audit_app.histograms import LatencyHistogram
from audit_app.models import HourlyRollup, Upload, WorkloadDay
from audit_app.selectors_spend import spend_report, upload_spend
from audit_app.services.ingest import upload_ingest
from audit_app.services.uploads import (
    DuplicateUpload,
    UploadRefused,
    upload_create,
    upload_delete,
)
from tests.audit_app.ingest_samples import (
    EXPECTED_COST,
    EXPECTED_INPUT_TOKENS,
    EXPECTED_OUTPUT_TOKENS,
    EXPECTED_REJECT_LINES,
    EXPECTED_TOTAL_COST,
    SAMPLE_CSV,
)

pytestmark = pytest.mark.django_db


def _create(content: bytes, name: str = "requests.csv", **kwargs: Any) -> Upload:
    return upload_create(source=io.BytesIO(content), original_name=name, enqueue=False, **kwargs)


def _media_files() -> list[Path]:
    root = Path(settings.MEDIA_ROOT)
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def test_upload_keeps_the_raw_bytes_and_their_hash(engineer_user: Any) -> None:
    upload = _create(SAMPLE_CSV, user=engineer_user)
    assert upload.status == Upload.Status.QUEUED
    assert upload.sha256 == hashlib.sha256(SAMPLE_CSV).hexdigest()
    assert upload.size_bytes == len(SAMPLE_CSV)
    assert upload.uploaded_by == engineer_user
    with upload.file.open("rb") as stored:
        assert stored.read() == SAMPLE_CSV


def test_same_bytes_twice_are_refused_naming_the_first() -> None:
    first = _create(SAMPLE_CSV)
    before = set(_media_files())
    with pytest.raises(DuplicateUpload, match=f"already uploaded as upload {first.pk} "):
        _create(SAMPLE_CSV, name="renamed.csv")
    assert Upload.objects.count() == 1
    assert set(_media_files()) == before  # the second copy was not kept


@override_settings(UPLOAD_MAX_BYTES=100)
def test_too_large_is_refused_while_streaming_and_leaves_nothing() -> None:
    before = set(_media_files())
    with pytest.raises(UploadRefused, match=r"larger than the upload limit of 100 bytes"):
        _create(SAMPLE_CSV)
    assert Upload.objects.count() == 0
    assert set(_media_files()) == before


def test_empty_file_and_unknown_format_are_refused() -> None:
    with pytest.raises(UploadRefused, match="The file is empty."):
        _create(b"")
    with pytest.raises(UploadRefused, match="Unknown format 'xls'") as caught:
        _create(SAMPLE_CSV, requested_format="xls")
    assert caught.value.field == "format"


def test_ingest_lands_every_good_row_and_lists_bad_ones() -> None:
    upload = upload_ingest(upload_id=_create(SAMPLE_CSV).pk)
    assert upload.status == Upload.Status.SUCCEEDED, upload.error
    assert upload.format == "generic"
    assert (upload.rows_read, upload.rows_accepted, upload.rows_rejected) == (6, 4, 2)
    assert upload.input_tokens == EXPECTED_INPUT_TOKENS
    assert upload.output_tokens == EXPECTED_OUTPUT_TOKENS
    assert upload.logged_cost_usd == Decimal("0.01")
    assert [r["line"] for r in upload.rejects] == EXPECTED_REJECT_LINES
    assert upload.rejects[0]["field"] == "input_tokens"
    assert "-3" in upload.rejects[0]["reason"]
    assert "before" in upload.rejects[1]["reason"]
    assert upload.bytes_read == upload.size_bytes and upload.progress_percent == 100

    spend = spend_report(whole_range()).breakdown("workload")
    by_workload = {row.key: row for row in spend.rows}
    assert by_workload["chat"].spend_usd == EXPECTED_COST["chat"]
    assert by_workload["evals"].spend_usd == EXPECTED_COST["evals"]
    assert by_workload["tool"].spend_usd == Decimal(0)
    assert by_workload["tool"].unpriced_requests == 1
    assert spend.total_usd == EXPECTED_TOTAL_COST
    assert [
        (m.model, m.requests, m.input_tokens, m.output_tokens) for m in spend.unpriced_models
    ] == [("my-finetune", 1, 100, 10)]
    assert upload_spend(upload_id=upload.pk).api_spend_usd == EXPECTED_TOTAL_COST

    # Two chat requests in hour 10 share one rollup; the others have their own.
    assert HourlyRollup.objects.filter(upload=upload).count() == 3
    chat = HourlyRollup.objects.get(upload=upload, workload="chat")
    assert (chat.requests, chat.streaming_requests, chat.distinct_end_users) == (2, 1, 2)
    assert LatencyHistogram.from_bytes(bytes(chat.ttft_histogram)).count == 1
    assert WorkloadDay.objects.filter(upload=upload).count() == 3


def test_ingest_twice_counts_once() -> None:
    upload = _create(SAMPLE_CSV)
    upload_ingest(upload_id=upload.pk)
    upload_ingest(upload_id=upload.pk)  # a redelivered task
    assert HourlyRollup.objects.filter(upload=upload).count() == 3
    assert sum(r.requests for r in HourlyRollup.objects.all()) == 4


def test_a_half_landed_upload_is_redone_exactly() -> None:
    """A worker that died mid-ingest leaves the upload `running`; the retry starts over."""
    upload = _create(SAMPLE_CSV)
    Upload.objects.filter(pk=upload.pk).update(status=Upload.Status.RUNNING, rows_read=3)
    HourlyRollup.objects.create(
        upload=upload, hour="2026-11-02T10:00:00Z", workload="chat", model="gpt-4o", requests=999
    )
    upload = upload_ingest(upload_id=upload.pk)
    assert upload.status == Upload.Status.SUCCEEDED
    assert sum(r.requests for r in HourlyRollup.objects.filter(upload=upload)) == 4
    assert upload.attempts == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x00\x01\x02binary\x00", "looks binary"),
        (b"\xef\xbb\xbfstarted_at,input_tokens\n", "line 1: missing required column"),
        (b"hello,world\n1,2\n", "not a recognised token log"),
        (b'{"resourceSpans": [', "truncated JSON"),
        (
            "started_at,ended_at,model,input_tokens,output_tokens\n2026-11-02T10:00:00Z,"
            "2026-11-02T10:00:01Z,caf\u00e9".encode("latin-1")
            + b",1,1\n",
            "not valid UTF-8 at byte",
        ),
    ],
)
def test_unreadable_file_fails_with_one_sentence_and_changes_nothing(
    content: bytes, message: str
) -> None:
    good = upload_ingest(upload_id=_create(SAMPLE_CSV).pk)
    rollups_before = list(HourlyRollup.objects.values_list("id", "requests"))
    bad = upload_ingest(upload_id=_create(content, name="bad.csv").pk)
    assert bad.status == Upload.Status.FAILED
    assert message in bad.error
    assert "Traceback" not in bad.error and "\n" not in bad.error
    assert list(HourlyRollup.objects.values_list("id", "requests")) == rollups_before
    assert Upload.objects.get(pk=good.pk).status == Upload.Status.SUCCEEDED
    with bad.file.open("rb") as kept:  # the raw upload is kept for inspection
        assert kept.read() == content


def test_delete_removes_exactly_that_uploads_contribution(
    django_capture_on_commit_callbacks: Any,
) -> None:
    first = upload_ingest(upload_id=_create(SAMPLE_CSV).pk)
    second_csv = SAMPLE_CSV.replace(b"r1,", b"r1b,").replace(b"u1,", b"u9,")
    second = upload_ingest(upload_id=_create(second_csv, name="second.csv").pk)
    assert spend_report(whole_range()).total_usd == EXPECTED_TOTAL_COST * 2
    raw_path = Path(first.file.path)
    with django_capture_on_commit_callbacks(execute=True):
        upload_delete(upload=first)
    assert not Upload.objects.filter(pk=first.pk).exists()
    assert HourlyRollup.objects.filter(upload_id=first.pk).count() == 0
    assert spend_report(whole_range()).total_usd == EXPECTED_TOTAL_COST
    assert HourlyRollup.objects.filter(upload=second).count() == 3
    assert not raw_path.exists()
