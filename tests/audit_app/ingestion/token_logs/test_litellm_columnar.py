"""The columnar LiteLLM CSV reader against the row-by-row reader it must equal.

The row path (`litellm.read_rows`) is the independent method here: for every file, the
columnar reader's canonical rows (its frame plus the rows it handed to the row converter) and
its rejects must be exactly the row path's. The generated files mix good rows with every kind
of bad or unusual value, so both the vectorised checks and the hand-over to the row converter
are exercised.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import random
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from audit_app.ingestion.reading import ImportFileError, RowReject
from audit_app.ingestion.token_logs import (
    ColumnarUnsupported,
    columnar_blocks,
    litellm,
)
from audit_app.ingestion.token_logs.base import ParsedChunk
from audit_app.ingestion.token_logs.litellm_columnar import read_csv_columnar
from tests.support.chunks import collect_chunks
from tests.support.paths import FIXTURES_DIR

FIXTURES = FIXTURES_DIR / "litellm"
HEADER = [
    "request_id",
    "call_type",
    "api_key",
    "spend",
    "total_tokens",
    "prompt_tokens",
    "completion_tokens",
    "startTime",
    "endTime",
    "completionStartTime",
    "model",
    "model_group",
    "custom_llm_provider",
    "user",
    "metadata",
    "cache_hit",
    "request_tags",
    "team_id",
    "end_user",
    "status",
    # Not read by the mapping: parsed around, never converted.
    "messages",
    "session_id",
]
START = datetime(2024, 5, 1, 8, 0, tzinfo=UTC)
ISO = "%Y-%m-%d %H:%M:%S.%f"


# --- reading helpers ----------------------------------------------------------------------------


def _collect(chunks: Iterator[ParsedChunk]) -> tuple[pd.DataFrame, list[RowReject], list[int]]:
    return collect_chunks(chunks)


def _row_path(data: bytes, chunk_rows: int = 1000) -> tuple[pd.DataFrame, list[RowReject]]:
    frame, rejects, _ = _collect(litellm.read_rows(io.BytesIO(data), chunk_rows=chunk_rows))
    return frame, rejects


def _assert_same_as_row_path(
    data: bytes, *, chunk_rows: int, block_bytes: int | None = None
) -> list[ParsedChunk]:
    chunks = list(
        read_csv_columnar(io.BytesIO(data), chunk_rows=chunk_rows, block_bytes=block_bytes)
    )
    rejects, counts = _assert_chunks_are_the_row_paths(chunks, data)
    assert [r.line for r in rejects] == sorted(r.line for r in rejects)
    assert all(0 < count <= chunk_rows for count in counts)
    return chunks


def _assert_chunks_are_the_row_paths(
    chunks: list[ParsedChunk], data: bytes
) -> tuple[list[RowReject], list[int]]:
    """The chunks hold the row path's rows and rejects for `data`, and their positions rise to
    its end; their rejects and row counts."""
    frame, rejects, counts = _collect(iter(chunks))
    expected_frame, expected_rejects = _row_path(data)
    pd.testing.assert_frame_equal(frame, expected_frame)
    assert rejects == expected_rejects
    assert sum(counts) == len(expected_frame) + len(expected_rejects)
    positions = [chunk.bytes_read for chunk in chunks]
    assert positions == sorted(set(positions))
    assert positions[-1] == len(data)
    return rejects, counts


# --- generated files ----------------------------------------------------------------------------


def _good_row(number: int, rng: random.Random) -> dict[str, str]:
    started = START + timedelta(seconds=37 * number, microseconds=rng.randrange(1_000_000))
    ended = started + timedelta(microseconds=rng.randrange(200_000, 20_000_000))
    streamed = rng.random() < 0.5
    first_token = started + (ended - started) / 3 if streamed else ended
    prompt, completion = rng.randrange(1, 5000), rng.randrange(1, 900)
    metadata = {
        "user_api_key_alias": rng.choice(["support-bot", "rag-service", "", "équipe-bot"]),
        "user_api_key_team_alias": rng.choice(["support", "search", ""]),
    }
    if rng.random() < 0.3:
        metadata["pool"] = "h100-pool-a"
    return {
        "request_id": f"req-{number}",
        "call_type": rng.choice(["acompletion", "completion", "atext_completion"]),
        "api_key": rng.choice(["88dc29a1", "5e11b7c0", ""]),
        "spend": repr(rng.randrange(1, 10**6) / 10**8),
        "total_tokens": str(prompt + completion),
        "prompt_tokens": str(prompt),
        "completion_tokens": str(completion),
        "startTime": started.strftime(ISO),
        "endTime": ended.strftime(ISO),
        "completionStartTime": first_token.strftime(ISO),
        "model": rng.choice(["gpt-4o-mini", "claude-3-5-sonnet-20240620"]),
        "model_group": "group-a",
        "custom_llm_provider": rng.choice(["openai", "anthropic"]),
        "user": rng.choice(["u-1", "u-2", ""]),
        "metadata": json.dumps(metadata),
        "cache_hit": "False",
        "request_tags": rng.choice(['["workload:chat-frontend"]', '["env:prod"]', "[]", ""]),
        "team_id": rng.choice(["team-support", ""]),
        "end_user": rng.choice(["cust-42", "", "NULL"]),
        "status": "success",
        "messages": json.dumps([{"role": "user", "content": 'say "hi", then stop'}]),
        "session_id": "",
    }


Mutation = Callable[[dict[str, str]], None]


def _set(**values: str) -> Mutation:
    def mutate(row: dict[str, str]) -> None:
        row.update(values)

    return mutate


def _metadata(**values: object) -> Mutation:
    def mutate(row: dict[str, str]) -> None:
        row["metadata"] = json.dumps({**json.loads(row["metadata"]), **values})

    return mutate


def _times(started: str, ended: str, first_token: str = "") -> Mutation:
    return _set(startTime=started, endTime=ended, completionStartTime=first_token)


# Every unusual value the row path has an opinion on; each generated row gets one at random.
MUTATIONS: list[Mutation] = [
    # token counts
    _set(prompt_tokens="-5"),
    _set(completion_tokens="12.5"),
    _set(prompt_tokens="NaN"),
    _set(prompt_tokens="inf"),
    _set(completion_tokens="50000000"),
    _set(completion_tokens="10000001"),
    _set(prompt_tokens="10000000"),
    _set(prompt_tokens="850.0"),
    _set(prompt_tokens="+5"),
    _set(prompt_tokens=" 5"),
    _set(prompt_tokens="007"),
    _set(prompt_tokens="0x10"),
    _set(prompt_tokens="1e3"),
    _set(prompt_tokens="1_000"),
    _set(prompt_tokens="٣"),
    _set(prompt_tokens=""),
    _set(completion_tokens="NULL"),
    _set(prompt_tokens="", completion_tokens="", status="failure"),
    _set(call_type="aembedding", completion_tokens=""),
    _set(prompt_tokens="0", completion_tokens="0"),
    # timestamps
    _set(startTime="yesterday noon"),
    _set(startTime="2024-05-01"),
    _set(startTime="2024-05-01 12"),
    _set(startTime="2024-05-01T12Z"),
    _set(startTime="2024-02-30 12:00:00"),
    _set(startTime="2024-05-01 24:00:00"),
    _set(startTime="2024-05-01 12:00:60"),
    _set(startTime=" 2024-05-01 08:00:00"),
    _set(startTime=""),
    _set(endTime="NULL"),
    _times("1714550400", "1714550401.25"),
    _times("1714550400000", "1714550401500", "1714550400500"),
    _times("2024-05-01 08:00:00 UTC", "2024-05-01 08:00:02UTC", "2024-05-01T08:00:01z"),
    _times("2024-05-01t08:00:00", "2024-05-01 08:00:01,5"),
    _times("2024-05-01T10:00:00+02:00", "2024-05-01T08:00:03Z", "2024-05-01T09:00:01+0100"),
    _times("2024-05-01T08:00:00-05", "2024-05-01T08:00:00.5-05", "2024-05-01T08:00:00.5-05"),
    _times("2024-05-01 08:00", "2024-05-01 08:01"),
    _times("2024-05-01 08:00:00.123456789", "2024-05-01 08:00:00.1234567891"),
    _times("2024-05-01 08:00:00.9999999", "2024-05-01 08:00:01.0000001"),
    _times("2200-01-01 00:00:00", "2200-01-01 00:00:01"),
    _times("1969-12-31 23:59:59.9999999", "1970-01-01 00:00:00.5"),
    _times("2024-05-01 08:00:00+05:75", "2024-05-01 08:00:00+06:15"),
    _times("2024-05-01 08:00:05", "2024-05-01 08:00:00"),
    _times("2024-05-01 08:00:00", "2024-05-01 08:00:05", "2024-05-01 08:00:06"),
    _times("2024-05-01 08:00:00", "2024-05-01 08:00:05", "2024-05-01 07:59:59"),
    _times("2024-05-01 08:00:00", "2024-05-01 08:00:05", "2024-05-01 08:00:00"),
    _times("2024-05-01 08:00:00", "2024-05-01 08:00:05", "2024-05-01 08:00:05.0000009"),
    _times("2024-05-01 08:00:00", "2024-05-01 08:00:05", " NULL "),
    _times("2024-05-01 08:00:00", "2024-05-01 08:00:05", "None"),
    # The first and the last moments read (2000-01-01 read, 2100-01-01 rejected).
    _times("2000-01-01 00:00:00", "2000-01-01 00:00:05"),
    _times("1999-12-31 23:59:59.999999", "2000-01-01 00:00:05"),
    _times("2099-12-31 23:59:55", "2100-01-01 00:00:00"),
    _times("2099-12-31 23:59:55", "2099-12-31 23:59:59.999999"),
    _set(completionStartTime=""),
    # spend
    _set(spend="0", cache_hit="False"),
    _set(spend="0.0", cache_hit="True"),
    _set(spend="0", cache_hit=" true "),
    _set(spend="0E-10"),
    _set(spend="-0"),
    _set(spend="0", prompt_tokens="0", completion_tokens="0"),
    _set(spend=""),
    _set(spend="NULL"),
    _set(spend="-0.01"),
    _set(spend="nan"),
    _set(spend="Infinity"),
    _set(spend="abc"),
    _set(spend=" 0.5"),
    _set(spend="1_0"),
    _set(spend="1.2e-05"),
    _set(spend="+.5"),
    _set(spend="5."),
    _set(spend="0.0000000005"),
    _set(spend="0.0000000015"),
    _set(spend="0.0000000025"),
    _set(spend="0.00000000250000000000000000000001"),
    _set(spend="1.0000000025"),
    _set(spend="1e-400"),
    _set(spend="-6e-400"),
    _set(spend="5e-324"),
    _set(spend="2000000"),
    # The row path's largest amount is 100,000: above it (and below the float fast path's own
    # limit, ~1.1M) the row is rejected.
    _set(spend="100000"),
    _set(spend="100000.01"),
    _set(spend="500000"),
    _set(spend="0.1234567890123456789012345678905"),
    # names, status, operation
    _set(model="", model_group=""),
    _set(model="", model_group="fallback-group"),
    _set(model="NULL", model_group="null"),
    _set(status="failure"),
    _set(status="500"),
    _set(status="200"),
    _set(status="weird"),
    _set(status=""),
    _set(status="", metadata='{"status": "failure"}'),
    _set(status="", metadata='{"status": "weird"}'),
    _set(status=" OK "),
    _set(call_type="acreate_batch"),
    _set(call_type=" Embedding "),
    _set(call_type=""),
    _set(custom_llm_provider="NULL"),
    _set(team_id="  team-x  "),
    _set(api_key="null"),
    # metadata
    _set(metadata="{bad json"),
    _set(metadata="[1, 2]"),
    _set(metadata=""),
    _set(metadata="null"),
    _set(metadata="NULL"),
    _metadata(spend_logs_metadata=5),
    _metadata(spend_logs_metadata='{"pool": "from-text"}'),
    _metadata(spend_logs_metadata={"pool": "spend-pool", "workload": "nightly-eval"}),
    _metadata(workload="  "),
    _metadata(workload=5),
    _metadata(workload={"nested": 1}),
    _metadata(workload="metadata-named"),
    _metadata(tags=["workload:from-metadata-tags"]),
    _metadata(tags="a, workload:comma-tags"),
    _metadata(tags=5),
    _metadata(batch_api=True),
    _metadata(batch_api="yes"),
    _metadata(batch_api="maybe"),
    _set(call_type="acreate_batch", metadata='{"batch_api": "maybe"}'),
    _metadata(batch_models=["gpt-4o-mini"]),
    _metadata(batch_models=[]),
    _metadata(usage_object={"prompt_tokens_details": {"cached_tokens": 1}}),
    _metadata(usage_object={"cache_read_input_tokens": 10**9}),
    _metadata(additional_usage_values={"cache_read_input_tokens": -1}),
    _metadata(additional_usage_values={"prompt_tokens_details": {"cached_tokens": "abc"}}),
    _set(prompt_tokens="10", metadata='{"usage_object": {"cache_read_input_tokens": 11}}'),
    _set(prompt_tokens="10", metadata='{"usage_object": {"cache_read_input_tokens": 10}}'),
    # Cache writes: the same metadata but for the count must keep each row's own count.
    _metadata(usage_object={"cache_creation_input_tokens": 3}),
    _metadata(usage_object={"cache_creation_input_tokens": 5}),
    _metadata(usage_object={"cache_read_input_tokens": 2, "cache_creation_input_tokens": 4}),
    _metadata(additional_usage_values={"cache_creation_input_tokens": -1}),
    _set(
        prompt_tokens="10",
        metadata='{"usage_object": '
        '{"cache_read_input_tokens": 6, "cache_creation_input_tokens": 5}}',
    ),
    _metadata(user_api_key_alias="null"),
    _metadata(user_api_key_alias=7),
    _metadata(pool=" "),
    # request tags and the workload rule
    _set(request_tags="['workload: ', 'batch']"),
    _set(request_tags="workload:rag-answer, team:search"),
    _set(request_tags="[unclosed"),
    _set(request_tags='["a", {"b": 1}, 2024, true]'),
    _set(request_tags='["WORKLOAD: upper-case "]'),
    _set(request_tags='["workload:unassigned/a"]', model="a", api_key="", team_id=""),
    _set(
        request_tags="[]",
        model="b",
        api_key="",
        team_id="",
        metadata='{"workload": "unassigned/b"}',
    ),
    _set(request_tags="[]", model="a", api_key="", team_id="", metadata="{}"),
    # cells the csv module and pyarrow must read alike (unmapped column)
    _set(messages='x"y'),
    _set(messages='"quoted" tail'),
    _set(messages=" "),
]


def _written(rows: list[dict[str, str]]) -> bytes:
    """`rows` as a LiteLLM CSV export under HEADER, lines ending in `\\n`."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    writer.writerows([row[name] for name in HEADER] for row in rows)
    return out.getvalue().encode()


