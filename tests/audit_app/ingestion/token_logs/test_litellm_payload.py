"""LiteLLM StandardLoggingPayload records (what its `generic_api` callback posts) as canonical
requests, and the three log_format bodies.

The real payload is tests/fixtures/real/token_logs/ (a LiteLLM proxy's payload for a call to
its fake OpenAI endpoint, from LiteLLM's own tests; provenance in SOURCES.md there), loaded by
tests/support/litellm_payloads.py. Every expected value is read off that file by hand; the
other records are that payload with the fields named in each test changed.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.reading import ImportFileError, RowReject
from audit_app.ingestion.token_logs import litellm_payload
from audit_app.ingestion.token_logs.litellm_payload import (
    PayloadBodyError,
    read_payloads,
    request_from_payload,
    split_body,
)
from audit_app.ingestion.uploads import upload_create
from tests.audit_app.ingestion.token_logs.reading import read_all
from tests.support.litellm_payloads import (
    KEY_HASH,
    REAL_FILE,
    REAL_ID,
    REAL_REQUEST,
    payload,
    real_payload,
)


def body_of(*records: object) -> bytes:
    return json.dumps(list(records)).encode()


# --- The real payload, field by field --------------------------------------------------------


def test_the_real_payload_maps_field_by_field() -> None:
    request = request_from_payload(real_payload(), 1)
    # startTime 1739235379.683053 = 2025-02-11 00:56:19.683053 UTC; endTime .84533
    assert request.started_at == datetime(2025, 2, 11, 0, 56, 19, 683053, tzinfo=UTC)
    assert request.ended_at == datetime(2025, 2, 11, 0, 56, 19, 845330, tzinfo=UTC)
    # `stream` is true but completionStartTime == endTime: no first token was measured.
    assert (request.streaming, request.first_token_at) == (True, None)
    # No tag, no workload key, no key alias: the hashed key is the caller and the workload.
    assert (request.caller, request.workload, request.team) == (KEY_HASH, KEY_HASH, "")
    assert request.end_user == "default_user_id"  # end_user "" and no user_api_key_end_user_id
    assert (request.provider, request.model, request.operation) == (
        "openai",
        "my-fake-model",
        "chat",  # call_type acompletion
    )
    assert (request.input_tokens, request.output_tokens, request.cached_input_tokens) == (9, 12, 0)
    assert request.cost_usd == Decimal("0.000037500000000000003")  # 3.7500000000000003e-05
    assert (request.status, request.batch_api, request.pool) == ("success", False, "")
    assert request.request_id == REAL_ID
    assert request.latency_ms == pytest.approx(162.277)  # 845330 - 683053 µs
    assert request == REAL_REQUEST


def test_the_real_file_is_one_single_body_and_one_ndjson_line() -> None:
    data = REAL_FILE.read_bytes()
    assert split_body(data)[0] == "single"
    assert split_body(data + data)[0] == "ndjson"
    batch = read_payloads(data + data)
    assert [r.request_id for r in batch.requests] == [REAL_ID, REAL_ID]
    assert [r.line for r in batch.requests] == [1, 2]


# --- Identity, cache and stream fields -------------------------------------------------------


def team_payload() -> dict[str, Any]:
    """A streamed Anthropic call through a team key, with tags and the caller's metadata."""
    record = payload(
        id="chatcmpl-team-1",
        call_type="litellm.completion",
        custom_llm_provider="anthropic",
        model="claude-sonnet-4-5",
        model_group="claude",
        startTime=1767225600.25,  # 2026-01-01 00:00:00.250 UTC
        completionStartTime=1767225600.75,
        endTime=1767225602.5,
        prompt_tokens=1500,
        completion_tokens=200,
        total_tokens=1700,
        response_cost=0.00795,
        request_tags=["env:prod", "workload:support-bot"],
        end_user="customer-42",
    )
    record["metadata"].update(
        user_api_key_alias="support-key",
        user_api_key_team_id="team-uuid-7",
        user_api_key_team_alias="support",
        requester_metadata={"workload": "ignored-by-the-tag", "pool": "h100-a"},
        usage_object={
            "prompt_tokens": 1500,
            "prompt_tokens_details": {"cached_tokens": 1024},
            "cache_read_input_tokens": 1024,
        },
    )
    return record


def test_team_tags_cache_and_first_token_are_read() -> None:
    request = request_from_payload(team_payload(), 3)
    assert request.workload == "support-bot"  # the workload: tag beats metadata and the alias
    assert request.caller == "support-key"
    assert request.team == "team-uuid-7"  # the team id before its alias, as in spend logs
    assert request.end_user == "customer-42"
    assert request.pool == "h100-a"  # from the caller's requester_metadata
    assert request.cached_input_tokens == 1024
    assert request.operation == "chat"  # litellm.completion
    assert request.provider == "anthropic"
    assert request.model == "claude-sonnet-4-5"
    assert request.first_token_at == datetime(2026, 1, 1, 0, 0, 0, 750000, tzinfo=UTC)
    assert request.ttft_ms == 500.0
    assert request.tpot_ms == pytest.approx((2250.0 - 500.0) / 199)
    assert request.cost_usd == Decimal("0.00795")
    assert request.line == 3


