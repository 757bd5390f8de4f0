"""OpenTelemetry GenAI span fields: the one table of where each canonical field comes from,
and the mapping of one span. Its one concern is reading one span, whatever carried it.

`FIELDS` names, per field, its sources in priority order: span attributes (GenAI semantic
conventions, all still "development"; the current name, then the older or vendor one), a key of
an object an attribute holds as text (`<attribute>[<key>]`: LiteLLM's metadata), the provider
prefix of a model name (`provider-of:<attribute>`), the time of a span event
(`event:<name>`), a resource attribute (`resource:<name>`, deployment-wide settings) or a field
of the span itself (`SPAN_FIELDS`). The row path (`otel.read_rows`, small files and single
documents), the columnar path (`otel_columnar`, which reads the sources named here for every
span of a block at once and sends each span it cannot vouch for to `json_span_outcome`) and the
OTLP/HTTP receiver (`audit_app.ingestion.live.otlp_wire`, through `span_outcome`) read it.

Its rules in full: `docs/formats.md`, section "OpenTelemetry GenAI spans".
"""

from __future__ import annotations

import ast
import json
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal
from functools import lru_cache

from audit_app.ingestion.reading import RowRejected, text
from audit_app.ingestion.token_logs.base import (
    CanonicalRequest,
    RowOutcome,
    SourceFields,
    build_request,
)
from audit_app.ingestion.token_logs.coerce import (
    STATUS_ERROR,
    STATUS_SUCCESS,
    parse_cost,
    parse_duration_seconds,
    parse_tags,
    parse_token_count,
    parse_unix_nanos,
)
from audit_app.ingestion.token_logs.fields import Field, Kind, source_fields
from audit_app.ingestion.token_logs.tabular import parse_json_line

GEN_AI_PREFIX = "gen_ai."
RESOURCE_PREFIX = "resource:"
EVENT_PREFIX = "event:"
PROVIDER_OF_PREFIX = "provider-of:"
START, END, STATUS_CODE = "startTimeUnixNano", "endTimeUnixNano", "status.code"
SPAN_FIELDS = frozenset({START, END, STATUS_CODE})
# LiteLLM's `callbacks: ["otel"]` spans: the deployment's `<provider>/<model>`, the caller's
# metadata and headers and the proxy's own spend metadata as Python-literal text.
LITELLM_PROVIDER_MODEL = "litellm.provider.model"
REQUESTER_METADATA = "metadata.requester_metadata"
SPEND_LOGS_METADATA = "metadata.spend_logs_metadata"
REQUESTER_HEADERS = "metadata.requester_custom_headers"
LITELLM_COST = "gen_ai.cost.total_cost"
# An object held as text longer than this is refused rather than read.
MAX_OBJECT_TEXT_CHARS = 65_536
# How many names of ignored spans a note or an answer gives.
MAX_IGNORED_NAMES = 5

