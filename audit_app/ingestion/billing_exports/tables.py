"""Reading a billing export as a table: CSV streamed line by line, Parquet batch by batch,
and the records of either turned into chunks of billing lines by a format's row converter.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, BinaryIO, TypeVar

from audit_app.ingestion.billing_exports.base import (
    PARQUET_MAGIC,
    BillingChunk,
    BillingLine,
    BillingReject,
    ColumnIndex,
    check_line_storable,
    require_columns,
)
from audit_app.ingestion.reading import (
    HEAD_BYTES,
    ImportFileError,
    Record,
    RowReject,
    check_chunk_rows,
    csv_header,
    csv_record,
    group_outcomes,
    head_text,
    is_blank_row,
    iter_csv_rows,
    read_head,
    row_outcome,
)

if TYPE_CHECKING:
    import pyarrow.parquet as pq

PARQUET_BATCH_ROWS = 10_000


# ---------------------------------------------------------------------------------------------
# Tables: CSV (streamed line by line) and Parquet (streamed batch by batch)
# ---------------------------------------------------------------------------------------------


class CsvTable:
    """A CSV file whose header has been read; `records()` streams the rest."""

    def __init__(self, stream: BinaryIO) -> None:
        read_head(stream)
        self._stream = stream
        # Blank lines, and rows of empty cells (",,,," as spreadsheets save them), are not
        # records.
        self._rows = iter_csv_rows(stream, is_blank=is_blank_row)
        first = next(self._rows, None)
        if first is None:
            raise ImportFileError("the file is empty")
        self.header_line, header_row = first
        self.columns = ColumnIndex(csv_header(header_row))
        self.where = f"line {self.header_line}"

    def records(self) -> Iterator[Record | BillingReject]:
        names = self.columns.names
        for line, row in self._rows:
            yield csv_record(line, row, names)

    def position(self) -> int:
        return self._stream.tell()


def parquet_error_message(error: Exception) -> str:
    """One sentence: ours, with pyarrow's first sentence in brackets."""
    detail = str(error).strip().split(". ")[0].rstrip(".")
    return f"the Parquet file cannot be read ({detail})"


def _parquet_file(stream: BinaryIO) -> pq.ParquetFile:
    # Imported here: only a Parquet file needs pyarrow, and importing it costs every process
    # that loads the billing importers (the web's and every manage.py command) ~0.3 s.
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(stream)
    except (pa.ArrowException, OSError, ValueError) as error:
        raise ImportFileError(parquet_error_message(error)) from error


def _parquet_column_names(stream: BinaryIO) -> list[str]:
    return list(_parquet_file(stream).schema_arrow.names)


