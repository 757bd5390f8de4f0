"""OTLP/HTTP trace exports decoded and answered (no HTTP, no database): the hand-written export
of `otlp_samples` as protobuf, as OTLP/JSON (also snake_case, enum names, upper-case ids),
and malformed."""

from __future__ import annotations

import json

import pytest
from google.protobuf import json_format
from google.rpc.error_details_pb2 import BadRequest
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from audit_app.ingestion.live.otlp_wire import (
    JSON,
    PROTOBUF,
    MalformedExport,
    export_response,
    media_type,
    parse_export,
    partial_success_message,
    status_body,
)
from audit_app.ingestion.reading import RowReject
from tests.audit_app.ingestion.live.otlp_samples import (
    EXPECTED_MESSAGE,
    EXPECTED_REJECTS,
    EXPECTED_REQUESTS,
    T0,
    T0_NANOS,
    json_export,
    protobuf_export,
)


def test_protobuf_export_maps_gen_ai_spans_and_counts_the_rest() -> None:
    parsed = parse_export(protobuf_export(), content_type=PROTOBUF)
    assert parsed.requests == EXPECTED_REQUESTS
    assert parsed.rejects == EXPECTED_REJECTS
    assert (parsed.rows_read, parsed.ignored) == (4, 2)


def test_json_export_gives_exactly_what_protobuf_gives() -> None:
    parsed = parse_export(json.dumps(json_export()).encode(), content_type=JSON)
    assert parsed.requests == EXPECTED_REQUESTS
    assert parsed.rejects == EXPECTED_REJECTS
    assert (parsed.rows_read, parsed.ignored) == (4, 2)


def test_json_accepts_proto_field_names_enum_names_and_upper_case_ids() -> None:
    document = {
        "resource_spans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"string_value": "bot"}}]
                },
                "scope_spans": [
                    {
                        "spans": [
                            {
                                "trace_id": "5B8EFFF798038103D269B633813FC60C",
                                "span_id": "EEE19B7EC3C1B174",
                                "start_time_unix_nano": T0_NANOS,
                                "end_time_unix_nano": T0_NANOS + 2 * 10**9,
                                "status": {"code": "STATUS_CODE_ERROR"},
                                "attributes": [
                                    {
                                        "key": "gen_ai.request.model",
                                        "value": {"string_value": "gpt-4o-mini"},
                                    },
                                    {"key": "gen_ai.usage.input_tokens", "value": {"int_value": 9}},
                                ],
                            }
                        ]
                    }
                ],
            }
        ]
    }
    parsed = parse_export(json.dumps(document).encode(), content_type=JSON)
    [request] = parsed.requests
    assert request.request_id == "5b8efff798038103d269b633813fc60c/eee19b7ec3c1b174"
    assert (request.status, request.caller, request.model) == ("error", "bot", "gpt-4o-mini")
    # An error without usage: output tokens default to 0.
    assert (request.input_tokens, request.output_tokens, request.started_at) == (9, 0, T0)


@pytest.mark.parametrize(
    ("payload", "content_type"),
    [(b"", PROTOBUF), (b"{}", JSON), (b'{"resourceSpans": []}', JSON), (b'{"other": 1}', JSON)],
)
def test_an_empty_export_is_nothing(payload: bytes, content_type: str) -> None:
    parsed = parse_export(payload, content_type=content_type)
    assert (parsed.requests, parsed.rejects, parsed.ignored) == ([], [], 0)


@pytest.mark.parametrize(
    ("payload", "content_type", "message", "field"),
    [
        (
            b'{"resourceSpans": [',
            JSON,
            "The body is not valid JSON: Expecting value at line 1 column 20.",
            "body",
        ),
        (b'{"resourceSpans": "x"\xff}', JSON, "The body is not UTF-8 text (byte 21).", "body"),
        (
            b'{"resourceSpans": {}}',
            JSON,
            "Not an OTLP/JSON ExportTraceServiceRequest: `resourceSpans` is not a list of objects.",
            "resourceSpans",
        ),
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [1, 2]}]}]}',
            JSON,
            "Not an OTLP/JSON ExportTraceServiceRequest: `spans` is not a list of objects.",
            "spans",
        ),
        (
            b"[1, 2]",
            JSON,
            "Not an OTLP/JSON ExportTraceServiceRequest: the document has no `resourceSpans` list.",
            "resourceSpans",
        ),
        (b"[" * 100_000, JSON, "The body's JSON is nested too deeply.", "body"),
    ],
)
def test_a_malformed_body_is_refused_naming_what_failed(
    payload: bytes, content_type: str, message: str, field: str
) -> None:
    with pytest.raises(MalformedExport) as caught:
        parse_export(payload, content_type=content_type)
    assert (str(caught.value), caught.value.field) == (message, field)


