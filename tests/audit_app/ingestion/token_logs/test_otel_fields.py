"""The OTel field table's rules one by one, on hand-written spans: LiteLLM's metadata held as
text (read safely, bounded), the deployment model and its provider, LiteLLM's cost, streaming
spellings, the first-chunk event, and the same rows from the columnar reader.

T0 = 1714564800 s = 2024-05-01T12:00:00Z; spans last 2 s.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from audit_app.ingestion.reading import RowReject, RowRejected
from audit_app.ingestion.token_logs import otel
from audit_app.ingestion.token_logs.base import CanonicalRequest
from audit_app.ingestion.token_logs.otel_columnar import read_jsonl_columnar
from audit_app.ingestion.token_logs.otel_fields import (
    MAX_OBJECT_TEXT_CHARS,
    IgnoredSpans,
    decoded_object,
    span_outcome,
)
from tests.support.chunks import collect_chunks

T0_NANOS = 1_714_564_800 * 10**9
SECOND = 10**9
REQUESTER = "metadata.requester_metadata"
BASE = {
    "gen_ai.operation.name": "acompletion",
    "gen_ai.system": "anthropic",
    "gen_ai.request.model": "claude-3-5-sonnet-20241022",
    "gen_ai.response.model": "claude-sonnet",
    "gen_ai.usage.input_tokens": 100,
    "gen_ai.usage.output_tokens": 50,
}


def _span(
    attributes: Mapping[str, object],
    *,
    resource: dict[str, object] | None = None,
    events: dict[str, object] | None = None,
) -> CanonicalRequest | RowReject:
    return span_outcome(
        attributes={**BASE, **attributes},
        resource_attributes=resource or {"service.name": "litellm"},
        events=events,
        start_time_unix_nano=T0_NANOS,
        end_time_unix_nano=T0_NANOS + 2 * SECOND,
        status_code=0,
        trace_id="ab" * 16,
        span_id="cd" * 8,
        line=1,
    )


def _request(attributes: Mapping[str, object], **kwargs: Any) -> CanonicalRequest:
    outcome = _span(attributes, **kwargs)
    assert isinstance(outcome, CanonicalRequest), outcome
    return outcome


def _reject(attributes: Mapping[str, object], **kwargs: Any) -> RowReject:
    outcome = _span(attributes, **kwargs)
    assert isinstance(outcome, RowReject), outcome
    return outcome


# --- objects held as text ------------------------------------------------------------------------


def test_an_object_is_read_from_json_python_literal_text_or_a_map() -> None:
    assert decoded_object('{"workload": "a"}', field="f") == {"workload": "a"}
    assert decoded_object("{'workload': 'a', 'x': None, 'y': (1, True)}", field="f") == {
        "workload": "a",
        "x": None,
        "y": (1, True),
    }
    assert decoded_object({"workload": "a"}, field="f") == {"workload": "a"}
    assert decoded_object("", field="f") == decoded_object(None, field="f") == {}
    assert decoded_object("None", field="f") == {}


@pytest.mark.parametrize(
    "hostile",
    [
        "__import__('os').system('touch {marker}')",
        "{'a': __import__('os').system('touch {marker}')}",
        "{'a': open('{marker}', 'w')}",
        "(lambda: 1)()",
        "{'a': 1} + {'b': 2}",
        "[" * 5000 + "]" * 5000,
        "{'a': " + "9" * 5000 + "}",
        "{'a': 'b'",  # cut short
    ],
)
def test_hostile_or_broken_text_is_refused_and_never_run(hostile: str, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = hostile.replace("{marker}", str(marker))
    with pytest.raises(RowRejected) as refused:
        decoded_object(text, field=REQUESTER)
    assert refused.value.field == REQUESTER
    assert refused.value.reason.startswith(f"`{REQUESTER}` is neither JSON nor a Python literal")
    assert not marker.exists()


def test_text_that_is_not_an_object_and_text_too_long_are_refused() -> None:
    with pytest.raises(RowRejected) as not_an_object:
        decoded_object("['workload:a']", field=REQUESTER)
    assert not_an_object.value.reason == f"`{REQUESTER}` does not hold an object (it holds a list)."
    long_text = "{'a': '" + "x" * MAX_OBJECT_TEXT_CHARS + "'}"
    with pytest.raises(RowRejected) as refused:
        decoded_object(long_text, field=REQUESTER)
    assert refused.value.reason == (
        f"`{REQUESTER}` is {MAX_OBJECT_TEXT_CHARS + 9} characters long, more than the "
        f"{MAX_OBJECT_TEXT_CHARS} read."
    )
    # The reject keeps a shortened value, however long the text.
    reject = _reject({REQUESTER: long_text})
    assert reject.field == REQUESTER and len(reject.value) < 1000


def test_a_span_with_unreadable_metadata_is_rejected_naming_it() -> None:
    reject = _reject({REQUESTER: "{'workload': 'a', 'headers': {'host': 'x'"})
    assert (reject.field, reject.line) == (REQUESTER, 1)
    assert reject.value == "{'workload': 'a', 'headers': {'host': 'x'"


# --- attribution -------------------------------------------------------------------------------


def test_the_workload_rule_tags_then_metadata_then_caller() -> None:
    tagged = {REQUESTER: "{'tags': ['env:prod', 'workload:tagged'], 'workload': 'keyed'}"}
    assert _request(tagged).workload == "tagged"
    header = {"metadata.requester_custom_headers": "{'x-litellm-tags': 'team:ml, workload:hdr'}"}
    assert _request({**header, REQUESTER: "{'workload': 'keyed'}"}).workload == "hdr"
    # A `workload` span attribute, then the requester's metadata, then the proxy's spend
    # metadata, then the resource's.
    spend = {"metadata.spend_logs_metadata": "{'workload': 'spend'}"}
    assert _request({"workload": "attr", REQUESTER: "{'workload': 'keyed'}"}).workload == "attr"
    assert _request({REQUESTER: "{'workload': 'keyed'}", **spend}).workload == "keyed"
    assert _request(spend, resource={"workload": "res"}).workload == "spend"
    # Only text names a workload: a number falls through to the caller (the key's alias).
    numbered = {REQUESTER: "{'workload': 5}", "metadata.user_api_key_alias": "team-key"}
    assert _request(numbered).workload == "team-key"


def test_caller_team_end_user_and_pool_from_litellms_key_metadata() -> None:
    request = _request(
        {
            "metadata.user_api_key_alias": "",
            "metadata.user_api_key_hash": "88dc28d0",
            "metadata.user_api_key_team_id": "",
            "metadata.user_api_key_team_alias": "search-team",
            "metadata.user_api_key_end_user_id": "u-7",
            "metadata.spend_logs_metadata": "{'pool': 'h100-pool'}",
        }
    )
    assert (request.caller, request.team, request.end_user, request.pool) == (
        "88dc28d0",
        "search-team",
        "u-7",
        "h100-pool",
    )
    assert request.workload == "88dc28d0"


def test_a_workload_holding_a_nul_is_refused() -> None:
    reject = _reject({REQUESTER: "{'workload': 'a\\x00b'}"})
    assert reject.field == "workload"


# --- model, provider, cost, streaming, first token ---------------------------------------------


def test_the_deployment_model_wins_over_the_alias_and_names_the_provider() -> None:
    deployed = {"litellm.provider.model": "bedrock/anthropic.claude-3-5-sonnet"}
    request = _request(deployed)
    assert (request.model, request.provider) == ("bedrock/anthropic.claude-3-5-sonnet", "anthropic")
    without_system = {**deployed, "gen_ai.system": ""}
    assert _request(without_system).provider == "bedrock"  # the deployment's prefix
    assert _request({}).model == "claude-sonnet"  # no deployment: the response model


def test_litellms_cost_zero_with_tokens_is_unpriced_and_zero_without_is_zero() -> None:
    assert _request({"gen_ai.cost.total_cost": 0.0021}).cost_usd == Decimal("0.0021")
    assert _request({"gen_ai.cost.total_cost": 0.0}).cost_usd is None
    no_tokens = {
        "gen_ai.cost.total_cost": 0.0,
        "gen_ai.usage.input_tokens": 0,
        "gen_ai.usage.output_tokens": 0,
    }
    assert _request(no_tokens).cost_usd == Decimal("0")
    # OpenLIT's gen_ai.usage.cost keeps its 0, and is read first.
    assert _request({"gen_ai.usage.cost": 0.0}).cost_usd == Decimal("0")
    both = {"gen_ai.usage.cost": 0.5, "gen_ai.cost.total_cost": 0.7}
    assert _request(both).cost_usd == Decimal("0.5")
    reject = _reject({"gen_ai.cost.total_cost": "lots"})
    assert reject.field == "gen_ai.cost.total_cost"


def test_streaming_spellings() -> None:
    assert _request({"llm.is_streaming": "True"}).streaming is True
    assert _request({"llm.is_streaming": "False"}).streaming is False
    assert _request({"gen_ai.is_streaming": True}).streaming is True
    assert _request({"gen_ai.request.stream": False, "llm.is_streaming": "True"}).streaming is False
    assert _request({}).streaming is None
    reject = _reject({"llm.is_streaming": "maybe"})
    assert (reject.field, reject.value) == ("llm.is_streaming", "maybe")


def test_the_first_completion_chunk_event_gives_the_first_token() -> None:
    chunk = "gen_ai.content.completion.chunk"
    request = _request({}, events={chunk: T0_NANOS + 250_000_000})
    assert request.first_token_at == datetime(2024, 5, 1, 12, 0, 0, 250_000, tzinfo=UTC)
    assert request.ttft_ms == 250.0
    # The attribute in seconds comes first.
    timed = _request({"gen_ai.response.time_to_first_chunk": 0.1}, events={chunk: T0_NANOS + 1})
    assert timed.ttft_ms == 100.0
    reject = _reject({}, events={chunk: T0_NANOS + 3 * SECOND})
    assert reject.field == f"event:{chunk}"
    assert reject.reason.endswith("is after `endTimeUnixNano`.")


def test_ignored_spans_keep_a_count_and_the_first_names_in_order() -> None:
    ignored = IgnoredSpans()
    ignored.add(["router", "auth", "router", None, "b", "a", "c"])
    ignored.add_counted(10, ["0-first"])
    assert ignored.count == 17
    assert ignored.names == ["(no name)", "0-first", "a", "auth", "b"]


# --- the columnar reader on unusual spans ---------------------------------------------------------


def _value(value: object) -> dict[str, object]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, dict):
        return {
            "kvlistValue": {"values": [{"key": k, "value": _value(v)} for k, v in value.items()]}
        }
    return {"stringValue": value}


def _line(number: int, attributes: dict[str, object], events: list[tuple[str, int]]) -> str:
    start = T0_NANOS + number * 10 * SECOND
    span = {
        "traceId": f"{number:032x}",
        "spanId": f"{number:016x}",
        "name": "litellm_request",
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 2 * SECOND),
        "attributes": [{"key": k, "value": _value(v)} for k, v in {**BASE, **attributes}.items()],
        "events": [{"name": name, "timeUnixNano": str(start + at)} for name, at in events],
    }
    proxy = {"traceId": f"{number:032x}", "spanId": "ff" * 8, "name": "auth", "attributes": []}
    return json.dumps(
        {
            "resourceSpans": [
                {
                    "resource": {"attributes": [{"key": "service.name", "value": _value("p")}]},
                    "scopeSpans": [{"spans": [span, proxy]}],
                }
            ]
        }
    )


UNUSUAL: list[tuple[dict[str, object], list[tuple[str, int]]]] = [
    ({REQUESTER: "{'tags': ['workload:a'], 'headers': {'host': 'x'}}"}, []),
    ({REQUESTER: '{"workload": "json-named"}', "llm.is_streaming": "True"}, []),
    ({REQUESTER: "{'workload': 'cut"}, []),
    ({REQUESTER: "{'workload': 'a\\x00b'}"}, []),
    ({REQUESTER: "{'workload': 7}", "metadata.user_api_key_alias": "k"}, []),
    ({REQUESTER: {"workload": "from-a-map"}}, []),
    ({"metadata.requester_custom_headers": "{'x-litellm-tags': 'workload:h'}"}, []),
    ({"metadata.requester_custom_headers": "{'x-litellm-tags': {'a': 1}}"}, []),
    ({"llm.is_streaming": "maybe"}, []),
    ({"llm.is_streaming": 1}, []),
    ({"gen_ai.is_streaming": False}, []),
    ({"gen_ai.cost.total_cost": 0.0}, []),
    ({"gen_ai.cost.total_cost": 0.003, "litellm.provider.model": "azure/gpt-4o"}, []),
    ({"gen_ai.cost.total_cost": "0.1"}, []),
    ({"litellm.provider.model": "vertex_ai/gemini-2.0", "gen_ai.system": ""}, []),
    ({}, [("gen_ai.content.completion.chunk", 300_000_000), ("other", 1)]),
    ({}, [("gen_ai.content.completion.chunk", 5 * SECOND)]),
    ({}, [("gen_ai.content.completion.chunk", 0), ("gen_ai.content.completion.chunk", 9)]),
    ({"metadata.spend_logs_metadata": "{'pool': 'p', 'workload': 'w'}"}, []),
    ({"metadata.spend_logs_metadata": "[1, 2]"}, []),
]


@pytest.mark.parametrize("block_bytes", [None, 2048])
def test_the_columnar_reader_agrees_on_unusual_spans(block_bytes: int | None) -> None:
    data = "".join(
        _line(number, attributes, events) + "\n"
        for number, (attributes, events) in enumerate(UNUSUAL * 3)
    ).encode()
    columnar = list(read_jsonl_columnar(io.BytesIO(data), chunk_rows=7, block_bytes=block_bytes))
    frame, rejects, _ = collect_chunks(iter(columnar), categories_as_text=True)
    row_chunks = list(otel.read_rows(io.BytesIO(data), chunk_rows=1000))
    expected, expected_rejects, _ = collect_chunks(iter(row_chunks), categories_as_text=True)
    pd.testing.assert_frame_equal(frame, expected)
    assert sorted(rejects, key=lambda r: r.line) == expected_rejects
    # Rejected, by hand: the cut text (2), the NUL (3), header tags that are a map (7),
    # "maybe" (8), the chunk event after the span's end (16), the list (19); the integer
    # streaming flag, the cost as text and the map are read (by the row path).
    rejected = [2, 3, 7, 8, 16, 19]
    assert [r.line for r in expected_rejects] == [
        copy * len(UNUSUAL) + index + 1 for copy in range(3) for index in rejected
    ]
    assert [n for c in row_chunks for n in c.notes] == [
        f"Ignored {3 * len(UNUSUAL)} spans that carry no gen_ai.* attribute (not calls to a "
        "model), such as `auth`."
    ]