def test_workload_comes_from_requester_metadata_then_spend_logs_metadata() -> None:
    record = team_payload()
    record["request_tags"] = []
    assert request_from_payload(record, 1).workload == "ignored-by-the-tag"
    record["metadata"]["spend_logs_metadata"] = {"workload": "nightly-eval"}
    assert request_from_payload(record, 1).workload == "nightly-eval"
    record["metadata"]["spend_logs_metadata"] = None
    record["metadata"]["requester_metadata"] = {}
    assert request_from_payload(record, 1).workload == "support-key"  # the key alias
    record["metadata"]["user_api_key_alias"] = None
    record["metadata"]["user_api_key_hash"] = None
    assert request_from_payload(record, 1).workload == "team-uuid-7/claude-sonnet-4-5"


@pytest.mark.parametrize(
    ("where", "usage", "cached"),
    [
        ("metadata", {"cache_read_input_tokens": 300}, 300),
        ("hidden_params", {"prompt_tokens_details": {"cached_tokens": 250}}, 250),
        ("response", {"prompt_tokens_details": {"cached_tokens": 200}}, 200),
    ],
)
def test_cached_tokens_are_found_in_each_usage_litellm_logs(
    where: str, usage: dict[str, Any], cached: int
) -> None:
    record = payload(prompt_tokens=400)
    if where == "response":
        record["response"]["usage"] = usage
    else:
        record[where]["usage_object"] = usage
    assert request_from_payload(record, 1).cached_input_tokens == cached


def test_the_model_group_names_the_model_when_model_is_empty() -> None:
    assert request_from_payload(payload(model=""), 1).model == "fake-openai-endpoint"


def test_stream_false_has_no_first_token_and_stream_missing_is_told_by_the_times() -> None:
    start, first, end = 1767225600.0, 1767225600.5, 1767225601.0  # 2026-01-01 00:00:00 UTC on
    times = {"startTime": start, "completionStartTime": first, "endTime": end}
    not_streamed = request_from_payload(payload(stream=False, **times), 1)
    assert (not_streamed.streaming, not_streamed.first_token_at) == (False, None)
    unknown = request_from_payload(payload(stream=None, **times), 1)
    assert unknown.streaming is True
    assert unknown.first_token_at == datetime(2026, 1, 1, 0, 0, 0, 500000, tzinfo=UTC)
    same = request_from_payload(payload(stream=None, **{**times, "completionStartTime": end}), 1)
    assert (same.streaming, same.first_token_at) == (False, None)


def test_embeddings_and_batches_get_their_operation_and_flag() -> None:
    embedding = request_from_payload(payload(call_type="aembedding", completion_tokens=None), 1)
    assert (embedding.operation, embedding.output_tokens) == ("embedding", 0)
    record = payload()
    record["hidden_params"]["batch_models"] = ["gpt-4o", "gpt-4o-mini"]
    assert request_from_payload(record, 1).batch_api is True
    assert request_from_payload(payload(call_type="acreate_batch"), 1).batch_api is True
    assert request_from_payload(payload(call_type="aresponses"), 1).operation == "aresponses"


# --- Cost ------------------------------------------------------------------------------------


def test_cost_is_none_when_litellm_could_not_price_the_call() -> None:
    unpriced = payload(response_cost=0.0)
    assert request_from_payload(unpriced, 1).cost_usd is None  # 21 tokens, cost 0
    debug = payload(response_cost_failure_debug_info={"error_str": "model not mapped"})
    assert request_from_payload(debug, 1).cost_usd is None
    cached = payload(response_cost=0.0, cache_hit=True)
    assert request_from_payload(cached, 1).cost_usd == Decimal("0.0")  # served from the cache


def test_a_failure_with_a_model_is_an_error_row_with_what_it_cost() -> None:
    failed = payload(
        status="failure", prompt_tokens=0, completion_tokens=0, response_cost=0.0, stream=False
    )
    request = request_from_payload(failed, 1)
    assert (request.status, request.input_tokens, request.cost_usd) == ("error", 0, Decimal("0.0"))


# --- Rejects and ignored records -------------------------------------------------------------


def test_each_bad_record_is_rejected_naming_its_field() -> None:
    records = [
        payload(id=""),
        payload(id="r-2", prompt_tokens="nine"),
        payload(id="r-3", endTime=1739235379.0),
        payload(id="r-4", model="", model_group=None),
        payload(id="r-5", metadata="not json"),
        42,
        payload(id="r-7"),
    ]
    batch = read_payloads(body_of(*records))
    assert [r.request_id for r in batch.requests] == ["r-7"]
    assert [(r.line, r.field) for r in batch.rejects] == [
        (1, "id"),
        (2, "prompt_tokens"),
        (3, "endTime"),
        (4, "model"),
        (5, "metadata"),
        (6, "(record)"),
    ]
    assert batch.rejects[1] == RowReject(
        line=2,
        field="prompt_tokens",
        value="nine",
        reason="`prompt_tokens` is not a number: 'nine'.",
    )
    assert batch.rejects[5].reason == "the record is not a JSON object (a StandardLoggingPayload)."
    assert (batch.rows_read, batch.ignored) == (7, 0)


