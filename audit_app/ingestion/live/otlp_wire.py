"""OTLP/HTTP trace exports on the wire: what a request body holds and what the answer says, per
the OTLP specification (https://opentelemetry.io/docs/specs/otlp/#otlphttp).

- A request is an `ExportTraceServiceRequest`, binary protobuf (`application/x-protobuf`) or
  OTLP/JSON (`application/json`: lowerCamelCase field names, or the proto's snake_case; ids as
  hex text; enums as numbers or names; 64-bit integers as numbers or text). Its content coding
  is undone before (`audit_app.api.push_body`, within the size limit).
- Every span with a `gen_ai.*` attribute maps through the OTel importer's `span_outcome` (the
  same mapping as an uploaded trace file): a canonical request, or a reject naming the span's
  1-based position in the request, the attribute and its value. Other spans are ignored.
- The answer is an `ExportTraceServiceResponse` in the request's encoding; `partial_success`
  counts the refused spans and says which (the first few: position, attribute, value, why) and
  how many spans were ignored (with a few of their names). It is left unset when every span was
  taken.
- A failure is a `google.rpc.Status` in the request's encoding (JSON when the content type is
  not one of the two); a 400 carries a `google.rpc.BadRequest` naming what failed.

Pure: no Django.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from google.protobuf import json_format
from google.protobuf.any_pb2 import Any as AnyMessage
from google.protobuf.message import DecodeError
from google.rpc.code_pb2 import Code
from google.rpc.error_details_pb2 import BadRequest
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from audit_app.ingestion.reading import RowReject, RowRejected, quoted
from audit_app.ingestion.token_logs.base import CanonicalRequest, RowOutcome
from audit_app.ingestion.token_logs.otel_fields import (
    GEN_AI_PREFIX,
    RESOURCE_ATTRIBUTES,
    SPAN_ATTRIBUTES,
    SPAN_EVENTS,
    IgnoredSpans,
    ignored_sentence,
    is_gen_ai,
    iter_document_spans,
    json_span_outcome,
    span_outcome,
)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
CONTENT_TYPES = (PROTOBUF, JSON)
# How many rejects the partial-success message spells out (all of them are counted).
MESSAGE_REJECTS = 5
# The gRPC code a Status carries for each HTTP status (the spec lets clients ignore it; it
# helps someone reading a captured answer).
GRPC_CODE_BY_HTTP_STATUS = {
    400: Code.INVALID_ARGUMENT,
    401: Code.UNAUTHENTICATED,
    403: Code.PERMISSION_DENIED,
    404: Code.NOT_FOUND,
    405: Code.UNIMPLEMENTED,
    411: Code.INVALID_ARGUMENT,
    413: Code.RESOURCE_EXHAUSTED,
    415: Code.INVALID_ARGUMENT,
    429: Code.RESOURCE_EXHAUSTED,
    503: Code.UNAVAILABLE,
}


class MalformedExport(Exception):
    """The body cannot be decoded (protobuf or JSON) or is not a trace export (400); nothing of
    it is kept. `field` names what failed."""

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, kw_only=True)
class ParsedExport:
    """What one export request held: gen_ai spans taken and refused, and other spans."""

    requests: list[CanonicalRequest]
    rejects: list[RowReject]
    ignored: int
    # The first few names of the ignored spans, sorted (`otel_fields.IgnoredSpans`).
    ignored_names: tuple[str, ...] = ()

    @property
    def rows_read(self) -> int:
        """The gen_ai spans seen, taken or refused."""
        return len(self.requests) + len(self.rejects)


# ---------------------------------------------------------------------------------------------
# The request
# ---------------------------------------------------------------------------------------------


def media_type(content_type: str) -> str | None:
    """`PROTOBUF` or `JSON` for a Content-Type header (parameters and case aside), else None."""
    name = content_type.split(";", 1)[0].strip().lower()
    return name if name in CONTENT_TYPES else None


def parse_export(payload: bytes, *, content_type: str) -> ParsedExport:
    """Every span of the request, mapped; raises MalformedExport when it cannot be read."""
    if content_type == PROTOBUF:
        return _parse_protobuf(payload)
    return _parse_json(payload)


def _parse_protobuf(payload: bytes) -> ParsedExport:
    try:
        request = ExportTraceServiceRequest.FromString(payload)
    except DecodeError as error:
        raise MalformedExport(
            f"The body is not a protobuf ExportTraceServiceRequest ({error}).", field="body"
        ) from None
    requests: list[CanonicalRequest] = []
    rejects: list[RowReject] = []
    ignored = IgnoredSpans()
    position = 0
    for resource_spans in request.resource_spans:
        resource_attributes = _attributes(resource_spans.resource.attributes, RESOURCE_ATTRIBUTES)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                position += 1
                attributes = _gen_ai_attributes(span.attributes)
                if attributes is None:
                    ignored.add((span.name,))
                    continue
                outcome = span_outcome(
                    attributes=attributes,
                    resource_attributes=resource_attributes,
                    events=_first_events(span.events),
                    start_time_unix_nano=span.start_time_unix_nano,
                    end_time_unix_nano=span.end_time_unix_nano,
                    status_code=span.status.code,
                    trace_id=span.trace_id.hex(),
                    span_id=span.span_id.hex(),
                    line=position,
                )
                _keep(outcome, requests, rejects)
    return _parsed(requests, rejects, ignored)


def _parsed(
    requests: list[CanonicalRequest], rejects: list[RowReject], ignored: IgnoredSpans
) -> ParsedExport:
    return ParsedExport(
        requests=requests,
        rejects=rejects,
        ignored=ignored.count,
        ignored_names=tuple(ignored.names),
    )


def _keep(outcome: RowOutcome, requests: list[CanonicalRequest], rejects: list[RowReject]) -> None:
    if isinstance(outcome, CanonicalRequest):
        requests.append(outcome)
    else:
        rejects.append(outcome)


def _gen_ai_attributes(key_values: Sequence[KeyValue]) -> dict[str, object] | None:
    """The attributes the mapping reads, or None when none is `gen_ai.*` (not a model call).
    Values of other attributes (prompts and completions can be large) are never decoded."""
    wanted: dict[str, object] = {}
    gen_ai = False
    for key_value in key_values:
        key = key_value.key
        if key in SPAN_ATTRIBUTES:
            # `_any_value` inlined for the scalars: this loop runs for every attribute.
            value = key_value.value
            kind = value.WhichOneof("value")
            wanted[key] = getattr(value, kind) if kind in _SCALARS else _any_value(value)
        if not gen_ai and key.startswith(GEN_AI_PREFIX):
            gen_ai = True
    return wanted if gen_ai else None


def _first_events(events: Sequence[Span.Event]) -> dict[str, object]:
    """The time of the first event of each name in `SPAN_EVENTS`."""
    first: dict[str, object] = {}
    for event in events:
        if event.name in SPAN_EVENTS and event.name not in first:
            first[event.name] = event.time_unix_nano
    return first


_SCALARS = frozenset({"string_value", "int_value", "double_value", "bool_value", "bytes_value"})


def _attributes(key_values: Sequence[KeyValue], names: frozenset[str]) -> dict[str, object]:
    return {kv.key: _any_value(kv.value) for kv in key_values if kv.key in names}


def _any_value(value: AnyValue) -> object:
    """An AnyValue as a plain value: text, int, float, bool, bytes, list or dict."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_any_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind)


