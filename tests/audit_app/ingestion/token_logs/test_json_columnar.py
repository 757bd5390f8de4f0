"""The columnar LiteLLM JSONL reader against the row-by-row reader it must equal.

The row path (`litellm.read_rows`) is the independent method: for every file, the columnar
reader's canonical rows (its frame plus the rows it handed to the row converter) and its
rejects must be exactly the row path's. Generated files mix good rows with unusual values of
every JSON type, and with lines or types that make a whole block fall back to the row path.
"""

from __future__ import annotations

import gzip
import io
import json
import random
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from audit_app.ingestion.reading import ImportFileError, RowReject
from audit_app.ingestion.token_logs import json_columnar, json_lines, litellm
from audit_app.ingestion.token_logs.base import ParsedChunk
from audit_app.ingestion.token_logs.json_columnar import read_jsonl_columnar
from tests.support.chunks import collect_chunks
from tests.support.paths import FIXTURES_DIR

FIXTURES = FIXTURES_DIR / "litellm"
START = datetime(2024, 5, 1, 8, 0, tzinfo=UTC)
ISO = "%Y-%m-%dT%H:%M:%S.%fZ"


def _collect(chunks: Iterator[ParsedChunk]) -> tuple[pd.DataFrame, list[RowReject], list[int]]:
    return collect_chunks(chunks, categories_as_text=True)


def _row_path(data: bytes) -> tuple[pd.DataFrame, list[RowReject]]:
    frame, rejects, _ = _collect(litellm.read_rows(io.BytesIO(data), chunk_rows=1000))
    return frame, rejects


def _assert_same_as_row_path(
    data: bytes, *, chunk_rows: int, block_bytes: int | None = None
) -> list[ParsedChunk]:
    chunks = list(
        read_jsonl_columnar(io.BytesIO(data), chunk_rows=chunk_rows, block_bytes=block_bytes)
    )
    frame, rejects, counts = _collect(iter(chunks))
    expected_frame, expected_rejects = _row_path(data)
    pd.testing.assert_frame_equal(frame, expected_frame)
    assert sorted(rejects, key=lambda r: r.line) == expected_rejects
    assert sum(counts) == len(expected_frame) + len(expected_rejects)
    assert all(0 < count <= chunk_rows for count in counts)
    positions = [chunk.bytes_read for chunk in chunks]
    assert positions == sorted(set(positions))
    assert positions[-1] == len(data)
    return chunks


# --- generated files ----------------------------------------------------------------------------


class Raw(str):
    """A number written into the JSON text exactly as given (`0.0000000025`, `1e-400`)."""


def _line(record: dict[str, object]) -> str:
    raws: list[str] = []

    def mark(value: object) -> object:
        if isinstance(value, Raw):
            raws.append(str(value))
            return f"@@raw{len(raws) - 1}@@"
        if isinstance(value, dict):
            return {key: mark(item) for key, item in value.items()}
        return value

    text = json.dumps(mark(record))
    return re.sub(r'"@@raw(\d+)@@"', lambda match: raws[int(match[1])], text)


def _good_row(number: int, rng: random.Random) -> dict[str, object]:
    started = START + timedelta(seconds=37 * number, microseconds=rng.randrange(1_000_000))
    ended = started + timedelta(microseconds=rng.randrange(200_000, 20_000_000))
    streamed = rng.random() < 0.5
    first_token = started + (ended - started) / 3 if streamed else ended
    prompt, completion = rng.randrange(1, 5000), rng.randrange(1, 900)
    metadata: dict[str, object] = {
        "user_api_key_alias": rng.choice(["support-bot", "rag-service", "", "équipe-bot"]),
        "user_api_key_team_alias": rng.choice(["support", "search", ""]),
        "user_api_key": "hashed",
        "requester_ip_address": None,
        "usage_object": {
            "prompt_tokens": prompt,
            "prompt_tokens_details": {"cached_tokens": rng.choice([0, 1, None]), "audio": None},
        },
    }
    if rng.random() < 0.3:
        metadata["pool"] = "h100-pool-a"
    return {
        "request_id": f"req-{number}",
        "call_type": rng.choice(["acompletion", "completion", "atext_completion"]),
        "api_key": rng.choice(["88dc29a1", "5e11b7c0", ""]),
        "spend": rng.randrange(1, 10**6) / 10**8,
        "total_tokens": prompt + completion,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "startTime": started.strftime(ISO),
        "endTime": ended.strftime(ISO),
        "completionStartTime": first_token.strftime(ISO),
        "model": rng.choice(["gpt-4o-mini", "claude-3-5-sonnet-20240620"]),
        "model_group": "group-a",
        "custom_llm_provider": rng.choice(["openai", "anthropic"]),
        "user": rng.choice(["u-1", "u-2", "", None]),
        "metadata": metadata,
        "cache_hit": rng.choice(["False", None]),
        "request_tags": rng.choice([["workload:chat-frontend"], ["env:prod"], [], None]),
        "team_id": rng.choice(["team-support", "", None]),
        "end_user": rng.choice(["cust-42", "", "NULL"]),
        "status": "success",
        "messages": [{"role": "user", "content": 'say "hi", then stop'}],
        "session_id": None,
    }


