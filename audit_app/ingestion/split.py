"""Cutting a large token log into byte ranges that parse independently (ingest fan-out).

Pure module (no Django).

Its rules in full: `docs/architecture.md`, section "Cutting a token log for fan-out".
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from audit_app.ingestion.reading import ImportFileError, RowRejected, head_text, iter_text_lines
from audit_app.ingestion.token_logs.tabular import parse_json_line

SCAN_BLOCK_BYTES = 16 << 20
# The header record (CSV) or first record (JSONL) must end within this many bytes, or the file
# is read in a single pass.
MAX_PREFIX_BYTES = 16 << 20
QUOTE = b'"'
LF = b"\n"
QUOTE_BYTE = ord(QUOTE)
LF_BYTE = ord(LF)

CSV = "csv"
JSONL = "jsonl"


@dataclass(frozen=True, kw_only=True)
class Part:
    """Bytes [start, end) of the file; `lines_before` newlines precede `start`."""

    index: int
    start: int
    end: int
    lines_before: int


@dataclass(frozen=True, kw_only=True)
class Layout:
    """What every part but the first is shown before its own bytes."""

    kind: str  # CSV or JSONL
    prefix_end: int  # bytes [0, prefix_end) of the file: the header / first record
    prefix_lines: int  # newlines in those bytes


def tabular_kind(head: bytes) -> str | None:
    """CSV or JSONL as the tabular reader tells them apart; None for a JSON array (one
    document, not splittable)."""
    start = head_text(head)
    if start.startswith("["):
        return None
    return JSONL if start.startswith("{") else CSV


def find_layout(stream: BinaryIO, *, kind: str) -> Layout | None:
    """Where the header (CSV) or first record (JSONL) ends, read the way the importers read it.

    None when it cannot be found cheaply (not within MAX_PREFIX_BYTES, unreadable) or the file
    starts in a way a part could not repeat faithfully; the caller then reads in one pass, which
    reports whatever is wrong.
    """
    stream.seek(0)
    consumed = 0
    try:
        if kind == CSV:
            lines = _CountingLines(stream)
            reader = csv.reader(lines)
            for row in reader:
                if lines.consumed > MAX_PREFIX_BYTES:
                    return None
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue
                return Layout(kind=CSV, prefix_end=lines.consumed, prefix_lines=reader.line_num)
            return None
        for line_number, line_text in enumerate(iter_text_lines(stream), start=1):
            consumed += len(line_text.encode("utf-8"))
            if consumed > MAX_PREFIX_BYTES:
                return None
            if not line_text.strip():
                continue
            # The first non-blank line must be a JSON object: its keys are what format sniffing
            # and the first-record check see, in the whole file and in every part alike.
            try:
                record = parse_json_line(line_text)
            except RowRejected:
                return None
            if not isinstance(record, dict):
                return None
            prefix_end = _line_end_offset(stream, line_number)
            return Layout(kind=JSONL, prefix_end=prefix_end, prefix_lines=line_number)
        return None
    except (csv.Error, ImportFileError, ValueError):
        return None  # the single pass reports what is wrong
    finally:
        stream.seek(0)


class _CountingLines:
    """`iter_text_lines`, also counting the raw bytes consumed (BOM included)."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.consumed = 0
        self._lines = iter_text_lines(stream)

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        line = next(self._lines)
        self.consumed = self.stream.tell()
        return line


def _line_end_offset(stream: BinaryIO, lines: int) -> int:
    """The byte offset just after the `lines`-th newline."""
    stream.seek(0)
    for _ in range(lines):
        if not stream.readline():
            break
    return stream.tell()


def find_boundaries(
    stream: BinaryIO,
    *,
    size: int,
    targets: Sequence[int],
    kind: str,
    block_bytes: int = SCAN_BLOCK_BYTES,
) -> list[tuple[int, int]]:
    """For each target offset (ascending), the first record boundary at or after it, as
    (offset, newlines before offset). A boundary is an offset just after a record-ending
    newline; boundaries at the end of the file are left out, and so are repeats.

    Counts `"` and `\n` bytes block by block (numpy, `bytes.count`); nothing is parsed.
    """
    return list(
        iter_boundaries(stream, size=size, targets=targets, kind=kind, block_bytes=block_bytes)
    )