class ParquetTable:
    """A Parquet file; `records()` streams it in batches of `PARQUET_BATCH_ROWS` rows."""

    def __init__(self, stream: BinaryIO) -> None:
        stream.seek(0, 2)
        self._size = stream.tell()
        stream.seek(0)
        self._file = _parquet_file(stream)
        self.columns = ColumnIndex(self._file.schema_arrow.names)
        self.where = "the Parquet file"
        self._rows_total: int = max(self._file.metadata.num_rows, 1)
        self._rows_done = 0
        self._finished = False

    def records(self) -> Iterator[Record | BillingReject]:
        import pyarrow as pa  # see `_parquet_file`

        ordinal = 0
        try:
            for batch in self._file.iter_batches(batch_size=PARQUET_BATCH_ROWS):
                for row in batch.to_pylist():
                    ordinal += 1
                    self._rows_done = ordinal
                    yield Record(line=ordinal + 1, fields=row)
        except (pa.ArrowException, OSError, ValueError) as error:
            raise ImportFileError(parquet_error_message(error)) from error
        self._finished = True

    def position(self) -> int:
        # Parquet has no byte position per row; progress is the share of rows read, and the
        # whole file once the last batch is done.
        if self._finished:
            return self._size
        return min(self._size, self._size * self._rows_done // self._rows_total)


Table = CsvTable | ParquetTable


def open_table(stream: BinaryIO) -> Table:
    """The file as a CSV or Parquet table, told apart by Parquet's magic bytes."""
    stream.seek(0)
    magic = stream.read(len(PARQUET_MAGIC))
    stream.seek(0)
    if magic == PARQUET_MAGIC:
        return ParquetTable(stream)
    return CsvTable(stream)


def head_columns(head: bytes) -> frozenset[str]:
    """Lower-cased column names from a file's head, for sniffing.

    CSV: the header row. Parquet: the schema, which sits in the footer, so only when the head
    holds the whole file; `read_billing` reads a larger Parquet file's schema from the stream.
    """
    if head.startswith(PARQUET_MAGIC):
        if len(head) >= HEAD_BYTES or not head.endswith(PARQUET_MAGIC):
            return frozenset()
        try:
            return frozenset(name.lower() for name in _parquet_column_names(io.BytesIO(head)))
        except ImportFileError:
            return frozenset()
    start = head_text(head)
    if not start:
        return frozenset()
    header_line = start.splitlines()[0]
    return frozenset(name.strip().lower() for name in next(csv.reader([header_line]), []))


def table_columns(stream: BinaryIO) -> frozenset[str]:
    """Lower-cased column names of a whole file (Parquet: from its footer)."""
    stream.seek(0)
    magic = stream.read(len(PARQUET_MAGIC))
    stream.seek(0)
    if magic == PARQUET_MAGIC:
        return frozenset(name.lower() for name in _parquet_column_names(stream))
    return head_columns(read_head(stream))


# ---------------------------------------------------------------------------------------------
# From records to chunks
# ---------------------------------------------------------------------------------------------

RowConverter = Callable[[Mapping[str, object], int], BillingLine]
Prepare = Callable[[ColumnIndex, str], RowConverter]
Found = TypeVar("Found")


def columns_prepare(
    required: Sequence[Sequence[str]],
    find: Callable[[ColumnIndex], Found],
    build: Callable[[Mapping[str, object], int, Found], BillingLine],
) -> Prepare:
    """The `prepare` of a format that checks its required columns, looks up the columns it
    reads once per file (`find`), and builds each line from a row and those columns."""

    def prepare(columns: ColumnIndex, where: str) -> RowConverter:
        require_columns(columns, where=where, required=required)
        found = find(columns)

        def convert(fields: Mapping[str, object], line: int) -> BillingLine:
            return check_line_storable(build(fields, line, found))

        return convert

    return prepare


def read_table(
    stream: BinaryIO,
    *,
    chunk_rows: int,
    prepare: Prepare,
) -> Iterator[BillingChunk]:
    """Open the file, let the format check its columns and build its row converter, and stream.

    `prepare(columns, where)` raises `ImportFileError` for missing columns (`where` is "line 1"
    or "the Parquet file") and returns the function that turns one record into a line.
    """
    check_chunk_rows(chunk_rows)
    table = open_table(stream)
    convert = prepare(table.columns, table.where)
    outcomes = (
        record
        if isinstance(record, RowReject)
        else row_outcome(convert, record.fields, record.line)
        for record in table.records()
    )
    return chunk_outcomes(outcomes, position=table.position, chunk_rows=chunk_rows)


def chunk_outcomes(
    outcomes: Iterable[BillingLine | BillingReject],
    *,
    position: Callable[[], int],
    chunk_rows: int,
) -> Iterator[BillingChunk]:
    """Group outcomes into chunks of `chunk_rows` rows; the last chunk ends at the file's end.

    `outcomes` must be lazy so `position()` is where the chunk's last row ends. A file with no
    data rows (or trailing blank lines after a full chunk) still yields a final chunk, possibly
    empty, so progress reaches the file size.
    """
    for group in group_outcomes(
        outcomes, chunk_rows=chunk_rows, position=position, end_at_file_end=True
    ):
        yield BillingChunk(
            lines=group.accepted,
            rejects=group.rejects,
            rows_read=group.rows_read,
            bytes_read=group.bytes_read,
        )
