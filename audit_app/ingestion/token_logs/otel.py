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
- cost_usd: `gen_ai.usage.cost` (OpenLIT's extension; OTel has no cost attribute), else None.
- status: error when the span status code is 2 (`STATUS_CODE_ERROR`) or `error.type` is set.
- request_id: `<traceId>/<spanId>`.
- caller: the resource's `service.name`.
- workload, team, pool: span attribute `workload` / `team` / `pool`, else the same resource
  attribute (deployment-wide settings usually live on the resource).
- end_user: `user.id`, else the deprecated `enduser.id`.

Spans without any `gen_ai.*` attribute (HTTP, database, framework spans) are skipped: they are
not requests to a model and are not counted as rows. A reject's line is the JSONL line; in a
single document it is the 1-based position of the span among all spans of the document. A file
holding a single line is treated as a single document, so its rejects still point at a span.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from datetime import datetime
from functools import partial
from typing import BinaryIO

from audit_app.ingestion.reading import (
    ImportFileError,
    RowRejected,
    iter_text_lines,
    read_head,
    row_outcome,
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
    cost_usd="gen_ai.usage.cost",
    streaming="gen_ai.request.stream",
    batch_api="batch_api",
    status="status.code",
)


def sniff(head: bytes) -> bool:
    """An OTLP/JSON trace export has `resourceSpans` at the top of its first document."""
    return bool({"resourceSpans", "resource_spans"} & head_field_names(head))


def read(stream: BinaryIO, *, chunk_rows: int) -> Iterator[ParsedChunk]:
    """Parse an OTLP/JSON trace export into chunks of canonical requests and rejects."""
    if not sniff(read_head(stream)):
        raise ImportFileError(
            "not an OpenTelemetry trace export: the first document has no `resourceSpans` list"
        )
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
        spans = list(_iter_gen_ai_spans(document))
    except RowRejected as rejected:
        yield rejected.to_reject(line=line_number)
        return
    for _, span, resource_attributes in spans:
        yield row_outcome(_span_converter(resource_attributes), span, line_number)


def _iter_document_outcomes(document: object) -> Iterator[RowOutcome]:
    try:
        spans = list(_iter_gen_ai_spans(document))
    except RowRejected as rejected:
        raise ImportFileError(f"not an OpenTelemetry trace export: {rejected.reason}") from None
    for ordinal, span, resource_attributes in spans:
        yield row_outcome(_span_converter(resource_attributes), span, ordinal)


def _list_of_objects(value: object, *, field: str) -> list[Mapping[str, object]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise RowRejected(field=field, value=value, reason=f"`{field}` is not a list of objects.")
    return value


def _iter_gen_ai_spans(
    document: object,
) -> Iterator[tuple[int, Mapping[str, object], dict[str, object]]]:
    """(ordinal among all spans, span, resource attributes) for each span with gen_ai data."""
    if not isinstance(document, dict) or "resourceSpans" not in document:
        raise RowRejected(
            field="resourceSpans", value="", reason="the document has no `resourceSpans` list."
        )
    ordinal = 0
    for resource_spans in _list_of_objects(document["resourceSpans"], field="resourceSpans"):
        resource = resource_spans.get("resource")
        resource_attributes = attributes_to_dict(
            resource.get("attributes") if isinstance(resource, dict) else None
        )
        for scope_spans in _list_of_objects(resource_spans.get("scopeSpans"), field="scopeSpans"):
            for span in _list_of_objects(scope_spans.get("spans"), field="spans"):
                ordinal += 1
                attributes = attributes_to_dict(span.get("attributes"))
                if any(key.startswith(GEN_AI_PREFIX) for key in attributes):
                    yield ordinal, span, resource_attributes


def any_value(value: object) -> object:
    """Unwrap an OTLP/JSON AnyValue (`{"stringValue": ...}`, `{"intValue": "12"}`, ...)."""
    if not isinstance(value, dict):
        return None
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "intValue" in value:
        # OTLP/JSON writes int64 as a string; the token coercion accepts either form.
        return value["intValue"]
    if "doubleValue" in value:
        return value["doubleValue"]
    if "arrayValue" in value:
        array = value["arrayValue"]
        items = array.get("values") if isinstance(array, dict) else None
        return [any_value(item) for item in items or []]
    if "kvlistValue" in value:
        kvlist = value["kvlistValue"]
        return attributes_to_dict(kvlist.get("values") if isinstance(kvlist, dict) else None)
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def attributes_to_dict(attributes: object) -> dict[str, object]:
    """`[{"key": k, "value": AnyValue}, ...]` as a plain dict; malformed entries are skipped."""
    if not isinstance(attributes, list):
        return {}
    return {
        entry["key"]: any_value(entry.get("value"))
        for entry in attributes
        if isinstance(entry, dict) and isinstance(entry.get("key"), str)
    }


def _first_attribute(attributes: Mapping[str, object], names: tuple[str, ...]) -> object:
    for name in names:
        if attributes.get(name) is not None:
            return attributes[name]
    return None


def _span_status(span: Mapping[str, object], attributes: Mapping[str, object]) -> str:
    status = span.get("status")
    code = text(status.get("code")) if isinstance(status, dict) else ""
    if code in ERROR_STATUS_CODES or text(attributes.get("error.type")):
        return STATUS_ERROR
    return STATUS_SUCCESS


def _span_converter(
    resource_attributes: Mapping[str, object],
) -> Callable[[Mapping[str, object], int], CanonicalRequest]:
    return partial(_request_from_span, resource_attributes=resource_attributes)


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


def _request_from_span(
    span: Mapping[str, object], line: int, *, resource_attributes: Mapping[str, object]
) -> CanonicalRequest:
    attributes = attributes_to_dict(span.get("attributes"))
    started_at = parse_unix_nanos(span.get("startTimeUnixNano"), field="startTimeUnixNano")
    ended_at = parse_unix_nanos(span.get("endTimeUnixNano"), field="endTimeUnixNano")
    first_token_at, ttft_name = _first_token_at(
        attributes, started_at=started_at, ended_at=ended_at
    )

    operation_name = text(attributes.get("gen_ai.operation.name")).lower()
    trace_id = text(span.get("traceId"))
    span_id = text(span.get("spanId"))

    def span_or_resource(name: str) -> str:
        return first_text(attributes.get(name), resource_attributes.get(name))

    return build_request(
        line=line,
        names=replace(SOURCE_FIELDS, first_token_at=ttft_name),
        started_at=started_at,
        ended_at=ended_at,
        first_token_at=first_token_at,
        model=first_text(
            attributes.get("gen_ai.response.model"), attributes.get("gen_ai.request.model")
        ),
        input_tokens=_first_attribute(attributes, INPUT_TOKEN_ATTRIBUTES),
        output_tokens=_first_attribute(attributes, OUTPUT_TOKEN_ATTRIBUTES),
        cached_input_tokens=attributes.get("gen_ai.usage.cache_read.input_tokens"),
        cost_usd=attributes.get("gen_ai.usage.cost"),
        streaming=attributes.get("gen_ai.request.stream"),
        batch_api=False,
        status=_span_status(span, attributes),
        provider=first_text(
            attributes.get("gen_ai.provider.name"), attributes.get("gen_ai.system")
        ),
        operation=OPERATION_BY_NAME.get(operation_name, operation_name),
        team=span_or_resource("team"),
        end_user=first_text(attributes.get("user.id"), attributes.get("enduser.id")),
        caller=resource_attributes.get("service.name"),
        request_id="/".join(part for part in (trace_id, span_id) if part),
        pool=span_or_resource("pool"),
        metadata={"workload": span_or_resource("workload")},
    )
