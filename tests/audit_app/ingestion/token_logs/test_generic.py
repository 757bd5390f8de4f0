"""Generic request-log importer (canonical columns), on hand-written CSV and JSONL files.

Expected values are worked out by hand from tests/fixtures/generic/. 1714694400 s is
2024-05-03T00:00:00Z.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from audit_app.ingestion.reading import ImportFileError, RowReject
from audit_app.ingestion.token_logs import generic
from audit_app.ingestion.token_logs.base import CanonicalRequest
from tests.audit_app.ingestion.token_logs.reading import read_all
from tests.support.paths import FIXTURES_DIR

FIXTURES = FIXTURES_DIR / "generic"
HEADER = "started_at,ended_at,model,input_tokens,output_tokens"


def _read_bytes(
    data: bytes, chunk_rows: int = 10_000
) -> tuple[list[CanonicalRequest], list[RowReject]]:
    return read_all(generic.read, data, chunk_rows)


def _read_fixture(
    name: str, chunk_rows: int = 10_000
) -> tuple[list[CanonicalRequest], list[RowReject]]:
    return _read_bytes((FIXTURES / name).read_bytes(), chunk_rows)


# --- CSV --------------------------------------------------------------------------------------


def test_csv_accepted_rows_totals_and_costs() -> None:
    requests, rejects = _read_fixture("requests.csv")
    assert [r.request_id for r in requests] == ["g-1", "g-2", "g-3", "g-4"]
    assert [r.line for r in requests] == [2, 3, 4, 5]
    assert sum(r.input_tokens for r in requests) == 640 + 300 + 2048 + 0
    assert sum(r.output_tokens for r in requests) == 121 + 50 + 0 + 0
    assert sum(r.cached_input_tokens for r in requests) == 128
    assert [r.cost_usd for r in requests] == [Decimal("0.000168"), None, Decimal("0.0004"), 0]
    assert len(rejects) == 10


def test_csv_workloads_follow_the_identity_rule() -> None:
    requests, _ = _read_fixture("requests.csv")
    assert [r.workload for r in requests] == [
        "support-chat",  # the workload column
        "ml-platform/llama-3.1-8b",  # no workload, no caller: team/model
        "batch-embedder",  # workload is NULL: the caller
        "unassigned/gpt-4o",  # nothing at all
    ]


def test_csv_maps_each_column() -> None:
    requests, _ = _read_fixture("requests.csv")
    chat, self_hosted, embedding, failed = requests

    assert chat.ttft_ms == 300.0
    assert chat.latency_ms == 1500.0
    assert chat.tpot_ms == 10.0  # (1500 - 300) / (121 - 1)
    assert (chat.streaming, chat.batch_api, chat.status) == (True, False, "success")
    assert (chat.team, chat.end_user, chat.caller, chat.provider) == (
        "support",
        "u-1",
        "support-api",
        "openai",
    )

    # epoch seconds and epoch milliseconds in one row
    assert self_hosted.started_at == datetime(2024, 5, 3, 9, 0, tzinfo=UTC)
    assert self_hosted.ended_at == datetime(2024, 5, 3, 9, 0, 2, tzinfo=UTC)
    assert (self_hosted.pool, self_hosted.operation) == ("h100-a", "")
    assert (self_hosted.streaming, self_hosted.batch_api) == (None, False)
    assert self_hosted.input_tokens == 300  # written as 300.0

    # naive timestamps are UTC; an embedding with no output count has 0 output tokens
    assert embedding.started_at == datetime(2024, 5, 3, 9, 10, tzinfo=UTC)
    assert embedding.latency_ms == pytest.approx(30_123.456)
    assert (embedding.operation, embedding.output_tokens) == ("embedding", 0)
    assert (embedding.streaming, embedding.batch_api, embedding.status) == (False, True, "success")

    assert (failed.status, failed.input_tokens, failed.output_tokens) == ("error", 0, 0)


def test_csv_rejects_name_line_field_and_value() -> None:
    _, rejects = _read_fixture("requests.csv")
    assert [(r.line, r.field, r.value) for r in rejects] == [
        (6, "input_tokens", "-1"),
        (7, "output_tokens", "7.5"),
        (8, "input_tokens", "nan"),
        (9, "input_tokens", "10000001"),
        (10, "started_at", "03/05/2024 09:34"),
        (11, "ended_at", "2024-05-03T09:35:00Z"),
        (12, "model", ""),
        (13, "first_token_at", "2024-05-03T09:36:59Z"),
        (14, "cached_input_tokens", "11"),
        (
            15,
            "(row)",
            "2024-05-03T09:39:00Z,2024-05-03T09:39:01Z,,,support,,support-api,openai,"
            "gpt-4o-mini,chat,,,10,10",
        ),
    ]
    reasons = [r.reason for r in rejects]
    assert reasons[0] == "`input_tokens` cannot be negative, got '-1'."
    assert reasons[1] == "`output_tokens` must be a whole number of tokens, got '7.5'."
    assert reasons[2] == "`input_tokens` must be a finite number, got 'nan'."
    assert reasons[3] == (
        "`input_tokens` is '10000001', above the limit of 10000000 tokens per request."
    )
    assert reasons[4] == "`started_at` is not a timestamp: '03/05/2024 09:34'."
    assert reasons[5] == (
        "`ended_at` (2024-05-03T09:35:00+00:00) is before `started_at` (2024-05-03T09:35:10+00:00)."
    )
    assert reasons[6] == "`model` is empty, so the request cannot be priced or grouped."
    assert reasons[7] == "`first_token_at` (2024-05-03T09:36:59+00:00) is before `started_at`."
    assert reasons[8].startswith("`cached_input_tokens` (11) is more than `input_tokens` (10)")
    assert reasons[9] == "the row has 14 fields but the header has 19."


def test_csv_chunking_gives_identical_rows() -> None:
    data = (FIXTURES / "requests.csv").read_bytes()
    chunks = list(generic.read(io.BytesIO(data), chunk_rows=2))
    assert [chunk.rows_read for chunk in chunks] == [2, 2, 2, 2, 2, 2, 2]
    assert chunks[-1].bytes_read == len(data)
    assert _read_bytes(data, chunk_rows=2) == _read_bytes(data, chunk_rows=10_000)


def test_csv_is_streamed_not_loaded_whole() -> None:
    row = "2024-05-03T09:00:00Z,2024-05-03T09:00:01Z,gpt-4o-mini,10,5\n"
    data = (HEADER + "\n" + row * 50_000).encode()
    chunks = generic.read(io.BytesIO(data), chunk_rows=100)
    first = next(chunks)
    assert first.rows_read == 100
    # the first chunk ends right after its 100th row: nothing further has been read
    assert first.bytes_read == len(HEADER) + 1 + 100 * len(row)


def test_csv_with_bom_and_crlf_is_read() -> None:
    data = (
        "\ufeff" + HEADER + "\r\n" + "2024-05-03T09:00:00Z,2024-05-03T09:00:01Z,gpt-4o,10,5\r\n"
    ).encode()
    requests, rejects = _read_bytes(data)
    assert rejects == []
    assert [(r.model, r.input_tokens, r.output_tokens, r.line) for r in requests] == [
        ("gpt-4o", 10, 5, 2)
    ]


def test_header_only_is_zero_rows() -> None:
    assert list(generic.read(io.BytesIO((HEADER + "\r\n").encode()), chunk_rows=10)) == []


def test_missing_required_columns_fail_the_file_naming_them() -> None:
    with pytest.raises(ImportFileError) as caught:
        list(generic.read(io.BytesIO(b"started_at,input_tokens,model\n"), chunk_rows=10))
    assert str(caught.value) == "line 1: missing required columns `ended_at`, `output_tokens`"


def test_a_five_megabyte_field_is_read() -> None:
    data = (
        "started_at,ended_at,model,input_tokens,output_tokens,note\n"
        + '2024-05-03T09:00:00Z,2024-05-03T09:00:01Z,gpt-4o,10,5,"'
        + "x" * 5_000_000
        + '"\n'
    ).encode()
    requests, rejects = _read_bytes(data)
    assert (len(requests), rejects) == (1, [])


# --- JSONL ------------------------------------------------------------------------------------


def test_jsonl_rows_and_rejects() -> None:
    requests, rejects = _read_fixture("requests.jsonl")
    assert [r.line for r in requests] == [1, 3]
    review, haiku = requests
    assert review.workload == "code-review"
    assert review.cost_usd == Decimal("0.0186")
    assert (review.input_tokens, review.cached_input_tokens, review.output_tokens) == (
        4000,
        3000,
        451,
    )
    assert review.tpot_ms == 4.0  # (2000 - 200) / (451 - 1)

    # epoch seconds with a fraction; 1714730520 s is 2024-05-03T10:02:00Z
    assert haiku.started_at == datetime(2024, 5, 3, 10, 2, 0, 250_000, tzinfo=UTC)
    assert haiku.latency_ms == 1500.0
    assert haiku.workload == "devex/claude-3-5-haiku"
    assert (haiku.input_tokens, haiku.status) == (120, "success")  # 120.0 tokens, HTTP 200

    assert [(r.line, r.field) for r in rejects] == [
        (2, "(line)"),
        (4, "(line)"),
        (5, "first_token_at"),
    ]
    assert rejects[0].reason.startswith("the line is not valid JSON: ")
    assert rejects[1].reason == "the line is not a JSON object."
    assert rejects[2].value == "2024-05-03T10:03:02Z"


def test_jsonl_is_streamed_not_loaded_whole() -> None:
    line = (
        b'{"started_at": "2024-05-03T09:00:00Z", "ended_at": "2024-05-03T09:00:01Z", '
        b'"model": "m", "input_tokens": 1, "output_tokens": 1}\n'
    )
    chunks = generic.read(io.BytesIO(line * 10_000), chunk_rows=10)
    assert next(chunks).bytes_read == 10 * len(line)


# --- file-level failures ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "the file is empty"),
        (b"\n\n", "the file is empty"),
        (b"\x00\x00started_at", "the file looks binary (NUL byte at byte 0)"),
        (b"started_at,input_tokens,caf\xe9\n", "not valid UTF-8 at byte 27"),
    ],
)
def test_unreadable_files(data: bytes, message: str) -> None:
    with pytest.raises(ImportFileError) as caught:
        list(generic.read(io.BytesIO(data), chunk_rows=10))
    assert str(caught.value) == message


def test_forcing_generic_on_another_format_says_so() -> None:
    litellm_csv = b"request_id,startTime,endTime,model,prompt_tokens,completion_tokens\n"
    with pytest.raises(ImportFileError) as caught:
        list(generic.read(io.BytesIO(litellm_csv), chunk_rows=10))
    assert str(caught.value) == (
        "not a generic request log: the first record has no `started_at` and `input_tokens` columns"
    )