FIELDS: dict[str, Field] = {
    "started_at": Field((START,), Kind.TIMESTAMP, required=True),
    "ended_at": Field((END,), Kind.TIMESTAMP, required=True),
    "first_token_at": Field(
        (
            "gen_ai.response.time_to_first_chunk",
            "gen_ai.latency.time_to_first_token",
            EVENT_PREFIX + "gen_ai.content.completion.chunk",
        ),
        Kind.DECIMAL,
    ),
    "model": Field(
        (LITELLM_PROVIDER_MODEL, "gen_ai.response.model", "gen_ai.request.model"),
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
    "cost_usd": Field(("gen_ai.usage.cost", LITELLM_COST), Kind.DECIMAL),
    "streaming": Field(
        ("gen_ai.request.stream", "gen_ai.is_streaming", "llm.is_streaming"), Kind.FLAG
    ),
    "status": Field((STATUS_CODE,), Kind.COUNT),
    "error_type": Field(("error.type",), Kind.TEXT),
    "operation": Field(("gen_ai.operation.name",), Kind.TEXT),
    "provider": Field(
        ("gen_ai.provider.name", "gen_ai.system", PROVIDER_OF_PREFIX + LITELLM_PROVIDER_MODEL),
        Kind.TEXT,
    ),
    "caller": Field(
        (
            "metadata.user_api_key_alias",
            "metadata.user_api_key_hash",
            RESOURCE_PREFIX + "service.name",
        ),
        Kind.TEXT,
    ),
    "team": Field(
        (
            "team",
            "metadata.user_api_key_team_id",
            "metadata.user_api_key_team_alias",
            RESOURCE_PREFIX + "team",
        ),
        Kind.TEXT,
    ),
    "end_user": Field(
        ("user.id", "enduser.id", "metadata.user_api_key_end_user_id", "llm.user"), Kind.TEXT
    ),
    "pool": Field(
        (
            "pool",
            f"{REQUESTER_METADATA}[pool]",
            f"{SPEND_LOGS_METADATA}[pool]",
            RESOURCE_PREFIX + "pool",
        ),
        Kind.TEXT,
    ),
    "workload": Field(
        (
            "workload",
            f"{REQUESTER_METADATA}[workload]",
            f"{SPEND_LOGS_METADATA}[workload]",
            RESOURCE_PREFIX + "workload",
        ),
        Kind.TEXT,
    ),
    # LiteLLM request tags: the caller's `metadata.tags`, then the `x-litellm-tags` header.
    "tags": Field(
        (f"{REQUESTER_METADATA}[tags]", f"{REQUESTER_HEADERS}[x-litellm-tags]"), Kind.TEXTS
    ),
}
# A cost of 0 from these sources while tokens were used means the source had no price for the
# model (LiteLLM logs 0 then): the request is priced from a price card instead.
UNPRICED_WHEN_ZERO = frozenset({LITELLM_COST})


def is_resource(source: str) -> bool:
    """A source that is an attribute of the span's resource."""
    return source.startswith(RESOURCE_PREFIX)


def attribute_name(source: str) -> str:
    """The attribute's own name (`resource:team` -> `team`)."""
    return source.removeprefix(RESOURCE_PREFIX)


def is_event(source: str) -> bool:
    """A source that is the time of a span event (`event:<name>`)."""
    return source.startswith(EVENT_PREFIX)


def event_name(source: str) -> str:
    return source.removeprefix(EVENT_PREFIX)


def is_provider_of(source: str) -> bool:
    """A source that is the provider prefix of a model name (`provider-of:<attribute>`)."""
    return source.startswith(PROVIDER_OF_PREFIX)


def object_key(source: str) -> tuple[str, str] | None:
    """(attribute, key) of a key of an object held as text (`<attribute>[<key>]`), else None."""
    if not source.endswith("]") or "[" not in source:
        return None
    attribute, key = source[:-1].split("[", 1)
    return attribute, key


def span_attribute(source: str) -> str | None:
    """The span attribute a source reads, or None (resource attributes, events, span fields)."""
    if is_resource(source) or is_event(source) or source in SPAN_FIELDS:
        return None
    if is_provider_of(source):
        return source.removeprefix(PROVIDER_OF_PREFIX)
    key = object_key(source)
    return key[0] if key else source


def provider_prefix(model: object) -> str:
    """The provider a `<provider>/<model>` name starts with; "" without a `/`."""
    name = text(model)
    return name.split("/", 1)[0].strip() if "/" in name else ""


_SOURCES = tuple(source for field in FIELDS.values() for source in field.sources)
# Every attribute `span_outcome` reads, on the span and on its resource, and the span events.
SPAN_ATTRIBUTES = frozenset(filter(None, map(span_attribute, _SOURCES)))
RESOURCE_ATTRIBUTES = frozenset(attribute_name(s) for s in _SOURCES if is_resource(s))
SPAN_EVENTS = frozenset(event_name(s) for s in _SOURCES if is_event(s))
# Attributes holding an object as text: each is decoded once per span, whatever reads it.
OBJECT_ATTRIBUTES = tuple(
    dict.fromkeys(key[0] for key in map(object_key, _SOURCES) if key is not None)
)
TTFT_ATTRIBUTES = FIELDS["first_token_at"].sources
ERROR_STATUS_CODES = frozenset({"2", "STATUS_CODE_ERROR"})
OPERATION_BY_NAME = {
    "embeddings": "embedding",
    "text_completion": "completion",
    "generate_content": "chat",
    # LiteLLM's call types, which its spans carry unless the latest GenAI conventions are on.
    "acompletion": "chat",
    "embedding": "embedding",
    "aembedding": "embedding",
    "atext_completion": "completion",
}
SOURCE_FIELDS = source_fields(FIELDS)


@lru_cache(maxsize=64)
def source_names(*, first_token_at: str, cost_usd: str, streaming: str) -> SourceFields:
    """The names rejects give, with the sources a span's TTFT, cost and streaming came from."""
    return replace(
        SOURCE_FIELDS, first_token_at=first_token_at, cost_usd=cost_usd, streaming=streaming
    )


def decoded_object(value: object, *, field: str) -> Mapping[str, object]:
    """The object an attribute holds: a map as it is, text as JSON or else as a Python literal
    (LiteLLM writes `str(dict)`; `ast.literal_eval` evaluates literals only); {} when missing.
    Raises `RowRejected` naming `field` for text longer than `MAX_OBJECT_TEXT_CHARS`, text
    that is neither, or one that is not an object."""
    if isinstance(value, Mapping):
        return value
    raw = text(value)
    if not raw:
        return {}
    if len(raw) > MAX_OBJECT_TEXT_CHARS:
        raise RowRejected(
            field=field,
            value=raw,
            reason=(
                f"`{field}` is {len(raw)} characters long, more than the "
                f"{MAX_OBJECT_TEXT_CHARS} read."
            ),
        )
    try:
        parsed = json.loads(raw, parse_float=Decimal)
    except (ValueError, RecursionError):
        parsed = _python_literal(raw, field=field)
    if parsed is None:
        return {}
    if not isinstance(parsed, dict):
        raise RowRejected(
            field=field,
            value=raw,
            reason=f"`{field}` does not hold an object (it holds a {type(parsed).__name__}).",
        )
    return parsed


def _python_literal(raw: str, *, field: str) -> object:
    try:
        with warnings.catch_warnings():
            # An unknown escape ('\d') warns; the text is read all the same.
            warnings.simplefilter("ignore")
            return ast.literal_eval(raw)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise RowRejected(
            field=field,
            value=raw,
            reason=(
                f"`{field}` is neither JSON nor a Python literal (was it cut short by an "
                "attribute length limit?)."
            ),
        ) from None


def object_value(decoded: Mapping[str, object], key: str, *, kind: Kind) -> object:
    """A key's value in a decoded object: for a text, only a string counts (a number or an
    object under a name such as `workload` is more likely someone else's field)."""
    value = decoded.get(key)
    if kind is Kind.TEXT and not isinstance(value, str):
        return None
    return value


class SpanValues:
    """The raw value of each source for one span: its attributes, its resource's, the time of
    the first event of each name the table reads, and the objects held as text, decoded once
    (`decode` raises the `RowRejected` of the first that cannot be read)."""

    def __init__(
        self,
        attributes: Mapping[str, object],
        resource_attributes: Mapping[str, object],
        events: Mapping[str, object],
    ) -> None:
        self.attributes = attributes
        self.resource_attributes = resource_attributes
        self.events = events
        self.objects: dict[str, Mapping[str, object]] = {}

    def decode(self) -> None:
        for attribute in OBJECT_ATTRIBUTES:
            self.objects[attribute] = decoded_object(
                self.attributes.get(attribute), field=attribute
            )

    def source(self, source: str, kind: Kind = Kind.TEXT) -> object:
        if is_resource(source):
            return self.resource_attributes.get(attribute_name(source))
        if is_event(source):
            return self.events.get(event_name(source))
        if is_provider_of(source):
            return provider_prefix(self.attributes.get(source.removeprefix(PROVIDER_OF_PREFIX)))
        key = object_key(source)
        if key is not None:
            attribute, name = key
            if attribute not in self.objects:
                self.objects[attribute] = decoded_object(
                    self.attributes.get(attribute), field=attribute
                )
            return object_value(self.objects[attribute], name, kind=kind)
        return self.attributes.get(source)

    def field(self, name: str) -> object:
        """Field `name`'s value (`Field.value`)."""
        field = FIELDS[name]
        return field.value(lambda source: self.source(source, field.kind))

    def first(self, name: str) -> tuple[str, object]:
        """(the source, its value) of the first source of field `name` that is present."""
        field = FIELDS[name]
        for source in field.sources:
            value = self.source(source, field.kind)
            if value is not None:
                return source, value
        return field.sources[0], None

    def tags(self) -> list[str]:
        """The tags of every tag source, in the table's order."""
        return [
            tag
            for source in FIELDS["tags"].sources
            for tag in parse_tags(self.source(source, Kind.TEXTS), field=source)
        ]


class IgnoredSpans:
    """Spans that are not calls to a model (no `gen_ai.*` attribute: HTTP, database, framework
    and LiteLLM's own proxy spans), counted, with the first few of their names in sorted order
    (the same whichever order they were read in)."""

    def __init__(self) -> None:
        self.count = 0
        self.names: list[str] = []

    def add(self, names: Iterable[object]) -> None:
        """One span per name."""
        listed = list(names)
        self.add_counted(len(listed), listed)

    def add_counted(self, count: int, names: Iterable[object]) -> None:
        """`count` spans, whose names are `names` (each may stand for several)."""
        self.count += count
        for name in names:
            named = text(name) or "(no name)"
            if named not in self.names and (
                len(self.names) < MAX_IGNORED_NAMES or named < self.names[-1]
            ):
                self.names = sorted([*self.names, named])[:MAX_IGNORED_NAMES]

    def sentence(self) -> str:
        """What was ignored and why; "" when nothing was."""
        return ignored_sentence(self.count, self.names)


def ignored_sentence(count: int, names: Sequence[str]) -> str:
    """ "Ignored N spans that carry no gen_ai.* attribute (not calls to a model), such as ...";
    "" for none."""
    if not count:
        return ""
    spans = "1 span that carries" if count == 1 else f"{count} spans that carry"
    sentence = f"Ignored {spans} no gen_ai.* attribute (not calls to a model)"
    if names:
        sentence += ", such as " + ", ".join(f"`{name}`" for name in names)
    return sentence + "."


def line_outcomes(
    line_number: int, line_text: str, ignored: IgnoredSpans | None = None
) -> list[RowOutcome]:
    """The outcomes of one non-blank line of a JSONL export, as `read_rows` gives them."""
    return list(iter_line_outcomes(line_number, parse_or_reject(line_text), ignored))


def parse_or_reject(line_text: str) -> object:
    try:
        return parse_json_line(line_text)
    except RowRejected as rejected:
        return rejected


def iter_line_outcomes(
    line_number: int, document: object, ignored: IgnoredSpans | None = None
) -> Iterator[RowOutcome]:
    """One JSONL line: every gen_ai span in it, or one reject when the line is unusable."""
    if isinstance(document, RowRejected):
        yield document.to_reject(line=line_number)
        return
    try:
        spans = gen_ai_spans(document, ignored)
    except RowRejected as rejected:
        yield rejected.to_reject(line=line_number)
        return
    for span in spans:
        yield json_span_outcome(span, line=line_number)


def gen_ai_spans(document: object, ignored: IgnoredSpans | None = None) -> list[JsonSpan]:
    """The spans of one document that are calls to a model (the others are added to
    `ignored`); raises `RowRejected` when it is not an OTLP/JSON document."""
    spans = list(iter_document_spans(document))
    if ignored is not None:
        ignored.add(span.span.get("name") for span in spans if not is_gen_ai(span.attributes))
    return [span for span in spans if is_gen_ai(span.attributes)]


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

    def events(self) -> dict[str, object]:
        """The time (`timeUnixNano`) of the first event of each name in `SPAN_EVENTS`."""
        events = self.span.get("events")
        first: dict[str, object] = {}
        if not isinstance(events, list):
            return first
        for event in events:
            if not isinstance(event, dict):
                continue
            name = event.get("name")
            if name in SPAN_EVENTS and name not in first:
                first[name] = _field(event, "timeUnixNano", "time_unix_nano")
        return first


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
        events=span.events(),
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
    events: Mapping[str, object] | None = None,
    start_time_unix_nano: object,
    end_time_unix_nano: object,
    status_code: object,
    trace_id: str,
    span_id: str,
    line: int,
) -> RowOutcome:
    """One gen_ai span as a canonical request, or the reject naming its first bad attribute.

    The one mapping for files and for the OTLP receiver (`audit_app.ingestion.live.otlp`):
    attribute values are plain Python values (text, int, float, bool, lists, dicts), times
    integer nanoseconds (or their text), the status code 0-2 (or its text or enum name) and the
    ids lowercase hex; `events` maps an event name to the time of the span's first event of
    that name. Only the attributes named in `SPAN_ATTRIBUTES` and `RESOURCE_ATTRIBUTES` and the
    events in `SPAN_EVENTS` are read, so a caller may pass just those.
    """
    try:
        return _request_from_span(
            SpanValues(attributes, resource_attributes, events or {}),
            start_time_unix_nano=start_time_unix_nano,
            end_time_unix_nano=end_time_unix_nano,
            status_code=status_code,
            request_id=f"{trace_id}/{span_id}" if trace_id and span_id else trace_id or span_id,
            line=line,
        )
    except RowRejected as rejected:
        return rejected.to_reject(line=line)


