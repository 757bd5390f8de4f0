"""Token-log importers: one module per format, registered in one table.

Every importer module has the same two functions:
- `sniff(head: bytes) -> bool`: does the file's first 64 KiB look like this format?
- `read(stream, *, chunk_rows) -> Iterator[ParsedChunk]`: parse a seekable binary stream into
  chunks of canonical requests and row rejects. Importers parse and validate; they never touch
  a database.

`read_requests` is the entry point for the ingest service: it detects the format (unless one is
forced) and delegates. Detection tries the formats in `DETECTION_ORDER` and the first whose
`sniff` accepts the head wins: OpenTelemetry (`resourceSpans`) first because its marker cannot
appear in a flat record, then LiteLLM (`request_id` + `startTime`/`call_type`), then LiteLLM's
callback payloads (`id` + `startTime` + `endTime`, no `request_id`), then generic
(`started_at` + `input_tokens`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO, Protocol

from audit_app.ingestion.reading import (
    AUTO_FORMAT,
    ImportFileError,
    RowReject,
    check_head,
    read_head,
)
from audit_app.ingestion.token_logs import generic, litellm, litellm_payload, otel
from audit_app.ingestion.token_logs.base import CanonicalRequest, ColumnarUnsupported, ParsedChunk

__all__ = [
    "DETECTION_ORDER",
    "EXPECTED_FORMATS",
    "IMPORTERS",
    "CanonicalRequest",
    "ColumnarUnsupported",
    "ImportFileError",
    "Importer",
    "ParsedChunk",
    "RowReject",
    "detect_format",
    "read_requests",
]

DEFAULT_CHUNK_ROWS = 20_000


class Importer(Protocol):
    """What every importer module provides."""

    LABEL: str
    DESCRIPTION: str

    def sniff(self, head: bytes) -> bool: ...

    def read(self, stream: BinaryIO, *, chunk_rows: int) -> Iterator[ParsedChunk]: ...


IMPORTERS: dict[str, Importer] = {
    "litellm": litellm,
    "otel": otel,
    "litellm-callback": litellm_payload,
    "generic": generic,
}
DETECTION_ORDER = ("otel", "litellm", "litellm-callback", "generic")
EXPECTED_FORMATS = (
    "a LiteLLM spend log (`request_id`, `startTime`), LiteLLM callback payloads (`id`, "
    "`startTime`, `endTime`), OpenTelemetry spans (`resourceSpans`) or the generic columns "
    "(`started_at`, `input_tokens`)"
)


def detect_format(head: bytes) -> str:
    """The name of the first importer (in `DETECTION_ORDER`) that recognises the file's head."""
    check_head(head)
    for name in DETECTION_ORDER:
        if IMPORTERS[name].sniff(head):
            return name
    raise ImportFileError(f"the file is not a recognised token log: expected {EXPECTED_FORMATS}")


def read_requests(
    stream: BinaryIO, *, format: str = AUTO_FORMAT, chunk_rows: int = DEFAULT_CHUNK_ROWS
) -> Iterator[ParsedChunk]:
    """Parse a token log in chunks, detecting its format from the first 64 KiB when `auto`.

    All errors, including detection failures, are raised while iterating.
    """
    if format != AUTO_FORMAT and format not in IMPORTERS:
        known = ", ".join([AUTO_FORMAT, *IMPORTERS])
        raise ValueError(f"unknown token-log format {format!r}; expected one of {known}")
    if format == AUTO_FORMAT:
        format = detect_format(read_head(stream))
    yield from IMPORTERS[format].read(stream, chunk_rows=chunk_rows)
