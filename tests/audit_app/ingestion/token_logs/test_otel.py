"""OpenTelemetry GenAI span importer, on a hand-written OTLP/JSON document and JSONL export.

Expected values are worked out by hand from tests/fixtures/otel/. 1714564800 s is
2024-05-01T12:00:00Z.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from audit_app.ingestion.reading import ImportFileError, RowReject
from audit_app.ingestion.token_logs import otel
from audit_app.ingestion.token_logs.base import CanonicalRequest
from tests.audit_app.ingestion.token_logs.reading import read_all
from tests.support.paths import FIXTURES_DIR

FIXTURES = FIXTURES_DIR / "otel"


def _read_bytes(
    data: bytes, chunk_rows: int = 10_000
) -> tuple[list[CanonicalRequest], list[RowReject]]:
    return read_all(otel.read, data, chunk_rows)


def _read_fixture(
    name: str, chunk_rows: int = 10_000
) -> tuple[list[CanonicalRequest], list[RowReject]]:
    return _read_bytes((FIXTURES / name).read_bytes(), chunk_rows)


# --- single document --------------------------------------------------------------------------


def test_document_accepts_gen_ai_spans_and_skips_the_rest() -> None:
    data = (FIXTURES / "traces.json").read_bytes()
    chunks = list(otel.read(io.BytesIO(data), chunk_rows=10_000))
    # 13 spans, one of them an HTTP span without gen_ai attributes: 12 rows
    assert sum(chunk.rows_read for chunk in chunks) == 12
    requests, rejects = _read_bytes(data)
    assert [request.line for request in requests] == [2, 3, 4, 6]
    assert len(rejects) == 8


def test_document_token_totals_costs_and_workloads() -> None:
    requests, _ = _read_fixture("traces.json")
    assert sum(r.input_tokens for r in requests) == 1200 + 800 + 0 + 2048
    assert sum(r.output_tokens for r in requests) == 300 + 0 + 0 + 512
    assert sum(r.cached_input_tokens for r in requests) == 200
    assert [r.cost_usd for r in requests] == [None, None, None, Decimal("0.0123")]
    assert [r.workload for r in requests] == [
        "checkout-chat",  # span attribute `workload`
        "checkout-assistant",  # service.name as caller
        "checkout-assistant",
        "nightly-evals",
    ]


def test_document_maps_each_field() -> None:
    requests, _ = _read_fixture("traces.json")
    chat, embedding, failed, vllm = requests

    assert chat.started_at == datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    assert chat.ended_at == datetime(2024, 5, 1, 12, 0, 3, 350_000, tzinfo=UTC)
    # time_to_first_chunk is in seconds: 0.35 s
    assert chat.ttft_ms == 350.0
    assert chat.latency_ms == 3350.0
    assert chat.tpot_ms == pytest.approx(3000 / 299)
    assert chat.model == "gpt-4o-2024-08-06"  # the response model, what was served
    assert (chat.provider, chat.operation, chat.streaming) == ("openai", "chat", True)
    assert (chat.caller, chat.team, chat.end_user) == (
        "checkout-assistant",
        "payments",
        "shopper-17",
    )
    assert chat.request_id == "5b8efff798038103d269b633813fc60c/eee19b7ec3c1b174"
    assert chat.status == "success"

    assert embedding.provider == "openai"  # from the deprecated gen_ai.system
    assert (embedding.operation, embedding.output_tokens) == ("embedding", 0)
    assert embedding.streaming is None
    assert embedding.first_token_at is None

    assert (failed.status, failed.input_tokens, failed.output_tokens) == ("error", 0, 0)

    # vLLM's own names: prompt/completion tokens and gen_ai.latency.time_to_first_token
    assert (vllm.input_tokens, vllm.output_tokens) == (2048, 512)
    assert vllm.ttft_ms == 500.0
    assert vllm.tpot_ms == pytest.approx(10_000 / 511)
    assert (vllm.pool, vllm.caller, vllm.provider) == ("trn1-pool", "nightly-evals", "")
    assert vllm.batch_api is False


def test_document_rejects_use_span_positions_and_name_field_and_value() -> None:
    _, rejects = _read_fixture("traces.json")
    assert [(r.line, r.field, r.value) for r in rejects] == [
        (5, "gen_ai.usage.input_tokens", "-7"),
        (7, "gen_ai.request.model", ""),
        (8, "endTimeUnixNano", "2024-05-01 13:01:39+00:00"),
        (9, "gen_ai.response.time_to_first_chunk", "12.0"),
        (10, "gen_ai.usage.output_tokens", "3.5"),
        (11, "gen_ai.usage.input_tokens", "99999999999"),
        (12, "gen_ai.usage.output_tokens", "NaN"),
        (13, "startTimeUnixNano", "yesterday"),
    ]
    reasons = [r.reason for r in rejects]
    assert reasons[0] == "`gen_ai.usage.input_tokens` cannot be negative, got '-7'."
    assert reasons[1] == (
        "`gen_ai.request.model` is empty, so the request cannot be priced or grouped."
    )
    assert reasons[2].startswith("`endTimeUnixNano` (2024-05-01T13:01:39+00:00) is before")
    assert reasons[3] == (
        "`gen_ai.response.time_to_first_chunk` is 12.0 s, longer than the whole span (2 s)."
    )
    assert reasons[4] == "`gen_ai.usage.output_tokens` must be a whole number of tokens, got '3.5'."
    assert "'99999999999', above the limit" in reasons[5]
    assert reasons[6] == "`gen_ai.usage.output_tokens` must be a finite number, got 'NaN'."
    assert reasons[7] == ("`startTimeUnixNano` is not a whole number of nanoseconds: 'yesterday'.")


def test_document_chunking_gives_identical_rows() -> None:
    data = (FIXTURES / "traces.json").read_bytes()
    chunks = list(otel.read(io.BytesIO(data), chunk_rows=2))
    # Six chunks of rows, then one without rows saying which span was not a call (the HTTP
    # span `POST /checkout/assist`); it ends at the end of the file.
    assert [chunk.rows_read for chunk in chunks] == [2, 2, 2, 2, 2, 2, 0]
    assert [chunk.notes for chunk in chunks[:-1]] == [()] * 6
    assert chunks[-1].notes == (
        "Ignored 1 span that carries no gen_ai.* attribute (not calls to a model), such as "
        "`POST /checkout/assist`.",
    )
    assert chunks[-1].bytes_read == len(data)
    assert _read_bytes(data, chunk_rows=2) == _read_bytes(data, chunk_rows=10_000)


def test_a_minified_single_document_still_numbers_spans() -> None:
    document = json.loads((FIXTURES / "traces.json").read_text())
    one_line = json.dumps(document).encode()
    requests, rejects = _read_bytes(one_line)
    assert [r.line for r in requests] == [2, 3, 4, 6]
    assert [r.line for r in rejects] == [5, 7, 8, 9, 10, 11, 12, 13]


def test_truncated_document_fails_the_file() -> None:
    data = (FIXTURES / "traces.json").read_bytes()
    cut = data[: len(data) // 2]
    with pytest.raises(ImportFileError) as caught:
        list(otel.read(io.BytesIO(cut), chunk_rows=10))
    assert str(caught.value).startswith("truncated JSON: the document ends before it closes")


# --- JSONL (file exporter) --------------------------------------------------------------------


def test_jsonl_lines_land_and_a_malformed_line_is_one_reject() -> None:
    data = (FIXTURES / "traces.jsonl").read_bytes()
    chunks = list(otel.read(io.BytesIO(data), chunk_rows=10_000))
    # line 1: 2 gen_ai spans; line 2: malformed; line 3: 2 spans; line 4: not a trace
    assert sum(chunk.rows_read for chunk in chunks) == 6
    requests, rejects = _read_bytes(data)
    assert [(r.line, r.request_id) for r in requests] == [
        (1, "aaaa0000aaaa0000aaaa0000aaaa0001/1000000000000002"),
        (1, "aaaa0000aaaa0000aaaa0000aaaa0001/1000000000000003"),
        (3, "aaaa0000aaaa0000aaaa0000aaaa0003/3000000000000001"),
    ]
    assert [r.input_tokens for r in requests] == [100, 50, 30]
    assert [r.output_tokens for r in requests] == [20, 5, 0]
    assert [r.status for r in requests] == ["success", "success", "error"]  # error.type set
    assert {r.workload for r in requests} == {"support-agent"}
    assert [(r.line, r.field) for r in rejects] == [
        (2, "(line)"),
        (3, "gen_ai.request.model"),
        (4, "resourceSpans"),
    ]
    assert rejects[0].reason.startswith("the line is not valid JSON: ")
    assert rejects[2].reason == "the document has no `resourceSpans` list."


def test_jsonl_chunking_gives_identical_rows() -> None:
    data = (FIXTURES / "traces.jsonl").read_bytes()
    assert _read_bytes(data, chunk_rows=2) == _read_bytes(data, chunk_rows=10_000)
    chunks = list(otel.read(io.BytesIO(data), chunk_rows=2))
    assert chunks[-1].bytes_read == len(data)


# --- file-level failures ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "the file is empty"),
        (b'{"resourceSpans": []}\x00', "the file looks binary (NUL byte at byte 21)"),
        (b'{"resourceSpans": ["\xe2\x82"]}', "not valid UTF-8 at byte 20"),
    ],
)
def test_unreadable_files(data: bytes, message: str) -> None:
    with pytest.raises(ImportFileError) as caught:
        list(otel.read(io.BytesIO(data), chunk_rows=10))
    assert str(caught.value) == message


def test_an_export_without_spans_is_zero_rows() -> None:
    assert list(otel.read(io.BytesIO(b'{"resourceSpans": []}\n'), chunk_rows=10)) == []


def test_forcing_otel_on_another_format_says_so() -> None:
    with pytest.raises(ImportFileError) as caught:
        list(otel.read(io.BytesIO(b"request_id,startTime\nr1,2024-05-01\n"), chunk_rows=10))
    assert str(caught.value) == (
        "not an OpenTelemetry trace export: the first document has no `resourceSpans` list"
    )