Mutation = Callable[[dict[str, object]], None]


def _set(**values: object) -> Mutation:
    def mutate(row: dict[str, object]) -> None:
        row.update(values)

    return mutate


def _drop(*names: str) -> Mutation:
    def mutate(row: dict[str, object]) -> None:
        for name in names:
            row.pop(name, None)

    return mutate


def _metadata(**values: object) -> Mutation:
    def mutate(row: dict[str, object]) -> None:
        metadata = row["metadata"]
        assert isinstance(metadata, dict)
        metadata.update(values)

    return mutate


def _times(started: object, ended: object, first_token: object = None) -> Mutation:
    return _set(startTime=started, endTime=ended, completionStartTime=first_token)


# Unusual values in the JSON types LiteLLM writes: the columnar path reads the block and
# either vouches for the row or hands it to the row converter.
ROW_MUTATIONS: list[Mutation] = [
    _set(prompt_tokens=-5),
    _set(completion_tokens=50_000_000),
    _set(prompt_tokens=10_000_000),
    _set(prompt_tokens=None),
    _drop("completion_tokens"),
    _set(prompt_tokens=None, completion_tokens=None, status="failure"),
    _set(call_type="aembedding", completion_tokens=None),
    _set(prompt_tokens=0, completion_tokens=0),
    _set(startTime="yesterday noon"),
    _set(startTime="2024-05-01"),
    _set(startTime=""),
    _set(endTime="NULL"),
    _drop("endTime"),
    _times("2024-05-01 08:00:00 UTC", "2024-05-01 08:00:02UTC", "2024-05-01T08:00:01z"),
    _times("2024-05-01T10:00:00+02:00", "2024-05-01T08:00:03Z", "2024-05-01T09:00:01+0100"),
    _times("2024-05-01 08:00:00.123456789", "2024-05-01 08:00:00.1234567891"),
    _times("2200-01-01 00:00:00", "2200-01-01 00:00:01"),
    _times("2024-05-01 08:00:05", "2024-05-01 08:00:00"),
    _times("2024-05-01 08:00:00", "2024-05-01 08:00:05", "2024-05-01 08:00:06"),
    _times("2024-05-01 08:00:00", "2024-05-01 08:00:05", "2024-05-01 08:00:05"),
    _times("1714550400", "1714550401.25"),
    _set(spend=0, cache_hit="False"),
    _set(spend=0.0, cache_hit="True"),
    _set(spend=Raw("-0.0")),
    _set(spend=0, prompt_tokens=0, completion_tokens=0),
    _set(spend=None),
    _drop("spend"),
    _set(spend=-0.01),
    _set(spend=Raw("NaN")),
    _set(spend=Raw("1.2e-05")),
    _set(spend=Raw("0.0000000005")),
    _set(spend=Raw("0.0000000015")),
    _set(spend=Raw("0.0000000025")),
    _set(spend=Raw("0.00000000250000000000000000000001")),
    _set(spend=Raw("1.0000000025")),
    _set(spend=2_000_000),
    _set(spend=Raw("0.1234567890123456789012345678905")),
    _set(model="", model_group=""),
    _set(model=None, model_group="fallback-group"),
    _set(model="NULL", model_group="null"),
    _set(status="failure"),
    _set(status="500"),
    _set(status="weird"),
    _set(status=None, metadata={"status": "failure"}),
    _set(status="", metadata={"status": "weird"}),
    _set(call_type="acreate_batch"),
    _set(call_type=" Embedding "),
    _set(team_id="  team-x  "),
    _set(metadata=None),
    _set(metadata={}),
    _metadata(spend_logs_metadata={"pool": "spend-pool", "workload": "nightly-eval"}),
    _metadata(spend_logs_metadata={"workload": "nightly-eval"}, workload=None),
    _metadata(spend_logs_metadata={"workload": "nightly-eval"}, workload="  "),
    _metadata(spend_logs_metadata=None),
    _metadata(workload="metadata-named"),
    _metadata(tags=["workload:from-metadata-tags"]),
    _metadata(tags=["a", None, "workload:after-null"]),
    _metadata(batch_api=True),
    _metadata(batch_models=["gpt-4o-mini"]),
    _metadata(batch_models=[]),
    _metadata(usage_object={"prompt_tokens_details": {"cached_tokens": 1}}),
    _metadata(usage_object={"cache_read_input_tokens": 10**9}),
    _metadata(usage_object=None, additional_usage_values={"cache_read_input_tokens": -1}),
    _metadata(usage_object={"prompt_tokens_details": None, "cache_read_input_tokens": 3}),
    _set(prompt_tokens=10, metadata={"usage_object": {"cache_read_input_tokens": 11}}),
    _set(prompt_tokens=10, metadata={"usage_object": {"cache_read_input_tokens": 10}}),
    # Cache writes (Anthropic usage): read per row; reads plus writes above the input reject.
    _metadata(usage_object={"cache_creation_input_tokens": 7}),
    _metadata(usage_object={"cache_read_input_tokens": 3, "cache_creation_input_tokens": 4}),
    _metadata(usage_object=None, additional_usage_values={"cache_creation_input_tokens": 5}),
    _metadata(usage_object={"cache_creation_input_tokens": -2}),
    _metadata(usage_object={"cache_creation_input_tokens": 10**9}),
    _set(
        prompt_tokens=10,
        metadata={"usage_object": {"cache_read_input_tokens": 6, "cache_creation_input_tokens": 5}},
    ),
    _set(
        prompt_tokens=10,
        metadata={"usage_object": {"cache_read_input_tokens": 6, "cache_creation_input_tokens": 4}},
    ),
    _metadata(user_api_key_alias="null"),
    _metadata(pool=" "),
    _set(request_tags=["workload: ", "batch"]),
    _set(request_tags=["WORKLOAD: upper-case "]),
    _set(request_tags=["a\x1fb", "workload:sep"]),
    _set(request_tags=[None, "workload:null-first"]),
    _set(request_tags=["workload:unassigned/a"], model="a", api_key="", team_id=""),
    _set(request_tags=[], model="b", api_key="", team_id="", metadata={"workload": "x/b"}),
    _set(messages="x\ny"),
    _set(session_id="say \\u00e9 and \ud83d\ude00"),
]
# Values of another JSON type (or lines) the columnar path does not read: the whole block
# goes to the row path.
BLOCK_MUTATIONS: list[Mutation] = [
    _set(prompt_tokens=850.0),
    _set(prompt_tokens="850"),
    _set(spend="0.5"),
    _set(spend=Raw("1e-400")),
    _set(spend=Raw("5e-324")),
    _set(spend=Raw("1e999")),
    _times(1714550400000, 1714550401500, 1714550400500),
    _set(metadata='{"user_api_key_alias": "as-text"}'),
    _set(metadata=[1, 2]),
    _set(request_tags="workload:rag-answer, team:search"),
    _set(request_tags=["a", {"b": 1}, 2024, True]),
    _metadata(workload=5),
    _metadata(batch_api="yes"),
    _metadata(spend_logs_metadata='{"pool": "from-text"}'),
    _metadata(usage_object={"cache_read_input_tokens": "abc"}),
    _metadata(usage_object={"cache_creation_input_tokens": "abc"}),
    _set(cache_hit=True),
    _set(team_id=7),
]
BAD_LINES = ["", "   ", "{bad json", "[1, 2]", "5", '{"a": 1} {"b": 2}', '{"a": 1, "a": 2}']


