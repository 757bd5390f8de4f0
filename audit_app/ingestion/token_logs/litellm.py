"""Importer for LiteLLM spend logs (`LiteLLM_SpendLogs` rows exported as CSV, JSON or JSONL).

Column names are LiteLLM's own (`schema.prisma`); `metadata` is JSON text in CSV and an object
in JSON, `request_tags` a JSON list (text in CSV).

The field table and the row mapping (canonical field <- LiteLLM field) are in
`litellm_fields`, shared by the row path here and the fast paths (`litellm_columnar`,
`json_columnar`).

Required columns: request_id, startTime, endTime, model, prompt_tokens, completion_tokens.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import BinaryIO

from audit_app.ingestion.reading import (
    HEAD_BYTES,
    ImportFileError,
    RowReject,
    head_text,
    read_head,
    row_outcome,
)
from audit_app.ingestion.token_logs.base import ColumnarUnsupported, ParsedChunk, chunk_outcomes
from audit_app.ingestion.token_logs.litellm_fields import REQUIRED_COLUMNS, request_from_record
from audit_app.ingestion.token_logs.tabular import (
    head_field_names,
    iter_tabular_records,
    read_json_document,
    read_tabular_requests,
)

# The upload form's choice, and how a sentence names such a file (`audit_app.ingestion.formats`).
LABEL = "LiteLLM spend logs (CSV, JSON, JSONL)"
DESCRIPTION = "a LiteLLM spend log"


def sniff(head: bytes) -> bool:
    """A LiteLLM spend log has `request_id` and `startTime` or `call_type` in its first record."""
    names = head_field_names(head)
    return "request_id" in names and bool({"startTime", "call_type"} & names)


def read(stream: BinaryIO, *, chunk_rows: int) -> Iterator[ParsedChunk]:
    """Parse a LiteLLM spend-log export into chunks of canonical requests and rejects.

    CSV goes through the columnar fast path (`litellm_columnar`) and JSONL through its JSON
    twin (`json_columnar`), whose chunks carry most rows in `ParsedChunk.frame`; a JSON array
    document is laid out as JSON lines (`json_array`) and read as those. Files that fit in the
    64 KiB head are read row by row (`read_rows`): for so few rows the fast path's fixed cost
    is more than the row path takes.
    The JSONL path reads a block it cannot vouch for by rows itself. When the CSV fast path
    meets a file it cannot number lines in, what it yielded is exact and the row path carries
    on after the last line yielded, so callers never see `ColumnarUnsupported`.
    A JSON array found invalid partway raises the row path's `ImportFileError` after some
    chunks were given (the row path raises it before any): callers keep what they add up
    until the end, as the ingest does, and drop it when this raises.
    """
    # Imported here: the columnar paths bring numpy, pandas and pyarrow, which nothing else
    # needs at start-up (every manage.py command, worker and web process would pay for them).
    from audit_app.ingestion.token_logs import json_columnar, litellm_columnar

    head = read_head(stream)
    if len(head) < HEAD_BYTES:
        yield from read_rows(stream, chunk_rows=chunk_rows)
        return
    if head_text(head)[:1] == "[":
        yield from _read_json_array(stream, chunk_rows=chunk_rows)
        return
    _check_is_litellm(head)
    if head_text(head)[:1] == "{":
        if json_columnar.starts_with_whole_record(stream):
            yield from json_columnar.read_jsonl_columnar(stream, chunk_rows=chunk_rows)
        else:
            yield from read_rows(stream, chunk_rows=chunk_rows)
        return
    lines_yielded = 1  # the header
    try:
        for chunk in litellm_columnar.read_csv_columnar(stream, chunk_rows=chunk_rows):
            yield chunk
            lines_yielded += chunk.rows_read
    except ColumnarUnsupported:
        yield from _read_rows_after(stream, chunk_rows=chunk_rows, line=lines_yielded)


def _read_json_array(stream: BinaryIO, *, chunk_rows: int) -> Iterator[ParsedChunk]:
    """A JSON array through the JSONL columnar path, record N as line N (the row path's
    numbering); a document `json_array` leaves to the row path goes there."""
    from audit_app.ingestion.token_logs import json_array, json_columnar

    laid_out = json_array.array_as_lines(stream, required_fields=REQUIRED_COLUMNS)
    if laid_out is None:
        yield from read_rows(stream, chunk_rows=chunk_rows)
        return
    lines, first_record_at = laid_out
    try:
        for chunk in json_columnar.read_jsonl_columnar(
            lines, chunk_rows=chunk_rows, array_records=True
        ):
            yield replace(chunk, bytes_read=first_record_at + chunk.bytes_read)
    except (json_array.ArrayInvalid, ImportFileError) as problem:
        # Not a valid document after all (or a record's bytes not text): the row path reads
        # the document whole and says what is wrong with it, as it would have from the start.
        # The chunks already given are dropped with the upload's result when this raises.
        read_json_document(stream)
        if isinstance(problem, ImportFileError):
            raise
        raise ImportFileError(f"the JSON array could not be read: {problem}") from problem


def read_rows(stream: BinaryIO, *, chunk_rows: int) -> Iterator[ParsedChunk]:
    """`read` without the columnar fast path: every row becomes a request or a reject."""
    _check_is_litellm(read_head(stream))
    yield from read_tabular_requests(
        stream,
        chunk_rows=chunk_rows,
        required_fields=REQUIRED_COLUMNS,
        convert=request_from_record,
    )


def _check_is_litellm(head: bytes) -> None:
    if not sniff(head):
        raise ImportFileError(
            "not a LiteLLM spend log: the first record has no `request_id` together with "
            "`startTime` or `call_type`"
        )


def _read_rows_after(stream: BinaryIO, *, chunk_rows: int, line: int) -> Iterator[ParsedChunk]:
    """The row path over the records that start after `line`."""
    outcomes = (
        record
        if isinstance(record, RowReject)
        else row_outcome(request_from_record, record.fields, record.line)
        for record in iter_tabular_records(stream, required_fields=REQUIRED_COLUMNS)
        if record.line > line
    )
    return chunk_outcomes(outcomes, stream=stream, chunk_rows=chunk_rows)
