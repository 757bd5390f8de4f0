"""Importer for OpenTelemetry GenAI spans exported as OTLP/JSON.

Accepted shapes: one document `{"resourceSpans": [{"resource": ..., "scopeSpans": [{"spans":
[...]}]}]}`, or JSONL with one such document per line (what the collector's file exporter
writes). Attribute names follow the GenAI semantic conventions (all still "development").

Mapping (span attribute first, then the older or vendor name it falls back to):
- started_at / ended_at: `startTimeUnixNano` / `endTimeUnixNano`.
- first_token_at: start + `gen_ai.response.time_to_first_chunk` (seconds), else
  `gen_ai.latency.time_to_first_token` (seconds, written by vLLM's tracing).
- model: `gen_ai.response.model` (what served and billed the call), else `gen_ai.request.model`.
- provider: `gen_ai.provider.name`, else the deprecated `gen_ai.system`.
- operation: `gen_ai.operation.name`, with embeddings -> embedding, text_completion ->
  completion and generate_content -> chat so all formats share one vocabulary.
- streaming: `gen_ai.request.stream`. batch_api: always False (no convention exists).
- input / output tokens: `gen_ai.usage.input_tokens` / `output_tokens`, else the deprecated
  `gen_ai.usage.prompt_tokens` / `completion_tokens` (vLLM still writes these).
- cached_input_tokens: `gen_ai.usage.cache_read.input_tokens`.
- cache_creation_input_tokens: `gen_ai.usage.cache_creation.input_tokens`.
- cost_usd: `gen_ai.usage.cost` (OpenLIT's extension; OTel has no cost attribute), else None.
- status: error when the span status code is 2 (`STATUS_CODE_ERROR`) or `error.type` is set.
- request_id: `<traceId>/<spanId>`.
- caller: the resource's `service.name`.
- workload, team, pool: span attribute `workload` / `team` / `pool`, else the same resource
  attribute (deployment-wide settings usually live on the resource).
- end_user: `user.id`, else the deprecated `enduser.id`.

Spans without any `gen_ai.*` attribute (HTTP, database, framework spans) are skipped: they are
not requests to a model and are not counted as rows.

One span maps through `span_outcome`, whatever carried it: a file read here, or a request to the
OTLP/HTTP receiver (`audit_app.ingestion.live.otlp`, protobuf or JSON). Field names of OTLP/JSON
are read in lowerCamelCase, else in the proto's snake_case; trace and span ids are lowercased
(OTLP/JSON hex is case-insensitive). A reject's line is the JSONL line; in a
single document it is the 1-based position of the span among all spans of the document. A file
holding a single line is treated as a single document, so its rejects still point at a span.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import BinaryIO

from audit_app.ingestion.reading import (
    HEAD_BYTES,
    ImportFileError,
    RowRejected,
    iter_text_lines,
    read_head,
    text,
)
from audit_app.ingestion.token_logs.base import (
    CanonicalRequest,
    ParsedChunk,
    RowOutcome,
    SourceFields,
    build_request,
    chunk_outcomes,
)
from audit_app.ingestion.token_logs.coerce import (
    STATUS_ERROR,
    STATUS_SUCCESS,
    first_text,
    parse_duration_seconds,
    parse_unix_nanos,
)
from audit_app.ingestion.token_logs.tabular import (
    head_field_names,
    parse_json_line,
    read_json_document,
)

# The upload form's choice, and how a sentence names such a file (`audit_app.ingestion.formats`).
LABEL = "OpenTelemetry GenAI spans (OTLP JSON)"
DESCRIPTION = "an OpenTelemetry trace export"
GEN_AI_PREFIX = "gen_ai."
TTFT_ATTRIBUTES = ("gen_ai.response.time_to_first_chunk", "gen_ai.latency.time_to_first_token")
INPUT_TOKEN_ATTRIBUTES = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
OUTPUT_TOKEN_ATTRIBUTES = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
ERROR_STATUS_CODES = frozenset({"2", "STATUS_CODE_ERROR"})
OPERATION_BY_NAME = {
    "embeddings": "embedding",
    "text_completion": "completion",
    "generate_content": "chat",
}
SOURCE_FIELDS = SourceFields(
    started_at="startTimeUnixNano",
    ended_at="endTimeUnixNano",
    first_token_at="gen_ai.response.time_to_first_chunk",
    model="gen_ai.request.model",
    input_tokens="gen_ai.usage.input_tokens",
    output_tokens="gen_ai.usage.output_tokens",
    cached_input_tokens="gen_ai.usage.cache_read.input_tokens",
    cache_creation_input_tokens="gen_ai.usage.cache_creation.input_tokens",
    cost_usd="gen_ai.usage.cost",
    streaming="gen_ai.request.stream",
    batch_api="batch_api",
    status="status.code",
)
_SOURCE_FIELDS_BY_TTFT = {
    name: replace(SOURCE_FIELDS, first_token_at=name) for name in TTFT_ATTRIBUTES
}
# Every attribute `span_outcome` reads, on the span and on its resource.
SPAN_ATTRIBUTES = frozenset(
    {
        *TTFT_ATTRIBUTES,
        *INPUT_TOKEN_ATTRIBUTES,
        *OUTPUT_TOKEN_ATTRIBUTES,
        "gen_ai.operation.name",
        "gen_ai.response.model",
        "gen_ai.request.model",
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_creation.input_tokens",
        "gen_ai.usage.cost",
        "gen_ai.request.stream",
        "gen_ai.provider.name",
        "gen_ai.system",
        "error.type",
        "user.id",
        "enduser.id",
        "workload",
        "team",
        "pool",
    }
)
RESOURCE_ATTRIBUTES = frozenset({"service.name", "workload", "team", "pool"})


def sniff(head: bytes) -> bool:
    """An OTLP/JSON trace export has `resourceSpans` at the top of its first document."""
    return bool({"resourceSpans", "resource_spans"} & head_field_names(head))


def read(stream: BinaryIO, *, chunk_rows: int) -> Iterator[ParsedChunk]:
    """Parse an OTLP/JSON trace export into chunks of canonical requests and rejects.

    JSON lines larger than the 64 KiB head go through the columnar path (`otel_columnar`),
    whose chunks carry most rows in `ParsedChunk.frame` and which reads what it cannot vouch
    for with this module's row path; a single document and small files are read span by span.
    """
    head = read_head(stream)
    if not sniff(head):
        raise ImportFileError(
            "not an OpenTelemetry trace export: the first document has no `resourceSpans` list"
        )
    # Imported here: the columnar path builds on this module's mapping.
    from audit_app.ingestion.token_logs import otel_columnar

    if len(head) >= HEAD_BYTES and otel_columnar.starts_with_two_documents(stream):
        yield from otel_columnar.read_jsonl_columnar(stream, chunk_rows=chunk_rows)
        return
    yield from read_rows(stream, chunk_rows=chunk_rows)


def read_rows(stream: BinaryIO, *, chunk_rows: int) -> Iterator[ParsedChunk]:
    """`read` without the columnar path for JSON lines (`otel_columnar`): span by span."""
    yield from chunk_outcomes(_iter_outcomes(stream), stream=stream, chunk_rows=chunk_rows)


def _iter_outcomes(stream: BinaryIO) -> Iterator[RowOutcome]:
    lines = (
        (number, line_text)
        for number, line_text in enumerate(iter_text_lines(stream), start=1)
        if line_text.strip()
    )
    first = next(lines, None)
    if first is None:
        return
    try:
        first_document = parse_json_line(first[1])
    except RowRejected:
        # The first line is not a whole document: a pretty-printed single document.
        yield from _iter_document_outcomes(read_json_document(stream))
        return
    second = next(lines, None)
    if second is None:
        yield from _iter_document_outcomes(first_document)
        return
    yield from _iter_line_outcomes(first[0], first_document)
    yield from _iter_line_outcomes(second[0], _parse_or_reject(second[1]))
    for number, line_text in lines:
        yield from _iter_line_outcomes(number, _parse_or_reject(line_text))


def line_outcomes(line_number: int, line_text: str) -> list[RowOutcome]:
    """The outcomes of one non-blank line of a JSONL export, as `read_rows` gives them."""
    return list(_iter_line_outcomes(line_number, _parse_or_reject(line_text)))


def _parse_or_reject(line_text: str) -> object:
    try:
        return parse_json_line(line_text)
    except RowRejected as rejected:
        return rejected


def _iter_line_outcomes(line_number: int, document: object) -> Iterator[RowOutcome]:
    """One JSONL line: every gen_ai span in it, or one reject when the line is unusable."""
    if isinstance(document, RowRejected):
        yield document.to_reject(line=line_number)
        return
    try:
        spans = _gen_ai_spans(document)
    except RowRejected as rejected:
        yield rejected.to_reject(line=line_number)
        return
    for span in spans:
        yield json_span_outcome(span, line=line_number)


def _iter_document_outcomes(document: object) -> Iterator[RowOutcome]:
    try:
        spans = _gen_ai_spans(document)
    except RowRejected as rejected:
        raise ImportFileError(f"not an OpenTelemetry trace export: {rejected.reason}") from None
    for span in spans:
        yield json_span_outcome(span, line=span.ordinal)


def _gen_ai_spans(document: object) -> list[JsonSpan]:
    return [span for span in iter_document_spans(document) if is_gen_ai(span.attributes)]


# ---------------------------------------------------------------------------------------------
# OTLP/JSON documents (files, and the receiver's application/json requests)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class JsonSpan:
    """One span of an OTLP/JSON document: its 1-based position among all the document's spans,
    the span object, and its own and its resource's attributes as plain dicts."""

    ordinal: int
    span: Mapping[str, object]
    attributes: dict[str, object]
    resource_attributes: dict[str, object]