def test_bytes_that_are_not_protobuf_are_refused() -> None:
    with pytest.raises(MalformedExport) as caught:
        parse_export(b"\xff\xff\xff", content_type=PROTOBUF)
    # The parser's own words follow (protobuf's wording varies between its versions).
    assert str(caught.value).startswith(
        "The body is not a protobuf ExportTraceServiceRequest (Error parsing message"
    )
    assert caught.value.field == "body"


# --- content types ------------------------------------------------------------------------------


def test_media_types() -> None:
    assert media_type("application/x-protobuf") == PROTOBUF
    assert media_type("Application/JSON; charset=utf-8") == JSON
    assert media_type("text/plain") is None
    assert media_type("") is None


# --- answers ------------------------------------------------------------------------------------


def test_the_answer_counts_refused_spans_and_says_which_and_what_was_ignored() -> None:
    answer = ExportTraceServiceResponse.FromString(
        export_response(
            rejects=EXPECTED_REJECTS, ignored=2, ignored_names=["span"], content_type=PROTOBUF
        )
    )
    assert answer.partial_success.rejected_spans == 2
    assert answer.partial_success.error_message == EXPECTED_MESSAGE
    as_json = json.loads(
        export_response(
            rejects=EXPECTED_REJECTS, ignored=2, ignored_names=["span"], content_type=JSON
        )
    )
    assert as_json == {"partialSuccess": {"rejectedSpans": "2", "errorMessage": EXPECTED_MESSAGE}}


def test_a_full_success_leaves_partial_success_unset() -> None:
    assert export_response(rejects=[], ignored=0, content_type=PROTOBUF) == b""
    assert export_response(rejects=[], ignored=0, content_type=JSON) == b"{}"
    answer = ExportTraceServiceResponse.FromString(
        export_response(rejects=[], ignored=0, content_type=PROTOBUF)
    )
    assert not answer.HasField("partial_success")


def test_only_ignored_spans_is_a_warning_with_zero_rejected() -> None:
    answer = ExportTraceServiceResponse.FromString(
        export_response(rejects=[], ignored=1, content_type=PROTOBUF)
    )
    assert answer.partial_success.rejected_spans == 0
    assert answer.partial_success.error_message == (
        "Ignored 1 span that carries no gen_ai.* attribute (not calls to a model)."
    )


def test_the_message_spells_out_the_first_five_rejects() -> None:
    rejects = [RowReject(line=n, field="f", value=str(n), reason="Bad.") for n in range(1, 8)]
    assert partial_success_message(rejects=rejects, ignored=0) == (
        "Refused 7 gen_ai spans. Span 1, f='1': Bad. Span 2, f='2': Bad. Span 3, f='3': Bad. "
        "Span 4, f='4': Bad. Span 5, f='5': Bad. And 2 more."
    )


def test_a_status_names_the_field_of_a_bad_request() -> None:
    body = status_body(status=400, message="the body is bad.", content_type=PROTOBUF, field="body")
    status = Status.FromString(body)
    assert (status.code, status.message) == (3, "the body is bad.")
    detail = BadRequest()
    assert status.details[0].Unpack(detail)
    assert [(v.field, v.description) for v in detail.field_violations] == [
        ("body", "the body is bad.")
    ]
    as_json = json.loads(status_body(status=429, message="later.", content_type=JSON))
    assert as_json == {"code": 8, "message": "later."}
    # An unknown content type is answered in JSON.
    assert json.loads(status_body(status=415, message="no.", content_type=None)) == {
        "code": 3,
        "message": "no.",
    }
    assert json_format.Parse(
        status_body(status=400, message="m.", content_type=JSON, field="f"), Status()
    ) == Status.FromString(status_body(status=400, message="m.", content_type=PROTOBUF, field="f"))
