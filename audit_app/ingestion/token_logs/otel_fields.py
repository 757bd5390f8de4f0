"""OpenTelemetry GenAI span fields: the one table of where each canonical field comes from,
and the mapping of one span. Its one concern is reading one span, whatever carried it.

`FIELDS` names, per field, its sources in priority order: span attributes (GenAI semantic
conventions, all still "development"; the current name, then the older or vendor one), a
resource attribute (`resource:<name>`, deployment-wide settings) or a field of the span itself
(`SPAN_FIELDS`). The row path (`otel.read_rows`, small files and single documents), the
columnar path (`otel_columnar`, which reads the attributes named here for every span of a block
at once and sends each span it cannot vouch for to `json_span_outcome`) and the OTLP/HTTP
receiver (`audit_app.ingestion.live.otlp_wire`, through `span_outcome`) read it.

Its rules in full: `docs/formats.md`, section "OpenTelemetry GenAI spans".
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from audit_app.ingestion.reading import RowRejected, text
from audit_app.ingestion.token_logs.base import (
    CanonicalRequest,
    RowOutcome,
    build_request,
)
from audit_app.ingestion.token_logs.coerce import (
    STATUS_ERROR,
    STATUS_SUCCESS,
    parse_duration_seconds,
    parse_unix_nanos,
)
from audit_app.ingestion.token_logs.fields import Field, Kind, source_fields
from audit_app.ingestion.token_logs.tabular import parse_json_line

GEN_AI_PREFIX = "gen_ai."
RESOURCE_PREFIX = "resource:"
START, END, STATUS_CODE = "startTimeUnixNano", "endTimeUnixNano", "status.code"
SPAN_FIELDS = frozenset({START, END, STATUS_CODE})

FIELDS: dict[str, Field] = {
    "started_at": Field((START,), Kind.TIMESTAMP, required=True),
    "ended_at": Field((END,), Kind.TIMESTAMP, required=True),
    "first_token_at": Field(
        ("gen_ai.response.time_to_first_chunk", "gen_ai.latency.time_to_first_token"),
        Kind.DECIMAL,
    ),
    "model": Field(
        ("gen_ai.response.model", "gen_ai.request.model"),
        Kind.TEXT,
        required=True,
        named="gen_ai.request.model",
    ),
    "input_tokens": Field(
        ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"), Kind.COUNT, required=True
    ),
    "output_tokens": Field(
        ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
        Kind.COUNT,
        required=True,
    ),
    "cached_input_tokens": Field(("gen_ai.usage.cache_read.input_tokens",), Kind.COUNT),
    "cache_creation_input_tokens": Field(("gen_ai.usage.cache_creation.input_tokens",), Kind.COUNT),
    "cost_usd": Field(("gen_ai.usage.cost",), Kind.DECIMAL),
    "streaming": Field(("gen_ai.request.stream",), Kind.FLAG),
    "status": Field((STATUS_CODE,), Kind.COUNT),
    "error_type": Field(("error.type",), Kind.TEXT),
    "operation": Field(("gen_ai.operation.name",), Kind.TEXT),
    "provider": Field(("gen_ai.provider.name", "gen_ai.system"), Kind.TEXT),
    "caller": Field((RESOURCE_PREFIX + "service.name",), Kind.TEXT),
    "team": Field(("team", RESOURCE_PREFIX + "team"), Kind.TEXT),
    "end_user": Field(("user.id", "enduser.id"), Kind.TEXT),
    "pool": Field(("pool", RESOURCE_PREFIX + "pool"), Kind.TEXT),
    "workload": Field(("workload", RESOURCE_PREFIX + "workload"), Kind.TEXT),
}


def is_resource(source: str) -> bool:
    """A source that is an attribute of the span's resource."""
    return source.startswith(RESOURCE_PREFIX)


def attribute_name(source: str) -> str:
    """The attribute's own name (`resource:team` -> `team`)."""
    return source.removeprefix(RESOURCE_PREFIX)


