"""Importer for the generic request log: CSV, JSON array or JSONL with the canonical columns.

Use this format for any gateway or in-house log the product has no importer for. Column order
does not matter and unknown columns are ignored. Empty cells and `NULL` count as missing.

| column | required | meaning |
|---|---|---|
| `started_at` | yes | when the request was sent (forms below) |
| `ended_at` | yes | when the last token, or the error, arrived |
| `first_token_at` | no | when the first token arrived (streamed requests); gives TTFT and TPOT |
| `workload` | no | workload name; when empty the caller, then `team/model`, names it |
| `team` | no | owning team |
| `end_user` | no | the end user the request served |
| `caller` | no | API key alias or service identity that sent the request |
| `provider` | no | `openai`, `anthropic`, `aws.bedrock`, `vllm`, ... |
| `model` | yes | model name as billed |
| `operation` | no | `chat`, `completion`, `embedding`, ... |
| `streaming` | no | true / false |
| `batch_api` | no | true when sent through a batch API (default false) |
| `input_tokens` | yes | prompt tokens, cached ones included (may be empty on an error row) |
| `output_tokens` | yes | completion tokens (may be empty on an error or embedding row) |
| `cached_input_tokens` | no | input tokens read from the prompt cache (default 0) |
| `cache_creation_input_tokens` | no | input tokens written to the prompt cache (default 0) |
| `cost_usd` | no | cost the source computed, in USD; empty = priced from a price card |
| `status` | no | `success` (default) or `error`; `failure`, `failed`, HTTP codes work |
| `request_id` | no | the request's id in the source system |
| `pool` | no | self-hosted serving pool the request ran on |

Timestamps: ISO 8601 (`2024-05-01T12:00:00Z`, `2024-05-01 12:00:00.250`, `...+02:00`; no
zone means UTC) or epoch seconds / ms / µs / ns. Booleans: true/false, yes/no, 1/0.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import BinaryIO

from audit_app.ingestion.reading import ImportFileError, read_head, text
from audit_app.ingestion.token_logs.base import (
    CanonicalRequest,
    ParsedChunk,
    SourceFields,
    build_request,
)
from audit_app.ingestion.token_logs.tabular import head_field_names, read_tabular_requests

# The upload form's choice, and how a sentence names such a file (`audit_app.ingestion.formats`).
LABEL = "Generic CSV / JSONL (canonical columns)"
DESCRIPTION = "a generic request log"
COLUMNS = (
    "started_at",
    "ended_at",
    "first_token_at",
    "workload",
    "team",
    "end_user",
    "caller",
    "provider",
    "model",
    "operation",
    "streaming",
    "batch_api",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "cache_creation_input_tokens",
    "cost_usd",
    "status",
    "request_id",
    "pool",
)
REQUIRED_COLUMNS = ("started_at", "ended_at", "model", "input_tokens", "output_tokens")
SOURCE_FIELDS = SourceFields()


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
    return build_request(
        line=line,
        names=SOURCE_FIELDS,
        started_at=record.get("started_at"),
        ended_at=record.get("ended_at"),
        first_token_at=record.get("first_token_at"),
        model=record.get("model"),
        input_tokens=record.get("input_tokens"),
        output_tokens=record.get("output_tokens"),
        cached_input_tokens=record.get("cached_input_tokens"),
        cache_creation_input_tokens=record.get("cache_creation_input_tokens"),
        cost_usd=record.get("cost_usd"),
        streaming=record.get("streaming"),
        batch_api=record.get("batch_api"),
        status=record.get("status"),
        provider=record.get("provider"),
        operation=record.get("operation"),
        team=record.get("team"),
        end_user=record.get("end_user"),
        caller=record.get("caller"),
        request_id=record.get("request_id"),
        pool=record.get("pool"),
        # The explicit workload column is step 2 of the identity rule (a metadata `workload`),
        # so an empty cell still falls back to the caller and then team/model.
        metadata={"workload": text(record.get("workload"))},
    )
