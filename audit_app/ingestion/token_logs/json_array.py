"""A JSON array of records, laid out as JSON lines for the JSONL columnar path.

LiteLLM's spend-log API and UI export a JSON array (`[{...}, {...}]`, on one line or
pretty-printed). The row path (`tabular._iter_json_array_records`) loads the whole document
and numbers each record by its position in the array. `array_as_lines` rewrites the document,
byte for byte in place, so that record N is line N: every line break becomes a space (JSON
text holds line breaks only as whitespace between tokens; inside a string they are escaped),
the comma between two records becomes the line break, and the array's brackets become
spaces. Each record keeps its own bytes and byte offsets, so a chunk's `bytes_read` is a
position in the uploaded file, and a row the columnar path hands to the row converter is
parsed from the record's own text, as the row path parses it.

The records are found with the standard library's JSON scanner (`raw_decode`, one record at a
time, so the document is never held as Python objects), which also checks that the document
is valid JSON. The document is read once into one buffer that is rewritten in place and read
back from there, and the scanner reads it through a window of text, so a document costs about
its own size in memory (three times its size before 4 Dec 2026: a 758 MB array peaked at
2.5 GB). Whatever the row path reads differently is left to it (`None`): a byte order
mark, a NUL byte, bad UTF-8, invalid JSON, anything after the array, an empty array, an item
that is not an object, or a first record without the required fields (the row path then
says what is wrong).
"""

from __future__ import annotations

import array
import io
import json
import re
from collections.abc import Sequence
from typing import BinaryIO

import numpy as np

from audit_app.ingestion.token_logs import json_lines
from audit_app.ingestion.token_logs.json_lines import UTF8_BOM

LF, SPACE = 0x0A, 0x20
_LINE_BREAKS_TO_SPACES = bytes.maketrans(b"\n\r", b"  ")
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_BETWEEN_TOKENS = frozenset(" \t\n\r")
_SCANNER = json.JSONDecoder()
# The text the scanner reads at once, and the bytes translated at once.
WINDOW_BYTES = 32 * 1024 * 1024


def array_as_lines(
    stream: BinaryIO, *, required_fields: Sequence[str]
) -> tuple[BinaryIO, int] | None:
    """The stream's JSON array of objects, from its first record on, as a stream with record N
    on line N and starting it, and the byte offset in the file where that first record
    starts; or None for the row path."""
    window_bytes = WINDOW_BYTES  # read here, so tests can make it small
    data = _read_all(stream)
    if data.startswith(UTF8_BOM) or b"\x00" in data:
        return None
    if not data.isascii() and not json_lines.is_utf8(json_lines.one_binary_value(data)):
        return None
    found = _record_bounds(data, required_fields=required_fields, window_bytes=window_bytes)
    if found is None:
        return None
    starts, commas, closing = found
    for begin in range(0, len(data), window_bytes):
        end = min(begin + window_bytes, len(data))
        data[begin:end] = data[begin:end].translate(_LINE_BREAKS_TO_SPACES)
    view = np.frombuffer(data, np.uint8)
    view[np.frombuffer(commas, np.int64)] = SPACE
    view[closing] = SPACE
    # The byte before each later record (the comma, or whitespace after it) ends a line.
    view[np.frombuffer(starts, np.int64)[1:] - 1] = LF
    del view
    first = starts[0]
    return io.BufferedReader(_BufferReader(memoryview(data)[first:])), first


def _read_all(stream: BinaryIO) -> bytearray:
    size = stream.seek(0, io.SEEK_END)
    stream.seek(0)
    data = bytearray(size)
    with memoryview(data) as view:
        filled = 0
        while filled < size and (read := stream.readinto(view[filled:])):  # type: ignore[attr-defined]
            filled += read
    if filled < size:  # the file shrank while read
        del data[filled:]
    return data


class _BufferReader(io.RawIOBase):
    """A read-only stream over a buffer, without copying it."""

    def __init__(self, data: memoryview) -> None:
        self._data = data
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, target: bytearray | memoryview) -> int:  # type: ignore[override]
        size = max(0, min(len(target), len(self._data) - self._position))
        target[:size] = self._data[self._position : self._position + size]
        self._position += size
        return size

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: len(self._data)}
        self._position = max(0, base[whence] + offset)
        return self._position

    def tell(self) -> int:
        return self._position


class _Window:
    """The document as text, `window_bytes` at a time: Latin-1 maps byte i to character i, so
    positions in the text are byte offsets, and a UTF-8 sequence (bytes >= 0x80) is an ordinary
    character inside a string to the scanner."""

    def __init__(self, data: bytearray, window_bytes: int) -> None:
        self.data, self.window_bytes = data, window_bytes
        self.base, self.text = 0, ""

    def at(self, position: int, *, more: bool = False) -> None:
        """Text from `position` on: a window's worth (twice the last one with `more`), or to
        the end of the document."""
        size = max(self.window_bytes, 2 * len(self.text) if more else 0)
        self.base = position
        self.text = self.data[position : position + size].decode("latin-1")

    @property
    def complete(self) -> bool:
        return self.base + len(self.text) >= len(self.data)


# A record starting closer than this to the window's end is read from a new window.
_MARGIN = 64 * 1024


def _record_bounds(
    data: bytearray, *, required_fields: Sequence[str], window_bytes: int
) -> tuple[array.array[int], array.array[int], int] | None:
    """(where each record starts, where each comma between two records is, where `]` is), or
    None."""
    window = _Window(data, window_bytes)
    position = _skip(window, 0)
    if data[position : position + 1] != b"[":
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
            if data[position : position + 1] != b",":
                break
        commas.append(position)
        position += 1
        after = window.text[position - window.base : position - window.base + 1]
        if not after or after in _BETWEEN_TOKENS:
            position = _skip(window, position)
    closing = position
    if data[closing : closing + 1] != b"]" or data[closing + 1 :].strip(b" \t\n\r"):
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
