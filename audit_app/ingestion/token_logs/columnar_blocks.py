"""Reading a LiteLLM CSV export as parsed blocks of whole lines, for `litellm_columnar`.

The fast path needs every physical line to hold exactly one record (record k of the data on
line k + 2); each block's bytes are checked for what would break that or make the csv module
read them differently, and `ColumnarUnsupported` is raised before the block is handed over
(the list is in `litellm_columnar`'s docstring).
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

from audit_app.ingestion.reading import (
    CSV_FIELD_SIZE_LIMIT,
    ImportFileError,
    in_backticks,
    iter_text_lines,
    missing_message,
)
from audit_app.ingestion.token_logs import litellm_fields
from audit_app.ingestion.token_logs.base import ColumnarUnsupported

# The columns the mapping reads (`litellm_fields.COLUMNS`); nothing else is converted.
MAPPED_COLUMNS = litellm_fields.COLUMNS
MIN_BLOCK_BYTES = 1 << 20
MAX_BLOCK_BYTES = 64 << 20
# A block is read, checked and parsed in pieces of at most this many bytes (see `parsed_blocks`).
PIECE_BYTES = 16 << 20
LF = 0x0A
CR = 0x0D
NUL = 0x00
UTF8_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, kw_only=True)
class Header:
    names: list[str]
    end: int  # byte position just after the header line


@dataclass(frozen=True, kw_only=True)
class Block:
    """A run of whole lines of the file, parsed."""

    offset: int  # file position of the block's first byte
    size: int
    line_ends: np.ndarray  # position of every `\n`, relative to `offset`
    table: pa.Table

    def position_after(self, rows: int) -> int:
        """The file position just after the block's first `rows` lines."""
        if rows <= len(self.line_ends):
            return self.offset + int(self.line_ends[rows - 1]) + 1
        return self.offset + self.size


def read_header(stream: BinaryIO) -> Header:
    """The header's column names, read with the csv module exactly as the row path reads it."""
    reader = csv.reader(iter_text_lines(stream))
    try:
        row = next(reader, None)
    except csv.Error as error:
        raise ColumnarUnsupported(f"line 1: {error}") from error
    if row is None or not row or (len(row) == 1 and not row[0].strip()):
        raise ColumnarUnsupported("the file does not start with its header line")
    if reader.line_num != 1:
        raise ColumnarUnsupported("the header spans more than one line")
    names = [name.strip() for name in row]
    missing = [name for name in litellm_fields.REQUIRED_COLUMNS if name not in names]
    if missing:
        raise ImportFileError(missing_message("line 1", noun="column", names=in_backticks(missing)))
    if len(set(names)) != len(names):
        raise ColumnarUnsupported("the header repeats a column name")
    return Header(names=names, end=stream.tell())


def block_bytes_for(head: bytes, *, chunk_rows: int) -> int:
    """A block of about `chunk_rows` rows, judged from the average line in the head."""
    line_bytes = len(head) / max(head.count(b"\n"), 1)
    # A little under, so a block rarely leaves a sliver of a chunk behind.
    return int(min(max(0.9 * line_bytes * chunk_rows, MIN_BLOCK_BYTES), MAX_BLOCK_BYTES))


def parsed_blocks(stream: BinaryIO, *, header: Header, block_bytes: int) -> Iterator[Block]:
    """The file after the header as parsed blocks of about `block_bytes`, each checked line by
    line.

    pyarrow and numpy release the GIL, so the next block is read, checked and parsed in a
    background thread while the caller converts the current one. An error preparing a block
    surfaces only when the caller asks for that block.

    A block is read, checked and parsed in pieces of at most PIECE_BYTES, joined without
    copying. Buffers that size are reused by the allocator, where a 64 MiB one is mapped afresh
    for every block and its pages faulted in again, which costs time and memory. Blocks stay
    large because each converted chunk costs the caller a fixed amount of work.
    """
    options = _CsvOptions(header.names)
    piece_bytes = min(block_bytes, PIECE_BYTES)
    pieces_per_block = -(-block_bytes // piece_bytes)
    runs = iter_line_runs(stream, start=header.end, block_bytes=piece_bytes)

    def prepare_next() -> Block | None:
        pieces = [_parsed_piece(run, options) for run in itertools.islice(runs, pieces_per_block)]
        if not pieces:
            return None
        if len(pieces) == 1:
            return pieces[0]
        first = pieces[0]
        return Block(
            offset=first.offset,
            size=sum(piece.size for piece in pieces),
            line_ends=np.concatenate(
                [piece.line_ends + (piece.offset - first.offset) for piece in pieces]
            ),
            table=pa.concat_tables([piece.table for piece in pieces]),
        )

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="litellm-csv") as pool:
        upcoming = pool.submit(prepare_next)
        while (block := upcoming.result()) is not None:
            upcoming = pool.submit(prepare_next)
            yield block


def longest_line(line_ends: np.ndarray, size: int) -> int:
    """The longest line's length, its `\n` included, in `size` bytes whose newlines are at
    `line_ends` (the last line may have none)."""
    if size == 0:
        return 0
    return int(np.diff(np.concatenate(([-1], line_ends, [size - 1]))).max())


