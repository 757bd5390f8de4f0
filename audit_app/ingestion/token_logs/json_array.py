"""A JSON array of records, laid out as JSON lines for the JSONL columnar path.

LiteLLM's spend-log API and UI export a JSON array (`[{...}, {...}]`, on one line or
pretty-printed). The row path (`tabular._iter_json_array_records`) loads the whole document
and numbers each record by its position in the array. `array_as_lines` rewrites the document,
byte for byte as it is read, so that record N is line N: every line break becomes a space (JSON
text holds line breaks only as whitespace between tokens; inside a string they are escaped),
the comma between two records becomes the line break, and the array's brackets become
spaces. Each record keeps its own bytes and byte offsets, so a chunk's `bytes_read` is a
position in the uploaded file, and a row the columnar path hands to the row converter is
parsed from the record's own text, as the row path parses it.

The records are found with the standard library's JSON scanner (`raw_decode`, one record at a
time, so the document is never held as Python objects), which also checks that the document
is valid JSON. The file is read a window at a time, three times over: once to check it is
UTF-8 without a NUL byte, once for the scanner, and once laid out as it is read, so a
document of any size costs a window (32 MiB) and 16 bytes a record in memory. (Until
4 Dec 2026 the document was read whole into one buffer rewritten in place: a 758 MB array's
`manage.py ingest` peaked at 1,726 MiB, against 937 MiB for the same records as JSONL; before
that, at three times the document's size.)

Whatever the row path reads differently is left to it (`None`): a byte order mark, a NUL
byte, bad UTF-8, invalid JSON, anything after the array, an empty array, an item that is not
an object, or a first record without the required fields (the row path then says what is
wrong).
"""

from __future__ import annotations

import array
import io
import json
import re
from collections.abc import Sequence
from typing import BinaryIO

import numpy as np

from audit_app.ingestion.token_logs.columnar_blocks import UTF8_BOM, is_utf8, one_binary_value

LF, CR, SPACE = 0x0A, 0x0D, 0x20
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_BETWEEN_TOKENS = frozenset(" \t\n\r")
_SCANNER = json.JSONDecoder()
# The bytes checked, scanned and laid out at once.
WINDOW_BYTES = 32 * 1024 * 1024


def array_as_lines(
    stream: BinaryIO, *, required_fields: Sequence[str]
) -> tuple[BinaryIO, int] | None:
    """The stream's JSON array of objects, from its first record on, as a stream with record N
    on line N and starting it, and the byte offset in the file where that first record
    starts; or None for the row path. The returned stream reads `stream`, which must stay
    open while it is read."""
    window_bytes = WINDOW_BYTES  # read here, so tests can make it small
    size = stream.seek(0, io.SEEK_END)
    if not _plain_utf8(stream, size=size, window_bytes=window_bytes):
        return None
    window = _Window(stream, size=size, window_bytes=window_bytes)
    found = _record_bounds(window, required_fields=required_fields)
    if found is None:
        return None
    starts, commas, closing = found
    laid_out = _LaidOut(stream, starts=starts, commas=commas, closing=closing, size=size)
    return io.BufferedReader(laid_out, buffer_size=window_bytes), starts[0]


def _plain_utf8(stream: BinaryIO, *, size: int, window_bytes: int) -> bool:
    """True when the file is UTF-8 without a byte order mark or a NUL byte, read a window at a
    time; a character cut by a window's end is checked with the next window."""
    stream.seek(0)
    if stream.read(len(UTF8_BOM)) == UTF8_BOM:
        return False
    stream.seek(0)
    carried = b""
    for begin in range(0, size, window_bytes):
        block = carried + stream.read(min(window_bytes, size - begin))
        if b"\x00" in block:
            return False
        if block.isascii():
            carried = b""
            continue
        # The last character may go on in the next window: check up to where it starts.
        cut = _last_character_start(block)
        carried = block[cut:]
        if not is_utf8(one_binary_value(block[:cut])):
            return False
    return not carried or is_utf8(one_binary_value(carried))


def _last_character_start(block: bytes) -> int:
    """Where the last UTF-8 character of `block` starts (a byte that is not a continuation
    byte, 0x80-0xBF, among the last four); the block's length when there is none there, as
    in text that is not UTF-8."""
    for index in range(len(block) - 1, max(-1, len(block) - 5), -1):
        if not 0x80 <= block[index] < 0xC0:
            return index
    return len(block)


