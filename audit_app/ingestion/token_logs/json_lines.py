"""Reading JSONL files as blocks of whole lines for the columnar JSON paths.

`json_columnar` (LiteLLM) and `otel_columnar` (OpenTelemetry) parse each block with
`pyarrow.json` and number the records by their lines, so a block is handed over only when every
line holds exactly one JSON value that `json.loads` would read the same way. `check_block`
raises `JsonBlockUnsupported` for anything else (an empty line, a byte order mark, invalid
UTF-8, a NUL byte, ...); the caller then reads that block with the row path, line by line, as
`lines_of` gives them.
"""

from __future__ import annotations

import functools
import itertools
import threading
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from audit_app.ingestion.reading import decode_text
from audit_app.ingestion.token_logs.columnar_blocks import (
    UTF8_BOM,
    bit_words,
    is_utf8,
    iter_line_runs,
    longest_line,
    one_binary_value,
)

MIN_BLOCK_BYTES = 1 << 20
# Blocks of 8-16 MiB keep the parsing thread and the converting one both busy (larger ones
# leave one waiting); `BlockRun` joins them into whole chunks.
MAX_BLOCK_BYTES = 16 << 20
# Blocks parsed ahead of the one being converted (the converter joins several into a chunk).
PREFETCH_BLOCKS = 4
# Parsed blocks a reader converts together at most (LiteLLM `json_columnar`, `otel_columnar`):
# no more than are parsed ahead, or the parsing threads wait while a long join converts;
# fewer, larger chunks are cheaper for the caller to aggregate.
JOINED_BLOCKS = PREFETCH_BLOCKS
# Threads that check and parse blocks while the caller converts (`parsed_blocks`).
BLOCK_WORKERS = 2
# What pyarrow parses at a time: about 1 MiB is cheapest per byte.
PARSE_BLOCK_BYTES = 1 << 20
# ... unless the lines are long. pyarrow refuses a line longer than its block (the whole block
# then went to the row path: an OTel collector writes one export request of up to thousands of
# spans a line), and copies every line that straddles two of its blocks. Its blocks hold at
# least this many lines of the block's mean length, and twice its longest line (`parse_bytes`;
# the CSV reader does the same for a row with a long prompt).
PARSE_BLOCK_LINES = 16
LF = 0x0A
OPEN_BRACE = 0x7B
UTF8_BOM_TEXT = "\ufeff"
# `json.loads` refuses JSON nested about 1,000 deep (Python's recursion limit); a block with
# nesting anywhere near that is left to the row path, which says so per line.
MAX_NESTING = 200


class JsonBlockUnsupported(Exception):
    """This block has a shape the columnar path cannot read exactly; read it by rows."""


@dataclass(frozen=True, kw_only=True)
class LineBlock:
    """A run of whole lines of the file: data[:size] starts at file position `offset`."""

    data: bytes
    size: int
    offset: int
    first_line: int
    line_ends: np.ndarray  # position of every `\n` in data[:size]

    @property
    def lines(self) -> int:
        return len(self.line_ends) + int(self.size > 0 and self.data[self.size - 1] != LF)

    def line_span(self, index: int) -> tuple[int, int]:
        """(start, end) of line `index` (0-based) within data, its newline included."""
        start = 0 if index == 0 else int(self.line_ends[index - 1]) + 1
        end = int(self.line_ends[index]) + 1 if index < len(self.line_ends) else self.size
        return start, end

    def line_texts(self, indexes: np.ndarray) -> pa.Array:
        """Lines `indexes` (0-based) as a string array, without copying the block."""
        ends = np.append(self.line_ends + 1, self.size)[: self.lines].astype(np.int64)
        offsets = np.concatenate(([0], ends))
        lines = pa.Array.from_buffers(
            pa.large_string(),
            self.lines,
            [None, pa.py_buffer(offsets), pa.py_buffer(self.data)],
        )
        return lines.take(pa.array(indexes))

    def line_text(self, index: int) -> str:
        start, end = self.line_span(index)
        line = decode_text(self.data[start:end], offset=self.offset + start)
        # As `reading.iter_text_lines`: a byte order mark opening the file is not text.
        return line.removeprefix(UTF8_BOM_TEXT) if self.offset + start == 0 else line

    def position_after(self, lines: int) -> int:
        """The file position just after the block's first `lines` lines."""
        if lines <= 0:
            return self.offset
        return self.offset + self.line_span(lines - 1)[1]


