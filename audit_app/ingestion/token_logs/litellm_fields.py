"""LiteLLM spend-log fields: the one table of where each canonical field comes from.

`FIELDS` names, per field, LiteLLM's columns (`schema.prisma`) or paths under the `metadata`
object (`metadata.a.b`; JSON text in CSV) in priority order, its kind and whether the column
is required. The CSV fast path (`litellm_columnar`) reads its columns from it, the JSONL fast
path (`json_columnar`) its pyarrow schema, and the row mapping below (`request_from_record`)
its values. The fast paths convert the rows they can vouch for column by column; every other
row (each one to be rejected) goes through `request_from_record`, whose reject names the line,
field and value. `litellm.read_rows` uses it alone for small files.

Its rules in full: `docs/formats.md`, section "LiteLLM spend logs".
"""

from __future__ import annotations

from collections.abc import Mapping

from audit_app.ingestion.reading import text
from audit_app.ingestion.token_logs.base import CanonicalRequest, build_request
from audit_app.ingestion.token_logs.coerce import (
    parse_bool,
    parse_cost,
    parse_json_object,
    parse_tags,
    parse_timestamp,
    parse_token_count,
)
from audit_app.ingestion.token_logs.fields import Field, Kind, source_fields

METADATA = "metadata"
METADATA_PREFIX = METADATA + "."
SPEND_LOGS_METADATA = "spend_logs_metadata"
# Where LiteLLM logs a call's usage inside `metadata`, in the order they are read.
USAGE_OBJECTS = ("usage_object", "additional_usage_values")
_USAGE = tuple(METADATA_PREFIX + usage for usage in USAGE_OBJECTS)

FIELDS: dict[str, Field] = {
    "request_id": Field(("request_id",), Kind.TEXT, required=True),
    "started_at": Field(("startTime",), Kind.TIMESTAMP, required=True),
    "ended_at": Field(("endTime",), Kind.TIMESTAMP, required=True),
    "first_token_at": Field(("completionStartTime",), Kind.TIMESTAMP),
    "model": Field(("model", "model_group"), Kind.TEXT, required=True),
    "input_tokens": Field(("prompt_tokens",), Kind.COUNT, required=True),
    "output_tokens": Field(("completion_tokens",), Kind.COUNT, required=True),
    "cached_input_tokens": Field(
        tuple(
            f"{usage}.{path}"
            for usage in _USAGE
            for path in ("prompt_tokens_details.cached_tokens", "cache_read_input_tokens")
        ),
        Kind.COUNT,
        named="metadata.usage_object",
    ),
    "cache_creation_input_tokens": Field(
        tuple(f"{usage}.cache_creation_input_tokens" for usage in _USAGE),
        Kind.COUNT,
        named="cache_creation_input_tokens",
    ),
    "cost_usd": Field(("spend",), Kind.DECIMAL),
    "cache_hit": Field(("cache_hit",), Kind.TEXT),
    "operation": Field(("call_type",), Kind.TEXT),
    "caller": Field(("metadata.user_api_key_alias", "api_key"), Kind.TEXT),
    "provider": Field(("custom_llm_provider",), Kind.TEXT),
    "end_user": Field(("end_user", "user"), Kind.TEXT),
    "team": Field(("team_id", "metadata.user_api_key_team_alias"), Kind.TEXT),
    "status": Field(("status", "metadata.status"), Kind.TEXT),
    "pool": Field(("metadata.pool", "metadata.spend_logs_metadata.pool"), Kind.TEXT),
    # The workload rule reads `metadata` over `spend_logs_metadata` as one object (a key in
    # `metadata` wins even when null), not the first non-blank of the two.
    "workload": Field(("metadata.workload", "metadata.spend_logs_metadata.workload"), Kind.TEXT),
    "tags": Field(("request_tags", "metadata.tags"), Kind.TEXTS),
    "batch_api": Field(("metadata.batch_api",), Kind.FLAG),
    "batch_models": Field(("metadata.batch_models",), Kind.TEXTS),
}

REQUIRED_COLUMNS = tuple(field.sources[0] for field in FIELDS.values() if field.required)
# The file's top-level columns the mapping reads (a metadata path reads `metadata`).
COLUMNS = tuple(
    dict.fromkeys(
        METADATA if source.startswith(METADATA_PREFIX) else source
        for field in FIELDS.values()
        for source in field.sources
    )
)
# The metadata texts the fields read, for the fast paths' decoding of metadata (the workload
# aside: the workload rule reads the whole object).
METADATA_TEXTS = tuple(
    source
    for name, field in FIELDS.items()
    if field.kind is Kind.TEXT and name != "workload"
    for source in field.sources
    if source.startswith(METADATA_PREFIX)
)
SOURCE_FIELDS = source_fields(FIELDS, streaming=FIELDS["first_token_at"].name)
OPERATION_BY_CALL_TYPE = {
    "completion": "chat",
    "acompletion": "chat",
    "embedding": "embedding",
    "aembedding": "embedding",
    "text_completion": "completion",
    "atext_completion": "completion",
}


def is_metadata(source: str) -> bool:
    """A source under the `metadata` object (`metadata.a.b`), not a column of its own."""
    return source.startswith(METADATA_PREFIX)