_SOURCES = tuple(source for field in FIELDS.values() for source in field.sources)
# Every attribute `span_outcome` reads, on the span and on its resource.
SPAN_ATTRIBUTES = frozenset(
    source for source in _SOURCES if not is_resource(source) and source not in SPAN_FIELDS
)
RESOURCE_ATTRIBUTES = frozenset(attribute_name(s) for s in _SOURCES if is_resource(s))
TTFT_ATTRIBUTES = FIELDS["first_token_at"].sources
ERROR_STATUS_CODES = frozenset({"2", "STATUS_CODE_ERROR"})
OPERATION_BY_NAME = {
    "embeddings": "embedding",
    "text_completion": "completion",
    "generate_content": "chat",
}
SOURCE_FIELDS = source_fields(FIELDS)
_SOURCE_FIELDS_BY_TTFT = {
    name: replace(SOURCE_FIELDS, first_token_at=name) for name in TTFT_ATTRIBUTES
}


def value_of(
    name: str, attributes: Mapping[str, object], resource_attributes: Mapping[str, object]
) -> object:
    """Field `name`'s value from a span's and its resource's attributes (`Field.value`)."""
    return FIELDS[name].value(
        lambda source: (
            resource_attributes.get(attribute_name(source))
            if is_resource(source)
            else attributes.get(source)
        )
    )


def line_outcomes(line_number: int, line_text: str) -> list[RowOutcome]:
    """The outcomes of one non-blank line of a JSONL export, as `read_rows` gives them."""
    return list(iter_line_outcomes(line_number, parse_or_reject(line_text)))


def parse_or_reject(line_text: str) -> object:
    try:
        return parse_json_line(line_text)
    except RowRejected as rejected:
        return rejected


def iter_line_outcomes(line_number: int, document: object) -> Iterator[RowOutcome]:
    """One JSONL line: every gen_ai span in it, or one reject when the line is unusable."""
    if isinstance(document, RowRejected):
        yield document.to_reject(line=line_number)
        return
    try:
        spans = gen_ai_spans(document)
    except RowRejected as rejected:
        yield rejected.to_reject(line=line_number)
        return
    for span in spans:
        yield json_span_outcome(span, line=line_number)


def gen_ai_spans(document: object) -> list[JsonSpan]:
    """The spans of one document that are calls to a model; raises `RowRejected` when it is
    not an OTLP/JSON document."""
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
    if text(value_of("error_type", attributes, {})):
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
    started_at = parse_unix_nanos(start_time_unix_nano, field=SOURCE_FIELDS.started_at)
    ended_at = parse_unix_nanos(end_time_unix_nano, field=SOURCE_FIELDS.ended_at)
    first_token_at, ttft_name = _first_token_at(
        attributes, started_at=started_at, ended_at=ended_at
    )
    operation_name = text(value_of("operation", attributes, resource_attributes)).lower()

    def field(name: str) -> object:
        return value_of(name, attributes, resource_attributes)

    return build_request(
        line=line,
        names=_SOURCE_FIELDS_BY_TTFT[ttft_name],
        started_at=started_at,
        ended_at=ended_at,
        first_token_at=first_token_at,
        model=field("model"),
        input_tokens=field("input_tokens"),
        output_tokens=field("output_tokens"),
        cached_input_tokens=field("cached_input_tokens"),
        cache_creation_input_tokens=field("cache_creation_input_tokens"),
        cost_usd=field("cost_usd"),
        streaming=field("streaming"),
        batch_api=False,
        status=_span_status(status_code, attributes),
        provider=field("provider"),
        operation=OPERATION_BY_NAME.get(operation_name, operation_name),
        team=field("team"),
        end_user=field("end_user"),
        caller=field("caller"),
        request_id=request_id,
        pool=field("pool"),
        metadata={"workload": field("workload")},
    )