@dataclass(frozen=True)
class BlockRun:
    """Consecutive blocks read as one run of lines, numbered across the blocks."""

    blocks: list[LineBlock]

    @property
    def first_line(self) -> int:
        return self.blocks[0].first_line

    @property
    def lines(self) -> int:
        return sum(block.lines for block in self.blocks)

    def _starts(self) -> np.ndarray:
        return np.cumsum([0] + [block.lines for block in self.blocks])

    def _locate(self, index: int) -> tuple[LineBlock, int]:
        for block in self.blocks:
            if index < block.lines:
                return block, index
            index -= block.lines
        raise IndexError(index)

    def line_text(self, index: int) -> str:
        block, line = self._locate(index)
        return block.line_text(line)

    def line_texts(self, indexes: np.ndarray) -> pa.Array:
        """Lines `indexes` (0-based, ascending) as a string array."""
        starts = self._starts()
        which = np.searchsorted(starts, indexes, side="right") - 1
        parts = [
            block.line_texts(indexes[which == number] - starts[number])
            for number, block in enumerate(self.blocks)
            if (which == number).any()
        ]
        return pa.concat_arrays(parts) if parts else pa.array([], pa.large_string())

    def position_after(self, lines: int) -> int:
        block, line = self._locate(lines - 1)
        return block.position_after(line + 1)


def block_bytes_for(head: bytes, *, chunk_rows: int) -> int:
    """A block of about `chunk_rows` lines, judged from the average line in the head."""
    line_bytes = len(head) / max(head.count(b"\n"), 1)
    return int(min(max(0.9 * line_bytes * chunk_rows, MIN_BLOCK_BYTES), MAX_BLOCK_BYTES))


def line_blocks(stream: BinaryIO, *, block_bytes: int) -> Iterator[LineBlock]:
    """The whole stream as runs of whole lines (`columnar_blocks.iter_line_runs`, which the
    CSV path reads too); a line longer than a block grows the read."""
    first_line = 1
    for data, size, offset in iter_line_runs(stream, start=0, block_bytes=block_bytes):
        block = LineBlock(
            data=data,
            size=size,
            offset=offset,
            first_line=first_line,
            line_ends=newline_positions(data, size),
        )
        yield block
        first_line += block.lines


# `newline_positions` finds newlines one `bytes.find` at a time (a memchr skip per line) while
# the lines are long, and the rest in one numpy pass once its first PROBE_LINES lines average
# less than FIND_LINE_BYTES: memchr wins on long lines (OTel documents), numpy on short ones.
PROBE_LINES = 64
FIND_LINE_BYTES = 256


def newline_positions(data: bytes, size: int) -> np.ndarray:
    """The positions of the newlines in data[:size], in order."""
    ends: list[int] = []
    position = data.find(b"\n", 0, size)
    while position >= 0:
        ends.append(position)
        if len(ends) == PROBE_LINES and position < PROBE_LINES * FIND_LINE_BYTES:
            raw = np.frombuffer(data, np.uint8, count=size)
            rest = np.flatnonzero(raw[position + 1 :] == LF) + (position + 1)
            return np.concatenate((np.array(ends, np.int64), rest.astype(np.int64)))
        position = data.find(b"\n", position + 1, size)
    return np.array(ends, np.int64)


