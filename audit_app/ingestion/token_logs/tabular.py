"""Reading token-log files: one JSON document, JSON lines, and tabular files (CSV, JSON array
or JSONL with one flat record per row) whose records an importer converts with `build_request`.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import BinaryIO

from audit_app.ingestion.reading import (
    UTF8_BOM,
    ImportFileError,
    Record,
    RowReject,
    RowRejected,
    csv_header,
    csv_record,
    decode_text,
    display_value,
    head_text,
    in_backticks,
    is_empty_line,
    iter_csv_rows,
    iter_text_lines,
    missing_message,
    read_head,
    row_outcome,
    shorten,
)
from audit_app.ingestion.token_logs.base import CanonicalRequest, ParsedChunk, chunk_outcomes

# Used only when the first record of a JSON file does not fit in the head: collects every
# `"key":` so detection still works on a 5 MB first record.
_JSON_KEY = re.compile(r'"([^"\\]+)"\s*:')


# ---------------------------------------------------------------------------------------------
# Reading JSON
# ---------------------------------------------------------------------------------------------


def read_json_document(stream: BinaryIO) -> object:
    """Parse the whole stream as one JSON document.

    A single JSON document cannot be parsed incrementally with the standard library, so it is
    loaded whole; formats that can be large (CSV, JSONL) are streamed instead.
    """
    stream.seek(0)
    raw = stream.read()
    document_text = decode_text(raw, offset=0).removeprefix(UTF8_BOM)
    try:
        # Decimal keeps money exact: a float would turn 0.1 into 0.1000000000000000055...
        return json.loads(document_text, parse_float=Decimal)
    except json.JSONDecodeError as error:
        if error.pos >= len(document_text.rstrip()) or error.msg.startswith("Unterminated"):
            last_line = document_text.rstrip().count("\n") + 1
            raise ImportFileError(
                f"truncated JSON: the document ends before it closes (line {last_line})"
            ) from error
        raise ImportFileError(
            f"not valid JSON at line {error.lineno} column {error.colno}: {error.msg}"
        ) from error
    except RecursionError:
        raise ImportFileError("the JSON document is nested too deeply to read") from None


def parse_json_line(line_text: str) -> object:
    """One JSONL line; a malformed line rejects that line only."""
    try:
        return json.loads(line_text, parse_float=Decimal)
    except json.JSONDecodeError as error:
        raise RowRejected(
            field="(line)",
            value=line_text.strip(),
            reason=f"the line is not valid JSON: {error.msg} at column {error.colno}.",
        ) from error
    except RecursionError:
        raise RowRejected(
            field="(line)", value=line_text.strip(), reason="the line's JSON is nested too deeply."
        ) from None


# ---------------------------------------------------------------------------------------------
# Tabular files: CSV, JSON array or JSONL with one flat record per row (LiteLLM, generic)
# ---------------------------------------------------------------------------------------------


def head_field_names(head: bytes) -> set[str]:
    """The field names of the file's first record, for format sniffing.

    CSV: the header row. JSON array / JSONL: the keys of the first record, or - when that
    record does not fit in the head - every quoted key in the head.
    """
    start = head_text(head)
    if not start:
        return set()
    if start[0] in "[{":
        decoder = json.JSONDecoder()
        first_record_at = 1 if start[0] == "[" else 0
        try:
            first_record, _ = decoder.raw_decode(start[first_record_at:].lstrip())
        except json.JSONDecodeError:
            return set(_JSON_KEY.findall(start))
        except RecursionError:
            raise ImportFileError("the JSON document is nested too deeply to read") from None
        return set(first_record) if isinstance(first_record, dict) else set()
    header_line = start.splitlines()[0]
    return {name.strip() for name in next(csv.reader([header_line]), [])}


def iter_tabular_records(
    stream: BinaryIO, *, required_fields: Sequence[str]
) -> Iterator[Record | RowReject]:
    """Records of a CSV, JSON array or JSONL file, told apart by the first character."""
    start = head_text(read_head(stream))
    if start.startswith("["):
        return _iter_json_array_records(stream, required_fields=required_fields)
    if start.startswith("{"):
        return _iter_jsonl_records(stream, required_fields=required_fields)
    return _iter_csv_records(stream, required_fields=required_fields)


def _iter_csv_records(
    stream: BinaryIO, *, required_fields: Sequence[str]
) -> Iterator[Record | RowReject]:
    rows = iter_csv_rows(stream, is_blank=is_empty_line)
    for header_line, header_row in rows:
        header = csv_header(header_row)
        missing = [name for name in required_fields if name not in header]
        if missing:
            raise ImportFileError(
                missing_message(f"line {header_line}", noun="column", names=in_backticks(missing))
            )
        for line, row in rows:
            yield csv_record(line, row, header)


def _check_first_record(
    fields: Mapping[str, object], *, where: str, required_fields: Sequence[str]
) -> None:
    """The first record plays the role of a CSV header: if it lacks a required field the file
    is the wrong shape, and rejecting every row one by one would bury that."""
    missing = [name for name in required_fields if name not in fields]
    if missing:
        raise ImportFileError(missing_message(where, noun="field", names=in_backticks(missing)))


def _iter_jsonl_records(
    stream: BinaryIO, *, required_fields: Sequence[str]
) -> Iterator[Record | RowReject]:
    checked = False
    for line_number, line_text in enumerate(iter_text_lines(stream), start=1):
        if not line_text.strip():
            continue
        record = jsonl_record(line_text, line=line_number)
        if isinstance(record, RowReject):
            yield record
            continue
        if not checked:
            _check_first_record(
                record.fields, where=f"line {line_number}", required_fields=required_fields
            )
            checked = True
        yield record


def jsonl_record(line_text: str, *, line: int) -> Record | RowReject:
    """One non-blank JSONL line as a record, or the line's reject (not JSON, not an object)."""
    try:
        fields = parse_json_line(line_text)
    except RowRejected as rejected:
        return rejected.to_reject(line=line)
    if not isinstance(fields, dict):
        return RowReject(
            line=line,
            field="(line)",
            value=shorten(line_text.strip()),
            reason="the line is not a JSON object.",
        )
    return Record(line=line, fields=fields)


