"""A JSON array of records, laid out as JSON lines for the JSONL columnar path.

Its rules in full: `docs/formats.md`, section "JSON arrays".
"""

from __future__ import annotations

import bisect
import io
import json
import threading
from collections.abc import Sequence
from typing import BinaryIO

import numpy as np

from audit_app.ingestion.token_logs.columnar_blocks import UTF8_BOM, bit_words

LF, CR, SPACE, TAB = 0x0A, 0x0D, 0x20, 0x09
QUOTE, BACKSLASH, COMMA = 0x22, 0x5C, 0x2C
OPEN_BRACKET, CLOSE_BRACKET, OPEN_BRACE = 0x5B, 0x5D, 0x7B
# Bit 0x20 set turns `[` into `{` and `]` into `}`, and no other byte into either.
FOLDED_OPEN, FOLDED_CLOSE = 0x7B, 0x7D
_WHITESPACE = np.zeros(256, bool)
_WHITESPACE[[SPACE, TAB, LF, CR]] = True
# The bits below bit n of a 64-bit word, for n in 0..63.
_LOW_BITS = ((np.uint64(1) << np.arange(64, dtype=np.uint64)) - np.uint64(1)).astype("<u8")
# The bytes the scanner reads at once, and the slice it scans at a time within them: a slice's
# temporary arrays stay in the processor's cache.
WINDOW_BYTES = 32 * 1024 * 1024
SLICE_BYTES = 256 * 1024


class ArrayInvalid(Exception):
    """The JSON array is not valid JSON: the row path says why (`read_json_document`)."""


def array_as_lines(
    stream: BinaryIO, *, required_fields: Sequence[str]
) -> tuple[BinaryIO, int] | None:
    """The stream's JSON array of objects, from its first record on, as a stream with record N
    on line N and starting it, and the byte offset in the file where that first record
    starts; or None for the row path. The returned stream reads `stream`, which must stay
    open while it is read, and raises `ArrayInvalid` where the document stops being a valid
    array."""
    window_bytes = WINDOW_BYTES  # read here, so tests can make it small
    size = stream.seek(0, io.SEEK_END)
    stream.seek(0)
    if stream.read(len(UTF8_BOM)) == UTF8_BOM:
        return None
    opening, byte = _next_non_whitespace(stream, 0, size)
    if byte != OPEN_BRACKET:
        return None
    first, byte = _next_non_whitespace(stream, opening + 1, size)
    if byte != OPEN_BRACE:
        return None
    structure = _Structure(stream, start=first, size=size, window_bytes=window_bytes)
    try:
        first_end = structure.end_of_first_record()
    except ArrayInvalid:
        return None
    stream.seek(first)
    try:
        record = json.loads(stream.read(first_end - first).decode("utf-8"))
    except (ValueError, RecursionError):  # not UTF-8 or not JSON: the row path says which
        return None
    if not isinstance(record, dict) or not all(name in record for name in required_fields):
        return None
    laid_out = _LaidOut(stream, structure=structure, first=first)
    return io.BufferedReader(laid_out, buffer_size=window_bytes), first


def _next_non_whitespace(stream: BinaryIO, position: int, size: int) -> tuple[int, int | None]:
    """Where the first byte at or after `position` that is not JSON whitespace is, and that
    byte (None at the end of the file)."""
    stream.seek(position)
    while position < size and (piece := stream.read(min(4096, size - position))):
        other = ~_WHITESPACE[np.frombuffer(piece, np.uint8)]
        if other.any():
            found = int(other.argmax())
            return position + found, piece[found]
        position += len(piece)
    return position, None


class _Positions:
    """Ascending file positions found a window at a time, looked up by range."""

    def __init__(self) -> None:
        self._firsts: list[int] = []
        self._parts: list[np.ndarray] = []
        self.count = 0

    def add(self, positions: np.ndarray) -> None:
        if positions.size:
            self._firsts.append(int(positions[0]))
            self._parts.append(positions)
            self.count += positions.size

    def between(self, begin: int, end: int) -> np.ndarray:
        """The positions in [begin, end)."""
        index = max(0, bisect.bisect_right(self._firsts, begin) - 1)
        found = []
        while index < len(self._parts) and self._firsts[index] < end:
            part = self._parts[index]
            found.append(part[np.searchsorted(part, begin) : np.searchsorted(part, end)])
            index += 1
        return np.concatenate(found) if found else np.zeros(0, np.int64)