def _parse_json(payload: bytes) -> ParsedExport:
    try:
        document = json.loads(payload, parse_float=Decimal)
    except UnicodeDecodeError as error:
        raise MalformedExport(
            f"The body is not UTF-8 text (byte {error.start}).", field="body"
        ) from None
    except json.JSONDecodeError as error:
        raise MalformedExport(
            f"The body is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}.",
            field="body",
        ) from None
    except RecursionError:
        raise MalformedExport("The body's JSON is nested too deeply.", field="body") from None
    requests: list[CanonicalRequest] = []
    rejects: list[RowReject] = []
    ignored = IgnoredSpans()
    if isinstance(document, dict) and not {"resourceSpans", "resource_spans"} & document.keys():
        # `{}` is an empty request in proto3's JSON (and unknown fields are to be ignored).
        return _parsed(requests, rejects, ignored)
    try:
        spans = list(iter_document_spans(document))
    except RowRejected as rejected:
        raise MalformedExport(
            f"Not an OTLP/JSON ExportTraceServiceRequest: {rejected.reason}", field=rejected.field
        ) from None
    for span in spans:
        if not is_gen_ai(span.attributes):
            ignored.add((span.span.get("name"),))
            continue
        _keep(json_span_outcome(span, line=span.ordinal), requests, rejects)
    return _parsed(requests, rejects, ignored)


# ---------------------------------------------------------------------------------------------
# The answer
# ---------------------------------------------------------------------------------------------


def partial_success_message(
    *, rejects: Sequence[RowReject], ignored: int, ignored_names: Sequence[str] = ()
) -> str:
    """What was refused (the first few spans: position, attribute, value and why) and how many
    spans were ignored (and the first few of their names); "" when every span was taken."""
    sentences = []
    if rejects:
        sentences.append(f"Refused {_spans(len(rejects), 'gen_ai span')}.")
        sentences += [
            f"Span {r.line}, {r.field}={quoted(r.value)}: {r.reason}"
            for r in rejects[:MESSAGE_REJECTS]
        ]
        if len(rejects) > MESSAGE_REJECTS:
            sentences.append(f"And {_spans(len(rejects) - MESSAGE_REJECTS, 'more')}.")
    if ignored:
        sentences.append(ignored_sentence(ignored, ignored_names))
    return " ".join(sentences)


def _spans(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 or noun == "more" else "s")


def export_response(
    *,
    rejects: Sequence[RowReject],
    ignored: int,
    content_type: str,
    ignored_names: Sequence[str] = (),
) -> bytes:
    """The ExportTraceServiceResponse, in the request's encoding."""
    response = ExportTraceServiceResponse()
    message = partial_success_message(rejects=rejects, ignored=ignored, ignored_names=ignored_names)
    if message:
        response.partial_success.rejected_spans = len(rejects)
        response.partial_success.error_message = message
    return _encode(response, content_type)


def status_body(*, status: int, message: str, content_type: str | None, field: str = "") -> bytes:
    """A google.rpc.Status for a refused request, in its encoding (JSON when unknown); for a
    400 with a field, a google.rpc.BadRequest in its details names it."""
    answer = Status(code=GRPC_CODE_BY_HTTP_STATUS.get(status, Code.UNKNOWN), message=message)
    if status == 400 and field:
        detail = AnyMessage()
        detail.Pack(
            BadRequest(
                field_violations=[BadRequest.FieldViolation(field=field, description=message)]
            )
        )
        answer.details.append(detail)
    return _encode(answer, content_type or JSON)


def _encode(message: Status | ExportTraceServiceResponse, content_type: str) -> bytes:
    if content_type == PROTOBUF:
        serialized: bytes = message.SerializeToString()
        return serialized
    text: str = json_format.MessageToJson(message, indent=None)
    return text.encode()
