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
is valid JSON. Whatever the row path reads differently is left to it (`None`): a byte order
mark, a NUL byte, bad UTF-8, invalid JSON, anything after the array, an empty array, an item
that is not an object, or a first record without the required fields (the row path then
says what is wrong).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import numpy as np

from audit_app.ingestion.token_logs.json_lines import UTF8_BOM

LF, SPACE = 0x0A, 0x20
_LINE_BREAKS_TO_SPACES = bytes.maketrans(b"\n\r", b"  ")
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_BETWEEN_TOKENS = frozenset(" \t\n\r")
_SCANNER = json.JSONDecoder()


def array_as_lines(data: bytes, *, required_fields: Sequence[str]) -> tuple[bytes, int] | None:
    """`data` (a JSON array of objects) from its first record on, with record N on line N and
    starting it, and the byte offset in `data` where that first record starts; or None for
    the row path."""
    if data.startswith(UTF8_BOM) or b"\x00" in data:
        return None
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    # Latin-1 maps byte i to character i: the scanner's positions are byte offsets, and a
    # UTF-8 sequence (bytes >= 0x80) is an ordinary character inside a string to it.
    found = _record_bounds(data.decode("latin-1"), required_fields=required_fields)
    if found is None:
        return None
    starts, commas, closing = found
    lines = bytearray(data.translate(_LINE_BREAKS_TO_SPACES))
    view = np.frombuffer(lines, np.uint8)
    view[np.asarray(commas, np.int64)] = SPACE
    view[closing] = SPACE
    # The byte before each later record (the comma, or whitespace after it) ends a line.
    view[np.asarray(starts[1:], np.int64) - 1] = LF
    first = starts[0]
    del view
    del lines[:first]
    return bytes(lines), first


def _record_bounds(
    text: str, *, required_fields: Sequence[str]
) -> tuple[list[int], list[int], int] | None:
    """(where each record starts, where each comma between two records is, where `]` is), or
    None."""
    skip = _WHITESPACE.match
    opening = skip(text).end()  # type: ignore[union-attr]
    if text[opening : opening + 1] != "[":
        return None
    position = skip(text, opening + 1).end()  # type: ignore[union-attr]
    starts: list[int] = []
    commas: list[int] = []
    scan = _SCANNER.raw_decode
    try:
        while True:
            starts.append(position)
            record, position = scan(text, position)
            if not isinstance(record, dict):
                return None
            if len(starts) == 1 and not all(name in record for name in required_fields):
                return None
            if text[position : position + 1] != ",":
                position = skip(text, position).end()  # type: ignore[union-attr]
                if text[position : position + 1] != ",":
                    break
            commas.append(position)
            position += 1
            if text[position : position + 1] in _BETWEEN_TOKENS:
                position = skip(text, position).end()  # type: ignore[union-attr]
    except (ValueError, RecursionError):
        return None
    closing = position
    if text[closing : closing + 1] != "]" or text[closing + 1 :].strip(" \t\n\r"):
        return None
    return starts, commas, closing