def _generated_csv(
    rows: int, *, seed: int, unusual: float = 0.4, lineterminator: str = "\r\n"
) -> bytes:
    rng = random.Random(seed)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=lineterminator)
    writer.writerow(HEADER)
    for number in range(rows):
        row = _good_row(number, rng)
        if rng.random() < unusual:
            rng.choice(MUTATIONS)(row)
        writer.writerow([row[name] for name in HEADER])
    return out.getvalue().encode()


# --- equivalence --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("chunk_rows", "block_bytes"),
    [(97, None), (97, 8192), (100_000, None), (1000, 50_000), (13, 5000)],
)
def test_generated_file_matches_the_row_path(chunk_rows: int, block_bytes: int | None) -> None:
    data = _generated_csv(2000, seed=7)
    chunks = _assert_same_as_row_path(data, chunk_rows=chunk_rows, block_bytes=block_bytes)
    fast_rows = sum(len(chunk.frame) for chunk in chunks)
    row_path_rows = sum(len(chunk.requests) for chunk in chunks)
    assert fast_rows > 1000  # the good rows really take the vectorised path
    assert row_path_rows > 30  # epoch, `UTC`, odd spellings: converted by the row path


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_unusual_value_matches_the_row_path(seed: int) -> None:
    data = _generated_csv(2000, seed=seed, unusual=0.9, lineterminator="\n")
    _assert_same_as_row_path(data, chunk_rows=250)