class _Structure:
    """Where the records start and the commas between them are, scanned from the first
    record's `{` (inside the array: depth 1, outside any string) as far as asked."""

    def __init__(self, stream: BinaryIO, *, start: int, size: int, window_bytes: int) -> None:
        self.stream, self.size, self.window_bytes = stream, size, window_bytes
        self.scanned = start
        self.depth, self.in_string, self.backslashes = 1, 0, 0
        self.pending = False  # a comma was found whose record has not started yet
        self.closing: int | None = None  # where the array's `]` is
        self.commas, self.starts = _Positions(), _Positions()
        # The line breaks, listed where a window has at most two a record (CR LF between
        # records) and two more; ranges where they are not listed (`dense`) are blanked by
        # comparing bytes.
        self.breaks, self.dense = _Positions(), list[tuple[int, int]]()
        self._window_breaks: list[np.ndarray] = []
        # Once `scan_ahead` has started it, a thread scans the rest while the stream is read;
        # it alone writes the fields above (`scanned` last), readers wait on `_changed`.
        self.stream_lock = threading.Lock()  # one seek-and-read of the stream at a time
        self._changed = threading.Condition()
        self._ahead: threading.Thread | None = None
        self._stopped = self._finished = False
        self._error: BaseException | None = None
        self._window: bytearray | None = None  # the scan's reused read buffer

    def end_of_first_record(self) -> int:
        """Where the first record's text ends (the comma after it, or the `]`)."""
        while True:
            found = self.commas.between(0, self.scanned)
            if found.size:
                return int(found[0])
            if self.closing is not None:
                return self.closing
            if self.scanned >= self.size:
                raise ArrayInvalid("the document ends inside its first record")
            self.scan_to(self.scanned + 1)

    def scan_to(self, position: int) -> None:
        """Make sure the document is scanned at least up to `position` (or its end): scan it
        here, or wait for the thread that scans ahead."""
        if self._ahead is None:
            while self.scanned < min(position, self.size) and self._scan_window():
                pass
            self._check_end()
            return
        with self._changed:
            while self.scanned < min(position, self.size) and not self._finished:
                self._changed.wait()
        if self._error is not None:
            raise self._error

    def scan_ahead(self) -> None:
        """Scan the rest of the document on a thread of its own, ahead of the reader (its
        numpy work runs beside the parsing and converting of the blocks already read)."""
        self._ahead = threading.Thread(target=self._scan_rest, name="json-array-scan", daemon=True)
        self._ahead.start()

    def stop(self) -> None:
        """The reader is done with the document: the thread stops after its window."""
        self._stopped = True

    def _scan_rest(self) -> None:
        try:
            while not self._stopped and self.scanned < self.size and self._scan_window():
                with self._changed:
                    self._changed.notify_all()
            if not self._stopped:
                self._check_end()
        except BaseException as error:  # handed to the reader, which raises it
            self._error = error
        finally:
            self._window = None
            with self._changed:
                self._finished = True
                self._changed.notify_all()

    def _scan_window(self) -> bool:
        """Scan the next window; False when the file ended sooner than its size (it shrank
        while read)."""
        if self._window is None:
            # One buffer for every window: a fresh 32 MiB of memory per window costs its page
            # faults each time.
            self._window = bytearray(self.window_bytes)
        wanted = min(self.window_bytes, self.size - self.scanned)
        with self.stream_lock, memoryview(self._window) as whole, whole[:wanted] as part:
            self.stream.seek(self.scanned)
            got = _read_into(self.stream, part)
        if not got:
            self.size = self.scanned
            return False
        raw = np.frombuffer(self._window, np.uint8, count=got)
        commas_before = self.commas.count
        for begin in range(0, raw.size, SLICE_BYTES):
            self._scan_slice(raw[begin : begin + SLICE_BYTES], self.scanned + begin)
        self._note_breaks(self.scanned, raw.size, records=self.commas.count - commas_before)
        self.scanned += raw.size
        return True

    def _note_breaks(self, begin: int, size: int, *, records: int) -> None:
        """List the window's line breaks, or note it as a range where they are not listed."""
        found, self._window_breaks = self._window_breaks, []
        end = begin + size
        # Two a record, and two more: a record's comma can end the window before its breaks.
        if sum(part.size for part in found) > 2 * (records + 1):
            self.dense.append((begin, end))  # pretty-printed
            return
        for part in found:
            self.breaks.add(part)
        if self.closing is not None:
            # After the array's end, slices are only checked to be whitespace.
            self.dense.append((max(begin, self.closing), end))

    def breaks_listed(self, begin: int, end: int) -> bool:
        """Whether every line break in [begin, end) is in `breaks` (scanned that far)."""
        return not any(start < end and begin < stop for start, stop in self.dense)

    def _check_end(self) -> None:
        if self.scanned >= self.size and self.closing is None:
            raise ArrayInvalid("the document ends before its array closes")

    def _scan_slice(self, raw: np.ndarray, offset: int) -> None:
        if self.closing is not None:
            _all_whitespace(raw)
            return
        folded = raw | 0x20
        marks = np.flatnonzero(
            (folded == FOLDED_OPEN) | (folded == FOLDED_CLOSE) | (raw == COMMA)
            | (raw == LF) | (raw == CR)
        )  # fmt: skip
        quotes_before, quote_count = self._quotes_before(raw, marks)
        inside = ((quotes_before + self.in_string) & 1).astype(bool)
        self.in_string = (self.in_string + quote_count) & 1
        values = raw[marks]
        line_break = (values == LF) | (values == CR)
        if (line_break & inside).any():
            raise ArrayInvalid("a line break inside a string")
        if line_break.any():
            self._window_breaks.append(marks[line_break] + offset)
        outside = ~inside & ~line_break
        marks, values = marks[outside], values[outside]
        folded_values = values | 0x20
        step = (folded_values == FOLDED_OPEN).astype(np.int64) - (folded_values == FOLDED_CLOSE)
        depth = self.depth + np.cumsum(step)
        closed = np.flatnonzero(depth == 0)
        if closed.size:
            end = int(marks[closed[0]])
            if values[closed[0]] != CLOSE_BRACKET:
                raise ArrayInvalid("the array is closed by `}`")
            self.closing = offset + end
            _all_whitespace(raw[end + 1 :])
            marks, values, depth = marks[: closed[0]], values[: closed[0]], depth[: closed[0]]
        if depth.size:
            self.depth = int(depth[-1])
        commas = marks[(values == COMMA) & (depth == 1)]
        self.commas.add(commas + offset)
        self._find_starts(raw, commas, offset)

    def _quotes_before(self, raw: np.ndarray, marks: np.ndarray) -> tuple[np.ndarray, int]:
        """How many unescaped quotes come before each of `marks` in `raw`, and in all of it;
        notes how many backslashes end `raw` (for the next slice).

        A slice without a backslash (and not right after one) escapes nothing and ends with
        none: its quotes are counted as bits, without listing where each is (a tenth of a
        record's bytes are quotes: listing them is costly). Otherwise each quote is found and
        checked."""
        if self.backslashes == 0 and not (raw == BACKSLASH).any():
            # One bit per byte, set for a quote, 64 to a word (byte i is bit i % 64 of word
            # i // 64): the quotes before a mark are those of the words before its word, plus
            # those of its own word below its bit (cheaper than a reduceat over the bytes
            # between marks).
            words = bit_words(raw == QUOTE)
            before = np.concatenate(([0], np.cumsum(np.bitwise_count(words), dtype=np.int64)))
            word = marks >> 6
            below = np.bitwise_count(words[word] & _LOW_BITS[marks & 63])
            return before[word] + below, int(before[-1])
        quotes = np.flatnonzero(raw == QUOTE)
        quotes = quotes[~self._escaped(raw, quotes)]
        self.backslashes = _trailing_backslashes(raw, self.backslashes)
        return np.searchsorted(quotes, marks), int(quotes.size)

    def _escaped(self, raw: np.ndarray, quotes: np.ndarray) -> np.ndarray:
        """Which of `quotes` follow an odd run of backslashes (the run may begin in an earlier
        slice: `self.backslashes` of them end the one before)."""
        follows = np.zeros(quotes.size, bool)
        later = quotes > 0
        follows[later] = raw[quotes[later] - 1] == BACKSLASH
        if quotes.size and quotes[0] == 0 and self.backslashes:
            follows[0] = True
        if not follows.any():
            return follows
        candidates = quotes[follows]
        run = np.zeros(candidates.size, np.int64)
        counting = np.ones(candidates.size, bool)
        back = 1
        while counting.any():
            index = candidates - back
            reached_start = counting & (index < 0)
            run[reached_start] += self.backslashes
            counting &= index >= 0
            counting[counting] = raw[index[counting]] == BACKSLASH
            run += counting
            back += 1
        escaped = np.zeros(quotes.size, bool)
        escaped[follows] = (run & 1) == 1
        return escaped

    def _find_starts(self, raw: np.ndarray, commas: np.ndarray, offset: int) -> None:
        """The first byte that is not whitespace after each comma (and after one whose search
        ran off the end of the last slice): where the next record starts."""
        searching = commas + 1
        if self.pending:
            searching = np.concatenate(([0], searching))
        if not searching.size:
            return
        while True:
            within = searching < raw.size
            blank = np.zeros(searching.size, bool)
            blank[within] = _WHITESPACE[raw[searching[within]]]
            if not blank.any():
                break
            searching[blank] += 1
        found = searching < raw.size
        self.starts.add(searching[found] + offset)
        self.pending = not bool(found[-1])


