"""A LiteLLM JSON array document read through the JSONL columnar path, against the row path.

The row path (`litellm.read_rows`: the whole document loaded, each record numbered by its
position in the array) is the independent method: for every document `litellm.read` must give
the same canonical rows, the same rejects and the same error. The records are the JSONL
suite's generated rows (every unusual value it knows), written compact, one per line and
pretty-printed.
"""

from __future__ import annotations

import io
import itertools
import json
import random
import tracemalloc
from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd
import pytest

from audit_app.ingestion.reading import ImportFileError, RowReject
from audit_app.ingestion.token_logs import json_array, litellm
from audit_app.ingestion.token_logs.base import ParsedChunk
from audit_app.ingestion.token_logs.litellm_fields import REQUIRED_COLUMNS
from tests.audit_app.ingestion.token_logs.test_json_columnar import (
    BLOCK_MUTATIONS,
    ROW_MUTATIONS,
    _good_row,
    _line,
)
from tests.support.chunks import collect_chunks

LAYOUTS: dict[str, Callable[[list[str]], str]] = {
    "compact": lambda records: "[" + ",".join(records) + "]",
    "a record a line": lambda records: "[\n  " + ",\n  ".join(records) + "\n]\n",
    "pretty-printed": lambda records: json.dumps(
        [json.loads(record) for record in records], indent=2
    ),
    "crlf and spaces": lambda records: " \r\n[ " + " ,\r\n\t".join(records) + " ] \r\n",
}


def _records(
    rows: int, *, seed: int, unusual: float, mutations: list[Callable[..., None]] = ROW_MUTATIONS
) -> list[str]:
    rng = random.Random(seed)
    records = []
    for number in range(rows):
        row = _good_row(number, rng)
        if number and rng.random() < unusual:
            rng.choice(mutations)(row)
        records.append(_line(row))
    return records


def _outcome(
    read: Callable[..., Iterator[ParsedChunk]], data: bytes
) -> tuple[pd.DataFrame, list[RowReject]] | str:
    try:
        frame, rejects, _ = collect_chunks(
            read(io.BytesIO(data), chunk_rows=97), categories_as_text=True
        )
    except ImportFileError as error:
        return str(error)
    return frame, rejects


def _assert_same_as_row_path(data: bytes) -> None:
    ours, theirs = _outcome(litellm.read, data), _outcome(litellm.read_rows, data)
    if isinstance(theirs, str):
        assert ours == theirs
        return
    assert not isinstance(ours, str), ours
    pd.testing.assert_frame_equal(ours[0], theirs[0])
    assert sorted(ours[1], key=lambda reject: reject.line) == theirs[1]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_an_array_reads_as_the_row_path_reads_it_mostly_through_the_frame(layout: str) -> None:
    # Pretty-printing re-writes the numbers (`1e-400` as 0.0), so it gets the plain rows only.
    unusual = 0.0 if layout == "pretty-printed" else 0.3
    data = LAYOUTS[layout](_records(400, seed=len(layout), unusual=unusual)).encode()
    assert len(data) > 64 * 1024  # past the head, where the columnar path starts
    _assert_same_as_row_path(data)
    chunks = list(litellm.read(io.BytesIO(data), chunk_rows=97))
    in_frame = sum(len(chunk.frame) for chunk in chunks if chunk.frame is not None)
    assert in_frame > (390 if unusual == 0.0 else 200)
    assert sum(chunk.rows_read for chunk in chunks) == 400
    # Progress is a position in the uploaded file, up to its end.
    positions = [chunk.bytes_read for chunk in chunks]
    assert positions == sorted(set(positions))
    assert positions[-1] == len(data)
    assert all(0 < chunk.rows_read <= 97 for chunk in chunks)


@pytest.mark.parametrize("seed", range(3))
def test_records_that_send_their_block_to_the_row_path_read_the_same(seed: int) -> None:
    records = _records(300, seed=seed, unusual=0.05, mutations=BLOCK_MUTATIONS)
    _assert_same_as_row_path(LAYOUTS["a record a line"](records).encode())