def test_clean_file_goes_entirely_through_the_frame() -> None:
    data = _generated_csv(2000, seed=11, unusual=0.0)
    chunks = _assert_same_as_row_path(data, chunk_rows=500)
    assert [len(chunk.requests) + len(chunk.rejects) for chunk in chunks] == [0, 0, 0, 0]
    assert [len(chunk.frame) for chunk in chunks] == [500, 500, 500, 500]


def test_a_row_longer_than_a_mebibyte_stays_in_the_frame() -> None:
    # A long prompt logged in `messages`: pyarrow refused a row longer than its block, and
    # the block went to the row path.
    rng = random.Random(17)
    rows = [_good_row(number, rng) for number in range(300)]
    rows[120]["messages"] = json.dumps([{"role": "user", "content": "word " * 600_000}])
    data = _written(rows)
    assert max(len(line) for line in data.split(b"\n")) > 3_000_000
    chunks = _assert_same_as_row_path(data, chunk_rows=100_000)
    assert not any(c.requests or c.rejects for c in chunks)
    assert sum(len(c.frame) for c in chunks if c.frame is not None) == 300


def test_missing_spellings_stay_in_the_frame() -> None:
    # `completionStartTime` written as any spelling the row path reads as missing is missing
    # here too, not a failed timestamp that sends the row to the row path.
    spellings = ["", "null", "NULL", "Null", "none", "None", "NONE"]
    mutations = [_set(completionStartTime=spelling) for spelling in spellings]
    rng = random.Random(13)
    rows = [_good_row(number, rng) for number in range(70)]
    for number, row in enumerate(rows):
        mutations[number % len(mutations)](row)
    chunks = _assert_same_as_row_path(_written(rows), chunk_rows=1000)
    assert [len(chunk.requests) + len(chunk.rejects) for chunk in chunks] == [0]
    assert [len(chunk.frame) for chunk in chunks] == [70]


