"""Cache-creation (cache write) input tokens, read wherever the log has them: OTel's
`gen_ai.usage.cache_creation.input_tokens`, LiteLLM's Anthropic-shaped usage
(`cache_creation_input_tokens`, row-by-row and columnar paths alike), the generic format's
column; and live records stored before the field existed still decode."""

from __future__ import annotations

import io
import json
import zlib
from datetime import UTC, datetime

from audit_app.ingestion.live.records import FIELDS, decode_requests, decode_rows
from audit_app.ingestion.token_logs import generic, otel, read_requests
from audit_app.ingestion.token_logs.frame import CACHE_CREATION_INPUT_TOKENS
from tests.audit_app.ingestion.token_logs.reading import read_all

LITELLM_HEADER = (
    "request_id,call_type,api_key,spend,total_tokens,prompt_tokens,completion_tokens,startTime,"
    "endTime,completionStartTime,model,model_group,custom_llm_provider,user,metadata,cache_hit,"
    "request_tags,team_id,end_user,status\n"
)


def _span(attributes: dict[str, int]) -> bytes:
    start = int(datetime(2026, 11, 20, 9, 0, tzinfo=UTC).timestamp()) * 10**9
    values = {
        "gen_ai.provider.name": {"stringValue": "anthropic"},
        "gen_ai.request.model": {"stringValue": "claude-sonnet-4-5"},
        **{key: {"intValue": str(value)} for key, value in attributes.items()},
    }
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 10**9),
        "attributes": [{"key": k, "value": v} for k, v in values.items()],
    }
    document = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    return json.dumps(document).encode()


def test_otel_reads_cache_creation_tokens() -> None:
    [request], rejects = read_all(
        otel.read,
        _span(
            {
                "gen_ai.usage.input_tokens": 1000,
                "gen_ai.usage.output_tokens": 10,
                "gen_ai.usage.cache_read.input_tokens": 300,
                "gen_ai.usage.cache_creation.input_tokens": 600,
            }
        ),
    )
    assert rejects == []
    assert (request.input_tokens, request.cached_input_tokens) == (1000, 300)
    assert request.cache_creation_input_tokens == 600


def test_cache_reads_and_writes_above_the_input_are_a_reject_naming_them() -> None:
    requests, [reject] = read_all(
        otel.read,
        _span(
            {
                "gen_ai.usage.input_tokens": 1000,
                "gen_ai.usage.output_tokens": 10,
                "gen_ai.usage.cache_read.input_tokens": 500,
                "gen_ai.usage.cache_creation.input_tokens": 600,
            }
        ),
    )
    assert requests == []
    assert reject.field == "gen_ai.usage.cache_creation.input_tokens"
    assert reject.reason == (
        "`gen_ai.usage.cache_read.input_tokens` (500) plus "
        "`gen_ai.usage.cache_creation.input_tokens` (600) is more than "
        "`gen_ai.usage.input_tokens` (1000); input tokens must include cache reads and cache "
        "writes."
    )


def _litellm(rows: int) -> bytes:
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 100,
        "cache_read_input_tokens": 200,
        "cache_creation_input_tokens": 300,
    }
    metadata = json.dumps({"usage_object": usage}).replace('"', '""')
    lines = [LITELLM_HEADER]
    for i in range(rows):
        minute, second = divmod(i, 60)
        lines.append(
            f"l-{i},acompletion,k1,0.001,1100,1000,100,2026-11-20 10:{minute:02d}:{second:02d},"
            f"2026-11-20 10:{minute:02d}:{second:02d},,claude-sonnet-4-5,claude-sonnet-4-5,"
            f'anthropic,,"{metadata}",False,[],team-a,,success\n'
        )
    return "".join(lines).encode()


def test_litellm_reads_cache_creation_tokens_on_both_paths() -> None:
    for rows, columnar in ((600, True), (2, False)):
        chunks = list(read_requests(io.BytesIO(_litellm(rows))))
        assert all((chunk.frame is not None) is columnar for chunk in chunks)
        if columnar:
            total = sum(int(chunk.frame[CACHE_CREATION_INPUT_TOKENS].sum()) for chunk in chunks)
        else:
            total = sum(r.cache_creation_input_tokens for c in chunks for r in c.requests)
        assert total == 300 * rows, columnar


def test_generic_reads_the_cache_creation_column() -> None:
    data = (
        b"started_at,ended_at,model,input_tokens,output_tokens,cached_input_tokens,"
        b"cache_creation_input_tokens\n"
        b"2026-11-20T10:00:00Z,2026-11-20T10:00:01Z,claude-sonnet-4-5,1000,10,100,250\n"
    )
    [request], rejects = read_all(generic.read, data)
    assert rejects == []
    assert request.cache_creation_input_tokens == 250


def test_live_records_stored_before_cache_creation_still_decode() -> None:
    # A version 1 record: every field of today's record but the last (cache creation).
    row = [
        1_795_165_200_000_000_000,  # 2026-11-20T09:00:00Z in ns
        1_795_165_201_000_000_000,
        None,
        "assistant",
        "",
        "",
        "svc",
        "anthropic",
        "claude-sonnet-4-5",
        "chat",
        None,
        False,
        1000,
        10,
        100,
        None,
        "success",
        "span-1",
        "",
        1,
    ]
    assert len(row) == len(FIELDS) - 1
    blob = zlib.compress(json.dumps({"v": 1, "rows": [row]}).encode())
    assert decode_rows(blob)[0][-1] == 0
    [request] = decode_requests(blob)
    assert (request.input_tokens, request.cache_creation_input_tokens) == (1000, 0)
    assert request.started_at == datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