def iter_boundaries(
    stream: BinaryIO,
    *,
    size: int,
    targets: Sequence[int],
    kind: str,
    block_bytes: int = SCAN_BLOCK_BYTES,
) -> Iterator[tuple[int, int]]:
    """`find_boundaries`, yielding each boundary as soon as it is found."""
    pending = sorted(t for t in targets if 0 < t < size)
    check_quotes = kind == CSV
    quotes_before = 0  # quotes before the current block
    newlines_before = 0  # newlines before the current block
    block_start = 0
    # The newline at offset p >= target - 1 ends a record if the quote count before it is even;
    # `want` is where the search for the next such newline goes on.
    want = pending[0] - 1 if pending else 0
    stream.seek(0)
    while pending:
        block = stream.read(block_bytes)
        if not block:
            break
        block_end = block_start + len(block)
        counted_to = 0  # quotes in block[:counted_to] are in `counted`
        counted = 0
        while pending and want < block_end:
            p = block.find(LF, max(want - block_start, 0))
            if p < 0:
                want = block_end
                break
            if check_quotes:
                counted += block.count(QUOTE, counted_to, p)
                counted_to = p
                if (quotes_before + counted) % 2:
                    want = block_start + p + 1  # inside a quoted value: try the next newline
                    continue
            cut = block_start + p + 1
            if cut < size:
                yield cut, newlines_before + block.count(LF, 0, p + 1)
            while pending and pending[0] <= cut:
                pending.pop(0)
            if pending:
                want = pending[0] - 1
        # numpy counts a whole block several times faster than bytes.count
        raw = np.frombuffer(block, np.uint8)
        if check_quotes:
            quotes_before += int(np.count_nonzero(raw == QUOTE_BYTE))
        newlines_before += int(np.count_nonzero(raw == LF_BYTE))
        block_start = block_end


# From this many parts on, they shrink along the file (see `part_targets`); fewer are equal,
# since then a worker may get a single part and unequal parts would leave it idle.
GUIDED_MIN_PARTS = 6