def test_chunks_end_where_the_row_path_chunks_end() -> None:
    data = _generated_csv(1000, seed=5)
    columnar = list(read_csv_columnar(io.BytesIO(data), chunk_rows=97))
    rows = list(litellm.read_rows(io.BytesIO(data), chunk_rows=97))
    assert [c.rows_read for c in columnar] == [c.rows_read for c in rows]
    assert [c.bytes_read for c in columnar] == [c.bytes_read for c in rows]


@pytest.mark.parametrize("chunk_rows", [97, 100_000])
def test_blocks_read_in_pieces_match_the_row_path(
    monkeypatch: pytest.MonkeyPatch, chunk_rows: int
) -> None:
    # Each 8,000-byte block is read, checked and parsed in six pieces of at most 1,500 bytes,
    # then joined: chunks cross the pieces' edges, and end just after their last line. The
    # file's last line has no line end, so the last block ends where its last piece does.
    monkeypatch.setattr(columnar_blocks, "PIECE_BYTES", 1500)
    data = _generated_csv(990, seed=17).removesuffix(b"\r\n")
    chunks = _assert_same_as_row_path(data, chunk_rows=chunk_rows, block_bytes=8000)
    line_ends = [m.end() for m in re.finditer(b"\n", data)] + [len(data)]
    read = list(itertools.accumulate(c.rows_read for c in chunks))
    assert [c.bytes_read for c in chunks] == [line_ends[rows] for rows in read]
    if chunk_rows == 97:
        assert any(c.rows_read < 97 for c in chunks[:-1])  # chunks stop at blocks' ends
        return
    # One chunk a block: the lines of six pieces, each the whole lines in 1,500 bytes (the
    # last line, without its line end, is a piece of its own).
    pieces, start = [], data.index(b"\n") + 1
    while start < len(data):
        window = data[start : start + 1500]
        cut = window.rfind(b"\n") + 1 or len(window)  # the last line has no line end
        pieces.append(window[:cut].count(b"\n") or 1)
        start += cut
    assert len(pieces) > 12 and len(pieces) % 6 > 1  # the last block joins the last line too
    blocks = [sum(pieces[i : i + 6]) for i in range(0, len(pieces), 6)]
    assert [c.rows_read for c in chunks] == blocks