def _list_of_objects(value: object, *, field: str) -> list[Mapping[str, object]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise RowRejected(field=field, value=value, reason=f"`{field}` is not a list of objects.")
    return value


def _field(message: Mapping[str, object], name: str, proto_name: str) -> object:
    """A field by its OTLP/JSON name (lowerCamelCase), else by its proto name (snake_case),
    which protobuf's own JSON parsers accept too."""
    value = message.get(name)
    return message.get(proto_name) if value is None else value


def iter_document_spans(document: object) -> Iterator[JsonSpan]:
    """Every span of one OTLP/JSON `ExportTraceServiceRequest` in document order. Raises
    `RowRejected` when it is not one: no `resourceSpans` list, or a level that is not a list of
    objects."""
    if not isinstance(document, dict) or not {"resourceSpans", "resource_spans"} & document.keys():
        raise RowRejected(
            field="resourceSpans", value="", reason="the document has no `resourceSpans` list."
        )
    ordinal = 0
    for resource_spans in _list_of_objects(
        _field(document, "resourceSpans", "resource_spans"), field="resourceSpans"
    ):
        resource = resource_spans.get("resource")
        resource_attributes = attributes_to_dict(
            resource.get("attributes") if isinstance(resource, dict) else None
        )
        scopes = _field(resource_spans, "scopeSpans", "scope_spans")
        for scope_spans in _list_of_objects(scopes, field="scopeSpans"):
            for span in _list_of_objects(scope_spans.get("spans"), field="spans"):
                ordinal += 1
                yield JsonSpan(
                    ordinal=ordinal,
                    span=span,
                    attributes=attributes_to_dict(span.get("attributes")),
                    resource_attributes=resource_attributes,
                )


def is_gen_ai(attribute_names: Iterable[str]) -> bool:
    """True when a span carries at least one `gen_ai.*` attribute: it is a call to a model."""
    return any(name.startswith(GEN_AI_PREFIX) for name in attribute_names)


def any_value(value: object) -> object:
    """Unwrap an OTLP/JSON AnyValue (`{"stringValue": ...}`, `{"intValue": "12"}`, ...)."""
    if not isinstance(value, dict):
        return None
    for name, proto_name in _ANY_VALUE_SCALARS:
        if name in value:
            # OTLP/JSON writes int64 as a string; the token coercion accepts either form.
            return value[name]
        if proto_name in value:
            return value[proto_name]
    array = _field(value, "arrayValue", "array_value")
    if array is not None:
        items = array.get("values") if isinstance(array, dict) else None
        return [any_value(item) for item in items or []]
    kvlist = _field(value, "kvlistValue", "kvlist_value")
    if kvlist is not None:
        return attributes_to_dict(kvlist.get("values") if isinstance(kvlist, dict) else None)
    return _field(value, "bytesValue", "bytes_value")


_ANY_VALUE_SCALARS = (
    ("stringValue", "string_value"),
    ("boolValue", "bool_value"),
    ("intValue", "int_value"),
    ("doubleValue", "double_value"),
)


def attributes_to_dict(attributes: object) -> dict[str, object]:
    """`[{"key": k, "value": AnyValue}, ...]` as a plain dict; malformed entries are skipped."""
    if not isinstance(attributes, list):
        return {}
    return {
        entry["key"]: any_value(entry.get("value"))
        for entry in attributes
        if isinstance(entry, dict) and isinstance(entry.get("key"), str)
    }


def json_span_outcome(span: JsonSpan, *, line: int) -> RowOutcome:
    """`span_outcome` for a span of an OTLP/JSON document (ids are hex text there)."""
    fields = span.span
    status = fields.get("status")
    return span_outcome(
        attributes=span.attributes,
        resource_attributes=span.resource_attributes,
        start_time_unix_nano=_field(fields, "startTimeUnixNano", "start_time_unix_nano"),
        end_time_unix_nano=_field(fields, "endTimeUnixNano", "end_time_unix_nano"),
        status_code=status.get("code") if isinstance(status, dict) else None,
        trace_id=text(_field(fields, "traceId", "trace_id")).lower(),
        span_id=text(_field(fields, "spanId", "span_id")).lower(),
        line=line,
    )


# ---------------------------------------------------------------------------------------------
# One span, however it arrived
# ---------------------------------------------------------------------------------------------


def span_outcome(
    *,
    attributes: Mapping[str, object],
    resource_attributes: Mapping[str, object],
    start_time_unix_nano: object,
    end_time_unix_nano: object,
    status_code: object,
    trace_id: str,
    span_id: str,
    line: int,
) -> RowOutcome:
    """One gen_ai span as a canonical request, or the reject naming its first bad attribute.

    The one mapping for files and for the OTLP receiver (`audit_app.ingestion.live.otlp`):
    attribute values are plain Python values (text, int, float, bool, lists), times integer
    nanoseconds (or their text), the status code 0-2 (or its text or enum name) and the ids
    lowercase hex. Only the attributes named in `SPAN_ATTRIBUTES` and `RESOURCE_ATTRIBUTES`
    are read, so a caller may pass just those.
    """
    try:
        return _request_from_span(
            attributes,
            resource_attributes,
            start_time_unix_nano=start_time_unix_nano,
            end_time_unix_nano=end_time_unix_nano,
            status_code=status_code,
            request_id=f"{trace_id}/{span_id}" if trace_id and span_id else trace_id or span_id,
            line=line,
        )
    except RowRejected as rejected:
        return rejected.to_reject(line=line)


def _span_status(status_code: object, attributes: Mapping[str, object]) -> str:
    if (status_code == 2 and type(status_code) is int) or text(status_code) in ERROR_STATUS_CODES:
        return STATUS_ERROR
    if text(attributes.get("error.type")):
        return STATUS_ERROR
    return STATUS_SUCCESS


def _first_token_at(
    attributes: Mapping[str, object], *, started_at: datetime | None, ended_at: datetime | None
) -> tuple[datetime | None, str]:
    """(first-token time, the attribute it came from) from the span's TTFT in seconds."""
    for ttft_name in TTFT_ATTRIBUTES:
        raw_seconds = attributes.get(ttft_name)
        time_to_first_token = parse_duration_seconds(raw_seconds, field=ttft_name)
        if time_to_first_token is None or started_at is None:
            continue
        # Checked here rather than in build_request so the reject quotes the seconds the
        # span carried, not a derived timestamp the user never wrote.
        if ended_at is not None and started_at + time_to_first_token > ended_at >= started_at:
            span_seconds = (ended_at - started_at).total_seconds()
            raise RowRejected(
                field=ttft_name,
                value=raw_seconds,
                reason=(
                    f"`{ttft_name}` is {raw_seconds} s, longer than the whole span "
                    f"({span_seconds:g} s)."
                ),
            )
        return started_at + time_to_first_token, ttft_name
    return None, TTFT_ATTRIBUTES[0]


def _first_attribute(attributes: Mapping[str, object], names: tuple[str, ...]) -> object:
    for name in names:
        if attributes.get(name) is not None:
            return attributes[name]
    return None


def _request_from_span(
    attributes: Mapping[str, object],
    resource_attributes: Mapping[str, object],
    *,
    start_time_unix_nano: object,
    end_time_unix_nano: object,
    status_code: object,
    request_id: str,
    line: int,
) -> CanonicalRequest:
    started_at = parse_unix_nanos(start_time_unix_nano, field="startTimeUnixNano")
    ended_at = parse_unix_nanos(end_time_unix_nano, field="endTimeUnixNano")
    first_token_at, ttft_name = _first_token_at(
        attributes, started_at=started_at, ended_at=ended_at
    )
    attribute = attributes.get
    resource_attribute = resource_attributes.get
    operation_name = text(attribute("gen_ai.operation.name")).lower()
    return build_request(
        line=line,
        names=_SOURCE_FIELDS_BY_TTFT[ttft_name],
        started_at=started_at,
        ended_at=ended_at,
        first_token_at=first_token_at,
        model=first_text(attribute("gen_ai.response.model"), attribute("gen_ai.request.model")),
        input_tokens=_first_attribute(attributes, INPUT_TOKEN_ATTRIBUTES),
        output_tokens=_first_attribute(attributes, OUTPUT_TOKEN_ATTRIBUTES),
        cached_input_tokens=attribute("gen_ai.usage.cache_read.input_tokens"),
        cache_creation_input_tokens=attribute("gen_ai.usage.cache_creation.input_tokens"),
        cost_usd=attribute("gen_ai.usage.cost"),
        streaming=attribute("gen_ai.request.stream"),
        batch_api=False,
        status=_span_status(status_code, attributes),
        provider=first_text(attribute("gen_ai.provider.name"), attribute("gen_ai.system")),
        operation=OPERATION_BY_NAME.get(operation_name, operation_name),
        team=first_text(attribute("team"), resource_attribute("team")),
        end_user=first_text(attribute("user.id"), attribute("enduser.id")),
        caller=resource_attribute("service.name"),
        request_id=request_id,
        pool=first_text(attribute("pool"), resource_attribute("pool")),
        metadata={"workload": first_text(attribute("workload"), resource_attribute("workload"))},
    )