def _parsed_piece(run: tuple[bytes, int, int], options: _CsvOptions) -> Block:
    data, size, offset = run
    line_ends = _check_lines(data, size)
    table = options.parse(data, size, longest=longest_line(line_ends, size))
    lines = len(line_ends) + (data[size - 1] != LF)
    if table.num_rows != lines:
        raise ColumnarUnsupported(
            f"{table.num_rows} records on {lines} lines from byte {offset} "
            "(a quoted value spans lines)"
        )
    return Block(offset=offset, size=size, line_ends=line_ends, table=table)


def iter_line_runs(
    stream: BinaryIO, *, start: int, block_bytes: int
) -> Iterator[tuple[bytes, int, int]]:
    """(data, size, offset) triples: data[:size] is a run of whole lines at file position
    offset, and the runs cover the stream from `start`.

    The bytes after the last line end are read again with the next run rather than copied.
    A line longer than a block makes the read grow until the line ends; only the file's last
    line may lack a newline.
    """
    offset = start
    read_bytes = block_bytes
    while True:
        stream.seek(offset)
        data = stream.read(read_bytes)
        if not data:
            return
        size = data.rfind(b"\n") + 1
        if size == 0:
            if stream.read(1):
                read_bytes *= 2
                continue
            size = len(data)
        yield data, size, offset
        offset += size
        read_bytes = block_bytes


def _check_lines(data: bytes, size: int) -> np.ndarray:
    """Positions of every `\n` in data[:size]; raises `ColumnarUnsupported` for bytes that
    the csv module would read differently from pyarrow or that would shift line numbers."""
    raw = np.frombuffer(data, np.uint8, count=size)
    controls = np.flatnonzero(raw <= CR)
    kinds = raw[controls]
    if (kinds == NUL).any():
        raise ColumnarUnsupported("a NUL byte")
    line_ends: np.ndarray = controls[kinds == LF]
    returns = controls[kinds == CR]
    if returns.size and (returns[-1] + 1 >= size or (raw[returns + 1] != LF).any()):
        raise ColumnarUnsupported("a carriage return that does not end a line")
    line_starts = np.concatenate(([0], line_ends[:-1] + 1))
    line_lengths = line_ends - line_starts
    if (line_lengths == 0).any() or ((line_lengths == 1) & (raw[line_starts] == CR)).any():
        raise ColumnarUnsupported("an empty line")
    last_line = size - (int(line_ends[-1]) + 1 if line_ends.size else 0)
    if max(last_line, int(line_lengths.max(initial=0))) > CSV_FIELD_SIZE_LIMIT:
        # The row path's csv module refuses a cell that long; it reports it.
        raise ColumnarUnsupported("a line longer than the csv module's field limit")
    if data.startswith(UTF8_BOM):
        # pyarrow drops a BOM at the start of its input; the csv module keeps it as text.
        raise ColumnarUnsupported("a byte order mark inside the file")
    if not data.isascii() and not is_utf8(one_binary_value(data, size)):
        raise ColumnarUnsupported("invalid UTF-8")
    return line_ends


def bit_words(flags: np.ndarray) -> np.ndarray:
    """`flags` as bits, 64 to a little-endian word: flag i is bit i % 64 of word i // 64 (the
    last word padded with zeros)."""
    bits = np.packbits(flags, bitorder="little")
    return np.concatenate((bits, _ZERO_BYTES[: -bits.size % 8])).view("<u8")


_ZERO_BYTES = np.zeros(8, np.uint8)


def one_binary_value(payload: bytes | bytearray, size: int | None = None) -> pa.Array:
    """`payload` (its first `size` bytes) as an array of one binary value, without copying
    it."""
    whole = pa.py_buffer(np.array([0, len(payload) if size is None else size], np.int64))
    return pa.Array.from_buffers(pa.large_binary(), 1, [None, whole, pa.py_buffer(payload)])


def is_utf8(run: pa.Array) -> bool:
    """True when every value of the binary array `run` is valid UTF-8 (checked by Arrow)."""
    try:
        run.cast(pa.large_string())
    except pa.ArrowInvalid:
        return False
    return True


class _CsvOptions:
    """pyarrow options that read the mapped columns as the exact strings of the file."""

    def __init__(self, names: list[str]) -> None:
        included = [name for name in MAPPED_COLUMNS if name in names]
        self.names = names
        self.parse_options = pa_csv.ParseOptions(newlines_in_values=False, ignore_empty_lines=False)
        self.convert_options = pa_csv.ConvertOptions(
            column_types={name: pa.string() for name in included},
            include_columns=included,
            strings_can_be_null=False,
            # `_check_lines` has validated the whole run, excluded columns included.
            check_utf8=False,
        )

    def parse(self, data: bytes, size: int, *, longest: int) -> pa.Table:
        read_options = pa_csv.ReadOptions(
            column_names=self.names,
            use_threads=True,
            # A few pieces per block so both cores parse, each holding the longest row twice:
            # pyarrow refuses a row longer than its block, which sent the whole block to the
            # row path (a row with a long prompt in `messages`).
            block_size=max(MIN_BLOCK_BYTES, size // 4, min(size, 2 * longest)),
        )
        try:
            return pa_csv.read_csv(
                pa.BufferReader(pa.py_buffer(data).slice(0, size)),
                read_options=read_options,
                parse_options=self.parse_options,
                convert_options=self.convert_options,
            )
        except pa.ArrowInvalid as error:
            raise ColumnarUnsupported(f"a malformed row ({error})") from error