def test_rows_are_numbered_by_their_place_in_the_array() -> None:
    records = _records(300, seed=1, unusual=0.0)
    bad = json.loads(records[41])
    bad["prompt_tokens"] = -5
    records[41] = json.dumps(bad)
    data = LAYOUTS["a record a line"](records).encode()
    chunks = list(litellm.read(io.BytesIO(data), chunk_rows=1000))
    rejects = [reject for chunk in chunks for reject in chunk.rejects]
    assert [(reject.line, reject.field) for reject in rejects] == [(42, "prompt_tokens")]


def _padded(prefix: str, suffix: str = "]") -> bytes:
    # Enough good records to pass the 64 KiB head.
    return (prefix + ",".join(_records(150, seed=9, unusual=0.0)) + suffix).encode()


@pytest.mark.parametrize(
    "data",
    [
        _padded("[5, "),
        _padded("[[], "),
        _padded(" [ ] ,["),
        _padded('[{"request_id": "x"}, '),
        _padded('[{"request_id": "x", ', "]"),
        b"\xef\xbb\xbf" + _padded("["),
        _padded("{"),
    ],
    ids=[
        "a number first",
        "an array first",
        "an empty array",
        "first record without the required fields",
        "first record not json",
        "bom",
        "not an array",
    ],
)
def test_documents_the_layout_leaves_to_the_row_path_give_its_outcome(data: bytes) -> None:
    assert _laid_out(data, required_fields=REQUIRED_COLUMNS) is None
    _assert_same_as_row_path(data)