def test_fixture_with_its_multi_line_cell_joined_matches_the_row_path() -> None:
    data = (FIXTURES / "spend_logs.csv").read_bytes()
    joined = data.replace(b'"",\n ""', b'"", ""')
    assert joined.count(b"\n") == data.count(b"\n") - 1
    _assert_same_as_row_path(joined, chunk_rows=2)
    _, rejects = _row_path(joined)
    assert [(r.line, r.field) for r in rejects] == [
        (8, "prompt_tokens"),
        (9, "completion_tokens"),
        (10, "prompt_tokens"),
        (11, "completion_tokens"),
        (12, "startTime"),
        (13, "endTime"),
        (14, "model"),
    ]


def test_bom_and_crlf() -> None:
    data = b"\xef\xbb\xbf" + _generated_csv(300, seed=3)
    _assert_same_as_row_path(data, chunk_rows=100)


def test_byte_order_mark_inside_a_block_is_text() -> None:
    lines = _generated_csv(300, seed=4, lineterminator="\n").split(b"\n")
    lines[150] = b"\xef\xbb\xbf" + lines[150]
    _assert_same_as_row_path(b"\n".join(lines), chunk_rows=100)


def test_header_only_and_missing_columns() -> None:
    header = ",".join(HEADER).encode()
    assert list(read_csv_columnar(io.BytesIO(header + b"\r\n"), chunk_rows=10)) == []
    assert list(read_csv_columnar(io.BytesIO(header), chunk_rows=10)) == []
    without_start = header.replace(b"startTime,", b"").replace(b"endTime,", b"")
    with pytest.raises(ImportFileError) as caught:
        list(read_csv_columnar(io.BytesIO(without_start + b"\n"), chunk_rows=10))
    assert str(caught.value) == "line 1: missing required columns `startTime`, `endTime`"


