"""`json_lines.check_block`: what sends a block of JSON lines to the row path.

The columnar readers' suites compare whole files with the row path; these pin the block check
itself: lines the row path reads otherwise (blank, not an object, a NUL, a byte order mark,
bytes that are not UTF-8), and where its searches are: a refused byte string anywhere in the
block (also beside invalid UTF-8, and at the block's very end), nesting counted per line, and
the bytes past the block's size, which belong to the next block and must not count.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from audit_app.ingestion.token_logs import json_lines
from audit_app.ingestion.token_logs.json_lines import (
    MAX_NESTING,
    JsonBlockUnsupported,
    LineBlock,
    check_block,
)
from audit_app.ingestion.token_logs.otel_columnar import UNSUPPORTED_BYTES

LINE = b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "chat"}]}]}]}\n'


def _block(data: bytes, *, size: int | None = None) -> LineBlock:
    size = len(data) if size is None else size
    raw = np.frombuffer(data, np.uint8, count=size)
    return LineBlock(
        data=data, size=size, offset=0, first_line=1, line_ends=np.flatnonzero(raw == 0x0A)
    )


def _refused(data: bytes, *, size: int | None = None) -> bool:
    try:
        check_block(_block(data, size=size), refuse=UNSUPPORTED_BYTES)
    except JsonBlockUnsupported:
        return True
    return False


def test_a_plain_block_passes() -> None:
    assert not _refused(LINE * 1000)


@pytest.mark.parametrize("refused", UNSUPPORTED_BYTES)
@pytest.mark.parametrize("where", ["first line", "middle", "last bytes"])
def test_each_refused_byte_string_is_found_anywhere(refused: bytes, where: str) -> None:
    line = b'{"resourceSpans": [], "x' + refused + b'": 1}\n'
    lines = {
        "first line": [line] + [LINE] * 999,
        "middle": [LINE] * 500 + [line] + [LINE] * 499,
        "last bytes": [LINE] * 999 + [line.rstrip(b"\n")],
    }[where]
    assert _refused(b"".join(lines))
    # The refusal names the literal found, whichever other literal shares its first byte.
    with pytest.raises(JsonBlockUnsupported, match=re.escape(repr(refused))):
        check_block(_block(b"".join(lines)), refuse=UNSUPPORTED_BYTES)


@pytest.mark.parametrize(
    "line",
    [
        b"\n",  # a blank line: the row path skips it, pyarrow would not number it
        b' {"a": 1}\n',  # leading space
        b"[1, 2]\n",
        b'"text"\n',
        b'{"a": "x\x00y"}\n',  # NUL
        b'{"a": "\xef\xbb\xbfx"}\n',  # a byte order mark inside the block
        b'{"a": "\xff\xfe"}\n',  # not UTF-8
        b'{"a": "\xc3"}\n',  # a character cut short
    ],
)
def test_lines_the_row_path_reads_differently_refuse_the_block(line: bytes) -> None:
    assert _refused(LINE * 10 + line + LINE * 10)
    assert _refused(line + LINE * 10)


def test_valid_utf8_beyond_ascii_passes() -> None:
    assert not _refused(LINE * 10 + '{"a": "équipe 🚀 東京"}\n'.encode() + LINE * 10)


def test_refused_bytes_are_found_beside_invalid_utf8() -> None:
    line = b'{"x": "\xff\xfe", "start_time_unix_nano": "1"}\n'
    assert _refused(LINE * 10 + line)


def test_bytes_past_the_block_do_not_count() -> None:
    data = LINE * 10 + b'{"span_id_spans": 1}\n'
    assert not _refused(data, size=len(LINE) * 10)
    assert _refused(data)


def _nested(depth: int) -> bytes:
    return b'{"a": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}\n"


def test_nesting_is_counted_per_line() -> None:
    assert _refused(LINE * 5 + _nested(MAX_NESTING) + LINE * 5)
    assert not _refused(LINE * 5 + _nested(MAX_NESTING - 1) + LINE * 5)
    # Lines that never close (pyarrow refuses them later) add up across the block, but each
    # is only as deep as its own brackets.
    opened = b'{"a": ' + b"[" * (MAX_NESTING // 2) + b"\n"
    assert not _refused(opened * 4)


def _depth_range_by_hand(data: bytes) -> int:
    """max(depth, 0) - min(depth, 0) over the brackets, byte by byte."""
    depth = highest = lowest = 0
    for byte in data:
        if byte in b"[{":
            depth += 1
        elif byte in b"]}":
            depth -= 1
        highest, lowest = max(highest, depth), min(lowest, depth)
    return highest - lowest


def _depth_bound_by_hand(data: bytes) -> int:
    """The bound `_depth_range_bound` gives, 64 bytes at a time: within a run of 64, the depth
    is at most the depth before it plus its opening brackets, at least that less its closing
    ones."""
    depth = highest = lowest = 0
    for start in range(0, len(data), 64):
        word = data[start : start + 64]
        opening = sum(byte in b"[{" for byte in word)
        closing = sum(byte in b"]}" for byte in word)
        highest, lowest = max(highest, depth + opening), min(lowest, depth - closing)
        depth += opening - closing
    return highest - lowest


@pytest.mark.parametrize("slice_bytes", [1, 3, 64, 100, 1000, 256 * 1024])
def test_the_depth_range_bound_counted_a_slice_at_a_time_is_the_whole_blocks(
    monkeypatch: pytest.MonkeyPatch, slice_bytes: int
) -> None:
    monkeypatch.setattr(json_lines, "_NESTING_SLICE", slice_bytes)
    generator = np.random.default_rng(18)
    for alphabet in (b'{}[]a"', b"{{{[a]", b"}]]{a "):
        choices = np.frombuffer(alphabet, np.uint8)
        for size in [0, 1, 63, 64, 65, 80, 200, 5000, 20000]:
            data = generator.choice(choices, size).tobytes()
            bound = json_lines._depth_range_bound(np.frombuffer(data, np.uint8))
            assert bound == _depth_bound_by_hand(data), (alphabet, size)
            assert 0 <= bound - _depth_range_by_hand(data) <= 128, (alphabet, size)
    # By hand: 70 `[` then 70 `]` (depth 70; the words: 64 opening, then 6 opening and 58
    # closing, then 12 closing), and the same after 60 bytes of text.
    assert json_lines._depth_range_bound(np.frombuffer(b"[" * 70 + b"]" * 70, np.uint8)) == 70
    shifted = b"x" * 60 + b"[" * 70 + b"]" * 70
    # Words: 60 text + 4 `[` (depth 4); 64 `[` (68); 2 `[` + 62 `]` (at most 70, ends 8);
    # 8 `]` (ends 0): 70, and nothing below 0.
    assert json_lines._depth_range_bound(np.frombuffer(shifted, np.uint8)) == 70
    assert json_lines._depth_range_bound(np.frombuffer(b"]]]", np.uint8)) == 3
    # Depth 1 at most, but the first word's 32 `[` and 32 `]` give it 32 above and 32 below.
    assert json_lines._depth_range_bound(np.frombuffer(b"[]" * 40, np.uint8)) == 64
    # A nesting that crosses slices still sends its block to the row path.
    monkeypatch.setattr(json_lines, "_NESTING_SLICE", max(1, slice_bytes // 2))
    assert _refused(LINE * 5 + _nested(MAX_NESTING) + LINE * 5)


def test_blocks_prepared_by_two_threads_come_back_in_the_files_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io
    import time

    import pyarrow as pa

    lines = [b'{"n": %d, "pad": "%s"}\n' % (number, b"x" * (number % 7)) for number in range(400)]
    real_parse = json_lines.parse_block

    def uneven_parse(block: LineBlock, schema: pa.Schema, **kwargs: object) -> pa.Table:
        # Every third block takes longer, so the other thread finishes later blocks first.
        if (block.first_line // 10) % 3 == 0:
            time.sleep(0.01)
        if block.first_line % 7 == 0:
            raise JsonBlockUnsupported("left to the row path")
        return real_parse(block, schema, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(json_lines, "parse_block", uneven_parse)
    monkeypatch.setattr(json_lines, "MIN_BLOCK_BYTES", 1)
    schema = pa.schema([("n", pa.int64())])
    seen: list[int] = []
    first_lines: list[int] = []
    for block, table in json_lines.parsed_blocks(
        io.BytesIO(b"".join(lines)), schema=schema, block_bytes=200
    ):
        first_lines.append(block.first_line)
        numbers = (
            table.column("n").to_pylist()
            if table is not None
            else [int(block.line_text(index).split(",")[0][6:]) for index in range(block.lines)]
        )
        assert numbers == list(range(block.first_line - 1, block.first_line - 1 + block.lines))
        seen.extend(numbers)
    assert seen == list(range(400))
    assert len(first_lines) > 20 and first_lines == sorted(first_lines)


def _lines_of(length: int, count: int) -> bytes:
    """`count` JSON lines of exactly `length` bytes each, newline included."""
    lines = []
    for number in range(count):
        head = b'{"k": "line-%d", "pad": "' % number
        lines.append(head + b"x" * (length - len(head) - 3) + b'"}\n')
    assert all(len(line) == length for line in lines)
    return b"".join(lines)


def test_pyarrow_blocks_hold_several_long_lines_and_stay_small_for_short_ones() -> None:
    # Short lines (69 bytes): the measured best, 1 MiB.
    assert json_lines.parse_bytes(_block(LINE * 1000)) == 1 << 20
    # 20 lines of 300,000 bytes: 16 of them, 4,800,000 bytes.
    assert json_lines.parse_bytes(_block(_lines_of(300_000, 20))) == 4_800_000
    # 3 lines of 600,000 bytes: 16 would be 9.6 MB, the block itself is 1,800,000 bytes.
    assert json_lines.parse_bytes(_block(_lines_of(600_000, 3))) == 1_800_000
    # One line of 500,000 bytes: never below 1 MiB.
    assert json_lines.parse_bytes(_block(_lines_of(500_000, 1))) == 1 << 20


def test_a_block_of_lines_longer_than_a_mebibyte_parses_to_the_lines_values() -> None:
    import json

    import pyarrow as pa

    numbers = list(range(250_000))  # ~1.6 MB a line
    lines = [
        json.dumps({"k": f"line-{n}", "v": numbers[n:], "skip": {"a": [1, 2]}}) for n in range(5)
    ]
    data = ("\n".join(lines) + "\n").encode()
    assert min(len(line) for line in lines) > 1 << 20
    schema = pa.schema([("k", pa.string()), ("v", pa.list_(pa.int64()))])
    table = json_lines.parse_block(_block(data), schema)
    expected = [{"k": json.loads(x)["k"], "v": json.loads(x)["v"]} for x in lines]
    assert table.to_pylist() == expected


def test_one_long_line_among_short_ones_gets_a_block_that_holds_it() -> None:
    assert len(LINE) == 69
    data = LINE * 1000 + _lines_of(1_500_000, 1)
    # Mean line 1,568 bytes (16 of them: 25,088), longest 1,500,000 (twice: 3,000,000), the
    # block itself 69,000 + 1,500,000 = 1,569,000 bytes.
    assert json_lines.parse_bytes(_block(data)) == 1_569_000


def test_a_block_with_one_line_of_several_mebibytes_parses_to_its_values() -> None:
    import json

    import pyarrow as pa

    lines = [json.dumps({"k": f"line-{n}"}) for n in range(300)]
    lines[150] = json.dumps({"k": "long", "v": list(range(500_000))})
    assert len(lines[150]) > 3 << 20  # a 1 MiB block lies wholly inside it
    data = ("\n".join(lines) + "\n").encode()
    schema = pa.schema([("k", pa.string()), ("v", pa.list_(pa.int64()))])
    table = json_lines.parse_block(_block(data), schema)
    assert table.column("k").to_pylist() == [json.loads(line)["k"] for line in lines]
    assert table.column("v").to_pylist()[150] == list(range(500_000))
    assert table.column("v").null_count == 299


@pytest.mark.parametrize(
    ("data", "longest"),
    [(b"ab\ncd\n", 3), (b"ab\ncde", 3), (b"abcd", 4), (b"", 0), (b"a\n\n", 2), (b"\nabc\n", 4)],
)
def test_longest_line_counts_its_newline_and_a_last_line_without_one(
    data: bytes, longest: int
) -> None:
    from audit_app.ingestion.token_logs.columnar_blocks import longest_line

    line_ends = np.flatnonzero(np.frombuffer(data, np.uint8) == 0x0A)
    assert longest_line(line_ends, len(data)) == longest


def _lines(lengths: list[int]) -> bytes:
    """Lines of the given lengths (newline included), each of its own letter."""
    return b"".join(bytes([97 + n % 26]) * (length - 1) + b"\n" for n, length in enumerate(lengths))


@pytest.mark.parametrize(
    "lengths",
    [
        [],
        [1],
        [5000] * 10,  # long lines: found one by one
        [40] * 1000,  # short lines: the rest in one pass after the probe
        [3] * 64 + [900] * 5,  # short through the probe, long after: one pass
        [300] * 63 + [1] * 500,  # long through the probe, short after: still one by one
        [255] * 64 + [7] * 10,  # the probe's 64 lines average just under 256 bytes
        [256] * 64 + [7] * 10,  # ... and exactly 256
    ],
)
def test_newline_positions_are_numpy_s(lengths: list[int]) -> None:
    data = _lines(lengths) + b"tail without newline\nmore"
    for size in (len(data), len(data) - 4, sum(lengths)):
        found = json_lines.newline_positions(data, size)
        expected = np.flatnonzero(np.frombuffer(data, np.uint8, count=size) == 0x0A)
        assert found.dtype == np.int64
        assert found.tolist() == expected.tolist()
