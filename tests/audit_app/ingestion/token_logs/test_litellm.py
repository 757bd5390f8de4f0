"""LiteLLM spend-log importer, on hand-written CSV, JSONL and JSON exports.

Expected values are worked out by hand from the fixture files in tests/fixtures/litellm/.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from audit_app.ingestion.reading import ImportFileError, RowReject
from audit_app.ingestion.token_logs import litellm
from audit_app.ingestion.token_logs.base import CanonicalRequest
from tests.audit_app.ingestion.token_logs.reading import read_all
from tests.support.paths import FIXTURES_DIR

FIXTURES = FIXTURES_DIR / "litellm"
CSV_HEADER = (
    "request_id,call_type,api_key,spend,total_tokens,prompt_tokens,completion_tokens,"
    "startTime,endTime,completionStartTime,model,model_group,custom_llm_provider,user,"
    "metadata,cache_hit,request_tags,team_id,end_user,status"
)


def _read_bytes(
    data: bytes, chunk_rows: int = 10_000
) -> tuple[list[CanonicalRequest], list[RowReject]]:
    return read_all(litellm.read, data, chunk_rows)


def _read_fixture(
    name: str, chunk_rows: int = 10_000
) -> tuple[list[CanonicalRequest], list[RowReject]]:
    return _read_bytes((FIXTURES / name).read_bytes(), chunk_rows)


# --- CSV --------------------------------------------------------------------------------------


def test_csv_accepts_the_good_rows_and_totals_their_tokens() -> None:
    requests, rejects = _read_fixture("spend_logs.csv")
    assert [request.request_id for request in requests] == [
        "req-001",
        "req-002",
        "req-003",
        "req-004",
        "req-005",
        "req-006",
    ]
    assert sum(request.input_tokens for request in requests) == 13550
    assert sum(request.output_tokens for request in requests) == 5650
    assert sum(request.cached_input_tokens for request in requests) == 128
    assert len(rejects) == 7


def test_csv_costs_are_exact_and_unpriced_rows_are_none() -> None:
    requests, _ = _read_fixture("spend_logs.csv")
    assert [request.cost_usd for request in requests] == [
        Decimal("0.00125"),
        None,  # spend 0.0 with 1500 tokens: LiteLLM had no price
        Decimal("0.00002"),
        Decimal("0.0"),  # a failed call with no tokens really cost nothing
        Decimal("0.75"),
        None,  # self-hosted, spend 0.0 with 1000 tokens
    ]
    assert sum(request.cost_usd or Decimal(0) for request in requests) == Decimal("0.75127")


def test_csv_workloads_follow_the_identity_rule() -> None:
    requests, _ = _read_fixture("spend_logs.csv")
    assert [request.workload for request in requests] == [
        "ticket-triage",  # workload: tag
        "nightly-eval",  # metadata.spend_logs_metadata.workload beats the key alias
        "3f9a1c0d",  # no alias: the api_key
        "growth/gpt-4o",  # no caller: team alias / model
        "unassigned/gpt-4o-mini",  # blank tag, blank alias, no key, no team
        "rag-answer",  # workload: tag in comma separated text
    ]


def test_csv_maps_each_field() -> None:
    requests, _ = _read_fixture("spend_logs.csv")
    first, second, embedding, failed, batch, self_hosted = requests

    assert first.started_at == datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    assert first.ended_at == datetime(2024, 5, 1, 12, 0, 4, tzinfo=UTC)
    assert first.first_token_at == datetime(2024, 5, 1, 12, 0, 0, 400_000, tzinfo=UTC)
    assert first.streaming is True
    assert (first.ttft_ms, first.latency_ms) == (400.0, 4000.0)
    assert first.tpot_ms == pytest.approx(3600 / 199)
    assert (first.caller, first.team, first.end_user) == ("support-bot", "team-support", "cust-42")
    assert (first.provider, first.model, first.operation) == ("openai", "gpt-4o-mini", "chat")
    assert first.cached_input_tokens == 128
    assert first.line == 2

    # completionStartTime == endTime: not streamed, and no real first-token time
    assert second.streaming is False
    assert second.first_token_at is None
    assert second.team == ""
    assert second.caller == "eval-runner"

    assert embedding.operation == "embedding"
    assert embedding.streaming is None  # completionStartTime is NULL
    assert embedding.end_user == "u-9"  # end_user is NULL, so `user`
    assert embedding.team == "team-search"
    assert embedding.latency_ms == 250.0

    assert failed.status == "error"
    assert failed.team == "growth"  # team_id empty: metadata.user_api_key_team_alias

    assert batch.batch_api is True  # metadata.batch_models
    assert batch.latency_ms == 90 * 60 * 1000

    # +02:00 offsets become UTC; the metadata cell spans two physical lines (7 and 8)
    assert self_hosted.started_at == datetime(2024, 5, 1, 10, 20, tzinfo=UTC)
    assert self_hosted.ttft_ms == 300.0
    assert self_hosted.pool == "h100-pool-a"
    assert self_hosted.provider == "hosted_vllm"
    assert self_hosted.input_tokens == 850  # written as 850.0
    assert self_hosted.line == 7
    assert all(request.status == "success" for request in requests if request is not failed)


def test_csv_rejects_name_line_field_and_value() -> None:
    _, rejects = _read_fixture("spend_logs.csv")
    assert [(reject.line, reject.field, reject.value) for reject in rejects] == [
        (9, "prompt_tokens", "-5"),
        (10, "completion_tokens", "12.5"),
        (11, "prompt_tokens", "NaN"),
        (12, "completion_tokens", "50000000"),
        (13, "startTime", "yesterday noon"),
        (14, "endTime", "2024-05-01 12:30:00"),
        (15, "model", ""),
    ]
    reasons = [reject.reason for reject in rejects]
    assert reasons[0] == "`prompt_tokens` cannot be negative, got '-5'."
    assert reasons[1] == "`completion_tokens` must be a whole number of tokens, got '12.5'."
    assert reasons[2] == "`prompt_tokens` must be a finite number, got 'NaN'."
    assert "`completion_tokens` is '50000000', above the limit" in reasons[3]
    assert reasons[4] == "`startTime` is not a timestamp: 'yesterday noon'."
    assert reasons[5] == (
        "`endTime` (2024-05-01T12:30:00+00:00) is before `startTime` (2024-05-01T12:30:05+00:00)."
    )
    assert reasons[6] == "`model` is empty, so the request cannot be priced or grouped."


def test_csv_chunking_gives_identical_rows() -> None:
    data = (FIXTURES / "spend_logs.csv").read_bytes()
    chunks = list(litellm.read(io.BytesIO(data), chunk_rows=2))
    assert [chunk.rows_read for chunk in chunks] == [2, 2, 2, 2, 2, 2, 1]
    assert chunks[-1].bytes_read == len(data)
    positions = [chunk.bytes_read for chunk in chunks]
    assert positions == sorted(positions)
    assert _read_bytes(data, chunk_rows=2) == _read_bytes(data, chunk_rows=10_000)


def test_csv_with_bom_and_crlf_is_read() -> None:
    data = (
        "\ufeff"
        + CSV_HEADER
        + "\r\n"
        + "r1,acompletion,k1,0.5,30,20,10,2024-05-01 12:00:00,2024-05-01 12:00:01,,gpt-4o,"
        + 'gpt-4o,openai,,"{""pool"": ""p""}",False,[],t1,,success\r\n'
    ).encode()
    requests, rejects = _read_bytes(data)
    assert rejects == []
    assert [(r.request_id, r.cost_usd, r.pool, r.status) for r in requests] == [
        ("r1", Decimal("0.5"), "p", "success")
    ]


def test_header_only_is_zero_rows() -> None:
    assert list(litellm.read(io.BytesIO((CSV_HEADER + "\n").encode()), chunk_rows=10)) == []


def test_missing_required_column_fails_the_file_naming_it() -> None:
    header = CSV_HEADER.replace("startTime,", "")
    with pytest.raises(ImportFileError) as caught:
        list(litellm.read(io.BytesIO((header + "\n").encode()), chunk_rows=10))
    assert str(caught.value) == "line 1: missing required column `startTime`"


def test_a_row_with_the_wrong_number_of_fields_is_rejected() -> None:
    data = (CSV_HEADER + "\nr1,acompletion,k1\n").encode()
    requests, rejects = _read_bytes(data)
    assert requests == []
    assert [(r.line, r.field, r.reason) for r in rejects] == [
        (2, "(row)", "the row has 3 fields but the header has 20.")
    ]


def test_invalid_utf8_past_the_head_names_the_absolute_byte() -> None:
    good_row = (
        "r{n},acompletion,k1,0.5,30,20,10,2024-05-01 12:00:00,2024-05-01 12:00:01,,gpt-4o,"
        "gpt-4o,openai,,{{}},False,[],t1,,success\n"
    )
    body = "".join(good_row.format(n=n) for n in range(1000)).encode()
    prefix = (CSV_HEADER + "\n").encode() + body
    assert len(prefix) > 64 * 1024  # the bad byte lies beyond the 64 KiB head
    data = prefix + b"r-bad,acompletion,k\xff1\n"
    with pytest.raises(ImportFileError) as caught:
        _read_bytes(data)
    assert str(caught.value) == f"not valid UTF-8 at byte {len(prefix) + 19}"


# --- JSONL and JSON ---------------------------------------------------------------------------


def test_jsonl_rows_and_rejects() -> None:
    requests, rejects = _read_fixture("spend_logs.jsonl")
    assert [r.request_id for r in requests] == ["j-1", "j-2", "j-4", "j-5", "j-7"]
    assert [r.line for r in requests] == [1, 2, 5, 6, 8]  # line 4 is blank
    assert [r.cost_usd for r in requests] == [
        Decimal("0.0042"),
        Decimal("0.0"),  # served from LiteLLM's cache: a real zero, not "unpriced"
        Decimal("0.5"),
        Decimal("0"),
        Decimal("0.00001"),
    ]
    assert [r.workload for r in requests] == [
        "docs-search",
        "docs-qa",
        "k4",
        "team-docs/gpt-4o",
        "k7",
    ]
    assert sum(r.input_tokens for r in requests) == 1000 + 1000 + 2000 + 0 + 512
    assert sum(r.output_tokens for r in requests) == 100 + 100 + 400 + 0 + 0
    assert [r.cached_input_tokens for r in requests] == [400, 0, 0, 0, 0]

    first, cached, batch, failed, embedding = requests
    assert first.streaming is True
    assert first.tpot_ms == pytest.approx(2000 / 99)
    assert cached.streaming is None
    assert (batch.operation, batch.batch_api) == ("acreate_batch", True)
    assert (failed.status, failed.input_tokens, failed.output_tokens) == ("error", 0, 0)
    assert embedding.started_at == datetime(2024, 5, 2, 8, 0, tzinfo=UTC)  # epoch ms
    assert embedding.latency_ms == 150.0

    assert [(r.line, r.field) for r in rejects] == [(3, "(line)"), (7, "prompt_tokens")]
    assert rejects[0].reason.startswith("the line is not valid JSON: ")
    assert rejects[0].value.startswith('{"request_id": "j-3"')
    assert rejects[1].reason == "`prompt_tokens` is empty."


def test_json_array_uses_record_positions() -> None:
    requests, rejects = _read_fixture("spend_logs.json")
    assert [(r.request_id, r.line) for r in requests] == [("a-1", 1), ("a-3", 3)]
    meeting_notes, text_completion = requests
    assert meeting_notes.workload == "meeting-notes"
    assert meeting_notes.tpot_ms == pytest.approx(1200 / 59)
    assert (text_completion.operation, text_completion.pool) == ("completion", "shared")
    assert [(r.line, r.field, r.value) for r in rejects] == [
        (2, "completionStartTime", "2024-05-04T10:05:02Z")
    ]
    assert rejects[0].reason == (
        "`completionStartTime` (2024-05-04T10:05:02+00:00) is after `endTime`."
    )


def test_truncated_json_fails_the_file() -> None:
    data = (FIXTURES / "spend_logs.json").read_bytes()
    cut = data[: data.index(b'"a-3"')]
    with pytest.raises(ImportFileError) as caught:
        list(litellm.read(io.BytesIO(cut), chunk_rows=10))
    assert str(caught.value).startswith("truncated JSON: the document ends before it closes")


def test_jsonl_first_record_without_a_required_field_fails_the_file() -> None:
    data = b'{"request_id": "x", "call_type": "acompletion", "model": "m"}\n'
    with pytest.raises(ImportFileError) as caught:
        list(litellm.read(io.BytesIO(data), chunk_rows=10))
    assert str(caught.value) == (
        "line 1: missing required fields `startTime`, `endTime`, `prompt_tokens`, "
        "`completion_tokens`"
    )


# --- file-level failures ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "the file is empty"),
        (b"request_id,startTime\x00\x01", "the file looks binary (NUL byte at byte 20)"),
        (b"request_id,startTime\n\xc3\x28", "not valid UTF-8 at byte 21"),
    ],
)
def test_unreadable_files(data: bytes, message: str) -> None:
    with pytest.raises(ImportFileError) as caught:
        list(litellm.read(io.BytesIO(data), chunk_rows=10))
    assert str(caught.value) == message


def test_forcing_litellm_on_another_format_says_so() -> None:
    generic_csv = b"started_at,ended_at,model,input_tokens,output_tokens\n"
    with pytest.raises(ImportFileError) as caught:
        list(litellm.read(io.BytesIO(generic_csv), chunk_rows=10))
    assert str(caught.value).startswith("not a LiteLLM spend log: ")