def _all_whitespace(raw: np.ndarray) -> None:
    if raw.size and not _WHITESPACE[raw].all():
        raise ArrayInvalid("something after the array")


def _trailing_backslashes(raw: np.ndarray, before: int) -> int:
    """How many backslashes end `raw` (counting `before` of them ending the bytes before it,
    when `raw` is all backslashes)."""
    if not raw.size or raw[-1] != BACKSLASH:
        return 0
    others = np.flatnonzero(raw != BACKSLASH)
    if not others.size:
        return before + raw.size
    return raw.size - 1 - int(others[-1])


class _LaidOut(io.RawIOBase):
    """The file from its first record on, rewritten as it is read: line breaks become spaces,
    the commas between records and the closing bracket spaces, and the byte before each later
    record a line break. Reads the file a block at a time, never the whole document, scanning
    its structure just ahead."""

    def __init__(self, source: BinaryIO, *, structure: _Structure, first: int) -> None:
        self._source, self._structure, self._first = source, structure, first
        self._position = 0
        structure.scan_ahead()

    def close(self) -> None:
        self._structure.stop()
        super().close()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, target: bytearray | memoryview) -> int:  # type: ignore[override]
        structure = self._structure
        begin = self._first + self._position
        # A record starting right after the block puts its line break in the block.
        structure.scan_to(begin + len(target) + 1)
        wanted = max(0, min(len(target), structure.size - begin))
        with memoryview(target) as whole, whole[:wanted] as part:
            with structure.stream_lock:
                self._source.seek(begin)
                got = _read_into(self._source, part)
            end = begin + got
            view = np.frombuffer(part, np.uint8)[:got]
            if structure.breaks_listed(begin, end):
                view[structure.breaks.between(begin, end) - begin] = SPACE
            else:
                _blank_line_breaks(view)
            view[structure.commas.between(begin, end) - begin] = SPACE
            if structure.closing is not None and begin <= structure.closing < end:
                view[structure.closing - begin] = SPACE
            view[structure.starts.between(begin + 1, end + 1) - 1 - begin] = LF
            del view
        self._position += got
        return got

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        length = self._structure.size - self._first
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: length}
        self._position = max(0, base[whence] + offset)
        return self._position

    def tell(self) -> int:
        return self._position


def _blank_line_breaks(view: np.ndarray) -> None:
    """Every LF and CR in `view` becomes a space, a slice at a time (as the scan)."""
    for start in range(0, view.size, SLICE_BYTES):
        piece = view[start : start + SLICE_BYTES]
        piece[(piece == LF) | (piece == CR)] = SPACE


def _read_into(stream: BinaryIO, target: memoryview) -> int:
    """Fill `target` from `stream` (fewer bytes only at its end)."""
    filled = 0
    while filled < len(target) and (got := stream.readinto(target[filled:])):  # type: ignore[attr-defined]
        filled += got
    return filled