def part_targets(*, size: int, parts: int, layout: Layout) -> list[int]:
    """Where the cuts aim (each moves on to the next record boundary after it).

    The body after the prefix is cut into `parts` pieces. From GUIDED_MIN_PARTS on they shrink
    in equal steps from 1.5x to 0.5x the average, in file order: workers take parts in order,
    so the big ones go first and the small ones last, and when one worker takes the final
    part the others finish theirs soon after instead of idling for up to a whole average part
    (guided self-scheduling). Fewer parts are equal."""
    body = size - layout.prefix_end
    if parts <= 1:
        return []
    if parts < GUIDED_MIN_PARTS:
        weights = [1] * parts
    else:  # 1.5 ... 0.5 of the average, in units of 1 / (2 * (parts - 1))
        weights = [3 * (parts - 1) - 2 * k for k in range(parts)]
    total = sum(weights)
    cuts, done = [], 0
    for weight in weights[:-1]:
        done += weight
        cuts.append(layout.prefix_end + body * done // total)
    return cuts


def plan_parts(
    stream: BinaryIO, *, size: int, parts: int, layout: Layout, block_bytes: int = SCAN_BLOCK_BYTES
) -> list[Part]:
    """Up to `parts` ranges, cut at record boundaries after the prefix (`part_targets`)."""
    return list(iter_parts(stream, size=size, parts=parts, layout=layout, block_bytes=block_bytes))


def iter_parts(
    stream: BinaryIO, *, size: int, parts: int, layout: Layout, block_bytes: int = SCAN_BLOCK_BYTES
) -> Iterator[Part]:
    """`plan_parts`, yielding each part as soon as its end is known (the last one ends at
    `size`), so its work can start while the rest of the file is scanned."""
    targets = part_targets(size=size, parts=parts, layout=layout)
    index, start, lines_before = 0, 0, 0
    for offset, lines in iter_boundaries(
        stream, size=size, targets=targets, kind=layout.kind, block_bytes=block_bytes
    ):
        if offset <= layout.prefix_end:
            continue
        yield Part(index=index, start=start, end=offset, lines_before=lines_before)
        index, start, lines_before = index + 1, offset, lines
    yield Part(index=index, start=start, end=size, lines_before=lines_before)


class _PartRaw(io.RawIOBase):
    """prefix + source[start:end] as one seekable read-only file."""

    def __init__(self, source: BinaryIO, *, prefix: bytes, start: int, end: int) -> None:
        super().__init__()
        self.source = source
        self.prefix = prefix
        self.start = start
        self.length = len(prefix) + (end - start)
        self.position = 0
        self.counter: _Counter | None = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            position = offset
        elif whence == io.SEEK_CUR:
            position = self.position + offset
        elif whence == io.SEEK_END:
            position = self.length + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if position < 0:
            raise ValueError("negative seek position")
        self.position = position
        return position

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        want = min(len(view), self.length - self.position)
        if want <= 0:
            return 0
        written = 0
        prefix_len = len(self.prefix)
        if self.position < prefix_len:
            piece = self.prefix[self.position : self.position + want]
            view[: len(piece)] = piece
            written = len(piece)
        while written < want:
            offset = self.start + self.position + written - prefix_len
            self.source.seek(offset)
            # Straight into the caller's buffer: one copy, made with the GIL released.
            count = self.source.readinto(view[written:want])  # type: ignore[attr-defined]
            if not count:
                break
            if self.counter is not None:
                self.counter.add(offset, view[written : written + count])
            written += count
        self.position += written
        return written


def part_stream(source: BinaryIO, *, part: Part, layout: Layout) -> io.BufferedReader:
    """The stream an importer reads for `part`: the file's prefix (for every part but the
    first, which starts at byte 0 anyway) followed by the part's bytes."""
    return io.BufferedReader(_part_raw(source, part=part, layout=layout), buffer_size=1 << 20)


def _part_raw(source: BinaryIO, *, part: Part, layout: Layout) -> _PartRaw:
    prefix = b""
    if part.start > 0:
        source.seek(0)
        prefix = source.read(layout.prefix_end)
    return _PartRaw(source, prefix=prefix, start=part.start, end=part.end)


class CountedPart:
    """`part_stream` that also counts the newlines and quotes of the part's own bytes as the
    importer reads them (each byte once, however the importer seeks); `counts()` reads and
    counts whatever the importer left unread."""

    def __init__(self, source: BinaryIO, *, part: Part, layout: Layout) -> None:
        self.source = source
        self.part = part
        self.counter = _Counter(part.start)
        raw = _part_raw(source, part=part, layout=layout)
        raw.counter = self.counter
        self.stream = io.BufferedReader(raw, buffer_size=1 << 20)

    def counts(self) -> Counts:
        counter = self.counter
        self.source.seek(counter.counted_to)
        while counter.counted_to < self.part.end:
            block = self.source.read(min(SCAN_BLOCK_BYTES, self.part.end - counter.counted_to))
            if not block:
                break
            counter.add(counter.counted_to, block)
        return Counts(newlines=counter.newlines, quotes=counter.quotes)


@dataclass(frozen=True, kw_only=True)
class Counts:
    """Newlines and `"` bytes in a part's own bytes."""

    newlines: int
    quotes: int


class _Counter:
    def __init__(self, start: int) -> None:
        self.counted_to = start  # source bytes before this offset are counted
        self.newlines = 0
        self.quotes = 0

    def add(self, offset: int, data: bytes | memoryview) -> None:
        """Count data (the source's bytes from `offset`) where it extends what is counted."""
        skip = self.counted_to - offset
        if skip < 0 or skip >= len(data):
            return  # a gap before it (counted later) or nothing new
        raw = np.frombuffer(data, np.uint8)[skip:]
        self.newlines += int(np.count_nonzero(raw == LF_BYTE))
        self.quotes += int(np.count_nonzero(raw == QUOTE_BYTE))
        self.counted_to = offset + len(data)


def record_start(stream: BinaryIO, target: int, *, size: int, layout: Layout) -> int:
    """Where a part cut at `target` starts: just after the first newline at or after
    max(target - 1, the prefix's end), or `size` if there is none. An offset just after a
    newline maps to itself, so a cut found by a scan is kept as it is. (For CSV the newline
    ends a record only with an even number of quotes before it: `lines_before_parts`.)"""
    if target <= 0:
        return 0
    position = max(target - 1, layout.prefix_end)
    stream.seek(position)
    step = 1 << 16
    while position < size:
        block = stream.read(min(step, size - position))
        if not block:
            break
        found = block.find(LF)
        if found >= 0:
            return position + found + 1
        position += len(block)
        step = min(step * 2, SCAN_BLOCK_BYTES)
    return size


def lines_before_parts(counts: Sequence[Counts], *, kind: str) -> list[int] | None:
    """The newlines before each part, from the counts of every part in file order; None when
    a CSV part starts after an odd number of quotes (inside a quoted value)."""
    lines, quotes, before = 0, 0, []
    for part_counts in counts:
        if kind == CSV and quotes % 2:
            return None
        before.append(lines)
        lines += part_counts.newlines
        quotes += part_counts.quotes
    return before


QUOTED_NEWLINE_SAMPLE_BYTES = 4 << 20


def quoted_newline_near_start(
    stream: BinaryIO, *, layout: Layout, sample_bytes: int | None = None
) -> bool:
    """True if a newline inside a quoted value shows up in the first `sample_bytes` (by
    default QUOTED_NEWLINE_SAMPLE_BYTES) after a CSV header: cutting at any newline would then
    likely cut such a value, so scan instead."""
    if sample_bytes is None:
        sample_bytes = QUOTED_NEWLINE_SAMPLE_BYTES
    if layout.kind != CSV or sample_bytes <= 0:
        return False
    stream.seek(layout.prefix_end)
    raw = np.frombuffer(stream.read(sample_bytes), np.uint8)
    quotes = np.flatnonzero(raw == QUOTE_BYTE)
    newlines = np.flatnonzero(raw == LF_BYTE)
    return bool((np.searchsorted(quotes, newlines) % 2).any())


def part_prefix_lines(part: Part, layout: Layout) -> int:
    """Lines of the part stream that belong to the prefix (their rows come from part 0)."""
    return layout.prefix_lines if part.start > 0 else 0


def line_shift(part: Part, layout: Layout) -> int:
    """Add to a line number of the part stream (past the prefix) to get the file's."""
    return part.lines_before - part_prefix_lines(part, layout)