def metadata_path(source: str) -> tuple[str, ...]:
    """`metadata.a.b` -> ("a", "b")."""
    return tuple(source[len(METADATA_PREFIX) :].split("."))


def nested(mapping: Mapping[str, object], *path: str) -> object:
    value: object = mapping
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def usage_paths(name: str) -> tuple[tuple[str, ...], ...]:
    """The paths of a usage field (`cached_input_tokens`, `cache_creation_input_tokens`)
    inside one usage object, in priority order."""
    prefix = f"{_USAGE[0]}."
    return tuple(
        tuple(source[len(prefix) :].split("."))
        for source in FIELDS[name].sources
        if source.startswith(prefix)
    )


def source_value(
    record: Mapping[str, object], metadata: Mapping[str, object], source: str
) -> object:
    """One source's raw value; `metadata` is the decoded metadata object (with
    `spend_logs_metadata` decoded too)."""
    if source.startswith(METADATA_PREFIX):
        return nested(metadata, *metadata_path(source))
    return record.get(source)


def value_of(name: str, record: Mapping[str, object], metadata: Mapping[str, object]) -> object:
    """Field `name`'s value in a record (`Field.value`)."""
    return FIELDS[name].value(lambda source: source_value(record, metadata, source))


def tags_of(record: Mapping[str, object], metadata: Mapping[str, object]) -> list[str]:
    """The tags of every tag source, in the table's order."""
    return [
        tag
        for source in FIELDS["tags"].sources
        for tag in parse_tags(source_value(record, metadata, source), field=source)
    ]


def decoded_metadata(record: Mapping[str, object]) -> tuple[dict[str, object], dict[str, object]]:
    """(the metadata with `spend_logs_metadata` decoded, the metadata the workload rule reads:
    the row's own metadata over the per-request key/values the caller passed in)."""
    metadata = parse_json_object(record.get(METADATA), field=METADATA)
    spend_logs_metadata = parse_json_object(
        metadata.get(SPEND_LOGS_METADATA), field=METADATA_PREFIX + SPEND_LOGS_METADATA
    )
    return (
        {**metadata, SPEND_LOGS_METADATA: spend_logs_metadata},
        {**spend_logs_metadata, **metadata},
    )


def is_batch(call_type: str, metadata: Mapping[str, object]) -> bool:
    if "batch" in call_type.lower():
        return True
    if parse_bool(value_of("batch_api", {}, metadata), field=FIELDS["batch_api"].name):
        return True
    batch_models = value_of("batch_models", {}, metadata)
    return isinstance(batch_models, list) and bool(batch_models)


def operation_of(call_type: str) -> str:
    return OPERATION_BY_CALL_TYPE.get(call_type.lower(), call_type)


def request_from_record(record: Mapping[str, object], line: int) -> CanonicalRequest:
    """One LiteLLM record as a canonical request; raises `RowRejected` naming the field."""
    metadata, identity_metadata = decoded_metadata(record)
    tags = tags_of(record, metadata)

    # Parsed here only to tell streamed calls apart; build_request gets the raw values so a
    # reject quotes what the file says.
    raw_ended_at = value_of("ended_at", record, metadata)
    raw_first_token_at = value_of("first_token_at", record, metadata)
    ended_at = parse_timestamp(raw_ended_at, field=SOURCE_FIELDS.ended_at)
    completion_start = parse_timestamp(raw_first_token_at, field=SOURCE_FIELDS.first_token_at)
    streaming = None
    first_token_at = raw_first_token_at
    if completion_start is not None and ended_at is not None:
        streaming = completion_start < ended_at
        if completion_start == ended_at:
            first_token_at = None

    input_tokens = parse_token_count(
        value_of("input_tokens", record, metadata), field=SOURCE_FIELDS.input_tokens
    )
    output_tokens = parse_token_count(
        value_of("output_tokens", record, metadata), field=SOURCE_FIELDS.output_tokens
    )
    spend = parse_cost(value_of("cost_usd", record, metadata), field=SOURCE_FIELDS.cost_usd)
    served_from_cache = text(value_of("cache_hit", record, metadata)).lower() == "true"
    if spend == 0 and (input_tokens or 0) + (output_tokens or 0) > 0 and not served_from_cache:
        spend = None

    call_type = text(value_of("operation", record, metadata))
    return build_request(
        line=line,
        names=SOURCE_FIELDS,
        started_at=value_of("started_at", record, metadata),
        ended_at=raw_ended_at,
        first_token_at=first_token_at,
        model=value_of("model", record, metadata),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_input_tokens=value_of("cached_input_tokens", record, metadata),
        cache_creation_input_tokens=value_of("cache_creation_input_tokens", record, metadata),
        cost_usd=spend,
        streaming=streaming,
        batch_api=is_batch(call_type, metadata),
        status=value_of("status", record, metadata),
        provider=value_of("provider", record, metadata),
        operation=operation_of(call_type),
        team=value_of("team", record, metadata),
        end_user=value_of("end_user", record, metadata),
        caller=value_of("caller", record, metadata),
        request_id=value_of("request_id", record, metadata),
        pool=value_of("pool", record, metadata),
        tags=tags,
        metadata=identity_metadata,
    )