def test_optional_columns_may_be_absent() -> None:
    data = _generated_csv(400, seed=9)
    kept = ["request_id", "startTime", "endTime", "model", "prompt_tokens", "completion_tokens"]
    rows = list(csv.reader(io.StringIO(data.decode())))
    positions = [rows[0].index(name) for name in kept]
    narrow = io.StringIO()
    csv.writer(narrow).writerows([[row[i] for i in positions] for row in rows])
    _assert_same_as_row_path(narrow.getvalue().encode(), chunk_rows=64)


# --- files the fast path leaves to the row path -------------------------------------------------


def _with_line(data: bytes, line: int, replacement: bytes) -> bytes:
    lines = data.split(b"\n")
    lines[line - 1] = replacement
    return b"\n".join(lines)


GOOD = _generated_csv(400, seed=21, lineterminator="\n")
LATE_ROW = 300
UNSUPPORTED = {
    "quoted newline": GOOD.replace(b"say ", b"say\n", 1),
    "quoted newline late": _with_line(
        GOOD, LATE_ROW, GOOD.split(b"\n")[LATE_ROW - 1].replace(b"say ", b"say\n")
    ),
    "empty line": _with_line(GOOD, LATE_ROW, b""),
    "empty line at the end": GOOD + b"\n",
    "empty CRLF line": _with_line(GOOD, LATE_ROW, b"\r"),
    "blank line": _with_line(GOOD, LATE_ROW, b"   "),
    "too few fields": _with_line(GOOD, LATE_ROW, b"r1,acompletion,k1"),
    "too many fields": _with_line(GOOD, LATE_ROW, GOOD.split(b"\n")[LATE_ROW - 1] + b",extra"),
    "unterminated quote": _with_line(GOOD, LATE_ROW, b'r1,"acompletion,k1'),
    "bare carriage return": GOOD.replace(b"acompletion", b"acomp\rletion", 1),
    "NUL byte": GOOD.replace(b"acompletion", b"acomp\x00letion", 1),
    "invalid UTF-8": GOOD.replace(b"acompletion", b"acomp\xffletion", 1),
    "BOM at a line start": _with_line(GOOD, 2, b"\xef\xbb\xbf" + GOOD.split(b"\n")[1]),
    "header over two lines": GOOD.replace(b"request_id", b'"request\n_id"', 1),
    "repeated column": GOOD.replace(b"session_id", b"request_id", 1),
    "blank first line": b"\n" + GOOD,
}


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_unsupported_shapes_raise_before_anything_wrong_is_yielded(name: str) -> None:
    data = UNSUPPORTED[name]
    yielded_lines = 1
    with pytest.raises(ColumnarUnsupported):
        for chunk in read_csv_columnar(io.BytesIO(data), chunk_rows=50, block_bytes=8192):
            yielded_lines += chunk.rows_read
    # What was yielded before the error is exactly what the row path gives for those lines.
    good_prefix = b"\n".join(data.split(b"\n")[:yielded_lines]) + b"\n"
    if yielded_lines > 1:
        _assert_same_as_row_path(good_prefix, chunk_rows=50, block_bytes=8192)