def check_block(block: LineBlock, *, refuse: tuple[bytes, ...] = ()) -> None:
    """Raise `JsonBlockUnsupported` unless every line starts a JSON object at its first byte and
    the bytes are what `json.loads` reads as pyarrow does (valid UTF-8, no BOM, no NUL), with
    none of the byte strings in `refuse`."""
    data = memoryview(block.data)[: block.size]
    raw = np.frombuffer(data, np.uint8)
    starts = np.concatenate(([0], block.line_ends[:-1] + 1)) if block.line_ends.size else [0]
    starts = np.asarray(starts, np.int64)
    starts = starts[starts < block.size]
    if not (raw[starts] == OPEN_BRACE).all():
        # Empty lines (the row path skips them), leading spaces, arrays, scalars.
        raise JsonBlockUnsupported("a line that does not start with `{`")
    payload = block.data if block.size == len(block.data) else bytes(data)
    ascii_only = payload.isascii()  # then no byte order mark either
    if b"\x00" in payload or (not ascii_only and UTF8_BOM in payload):
        raise JsonBlockUnsupported("a NUL byte or a byte order mark")
    run = one_binary_value(payload)
    for pattern, literals in _refusal_patterns(refuse):
        # RE2 finds a literal several times faster than `bytes.__contains__` in JSON text.
        if pc.match_substring_regex(run, pattern)[0].as_py():
            found = next(literal for literal in literals if literal in payload)
            raise JsonBlockUnsupported(f"the bytes {found!r}")
    if _deepest_nesting(block, raw) >= MAX_NESTING:
        raise JsonBlockUnsupported("JSON nested deeper than the row path reads")
    if not ascii_only and not is_utf8(run):
        raise JsonBlockUnsupported("invalid UTF-8")


@functools.cache
def _refusal_patterns(refuse: tuple[bytes, ...]) -> list[tuple[str, tuple[bytes, ...]]]:
    """One RE2 pattern per first byte of the literals `refuse`, each an alternation of the
    literals starting with that byte, with them. RE2 skips to a pattern's one first byte with
    memchr; an alternation of several first bytes is read byte by byte, which is slower."""
    groups: dict[int, list[bytes]] = {}
    for literal in refuse:
        groups.setdefault(literal[0], []).append(literal)
    return [
        ("(?:" + "|".join(_literal_pattern(literal) for literal in group) + ")", tuple(group))
        for group in groups.values()
    ]


def _literal_pattern(literal: bytes) -> str:
    """An RE2 pattern matching exactly the ASCII bytes `literal`."""
    return "".join(f"\\x{byte:02x}" if not chr(byte).isalnum() else chr(byte) for byte in literal)


def _deepest_nesting(block: LineBlock, raw: np.ndarray) -> int:
    """The deepest nesting of brackets on any line, counting brackets inside strings too (an
    estimate that errs high for a string of `[`, which only sends the block to the row path);
    below `MAX_NESTING`, possibly a bound above it rather than the exact figure."""
    # No line nests deeper than the block's whole range of depths: when a bound on that is
    # shallow enough, the per-line count is not needed.
    span = _depth_range_bound(raw)
    if span < MAX_NESTING:
        return span
    brackets, step = _brackets(raw)
    depth = np.cumsum(step)
    line = np.searchsorted(block.line_ends, brackets)
    first = np.flatnonzero(np.concatenate(([True], line[1:] != line[:-1])))
    # Each bracket's depth counted from the start of its line.
    before = np.repeat(depth[first] - step[first], np.diff(np.append(first, brackets.size)))
    return int((depth - before).max())