class _LaidOut(io.RawIOBase):
    """The file from its first record on, rewritten as it is read: line breaks become spaces,
    the commas between records and the closing bracket spaces, and the byte before each later
    record a line break. Reads the file a block at a time, never the whole document."""

    def __init__(
        self,
        source: BinaryIO,
        *,
        starts: array.array[int],
        commas: array.array[int],
        closing: int,
        size: int,
    ) -> None:
        self._source, self._first, self._size = source, starts[0], size
        self._spaces = np.append(np.frombuffer(commas, np.int64), np.int64(closing))
        # The comma right before a record is its line break: line breaks are written last.
        self._breaks = np.frombuffer(starts, np.int64)[1:] - 1
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, target: bytearray | memoryview) -> int:  # type: ignore[override]
        begin = self._first + self._position
        wanted = max(0, min(len(target), self._size - begin))
        self._source.seek(begin)
        with memoryview(target) as whole, whole[:wanted] as part:
            got = _read_into(self._source, part)
            view = np.frombuffer(part, np.uint8)[:got]
            view[(view == LF) | (view == CR)] = SPACE
            for positions, value in ((self._spaces, SPACE), (self._breaks, LF)):
                inside = slice(*np.searchsorted(positions, [begin, begin + got]))
                view[positions[inside] - begin] = value
            del view
        self._position += got
        return got

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        length = self._size - self._first
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: length}
        self._position = max(0, base[whence] + offset)
        return self._position

    def tell(self) -> int:
        return self._position


def _read_into(stream: BinaryIO, target: memoryview) -> int:
    """Fill `target` from `stream` (fewer bytes only at its end)."""
    filled = 0
    while filled < len(target) and (got := stream.readinto(target[filled:])):  # type: ignore[attr-defined]
        filled += got
    return filled


class _Window:
    """The document as text, `window_bytes` at a time, read from the file: Latin-1 maps byte i
    to character i, so positions in the text are byte offsets, and a UTF-8 sequence (bytes
    >= 0x80) is an ordinary character inside a string to the scanner."""

    def __init__(self, stream: BinaryIO, *, size: int, window_bytes: int) -> None:
        self.stream, self.size, self.window_bytes = stream, size, window_bytes
        self.base, self.text = 0, ""

    def at(self, position: int, *, more: bool = False) -> None:
        """Text from `position` on: a window's worth (twice the last one with `more`), or to
        the end of the document."""
        size = max(self.window_bytes, 2 * len(self.text) if more else 0)
        wanted = max(0, min(size, self.size - position))
        self.base = position
        self.stream.seek(position)
        read = self.stream.read(wanted)
        if len(read) < wanted:  # the file ended sooner (it shrank while read)
            self.size = position + len(read)
        self.text = read.decode("latin-1")

    def char(self, position: int) -> str:
        """The character at `position` ("" past the end)."""
        if not 0 <= position - self.base < len(self.text):
            if position >= self.size:
                return ""
            self.at(position)
        return self.text[position - self.base]

    def rest_is_whitespace(self, position: int) -> bool:
        """True when nothing but JSON whitespace follows `position`."""
        while position < self.size:
            self.at(position)
            if self.text.strip(" \t\n\r"):
                return False
            position += len(self.text)
        return True

    @property
    def complete(self) -> bool:
        return self.base + len(self.text) >= self.size


# A record starting closer than this to the window's end is read from a new window.
_MARGIN = 64 * 1024


def _record_bounds(
    window: _Window, *, required_fields: Sequence[str]
) -> tuple[array.array[int], array.array[int], int] | None:
    """(where each record starts, where each comma between two records is, where `]` is), or
    None."""
    position = _skip(window, 0)
    if window.char(position) != "[":
        return None
    position = _skip(window, position + 1)
    starts, commas = array.array("q"), array.array("q")
    while True:
        record, end = _scan(window, position)
        if not isinstance(record, dict):
            return None
        starts.append(position)
        if len(starts) == 1 and not all(name in record for name in required_fields):
            return None
        position = window.base + end
        if window.text[end : end + 1] != ",":
            position = _skip(window, position)
            if window.char(position) != ",":
                break
        commas.append(position)
        position += 1
        after = window.text[position - window.base : position - window.base + 1]
        if not after or after in _BETWEEN_TOKENS:
            position = _skip(window, position)
    closing = position
    if window.char(closing) != "]" or not window.rest_is_whitespace(closing + 1):
        return None
    return starts, commas, closing


def _skip(window: _Window, position: int) -> int:
    """The position of the next byte that is not JSON whitespace."""
    while True:
        local = position - window.base
        if not 0 <= local < len(window.text):
            window.at(position)
            local = 0
        end = _WHITESPACE.match(window.text, local).end()  # type: ignore[union-attr]
        if end < len(window.text) or window.complete:
            return window.base + end
        position = window.base + end


def _scan(window: _Window, position: int) -> tuple[object, int]:
    """The JSON value at `position` and where it ends in the window's text; a value the window
    cuts short is read again from a larger one. (None, -1) when it is not JSON."""
    if position + _MARGIN > window.base + len(window.text) and not window.complete:
        window.at(position)
    while True:
        try:
            return _SCANNER.raw_decode(window.text, position - window.base)
        except RecursionError:  # nested too deeply for the row path as well
            return None, -1
        except ValueError:  # not JSON, or cut short by the window
            if window.complete:
                return None, -1
            window.at(position, more=True)