def _generated_jsonl(
    rows: int, *, seed: int, unusual: float = 0.4, block_breakers: float = 0.0
) -> bytes:
    rng = random.Random(seed)
    lines = []
    for number in range(rows):
        row = _good_row(number, rng)
        if number and rng.random() < block_breakers:
            if rng.random() < 0.3:
                lines.append(rng.choice(BAD_LINES))
                continue
            rng.choice(BLOCK_MUTATIONS)(row)
        elif number and rng.random() < unusual:
            rng.choice(ROW_MUTATIONS)(row)
        lines.append(_line(row))
    return ("\n".join(lines) + "\n").encode()


# --- equivalence --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("chunk_rows", "block_bytes"),
    [(97, None), (97, 8192), (100_000, None), (1000, 50_000), (13, 5000)],
)
def test_generated_file_matches_the_row_path(chunk_rows: int, block_bytes: int | None) -> None:
    data = _generated_jsonl(1500, seed=chunk_rows)
    chunks = _assert_same_as_row_path(data, chunk_rows=chunk_rows, block_bytes=block_bytes)
    assert sum(len(c.frame) for c in chunks if c.frame is not None) > 800


@pytest.mark.parametrize("seed", range(4))
def test_every_row_mutation_matches_the_row_path(seed: int) -> None:
    data = _generated_jsonl(len(ROW_MUTATIONS) * 8, seed=seed, unusual=0.9)
    _assert_same_as_row_path(data, chunk_rows=50, block_bytes=4096)