def not_an_object(record: object, *, position: int) -> RowReject:
    """The reject of an item of a JSON array that is not an object (the row path's, which the
    columnar path gives as well)."""
    return RowReject(
        line=position,
        field="(record)",
        value=shorten(display_value(record)),
        reason="the record is not a JSON object.",
    )


def _iter_json_array_records(
    stream: BinaryIO, *, required_fields: Sequence[str]
) -> Iterator[Record | RowReject]:
    document = read_json_document(stream)
    if not isinstance(document, list):
        raise ImportFileError("the JSON document is not a list of records")
    # A JSON array has no useful physical lines (exports are often one line), so a record's
    # "line" is its 1-based position in the array.
    checked = False
    for position, record in enumerate(document, start=1):
        if not isinstance(record, dict):
            yield not_an_object(record, position=position)
            continue
        if not checked:
            _check_first_record(record, where=f"record {position}", required_fields=required_fields)
            checked = True
        yield Record(line=position, fields=record)


def read_tabular_requests(
    stream: BinaryIO,
    *,
    chunk_rows: int,
    required_fields: Sequence[str],
    convert: Callable[[Mapping[str, object], int], CanonicalRequest],
) -> Iterator[ParsedChunk]:
    """Read a CSV / JSON / JSONL file of flat records and convert each with `convert`."""
    records = iter_tabular_records(stream, required_fields=required_fields)
    outcomes = (
        record
        if isinstance(record, RowReject)
        else row_outcome(convert, record.fields, record.line)
        for record in records
    )
    return chunk_outcomes(outcomes, stream=stream, chunk_rows=chunk_rows)