def _span_status(status_code: object, values: SpanValues) -> str:
    if (status_code == 2 and type(status_code) is int) or text(status_code) in ERROR_STATUS_CODES:
        return STATUS_ERROR
    if text(values.field("error_type")):
        return STATUS_ERROR
    return STATUS_SUCCESS


def _first_token_at(
    values: SpanValues, *, started_at: datetime | None, ended_at: datetime | None
) -> tuple[datetime | None, str]:
    """(first-token time, the source it came from): the span's TTFT in seconds, or the time of
    its first event of a name the table reads."""
    for source in TTFT_ATTRIBUTES:
        raw = values.source(source)
        if is_event(source):
            moment = parse_unix_nanos(raw, field=source)
            if moment is None:
                continue
            # build_request checks that it lies within the span.
            return moment, source
        time_to_first_token = parse_duration_seconds(raw, field=source)
        if time_to_first_token is None or started_at is None:
            continue
        # Checked here rather than in build_request so the reject quotes the seconds the
        # span carried, not a derived timestamp the user never wrote.
        if ended_at is not None and started_at + time_to_first_token > ended_at >= started_at:
            span_seconds = (ended_at - started_at).total_seconds()
            raise RowRejected(
                field=source,
                value=raw,
                reason=(f"`{source}` is {raw} s, longer than the whole span ({span_seconds:g} s)."),
            )
        return started_at + time_to_first_token, source
    return None, TTFT_ATTRIBUTES[0]