@pytest.mark.parametrize("seed", range(4))
def test_blocks_the_columnar_path_cannot_read_match_the_row_path(seed: int) -> None:
    data = _generated_jsonl(600, seed=seed, block_breakers=0.02)
    chunks = _assert_same_as_row_path(data, chunk_rows=40, block_bytes=6000)
    # Some blocks still went through the frame, some wholly by rows.
    assert any(c.frame is not None and len(c.frame) for c in chunks)
    assert any(c.frame is None for c in chunks)


@pytest.mark.parametrize("mutation", range(len(BLOCK_MUTATIONS)))
def test_each_block_breaker_is_read_by_rows(mutation: int) -> None:
    rng = random.Random(mutation)
    rows = [_good_row(number, rng) for number in range(30)]
    BLOCK_MUTATIONS[mutation](rows[20])
    data = ("\n".join(_line(row) for row in rows) + "\n").encode()
    chunks = _assert_same_as_row_path(data, chunk_rows=10, block_bytes=2000)
    assert chunks[0].frame is not None


def test_blocks_are_converted_four_at_a_time_when_a_chunk_would_hold_more() -> None:
    # `manage.py ingest` asks for 200,000-row chunks: converting four blocks at a time keeps
    # the parsing threads busy; the rows and rejects are still the row path's.
    data = _generated_jsonl(600, seed=5)
    lines = [b.lines for b in json_lines.line_blocks(io.BytesIO(data), block_bytes=6000)]
    assert len(lines) > 8
    chunks = _assert_same_as_row_path(data, chunk_rows=100_000, block_bytes=6000)
    assert [c.rows_read for c in chunks] == [sum(lines[i : i + 4]) for i in range(0, len(lines), 4)]


def test_clean_file_goes_entirely_through_the_frame() -> None:
    data = _generated_jsonl(400, seed=3, unusual=0.0)
    chunks = _assert_same_as_row_path(data, chunk_rows=1000)
    assert sum(len(c.frame) for c in chunks) == 400
    assert not any(c.requests or c.rejects for c in chunks)


def test_a_spend_read_as_zero_is_trusted_only_from_its_lines_one_spend_key() -> None:
    # `1e-400` reads as 0.0 (unpriced) in the frame, as a tiny priced amount by `Decimal` in
    # the row path. The line's other `"spend"` (in its metadata) is written as a zero: only a
    # line with one `"spend"` key may vouch for its row's zero, so this row takes the row path.
    rng = random.Random(3)
    rows = [_good_row(number, rng) for number in range(50)]
    rows[20]["spend"], rows[30]["spend"] = Raw("1e-400"), 0
    for row in (rows[20], rows[30]):
        metadata = row["metadata"]
        assert isinstance(metadata, dict)
        metadata["spend"] = 0
    rows[40]["spend"] = 0  # written as a zero, alone: read in the frame
    data = ("\n".join(_line(row) for row in rows) + "\n").encode()
    chunks = _assert_same_as_row_path(data, chunk_rows=1000)
    by_rows = [request.line for chunk in chunks for request in chunk.requests]
    assert by_rows == [21, 31]
    assert sum(len(chunk.frame) for chunk in chunks if chunk.frame is not None) == 48