def test_a_line_longer_than_the_csv_field_limit_is_left_to_the_row_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(columnar_blocks, "CSV_FIELD_SIZE_LIMIT", 5000)
    data = _with_line(GOOD, LATE_ROW, GOOD.split(b"\n")[LATE_ROW - 1] + b"x" * 5000)
    with pytest.raises(ColumnarUnsupported):
        list(read_csv_columnar(io.BytesIO(data), chunk_rows=50))


def _outcome(read: Callable[..., Iterator[ParsedChunk]], data: bytes) -> object:
    try:
        frame, rejects, _ = _collect(read(io.BytesIO(data), chunk_rows=50))
    except ImportFileError as error:
        return str(error)
    return frame.to_dict("list"), rejects


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_litellm_read_falls_back_to_the_row_path(name: str) -> None:
    # Larger than the head, so litellm.read takes the columnar path first.
    data = UNSUPPORTED[name]
    assert len(data) > 64 * 1024
    assert _outcome(litellm.read, data) == _outcome(litellm.read_rows, data)


def test_litellm_read_resumes_row_by_row_after_a_late_problem() -> None:
    data = _generated_csv(6000, seed=13, lineterminator="\n")
    assert len(data) > 2 << 20  # a few of the 1 MiB blocks
    lines = data.split(b"\n")
    lines[5000] = b""  # an empty line in the last block
    data = b"\n".join(lines)
    chunks = list(litellm.read(io.BytesIO(data), chunk_rows=500))
    assert chunks[0].frame is not None and len(chunks[0].frame) > 400
    assert chunks[-1].frame is None  # the row path finished the file
    _assert_chunks_are_the_row_paths(chunks, data)


def test_litellm_read_resumes_at_the_block_when_a_later_piece_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Blocks of about 6,000 rows, read in pieces of 64 KiB: an empty line in a later piece of
    # the second block refuses that whole block, and the row path reads on from its first line.
    monkeypatch.setattr(columnar_blocks, "PIECE_BYTES", 64 * 1024)
    lines = _generated_csv(15_000, seed=19, lineterminator="\n").split(b"\n")
    lines[10_000] = b""
    data = b"\n".join(lines)
    chunks = list(litellm.read(io.BytesIO(data), chunk_rows=6_000))
    # Only the first block went through the frame: none of the second block's good pieces.
    assert [c.frame is not None for c in chunks] == [True] + [False] * (len(chunks) - 1)
    assert 5_000 < chunks[0].rows_read < 6_000 and len(chunks[0].frame) > 4_000
    _assert_chunks_are_the_row_paths(chunks, data)


