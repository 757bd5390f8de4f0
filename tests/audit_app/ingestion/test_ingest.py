"""The ingest service on the database: what a token log lands, a redelivery or a retry after a
worker died lands once, an unreadable file fails with one sentence and changes nothing.

Cardinality limits, a realistic month, the fan-out and a real worker have their own modules
(test_ingest_limits, test_ingest_realistic, test_fanout, test_ingest_worker).
"""

from __future__ import annotations

import io
from decimal import Decimal
from typing import Any

import pytest

from audit_app.ingestion import ingest
from audit_app.ingestion.histograms import LatencyHistogram
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import HourlyRollup, Upload, WorkloadDay
from audit_app.reporting.filters import whole_range
from audit_app.reporting.spend import spend_report, upload_spend
from tests.audit_app.ingestion.ingest_samples import (
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


def test_an_ingest_whose_upload_failed_meanwhile_does_not_land_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two deliveries of one task: while this one parses, the other fails the upload and the
    same bytes are uploaded again. This one must not land (revive) the failed upload."""
    real_parse = ingest._parse
    first = _create(SAMPLE_CSV, name="first.csv")
    newer: list[Upload] = []

    def parse_while_another_delivery_fails_it(upload: Upload) -> Any:
        result = real_parse(upload)
        Upload.objects.filter(pk=upload.pk).update(status=Upload.Status.FAILED, error="other")
        newer.append(_create(SAMPLE_CSV, name="second.csv"))
        return result

    monkeypatch.setattr(ingest, "_parse", parse_while_another_delivery_fails_it)
    after = upload_ingest(upload_id=first.pk)
    assert (after.status, after.error) == (Upload.Status.FAILED, "other")
    assert HourlyRollup.objects.filter(upload=first).count() == 0
    assert Upload.objects.get(pk=newer[0].pk).status == Upload.Status.QUEUED


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


def test_a_json_array_found_invalid_after_its_first_records_lands_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A LiteLLM JSON array is read through the columnar path, which finds a broken document
    only as it reaches the break (`json_array`): the upload fails with the row path's own
    error for the document, lands none of the records read before it, and keeps its file."""
    from audit_app.ingestion.reading import ImportFileError
    from audit_app.ingestion.token_logs import json_array
    from audit_app.ingestion.token_logs.tabular import read_json_document
    from tests.audit_app.ingestion.token_logs.test_json_array import _records

    good = _create(SAMPLE_CSV, name="good.csv")
    upload_ingest(upload_id=good.pk)
    landed = HourlyRollup.objects.count()
    assert landed > 0
    monkeypatch.setattr(json_array, "WINDOW_BYTES", 4096)  # the break lies past the first
    data = ("[" + ",".join(_records(300, seed=4, unusual=0.0)) + ', {"a": "b"} x]').encode()
    with pytest.raises(ImportFileError) as row_path:
        read_json_document(io.BytesIO(data))
    upload = _create(data, name="spend-logs.json")
    after = upload_ingest(upload_id=upload.pk)
    assert (after.status, after.format) == (Upload.Status.FAILED, "litellm")
    assert after.error == str(row_path.value)
    assert "line 1 column" in after.error  # names where the document breaks
    assert HourlyRollup.objects.filter(upload=upload).count() == 0
    assert HourlyRollup.objects.count() == landed
    with after.file.open("rb") as kept:
        assert kept.read() == data