def test_fixture_matches_the_row_path() -> None:
    data = (FIXTURES / "spend_logs.jsonl").read_bytes()
    # The fixture's blank line and its epoch-number timestamps send blocks to the row path.
    _assert_same_as_row_path(data, chunk_rows=3, block_bytes=300)


def test_real_litellm_lines_match_the_row_path() -> None:
    good = _line(_good_row(0, random.Random(1)))
    # Real exports: CRLF line ends, a last line without a newline, unicode escapes.
    data = (good + "\r\n" + good.replace("support", "sup\\u00e9port") + "\r\n" + good).encode()
    _assert_same_as_row_path(data, chunk_rows=2)


@pytest.mark.parametrize(
    "data",
    [
        b"\xef\xbb\xbf" + _line(_good_row(0, random.Random(0))).encode() + b"\n",
        (_line(_good_row(0, random.Random(0))) + "\n").encode() + b'{"x": "\xff"}\n',
        (_line(_good_row(0, random.Random(0))) + "\n").encode() + b'{"x": "\x00"}\n',
    ],
    ids=["bom", "bad-utf8", "nul"],
)
def test_bytes_json_reads_differently_take_the_row_path(data: bytes) -> None:
    def outcome(read: Callable[..., Iterator[ParsedChunk]]) -> object:
        try:
            return _collect(read(io.BytesIO(data), chunk_rows=10))[1]
        except ImportFileError as error:
            return str(error)

    assert outcome(read_jsonl_columnar) == outcome(litellm.read_rows)


def test_json_nested_too_deeply_for_the_row_path_is_read_by_rows() -> None:
    rows = [_good_row(number, random.Random(number)) for number in range(6)]
    lines = [_line(row) for row in rows]
    # json.loads refuses this line (too deep); pyarrow would skip the unread field.
    lines[3] = lines[3][:-1] + ', "messages": ' + "[" * 3000 + "]" * 3000 + "}"
    data = ("\n".join(lines) + "\n").encode()
    chunks = _assert_same_as_row_path(data, chunk_rows=10)
    assert [r.line for c in chunks for r in c.rejects] == [4]


def test_first_record_decides_between_the_paths() -> None:
    good = _line(_good_row(0, random.Random(0))).encode()

    def whole_record(data: bytes) -> bool:
        return json_columnar.starts_with_whole_record(io.BytesIO(data))

    assert whole_record(good + b"\n")
    assert whole_record(good + b" " * 100_000 + b"\n")  # longer than the head
    assert not whole_record(b"\n" + good + b"\n")
    assert not whole_record(b'{"request_id": "x"}\n')


def test_litellm_read_uses_the_json_fast_path_for_large_jsonl() -> None:
    data = _generated_jsonl(300, seed=5, unusual=0.1)
    assert len(data) > 64 * 1024
    chunks = list(litellm.read(io.BytesIO(data), chunk_rows=1000))
    assert sum(len(c.frame) for c in chunks if c.frame is not None) > 200
    frame, rejects, _ = _collect(iter(chunks))
    expected_frame, expected_rejects = _row_path(data)
    pd.testing.assert_frame_equal(frame, expected_frame)
    assert rejects == expected_rejects
    missing_field = data.replace(b'"model": ', b'"modell": ', 1)
    with pytest.raises(ImportFileError, match="line 1: missing required field `model`"):
        list(litellm.read(io.BytesIO(missing_field), chunk_rows=1000))


def test_gzip_is_refused_before_either_path() -> None:
    data = gzip.compress(_generated_jsonl(300, seed=6))
    for read in (litellm.read, litellm.read_rows):
        with pytest.raises(ImportFileError, match="gzip-compressed"):
            list(read(io.BytesIO(data), chunk_rows=100))