def _brackets(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where the brackets are in `raw`, and +1 for each opening one, -1 for each closing."""
    # Setting bit 0x20 turns `[` into `{` and `]` into `}`, and no other byte into either.
    folded = raw | 0x20
    opening = folded == 0x7B
    brackets = np.flatnonzero(opening | (folded == 0x7D))
    return brackets, np.where(opening[brackets], 1, -1)


def _depth_range_bound(raw: np.ndarray) -> int:
    """An upper bound, at most 128 too high, on how far the depth ranges over `raw`:
    max(depth, 0) - min(depth, 0) over its brackets, the depth counted from 0 at its start.

    The bytes are taken 64 at a time, as bits (one word for the opening brackets, one for the
    closing ones): within a word, the depth is at most its depth before the word plus the
    word's opening brackets, and at least that minus its closing ones. Counting bits instead
    of listing the brackets makes this pass cheaper; a slice at a time keeps the temporary
    arrays in the processor's cache."""
    depth = lowest = highest = 0
    step = max(64, _NESTING_SLICE // 64 * 64)  # whole words: word k holds bytes 64k to 64k+63
    for begin in range(0, len(raw), step):
        folded = raw[begin : begin + step] | 0x20
        opening = _bit_counts(folded == 0x7B)
        closing = _bit_counts(folded == 0x7D)
        change = opening - closing
        after = depth + np.cumsum(change)  # the depth after each word
        before = after - change
        highest = max(highest, int((before + opening).max()))
        lowest = min(lowest, int((before - closing).min()))
        depth = int(after[-1])
    return highest - lowest


def _bit_counts(flags: np.ndarray) -> np.ndarray:
    """How many of `flags` are set in each run of 64 (the last run may be shorter)."""
    counts: np.ndarray = np.bitwise_count(bit_words(flags)).astype(np.int64)
    return counts


# The slice `_depth_range_bound` counts at a time (rounded to whole words).
_NESTING_SLICE = 256 * 1024


def parse_bytes(block: LineBlock) -> int:
    """pyarrow's block size for `block`: PARSE_BLOCK_BYTES, or PARSE_BLOCK_LINES lines of the
    block's mean length or twice its longest line when that is more, never more than the
    block itself needs."""
    mean_line = -(-block.size // max(block.lines, 1))
    wanted = max(PARSE_BLOCK_LINES * mean_line, 2 * longest_line(block.line_ends, block.size))
    return max(PARSE_BLOCK_BYTES, min(wanted, block.size))


def parse_block(
    block: LineBlock,
    schema: pa.Schema,
    *,
    refuse: tuple[bytes, ...] = (),
) -> pa.Table:
    """The block's lines as a table of the fields in `schema` (others ignored), one row per
    line, parsed on the calling thread; raises `JsonBlockUnsupported` when pyarrow refuses it
    or reads another row count."""
    check_block(block, refuse=refuse)
    try:
        table = pa_json.read_json(
            pa.BufferReader(pa.py_buffer(block.data).slice(0, block.size)),
            read_options=pa_json.ReadOptions(use_threads=False, block_size=parse_bytes(block)),
            parse_options=pa_json.ParseOptions(
                explicit_schema=schema, unexpected_field_behavior="ignore"
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise JsonBlockUnsupported(f"pyarrow cannot read the block ({error})") from error
    if table.num_rows != block.lines:
        raise JsonBlockUnsupported(f"{table.num_rows} records on {block.lines} lines")
    return table


def parsed_blocks(
    stream: BinaryIO,
    *,
    schema: pa.Schema,
    block_bytes: int,
    refuse: tuple[bytes, ...] = (),
) -> Iterator[tuple[LineBlock, pa.Table | None]]:
    """Each block with its table, or None when it must be read by rows, in the file's order.

    pyarrow releases the GIL, so the next blocks are read, checked and parsed in the
    background while the caller converts the current ones, by `BLOCK_WORKERS` threads, each
    checking and parsing its own block on its own, without pyarrow's threads (one block is
    read at a time, numbered as it is read, and the blocks are handed over by their numbers):
    a block parsed on one thread costs less CPU than on pyarrow's.
    """
    blocks = line_blocks(stream, block_bytes=block_bytes)
    reading = threading.Lock()
    numbers = itertools.count()

    def prepare_next() -> tuple[int, LineBlock, pa.Table | None] | None:
        with reading:
            block = next(blocks, None)
            number = next(numbers)
        if block is None:
            return None
        try:
            table = parse_block(block, schema, refuse=refuse)
            return number, block, table
        except JsonBlockUnsupported:
            return number, block, None

    # Up to `PREFETCH_BLOCKS` blocks are prepared ahead of the caller.
    with ThreadPoolExecutor(max_workers=BLOCK_WORKERS, thread_name_prefix="json-blocks") as pool:
        upcoming = deque(pool.submit(prepare_next) for _ in range(PREFETCH_BLOCKS))
        ready: dict[int, tuple[LineBlock, pa.Table | None]] = {}
        handed = 0
        try:
            while upcoming:
                prepared = upcoming.popleft().result()
                if prepared is not None:
                    number, block, table = prepared
                    ready[number] = (block, table)
                    upcoming.append(pool.submit(prepare_next))
                while handed in ready:
                    yield ready.pop(handed)
                    handed += 1
        finally:
            for future in upcoming:
                future.cancel()