@pytest.mark.parametrize(
    "data",
    [
        _padded("[", ", null]"),
        _padded("[", ', 5, "text", [1], true]'),
        _padded("[", "] trailing"),
        _padded("[", "] ]"),
        _padded("[", ",]"),
        _padded("[", ",,]"),
        _padded("[", ", {bad json}]"),
        _padded("[", ', {"a": 1} {"b": 2}]'),
        _padded("[", ', {"a": 1}}'),
        _padded("[", ', {"a": [1}]'),
        _padded("[", ""),
        _padded("[", ', {"a": "b'),
        _padded("[", ', {"a": "line\nbreak"}]'),
        _padded("[", ', {"a": "carriage\rreturn"}]'),
        _padded("[", ', {"x": "\xff"}]').replace("\xff".encode(), b"\xff"),
        _padded("[", ', {"x": "\u20ac"}]').replace("\u20ac".encode(), "\u20ac".encode()[:2]),
        _padded("[", ', {"x": "a\x00b"}]'),
        _padded("[", ', {"deep": ' + "[" * 3000 + "]" * 3000 + "}]"),
        _padded("[", ', {"x": NaN, "y": -Infinity}]'),
    ],
    ids=[
        "a null",
        "items that are not objects",
        "text after the array",
        "a second closing bracket",
        "a trailing comma",
        "two commas",
        "invalid json",
        "two records without a comma",
        "closed by a brace",
        "mismatched brackets",
        "no closing bracket",
        "ends inside a string",
        "a line break inside a string",
        "a carriage return inside a string",
        "bad utf-8",
        "a character cut short",
        "nul",
        "nested too deeply",
        "nan and infinity",
    ],
)
def test_documents_found_wrong_while_read_give_the_row_paths_outcome(
    data: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Whatever makes the document differ from a valid array is found as it is read (here
    # after the first window), and `litellm.read` then gives the row path's outcome for the
    # whole document; found in the first window, the document goes to the row path at once.
    _assert_same_as_row_path(data)
    monkeypatch.setattr(json_array, "WINDOW_BYTES", 4096)
    assert _laid_out_or_invalid(data) is not None
    _assert_same_as_row_path(data)


def _laid_out_or_invalid(
    data: bytes, *, required_fields: tuple[str, ...] = REQUIRED_COLUMNS
) -> bytes | str | None:
    try:
        found = _laid_out(data, required_fields=required_fields)
    except json_array.ArrayInvalid as invalid:
        return str(invalid)
    return None if found is None else found[0]


def _laid_out(data: bytes, *, required_fields: tuple[str, ...]) -> tuple[bytes, int] | None:
    found = json_array.array_as_lines(io.BytesIO(data), required_fields=required_fields)
    return None if found is None else (found[0].read(), found[1])


def test_layout_by_hand() -> None:
    data = b' [ {"a": 1},\n  {"b": [1, 2]} ,{"c": "x,y\\n"}\r\n]\n'
    # Bytes 0-2 (` [ `) go; the comma after record 1 and the line break become spaces and the
    # space before record 2 the line break; the comma right before record 3 is its line break;
    # the CR LF, the bracket and the last LF become spaces. The escaped \n in the string stays.
    expected = b'{"a": 1}   \n{"b": [1, 2]} \n{"c": "x,y\\n"}    '
    assert _laid_out(data, required_fields=("a",)) == (expected, 3)
    assert _laid_out(data, required_fields=("b",)) is None
    # The same through windows and slices of a few bytes: every record, comma, string and run
    # of whitespace crosses one.
    for window, slice_bytes in ((1, 1), (2, 1), (3, 2), (5, 5), (7, 3), (64, 7)):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(json_array, "WINDOW_BYTES", window)
            patch.setattr(json_array, "SLICE_BYTES", slice_bytes)
            assert _laid_out(data, required_fields=("a",)) == (expected, 3), window
            # Text after the array, no closing bracket, an array closed by a brace: found while
            # the document is read (or, when the first window holds all of it, before).
            for broken in (data + b"x", data[:-6], data.replace(b"]", b"}")):
                outcome = _laid_out_or_invalid(broken, required_fields=("a",))
                assert outcome is None if window == 64 else isinstance(outcome, str), window


def test_the_laid_out_stream_read_a_few_bytes_at_a_time() -> None:
    # The line breaks the scan listed (at most two a record) are blanked from the list, the
    # others (pretty-printed, or after the array) by comparing bytes: reads of any size, over
    # windows of any size, give the same layout.
    one_a_line = b' [ {"a": 1},\n  {"b": [1, 2]} ,{"c": "x,y\\n"}\r\n]\n'
    pretty = b'[\n  {\n    "a": 1\n  },\n  {\n    "a": 2\n  }\n]\n'
    cases = {
        one_a_line: b'{"a": 1}   \n{"b": [1, 2]} \n{"c": "x,y\\n"}    ',
        pretty: b'{     "a": 1   }   \n{     "a": 2   }   ',
    }
    for data, expected in cases.items():
        for window, piece in itertools.product((8, 16, 64, 1 << 20), (1, 3, 7, 16, 100)):
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(json_array, "WINDOW_BYTES", window)
                patch.setattr(json_array, "SLICE_BYTES", min(window, 8))
                found = json_array.array_as_lines(io.BytesIO(data), required_fields=("a",))
                assert found is not None
                raw = found[0].raw  # type: ignore[attr-defined]
                got = b"".join(iter(lambda: raw.read(piece), b""))  # noqa: B023
                assert got == expected, (data, window, piece)


def test_line_breaks_are_listed_only_where_there_are_at_most_two_a_record() -> None:
    # The list costs 8 bytes a break: one or two a record (LF, CR LF) are listed, a
    # pretty-printed document's many are not (its windows are compared byte by byte).
    records = _records(300, seed=9, unusual=0.0)
    for layout, listed in (
        # From the first record on: 299 breaks between records, one before `]`, one after it.
        ("a record a line", 301),
        # 299 CR LF between records and one after `]` (the one before `[` is not scanned).
        ("crlf and spaces", 2 * 300),
        ("pretty-printed", 0),
    ):
        data = LAYOUTS[layout](records).encode()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(json_array, "WINDOW_BYTES", 16 * 1024)
            found = json_array.array_as_lines(io.BytesIO(data), required_fields=("request_id",))
            assert found is not None
            stream, first = found
            laid_out = stream.read()
        structure = stream.raw._structure  # type: ignore[attr-defined]
        breaks = structure.breaks.between(0, len(data))
        assert breaks.size == listed, layout
        assert all(data[position] in b"\r\n" for position in breaks.tolist())
        assert laid_out.count(b"\n") == 299 and b"\r" not in laid_out, layout


def test_strings_that_look_like_structure_by_hand() -> None:
    # Quotes after runs of backslashes (odd: escaped, even: the string ends), and commas,
    # brackets and braces inside strings: only the two commas between records are records'
    # ends, whatever the windows and slices cut.
    records = [
        '{"a": "\\\\", "b": "},{"}',
        '{"a": "\\"],[\\\\\\"", "b": ["]", "[", "\\\\"]}',
        '{"a": "\\\\\\\\", "c": {"d": ",{}[]"}}',
    ]
    assert [json.loads(record)["a"] for record in records] == ["\\", '"],[\\"', "\\\\"]
    data = ("[" + ",\n ".join(records) + "]").encode()
    for window, slice_bytes in ((1, 1), (3, 2), (4, 3), (11, 5), (64, 64), (1 << 20, 1 << 18)):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(json_array, "WINDOW_BYTES", window)
            patch.setattr(json_array, "SLICE_BYTES", slice_bytes)
            found = _laid_out(data, required_fields=("a",))
            assert found is not None
            # After records 1 and 2: the comma and the line break as spaces (the space before
            # the next record is its line break); after record 3 the closing bracket.
            assert found[0].decode().split("\n") == [
                records[0] + "  ",
                records[1] + "  ",
                records[2] + " ",
            ], (window, slice_bytes)


@pytest.mark.parametrize("size", [1, 7, 8, 9, 63, 64, 65, 127, 128, 129, 1000, 4097])
def test_quotes_before_each_mark_in_a_slice_without_backslashes(size: int) -> None:
    # The count by bits (64 bytes to a word) against a count of the bytes before each mark:
    # every byte that is not a quote is a mark, so marks fall on each side of every word's
    # edge, and slices end inside a word and on its edge.
    raw = np.random.default_rng(size).choice(np.frombuffer(b'"a,{}', np.uint8), size)
    marks = np.flatnonzero(raw != json_array.QUOTE)
    structure = json_array._Structure(io.BytesIO(), start=0, size=0, window_bytes=1)
    counted, total = structure._quotes_before(raw, marks)
    is_quote = (raw == json_array.QUOTE).tolist()
    assert counted.tolist() == [sum(is_quote[:mark]) for mark in marks.tolist()]
    assert total == sum(is_quote)
    assert structure.backslashes == 0


@pytest.mark.parametrize("layout", LAYOUTS)
def test_records_crossing_the_scanner_window_read_the_same(
    layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A window smaller than a record: every record is read again from a larger one.
    monkeypatch.setattr(json_array, "WINDOW_BYTES", 1000)
    unusual = 0.0 if layout == "pretty-printed" else 0.3
    data = LAYOUTS[layout](_records(300, seed=7, unusual=unusual)).encode()
    laid_out = _laid_out(data, required_fields=REQUIRED_COLUMNS)
    assert laid_out is not None
    assert laid_out[0].count(b"\n") == 299  # record N on line N
    _assert_same_as_row_path(data)


def test_utf8_across_window_and_slice_ends() -> None:
    # Two-, three- and four-byte characters, so every window size cuts one of them somewhere;
    # a cut or stray byte is found by the JSONL path and gives the row path's error.
    data = ' [{"a": "é€😀"},\n{"b": "ü😀€"}]'.encode()
    expected = '{"a": "é€😀"} \n{"b": "ü😀€"} '.encode()
    records = _records(150, seed=9, unusual=0.0)
    padded = ("[" + ",".join(records) + ', {"b": "ü😀€"}]').encode()
    cut_short = padded.replace("€".encode(), "€".encode()[:2], 1)  # a character missing a byte
    stray = padded.replace(b'"b"', b'"\x80b"')  # a continuation byte with no lead byte
    for window, slice_bytes in ((1, 1), (2, 1), (3, 2), (4, 4), (5, 3), (7, 2), (64, 9)):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(json_array, "WINDOW_BYTES", window)
            patch.setattr(json_array, "SLICE_BYTES", slice_bytes)
            assert _laid_out(data, required_fields=("a",)) == (expected, 2), window
    for broken in (cut_short, stray, padded[:-1] + "é".encode()[:1] + b"]"):
        _assert_same_as_row_path(broken)
        assert isinstance(_outcome(litellm.read, broken), str)


def test_a_document_is_read_a_window_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # Memory does not grow with the document: finding the first record and reading them all
    # laid out each hold a few windows of it at most (and 16-32 bytes a record), not the
    # document (60+ windows).
    window = 64 * 1024
    monkeypatch.setattr(json_array, "WINDOW_BYTES", window)
    monkeypatch.setattr(json_array, "SLICE_BYTES", window // 4)
    data = LAYOUTS["a record a line"](_records(6000, seed=3, unusual=0.0)).encode()
    assert len(data) > 60 * window
    stream = io.BytesIO(data)
    tracemalloc.start()
    try:
        found = json_array.array_as_lines(stream, required_fields=REQUIRED_COLUMNS)
        _, finding_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        assert found is not None
        lines, first = found
        breaks = size = 0
        while block := lines.read(window):
            breaks, size = breaks + block.count(b"\n"), size + len(block)
        _, reading_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (first, size, breaks) == (data.index(b"{"), len(data) - first, 5999)
    assert finding_peak < 8 * window
    # Reading lays the records out while a thread scans the structure ahead: the scanner's
    # window and its slices' temporaries beside the reader's block, the one before it and
    # the laying out's temporaries, whichever moment they meet (about 8-10 windows).
    assert reading_peak < 14 * window


class _Shrunk(io.BytesIO):
    """A file that says it is `claimed` bytes long but holds fewer (cut while read)."""

    def __init__(self, data: bytes, *, claimed: int) -> None:
        super().__init__(data)
        self.claimed = claimed

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_END:
            return super().seek(self.claimed + offset)
        return super().seek(offset, whence)


def test_a_file_that_ends_sooner_than_its_size_gives_the_row_paths_error() -> None:
    # Cut while read: the scan ends where the file does (it never reads the same window again
    # and again), finds no closing bracket and the row path says the document is truncated.
    data = _padded("[")
    for kept in (len(data) // 2, len(data) - 1):
        for window in (7, 1000, 64 * 1024):
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(json_array, "WINDOW_BYTES", window)
                with pytest.raises(ImportFileError, match="truncated JSON"):
                    list(litellm.read(_Shrunk(data[:kept], claimed=len(data)), chunk_rows=97))


class _ClaimsMore(io.BytesIO):
    """A file that shrank after its size was taken: its end is reported `extra` bytes later
    than where its bytes end."""

    def __init__(self, data: bytes, *, extra: int) -> None:
        super().__init__(data)
        self._claimed = len(data) + extra

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_END:
            super().seek(0, io.SEEK_END)
            return self._claimed
        return super().seek(offset, whence)


def test_the_scan_reads_only_the_bytes_there_are(monkeypatch: pytest.MonkeyPatch) -> None:
    # The scan reads each window into one buffer it keeps: a window cut short by the file's
    # end is scanned for what was read, not for what the buffer held from an earlier window.
    window = 4096
    monkeypatch.setattr(json_array, "WINDOW_BYTES", window)
    monkeypatch.setattr(json_array, "SLICE_BYTES", window // 4)
    data = LAYOUTS["a record a line"](_records(200, seed=5, unusual=0.0)).encode()
    assert len(data) > 10 * window

    def laid_out(stream: io.BytesIO) -> bytes:
        found = json_array.array_as_lines(stream, required_fields=REQUIRED_COLUMNS)
        assert found is not None
        return found[0].read()

    expected = laid_out(io.BytesIO(data))
    assert expected.count(b"\n") == 199
    assert laid_out(_ClaimsMore(data, extra=3 * window)) == expected


@pytest.mark.parametrize("layout", ["jsonl", "compact", "a record a line"])
def test_a_record_of_several_mebibytes_stays_in_the_frame(layout: str) -> None:
    # A long prompt logged in `messages`: pyarrow refused a line longer than its block, and
    # the block went to the row path.
    rng = random.Random(23)
    rows = [_good_row(number, rng) for number in range(300)]
    rows[150]["messages"] = [{"role": "user", "content": "word " * 700_000}]
    records = [_line(row) for row in rows]
    assert len(records[150]) > 3 << 20
    if layout == "jsonl":
        data = ("\n".join(records) + "\n").encode()
    else:
        data = LAYOUTS[layout](records).encode()
    _assert_same_as_row_path(data)
    chunks = list(litellm.read(io.BytesIO(data), chunk_rows=100_000))
    assert not any(chunk.requests or chunk.rejects for chunk in chunks)
    assert sum(len(chunk.frame) for chunk in chunks if chunk.frame is not None) == 300