def _logged_cost(values: SpanValues) -> tuple[str, object]:
    """(source, cost): the first cost present, or None (priced from a card) when it is a 0
    from a source that logs 0 for a model it has no price for while tokens were used."""
    source, cost = values.first("cost_usd")
    if source not in UNPRICED_WHEN_ZERO:
        return source, cost
    try:
        zero = parse_cost(cost, field=source) == 0
        tokens = [
            parse_token_count(values.field(name), field=FIELDS[name].name) or 0
            for name in ("input_tokens", "output_tokens")
        ]
    except RowRejected:
        return source, cost  # build_request rejects the span, naming the value
    return source, None if zero and sum(tokens) > 0 else cost


def _request_from_span(
    values: SpanValues,
    *,
    start_time_unix_nano: object,
    end_time_unix_nano: object,
    status_code: object,
    request_id: str,
    line: int,
) -> CanonicalRequest:
    values.decode()
    started_at = parse_unix_nanos(start_time_unix_nano, field=SOURCE_FIELDS.started_at)
    ended_at = parse_unix_nanos(end_time_unix_nano, field=SOURCE_FIELDS.ended_at)
    first_token_at, ttft_source = _first_token_at(values, started_at=started_at, ended_at=ended_at)
    operation_name = text(values.field("operation")).lower()
    cost_source, cost = _logged_cost(values)
    streaming_source, streaming = values.first("streaming")
    field = values.field
    return build_request(
        line=line,
        names=source_names(
            first_token_at=ttft_source, cost_usd=cost_source, streaming=streaming_source
        ),
        started_at=started_at,
        ended_at=ended_at,
        first_token_at=first_token_at,
        model=field("model"),
        input_tokens=field("input_tokens"),
        output_tokens=field("output_tokens"),
        cached_input_tokens=field("cached_input_tokens"),
        cache_creation_input_tokens=field("cache_creation_input_tokens"),
        cost_usd=cost,
        streaming=streaming,
        batch_api=False,
        status=_span_status(status_code, values),
        provider=field("provider"),
        operation=OPERATION_BY_NAME.get(operation_name, operation_name),
        team=field("team"),
        end_user=field("end_user"),
        caller=field("caller"),
        request_id=request_id,
        pool=field("pool"),
        tags=values.tags(),
        metadata={"workload": field("workload")},
    )