def test_a_failure_that_named_no_model_is_ignored() -> None:
    refused = payload(id="r-1", status="failure", model="", model_group="", prompt_tokens=0)
    batch = read_payloads(body_of(refused, payload(id="r-2")))
    assert (len(batch.requests), batch.rejects, batch.ignored, batch.rows_read) == (1, (), 1, 2)


# --- Bodies: json_array, ndjson, single ------------------------------------------------------


def test_each_log_format_is_told_from_the_body() -> None:
    one, two = payload(id="a"), payload(id="b")
    array = json.dumps([one, two]).encode()
    ndjson = (json.dumps(one) + "\n" + json.dumps(two)).encode()  # LiteLLM joins with "\n"
    single = json.dumps(one, indent=2).encode()
    assert read_payloads(array).log_format == "json_array"
    assert read_payloads(ndjson).log_format == "ndjson"
    assert read_payloads(single).log_format == "single"
    assert [r.request_id for r in read_payloads(array).requests] == ["a", "b"]
    assert [r.request_id for r in read_payloads(ndjson).requests] == ["a", "b"]
    assert [r.request_id for r in read_payloads(single).requests] == ["a"]
    crlf = b"\xef\xbb\xbf\r\n" + ndjson.replace(b"\n", b"\r\n\r\n") + b"\r\n"
    assert [(r.request_id, r.line) for r in read_payloads(crlf).requests] == [("a", 2), ("b", 4)]
    assert read_payloads(b"[]").rows_read == 0


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        (b"", 1, "The body is empty"),
        (b"  \n ", 1, "The body is empty"),
        (b'[{"id": "a"},\n {"id": }]', 2, "The body is not valid JSON at line 2 column 9"),
        (b'{"id": "a"}\n{"id": "b"}\n{"id": "c"', 3, "Line 3 of the NDJSON body is not valid"),
        (b'{"id": "a"}\nnot json\n', 2, "Line 2 of the NDJSON body is not valid JSON"),
        (b"\n\n42", 3, "The body is JSON int '42'"),
        (b'"text"', 1, "The body is JSON str 'text'"),
        (b'{"id": "caf\xe9"}', 1, "The body is not UTF-8 text: line 1 has a bad byte (at byte 11)"),
        (b"[" * 100_000, 1, "nested too deeply"),
    ],
)
def test_a_body_that_is_not_json_names_its_line(body: bytes, line: int, message: str) -> None:
    with pytest.raises(PayloadBodyError) as raised:
        read_payloads(body)
    assert raised.value.line == line
    assert message in str(raised.value)


# --- A file of payloads uploads as the litellm-callback format -------------------------------


def payload_file() -> bytes:
    """The real payload and the team call, one per line, as a logging integration saves them."""
    return REAL_FILE.read_bytes() + (json.dumps(team_payload()) + "\n").encode()


def test_a_file_of_payloads_reads_as_the_same_requests() -> None:
    requests, rejects = read_all(litellm_payload.read, payload_file())
    team = request_from_payload(team_payload(), 2)
    assert (requests, rejects) == ([REAL_REQUEST, team], [])
    array = json.dumps([real_payload(), payload(id="", model="")]).encode()
    requests, rejects = read_all(litellm_payload.read, array)
    assert requests == [REAL_REQUEST]
    assert [(r.line, r.field) for r in rejects] == [(2, "id")]


def test_a_spend_log_is_not_read_as_payloads() -> None:
    with pytest.raises(ImportFileError, match="not a file of LiteLLM callback payloads"):
        read_all(litellm_payload.read, json.dumps([{"request_id": "r1", "id": "x"}]).encode())


@pytest.mark.django_db
def test_an_uploaded_payload_file_is_detected_and_lands(finops_user: Any) -> None:
    upload = upload_create(
        source=io.BytesIO(payload_file()),
        original_name="litellm-callback.jsonl",
        kind="auto",
        user=finops_user,
        enqueue=False,
    )
    upload = upload_ingest(upload_id=upload.pk)
    assert (upload.status, upload.format, upload.rows_read, upload.rows_accepted) == (
        "succeeded",
        "litellm-callback",
        2,
        2,
    )
    assert (upload.input_tokens, upload.output_tokens, upload.cached_input_tokens) == (
        9 + 1500,
        12 + 200,
        1024,
    )
    # 0.000037500000000000003 + 0.00795, kept to 9 decimal places
    assert upload.logged_cost_usd == Decimal("0.007987500")