def test_litellm_read_uses_the_fast_path_for_csv_only() -> None:
    csv_data = _generated_csv(400, seed=17)
    assert len(csv_data) > 64 * 1024
    chunks = list(litellm.read(io.BytesIO(csv_data), chunk_rows=1000))
    assert len(chunks) == 1 and len(chunks[0].frame) > 200
    small = _generated_csv(20, seed=17)
    assert all(c.frame is None for c in litellm.read(io.BytesIO(small), chunk_rows=1000))
    jsonl = (FIXTURES / "spend_logs.jsonl").read_bytes()
    assert all(c.frame is None for c in litellm.read(io.BytesIO(jsonl), chunk_rows=1000))


PLAIN_METADATA = [
    '{"user_api_key_alias": "bot", "user_api_key_team_alias": "cx"}',
    '{"user_api_key_alias": " bot ", "usage_object": {"prompt_tokens_details": '
    '{"cached_tokens": 991}}}',
    '{"usage_object": {"cache_read_input_tokens": 12, "prompt_tokens": 40}}',
    '{"usage_object": {"prompt_tokens_details": {"cached_tokens": null}, '
    '"cache_read_input_tokens": 7}}',
    '{"usage_object": {"prompt_tokens_details": {}}}',
    '{"usage_object": {}}',
    '{"pool": "h100-pool", "status": "failure"}',
    '{"user_api_key_alias": "NULL", "pool": ""}',
    "{}",
]
NOT_PLAIN_METADATA = [
    '{"usage_object": {"prompt_tokens_details": {"cached_tokens": 12.0}}}',
    '{"usage_object": {"prompt_tokens_details": {"cached_tokens": -3}}}',
    '{"usage_object": {"prompt_tokens_details": {"cached_tokens": true}}}',
    '{"usage_object": {"cache_read_input_tokens": 99999999999}}',
    '{"usage_object": "text"}',
    '{"usage_object": {"prompt_tokens_details": [1]}}',
    '{"user_api_key_alias": 5}',
    '{"workload": "w", "user_api_key_alias": "bot"}',
    '{"tags": ["workload:x"]}',
    '{"spend_logs_metadata": {"pool": "p"}}',
    '{"batch_api": true}',
    "[1, 2]",
    "not json",
    "",
]


@pytest.mark.parametrize("raw", PLAIN_METADATA)
def test_plain_metadata_decoding_matches_the_full_decoding(raw: str) -> None:
    from audit_app.ingestion.token_logs.litellm_columnar import (
        _metadata_facts_full,
        _plain_metadata_facts,
    )

    fast = _plain_metadata_facts(raw)
    assert fast is not None
    assert fast == _metadata_facts_full(raw)


@pytest.mark.parametrize("raw", NOT_PLAIN_METADATA)
def test_other_metadata_goes_to_the_full_decoding(raw: str) -> None:
    from audit_app.ingestion.token_logs.litellm_columnar import _plain_metadata_facts

    assert _plain_metadata_facts(raw) is None


def test_a_read_that_cuts_a_character_in_two_still_parses_its_block() -> None:
    # A run's bytes go past its last whole line; only data[:size] is checked, so a UTF-8
    # character cut by the read's end does not send the block to the row path.
    lines = GOOD.split(b"\n")
    header, rows = lines[0], [line for line in lines[1:] if line]
    named = [row.replace(b"gpt-4o", "gpt-4o-é€😀".encode()) for row in rows[:40]]
    assert named != rows[:40]
    data = header + b"\n" + b"\n".join(named) + b"\n"
    stream = io.BytesIO(data)
    header_end = columnar_blocks.read_header(stream).end
    for block_bytes in range(200, 260):
        stream = io.BytesIO(data)
        blocks = list(
            columnar_blocks.parsed_blocks(
                stream, header=columnar_blocks.read_header(stream), block_bytes=block_bytes
            )
        )
        assert sum(block.table.num_rows for block in blocks) == 40, block_bytes
        assert blocks[-1].offset + blocks[-1].size == len(data) > header_end
