"""Importer for the generic request log: CSV, JSON array or JSONL with the canonical columns.

Its rules in full: `docs/formats.md`, section "The generic request log".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, BinaryIO

from audit_app.ingestion.reading import ImportFileError, read_head, text
from audit_app.ingestion.token_logs.base import (
    CanonicalRequest,
    ParsedChunk,
    build_request,
)
from audit_app.ingestion.token_logs.fields import Field, Kind, source_fields
from audit_app.ingestion.token_logs.tabular import head_field_names, read_tabular_requests

# The upload form's choice, and how a sentence names such a file (`audit_app.ingestion.formats`).
LABEL = "Generic CSV / JSONL (canonical columns)"
DESCRIPTION = "a generic request log"
# The canonical columns, each its own one source (the table above).
FIELDS: dict[str, Field] = {
    "started_at": Field(("started_at",), Kind.TIMESTAMP, required=True),
    "ended_at": Field(("ended_at",), Kind.TIMESTAMP, required=True),
    "first_token_at": Field(("first_token_at",), Kind.TIMESTAMP),
    "workload": Field(("workload",), Kind.TEXT),
    "team": Field(("team",), Kind.TEXT),
    "end_user": Field(("end_user",), Kind.TEXT),
    "caller": Field(("caller",), Kind.TEXT),
    "provider": Field(("provider",), Kind.TEXT),
    "model": Field(("model",), Kind.TEXT, required=True),
    "operation": Field(("operation",), Kind.TEXT),
    "streaming": Field(("streaming",), Kind.FLAG),
    "batch_api": Field(("batch_api",), Kind.FLAG),
    "input_tokens": Field(("input_tokens",), Kind.COUNT, required=True),
    "output_tokens": Field(("output_tokens",), Kind.COUNT, required=True),
    "cached_input_tokens": Field(("cached_input_tokens",), Kind.COUNT),
    "cache_creation_input_tokens": Field(("cache_creation_input_tokens",), Kind.COUNT),
    "cost_usd": Field(("cost_usd",), Kind.DECIMAL),
    "status": Field(("status",), Kind.TEXT),
    "request_id": Field(("request_id",), Kind.TEXT),
    "pool": Field(("pool",), Kind.TEXT),
}
COLUMNS = tuple(field.sources[0] for field in FIELDS.values())
REQUIRED_COLUMNS = tuple(field.sources[0] for field in FIELDS.values() if field.required)
SOURCE_FIELDS = source_fields(FIELDS)


def sniff(head: bytes) -> bool:
    """A generic log has `started_at` and `input_tokens` in its first record."""
    return {"started_at", "input_tokens"} <= head_field_names(head)


def read(stream: BinaryIO, *, chunk_rows: int) -> Iterator[ParsedChunk]:
    """Parse a generic request log into chunks of canonical requests and rejects."""
    if not sniff(read_head(stream)):
        raise ImportFileError(
            "not a generic request log: the first record has no `started_at` and "
            "`input_tokens` columns"
        )
    yield from read_tabular_requests(
        stream,
        chunk_rows=chunk_rows,
        required_fields=REQUIRED_COLUMNS,
        convert=_request_from_record,
    )


def _request_from_record(record: Mapping[str, object], line: int) -> CanonicalRequest:
    # Any: each value goes to the keyword of `build_request` named after its field.
    values: dict[str, Any] = {name: record.get(field.sources[0]) for name, field in FIELDS.items()}
    # The explicit workload column is step 2 of the identity rule (a metadata `workload`), so
    # an empty cell still falls back to the caller and then team/model.
    workload = text(values.pop("workload"))
    return build_request(line=line, names=SOURCE_FIELDS, metadata={"workload": workload}, **values)
