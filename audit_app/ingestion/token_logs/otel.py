"""Importer for OpenTelemetry GenAI spans exported as OTLP/JSON.

Accepted shapes: one document `{"resourceSpans": [{"resource": ..., "scopeSpans": [{"spans":
[...]}]}]}`, or JSONL with one such document per line (what the collector's file exporter
writes). Where each canonical field comes from, and the mapping of one span, are in
`otel_fields`, shared with the columnar path (`otel_columnar`) and the OTLP/HTTP receiver.

A reject's line is the JSONL line; in a single document it is the 1-based position of the span
among all spans of the document. A file holding a single line is treated as a single document,
so its rejects still point at a span. Spans that are not calls to a model are counted, and a
last chunk without rows says how many in its `notes` (`otel_fields.IgnoredSpans`).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import BinaryIO

from audit_app.ingestion.reading import (
    HEAD_BYTES,
    ImportFileError,
    RowRejected,
    iter_text_lines,
    read_head,
)
from audit_app.ingestion.token_logs.base import ParsedChunk, RowOutcome, chunk_outcomes
from audit_app.ingestion.token_logs.otel_fields import (
    IgnoredSpans,
    gen_ai_spans,
    iter_line_outcomes,
    json_span_outcome,
    parse_or_reject,
)
from audit_app.ingestion.token_logs.tabular import (
    head_field_names,
    parse_json_line,
    read_json_document,
)

# The upload form's choice, and how a sentence names such a file (`audit_app.ingestion.formats`).
LABEL = "OpenTelemetry GenAI spans (OTLP JSON)"
DESCRIPTION = "an OpenTelemetry trace export"


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
    # Imported here: the columnar path brings numpy, pandas and pyarrow, which nothing else
    # needs at start-up.
    from audit_app.ingestion.token_logs import otel_columnar

    ignored = IgnoredSpans()
    if len(head) >= HEAD_BYTES and otel_columnar.starts_with_two_documents(stream):
        yield from otel_columnar.read_jsonl_columnar(stream, chunk_rows=chunk_rows, ignored=ignored)
    else:
        yield from _read_rows(stream, chunk_rows=chunk_rows, ignored=ignored)
    yield from _ignored_chunk(ignored, stream)


def read_rows(stream: BinaryIO, *, chunk_rows: int) -> Iterator[ParsedChunk]:
    """`read` without the columnar path for JSON lines (`otel_columnar`): span by span."""
    ignored = IgnoredSpans()
    yield from _read_rows(stream, chunk_rows=chunk_rows, ignored=ignored)
    yield from _ignored_chunk(ignored, stream)


def _read_rows(
    stream: BinaryIO, *, chunk_rows: int, ignored: IgnoredSpans
) -> Iterator[ParsedChunk]:
    yield from chunk_outcomes(_iter_outcomes(stream, ignored), stream=stream, chunk_rows=chunk_rows)


def _ignored_chunk(ignored: IgnoredSpans, stream: BinaryIO) -> Iterator[ParsedChunk]:
    """A chunk without rows whose note says which spans were ignored, when any were."""
    if ignored.count:
        yield ParsedChunk(
            requests=[],
            rejects=[],
            rows_read=0,
            bytes_read=stream.seek(0, io.SEEK_END),
            notes=(ignored.sentence(),),
        )


def _iter_outcomes(stream: BinaryIO, ignored: IgnoredSpans) -> Iterator[RowOutcome]:
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
        yield from _iter_document_outcomes(read_json_document(stream), ignored)
        return
    second = next(lines, None)
    if second is None:
        yield from _iter_document_outcomes(first_document, ignored)
        return
    yield from iter_line_outcomes(first[0], first_document, ignored)
    yield from iter_line_outcomes(second[0], parse_or_reject(second[1]), ignored)
    for number, line_text in lines:
        yield from iter_line_outcomes(number, parse_or_reject(line_text), ignored)


def _iter_document_outcomes(document: object, ignored: IgnoredSpans) -> Iterator[RowOutcome]:
    try:
        spans = gen_ai_spans(document, ignored)
    except RowRejected as rejected:
        raise ImportFileError(f"not an OpenTelemetry trace export: {rejected.reason}") from None
    for span in spans:
        yield json_span_outcome(span, line=span.ordinal)
