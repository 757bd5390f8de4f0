"""LiteLLM's StandardLoggingPayload, what its proxy's `generic_api` logging callback posts, as
canonical requests.

Its rules in full: `docs/formats.md`, section "LiteLLM callback payloads".
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import BinaryIO

from audit_app.ingestion.reading import (
    UTF8_BOM,
    ImportFileError,
    RowReject,
    RowRejected,
    display_value,
    read_head,
    row_outcome,
    shorten,
    text,
)
from audit_app.ingestion.token_logs.base import (
    CanonicalRequest,
    ParsedChunk,
    SourceFields,
    build_request,
)
from audit_app.ingestion.token_logs.coerce import (
    ERROR_WORDS,
    first_text,
    parse_bool,
    parse_cost,
    parse_json_object,
    parse_tags,
    parse_timestamp,
    parse_token_count,
)
from audit_app.ingestion.token_logs.litellm_fields import (
    is_batch,
    nested,
    operation_of,
    usage_paths,
    value_of,
)
from audit_app.ingestion.token_logs.tabular import head_field_names, read_tabular_requests

# The upload form's choice, and how a sentence names such a file (`audit_app.ingestion.formats`).
LABEL = "LiteLLM callback payloads (StandardLoggingPayload JSON, JSONL)"
DESCRIPTION = "a LiteLLM callback log"
REQUIRED_FIELDS = ("id", "startTime", "endTime")
# Besides the required ones, a payload has some of these; a spend log has `request_id` instead
# of `id`.
PAYLOAD_FIELDS = frozenset({"call_type", "response_cost", "prompt_tokens"})
SPEND_LOG_ID = "request_id"

JSON_ARRAY = "json_array"
NDJSON = "ndjson"
SINGLE = "single"
LOG_FORMATS = (JSON_ARRAY, NDJSON, SINGLE)
EXPECTED_BODY = (
    "LiteLLM StandardLoggingPayload records: a JSON array (log_format json_array), one JSON "
    "object per line (ndjson) or one JSON object (single)"
)
CALL_TYPE_PREFIX = "litellm."
SOURCE_FIELDS = SourceFields(
    started_at="startTime",
    ended_at="endTime",
    first_token_at="completionStartTime",
    model="model",
    input_tokens="prompt_tokens",
    output_tokens="completion_tokens",
    cached_input_tokens="usage.cached_tokens",
    cost_usd="response_cost",
    streaming="stream",
    batch_api="metadata.batch_api",
    status="status",
)


class PayloadBodyError(Exception):
    """The body is not JSON or NDJSON at all; the message is one sentence naming the line."""

    def __init__(self, message: str, *, line: int) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True, kw_only=True)
class PayloadBatch:
    """What one posted body held: its format, the calls accepted, refused and ignored."""

    log_format: str
    requests: tuple[CanonicalRequest, ...]
    rejects: tuple[RowReject, ...]
    ignored: int
    rows_read: int


@dataclass(frozen=True, kw_only=True)
class PayloadRecord:
    """One record of a body before conversion: its line (or array position) and its JSON."""

    line: int
    value: object


# ---------------------------------------------------------------------------------------------
# The body: json_array, ndjson or single
# ---------------------------------------------------------------------------------------------


def read_payloads(body: bytes) -> PayloadBatch:
    """Every record of a posted body, converted; raises `PayloadBodyError` for a body that is
    not JSON / NDJSON."""
    log_format, records = split_body(body)
    requests: list[CanonicalRequest] = []
    rejects: list[RowReject] = []
    ignored = 0
    for record in records:
        if not isinstance(record.value, dict):
            rejects.append(_not_an_object(record, log_format=log_format))
            continue
        if not reached_a_model(record.value):
            ignored += 1
            continue
        outcome = row_outcome(request_from_payload, record.value, record.line)
        if isinstance(outcome, RowReject):
            rejects.append(outcome)
        else:
            requests.append(outcome)
    return PayloadBatch(
        log_format=log_format,
        requests=tuple(requests),
        rejects=tuple(rejects),
        ignored=ignored,
        rows_read=len(records),
    )


def split_body(body: bytes) -> tuple[str, list[PayloadRecord]]:
    """(log_format, records): an array is `json_array`, one object `single`, objects on
    consecutive lines `ndjson`."""
    document_text = _decoded(body)
    stripped = document_text.lstrip()
    if not stripped:
        raise PayloadBodyError(f"The body is empty: expected {EXPECTED_BODY}.", line=1)
    first_line = document_text[: len(document_text) - len(stripped)].count("\n") + 1
    try:
        document = json.loads(document_text, parse_float=Decimal)
    except json.JSONDecodeError as error:
        if error.msg == "Extra data" and stripped.startswith("{"):
            return NDJSON, list(_ndjson_records(document_text))
        raise PayloadBodyError(
            f"The body is not valid JSON at line {error.lineno} column {error.colno}: {error.msg}.",
            line=error.lineno,
        ) from error
    except RecursionError:
        raise PayloadBodyError("The body's JSON is nested too deeply.", line=first_line) from None
    if isinstance(document, list):
        records = [PayloadRecord(line=n, value=value) for n, value in enumerate(document, 1)]
        return JSON_ARRAY, records
    if isinstance(document, dict):
        return SINGLE, [PayloadRecord(line=first_line, value=document)]
    raise PayloadBodyError(
        f"The body is JSON {type(document).__name__} {shorten(display_value(document))!r}: "
        f"expected {EXPECTED_BODY}.",
        line=first_line,
    )


def _decoded(body: bytes) -> str:
    try:
        return body.decode("utf-8").removeprefix(UTF8_BOM)
    except UnicodeDecodeError as error:
        line = body[: error.start].count(b"\n") + 1
        raise PayloadBodyError(
            f"The body is not UTF-8 text: line {line} has a bad byte (at byte {error.start}).",
            line=line,
        ) from error


def _ndjson_records(document_text: str) -> Iterator[PayloadRecord]:
    for number, line_text in enumerate(document_text.split("\n"), start=1):
        if not line_text.strip():
            continue
        try:
            value = json.loads(line_text, parse_float=Decimal)
        except json.JSONDecodeError as error:
            raise PayloadBodyError(
                f"Line {number} of the NDJSON body is not valid JSON: {error.msg} at column "
                f"{error.colno}.",
                line=number,
            ) from error
        except RecursionError:
            raise PayloadBodyError(
                f"Line {number} of the NDJSON body is JSON nested too deeply.", line=number
            ) from None
        yield PayloadRecord(line=number, value=value)


def _not_an_object(record: PayloadRecord, *, log_format: str) -> RowReject:
    where = "record" if log_format == JSON_ARRAY else "line"
    return RowReject(
        line=record.line,
        field=f"({where})",
        value=shorten(display_value(record.value)),
        reason=f"the {where} is not a JSON object (a StandardLoggingPayload).",
    )


# ---------------------------------------------------------------------------------------------
# One payload
# ---------------------------------------------------------------------------------------------


def reached_a_model(record: Mapping[str, object]) -> bool:
    """False for a failure that names no model: the proxy refused it before any LLM call."""
    failed = text(record.get("status")).lower() in ERROR_WORDS
    return not failed or bool(first_text(record.get("model"), record.get("model_group")))


def call_type_of(record: Mapping[str, object]) -> str:
    call_type = text(record.get("call_type"))
    return call_type.removeprefix(CALL_TYPE_PREFIX)


def usage_cached_tokens(
    record: Mapping[str, object],
    metadata: Mapping[str, object],
    hidden_params: Mapping[str, object],
    name: str = "cached_input_tokens",
) -> object:
    """Cached input tokens from the usage LiteLLM logged (see the module docstring); with
    ``name="cache_creation_input_tokens"`` the cache-creation ones."""
    value = value_of(name, {}, metadata)
    paths = usage_paths(name)
    usages = (nested(hidden_params, "usage_object"), nested(record, "response", "usage"))
    for usage in usages:
        if value is not None:
            break
        if isinstance(usage, Mapping):
            for path in paths:
                value = nested(usage, *path)
                if value is not None:
                    break
    return value


def logged_cost(
    record: Mapping[str, object], *, input_tokens: int | None, output_tokens: int | None
) -> Decimal | None:
    """`response_cost`, or None when LiteLLM could not price the call."""
    cost = parse_cost(record.get("response_cost"), field="response_cost")
    if text(record.get("response_cost_failure_debug_info")):
        return None
    served_from_cache = text(record.get("cache_hit")).lower() == "true"
    if cost == 0 and (input_tokens or 0) + (output_tokens or 0) > 0 and not served_from_cache:
        return None
    return cost


def _request_id(record: Mapping[str, object]) -> str:
    request_id = text(record.get("id"))
    if not request_id:
        raise RowRejected(
            field="id",
            value=record.get("id"),
            reason=(
                "`id` is empty: LiteLLM's call id is what tells a re-sent record from a new one."
            ),
        )
    return request_id


def _stream_times(record: Mapping[str, object]) -> tuple[bool | None, object]:
    """(streaming, first_token_at as written or None)."""
    ended_at = parse_timestamp(record.get("endTime"), field="endTime")
    completion_start = parse_timestamp(
        record.get("completionStartTime"), field="completionStartTime"
    )
    streaming = parse_bool(record.get("stream"), field="stream")
    measured = None
    if completion_start is not None and ended_at is not None:
        measured = completion_start < ended_at
    if streaming is None:
        streaming = measured
    first_token_at = record.get("completionStartTime") if streaming and measured else None
    return streaming, first_token_at


def request_from_payload(record: Mapping[str, object], line: int) -> CanonicalRequest:
    """One StandardLoggingPayload as a canonical request; raises `RowRejected` naming the
    first bad field."""
    request_id = _request_id(record)
    metadata = parse_json_object(record.get("metadata"), field="metadata")
    hidden_params = parse_json_object(record.get("hidden_params"), field="hidden_params")
    spend_logs_metadata = parse_json_object(
        metadata.get("spend_logs_metadata"), field="metadata.spend_logs_metadata"
    )
    requester_metadata = parse_json_object(
        metadata.get("requester_metadata"), field="metadata.requester_metadata"
    )
    # The payload's own metadata wins over what the caller attached to its request.
    identity_metadata = {**requester_metadata, **spend_logs_metadata, **metadata}
    tags = parse_tags(record.get("request_tags"), field="request_tags") + parse_tags(
        metadata.get("tags"), field="metadata.tags"
    )
    streaming, first_token_at = _stream_times(record)
    input_tokens = parse_token_count(record.get("prompt_tokens"), field="prompt_tokens")
    output_tokens = parse_token_count(record.get("completion_tokens"), field="completion_tokens")
    call_type = call_type_of(record)
    batch_models = hidden_params.get("batch_models")
    return build_request(
        line=line,
        names=SOURCE_FIELDS,
        started_at=record.get("startTime"),
        ended_at=record.get("endTime"),
        first_token_at=first_token_at,
        model=first_text(record.get("model"), record.get("model_group")),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_input_tokens=usage_cached_tokens(record, metadata, hidden_params),
        cache_creation_input_tokens=usage_cached_tokens(
            record, metadata, hidden_params, "cache_creation_input_tokens"
        ),
        cost_usd=logged_cost(record, input_tokens=input_tokens, output_tokens=output_tokens),
        streaming=streaming,
        batch_api=is_batch(call_type, metadata)
        or (isinstance(batch_models, list) and bool(batch_models)),
        status=record.get("status"),
        provider=record.get("custom_llm_provider"),
        operation=operation_of(call_type),
        team=first_text(
            metadata.get("user_api_key_team_id"), metadata.get("user_api_key_team_alias")
        ),
        end_user=first_text(
            record.get("end_user"),
            metadata.get("user_api_key_end_user_id"),
            metadata.get("user_api_key_user_id"),
        ),
        caller=first_text(metadata.get("user_api_key_alias"), metadata.get("user_api_key_hash")),
        request_id=request_id,
        pool=first_text(
            metadata.get("pool"), spend_logs_metadata.get("pool"), requester_metadata.get("pool")
        ),
        tags=tags,
        metadata=identity_metadata,
    )


# ---------------------------------------------------------------------------------------------
# As an upload format: a file of payloads
# ---------------------------------------------------------------------------------------------


def sniff(head: bytes) -> bool:
    """A payload file's first record has `id`, `startTime` and `endTime`, one of `call_type`,
    `response_cost` or `prompt_tokens`, and no `request_id` (that is a spend log)."""
    names = head_field_names(head)
    return (
        set(REQUIRED_FIELDS) <= names and bool(PAYLOAD_FIELDS & names) and SPEND_LOG_ID not in names
    )


def read(stream: BinaryIO, *, chunk_rows: int) -> Iterator[ParsedChunk]:
    """Parse a JSON array or JSONL file of payloads into chunks of canonical requests and
    rejects, each record as `request_from_payload` maps it."""
    if not sniff(read_head(stream)):
        raise ImportFileError(
            "not a file of LiteLLM callback payloads: the first record has no `id`, `startTime` "
            "and `endTime` together with `call_type`, `response_cost` or `prompt_tokens`"
        )
    yield from read_tabular_requests(
        stream,
        chunk_rows=chunk_rows,
        required_fields=REQUIRED_FIELDS,
        convert=request_from_payload,
    )
