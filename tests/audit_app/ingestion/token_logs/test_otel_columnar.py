"""The columnar OTLP/JSON lines reader against the span-by-span reader it must equal.

The row path (`otel.read_rows`) is the independent method: for every file, the columnar
reader's canonical rows (its frame plus the spans it handed to the row converter) and its
rejects must be exactly the row path's. Generated files mix good gen_ai spans with unusual
attributes, non-gen_ai spans (skipped by both), and lines or types that send a whole block to
the row path.
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest

from audit_app.demo.traffic import generate_requests
from audit_app.demo.writers import BENCH_START, write_otel_jsonl
from audit_app.ingestion.reading import RowReject
from audit_app.ingestion.token_logs import otel, otel_columnar
from audit_app.ingestion.token_logs.base import ParsedChunk
from audit_app.ingestion.token_logs.otel_columnar import read_jsonl_columnar
from tests.support.chunks import collect_chunks
from tests.support.paths import FIXTURES_DIR

START_NANOS = 1_714_564_800_000_000_000  # 2024-05-01T12:00:00Z


def _collect(chunks: Iterator[ParsedChunk]) -> tuple[pd.DataFrame, list[RowReject], list[int]]:
    return collect_chunks(chunks, sort_by=None, categories_as_text=True)


def _assert_same_as_row_path(
    data: bytes, *, chunk_rows: int, block_bytes: int | None = None
) -> list[ParsedChunk]:
    chunks = list(
        read_jsonl_columnar(io.BytesIO(data), chunk_rows=chunk_rows, block_bytes=block_bytes)
    )
    frame, rejects, counts = _collect(iter(chunks))
    expected_frame, expected_rejects, _ = _collect(
        otel.read_rows(io.BytesIO(data), chunk_rows=1000)
    )
    pd.testing.assert_frame_equal(frame, expected_frame)
    assert rejects == expected_rejects
    assert sum(counts) == len(expected_frame) + len(expected_rejects)
    assert all(0 < count <= chunk_rows for count in counts)
    positions = [chunk.bytes_read for chunk in chunks]
    assert positions == sorted(positions)
    assert not positions or positions[-1] == len(data)
    return chunks


# --- generated files ----------------------------------------------------------------------------


def _value(value: object) -> dict[str, object]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": value}


def _attributes(values: dict[str, object]) -> list[dict[str, object]]:
    return [{"key": key, "value": _value(value)} for key, value in values.items()]


def _good_span(number: int, rng: random.Random) -> dict[str, object]:
    start = START_NANOS + number * 7_000_000_123
    duration = rng.randrange(100_000_000, 9_000_000_000)
    attributes: dict[str, object] = {
        "gen_ai.operation.name": rng.choice(["chat", "embeddings", "text_completion"]),
        "gen_ai.provider.name": rng.choice(["openai", "anthropic"]),
        "gen_ai.request.model": rng.choice(["gpt-4o", "claude-3-5-haiku"]),
        "gen_ai.usage.input_tokens": rng.randrange(1, 5000),
        "gen_ai.usage.output_tokens": rng.randrange(1, 900),
    }
    if rng.random() < 0.5:
        attributes["gen_ai.response.model"] = "gpt-4o-2024-08-06"
    if rng.random() < 0.5:
        attributes["gen_ai.usage.cost"] = rng.randrange(1, 10**6) / 10**8
    if rng.random() < 0.5:
        ttft_ms = rng.randrange(1, duration // 1_000_000)
        attributes["gen_ai.response.time_to_first_chunk"] = ttft_ms / 1000
        attributes["gen_ai.request.stream"] = True
    if rng.random() < 0.3:
        attributes["gen_ai.usage.cache_read.input_tokens"] = 1
    if rng.random() < 0.3:
        attributes["workload"] = rng.choice(["rag", "support-bot"])
    if rng.random() < 0.3:
        attributes["user.id"] = "user-7"
    return {
        "traceId": f"{number:032x}",
        "spanId": f"{number:016x}",
        "name": "chat",
        "kind": 3,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + duration),
        "attributes": attributes,
        "status": {},
    }


Mutation = Callable[[dict[str, object]], None]


def _attribute(**values: object) -> Mutation:
    def mutate(span: dict[str, object]) -> None:
        attributes = span["attributes"]
        assert isinstance(attributes, dict)
        for key, value in values.items():
            attributes[key.replace("__", ".")] = value

    return mutate


def _span(**values: object) -> Mutation:
    def mutate(span: dict[str, object]) -> None:
        span.update(values)

    return mutate


def _without(*names: str) -> Mutation:
    def mutate(span: dict[str, object]) -> None:
        attributes = span["attributes"]
        assert isinstance(attributes, dict)
        for name in names:
            attributes.pop(name, None)

    return mutate


def _embedding_without_output(span: dict[str, object]) -> None:
    _attribute(gen_ai__operation__name="embeddings")(span)
    _without("gen_ai.usage.output_tokens")(span)


SPAN_MUTATIONS: list[Mutation] = [
    _attribute(gen_ai__usage__input_tokens=-5),
    _attribute(gen_ai__usage__input_tokens=50_000_000),
    _attribute(gen_ai__usage__input_tokens="12"),
    _attribute(gen_ai__usage__input_tokens=12.0),
    _without("gen_ai.usage.input_tokens"),
    _without("gen_ai.usage.output_tokens"),
    _attribute(gen_ai__usage__prompt_tokens=77),
    _without("gen_ai.usage.output_tokens", "gen_ai.usage.input_tokens"),
    _embedding_without_output,
    _attribute(gen_ai__usage__cache_read__input_tokens=100_000),
    # Cache writes: read per span; reads plus writes above the input reject the span.
    _attribute(gen_ai__usage__cache_creation__input_tokens=9),
    _attribute(gen_ai__usage__cache_creation__input_tokens=100_000),
    _attribute(gen_ai__usage__cache_creation__input_tokens="9"),
    _attribute(gen_ai__usage__cache_creation__input_tokens=-1),
    _attribute(
        gen_ai__usage__input_tokens=10,
        gen_ai__usage__cache_read__input_tokens=6,
        gen_ai__usage__cache_creation__input_tokens=5,
    ),
    _attribute(
        gen_ai__usage__input_tokens=10,
        gen_ai__usage__cache_read__input_tokens=6,
        gen_ai__usage__cache_creation__input_tokens=4,
    ),
    _attribute(gen_ai__usage__cost=-0.5),
    _attribute(gen_ai__usage__cost=0.0000000025),
    _attribute(gen_ai__usage__cost=0.0),
    _attribute(gen_ai__usage__cost=3_000_000.0),
    _attribute(gen_ai__usage__cost="0.5"),
    _attribute(gen_ai__usage__cost=5),
    _attribute(gen_ai__response__time_to_first_chunk=10_000.0),
    _attribute(gen_ai__response__time_to_first_chunk=-1.0),
    _attribute(gen_ai__response__time_to_first_chunk="0.2"),
    _attribute(gen_ai__response__time_to_first_chunk=0.0000005),
    _attribute(gen_ai__latency__time_to_first_token=0.25),
    _attribute(gen_ai__request__stream="true"),
    _attribute(gen_ai__request__stream=False),
    _attribute(gen_ai__request__model="", gen_ai__response__model=""),
    _attribute(gen_ai__request__model="  NULL "),
    _attribute(gen_ai__request__model=7),
    _attribute(gen_ai__system="vertex_ai"),
    _without("gen_ai.provider.name"),
    _attribute(error__type="timeout"),
    _attribute(error__type=500),
    _span(status={"code": 2, "message": "boom"}),
    _span(status={"code": 1}),
    _span(startTimeUnixNano="0"),
    _span(startTimeUnixNano=""),
    _span(startTimeUnixNano="abc"),
    _span(startTimeUnixNano="99999999999999999999"),
    _span(endTimeUnixNano="1714564700000000000"),
    _span(startTimeUnixNano="946684799999999999"),
    # From 2100-01-01 (the latest time read) on, below and above 2**63 nanoseconds.
    _span(startTimeUnixNano="4102444800000000000", endTimeUnixNano="4102444801000000000"),
    _span(startTimeUnixNano="9000000000000000000", endTimeUnixNano="9000000001000000000"),
    _span(startTimeUnixNano="9300000000000000000", endTimeUnixNano="9300000001000000000"),
    _span(traceId="ABCDEF", spanId=None),
    _attribute(team="team-x", pool=" pool-a "),
    _attribute(enduser__id="legacy-user"),
    _attribute(workload=" "),
    _attribute(gen_ai__operation__name="Generate_Content"),
    # Not a gen_ai span: both readers skip it.
    _span(attributes={"http.method": "GET"}),
    _span(attributes={}),
]
# Values of another JSON type or lines the columnar path does not read: the whole block goes
# to the row path.
BLOCK_BREAKERS: list[Mutation] = [
    _span(startTimeUnixNano=1_714_564_800_000_000_000),
    _span(status={"code": "STATUS_CODE_ERROR"}),
    _span(attributes=[{"key": "gen_ai.usage.input_tokens", "value": {"intValue": 12}}]),
    _span(attributes=[{"key": "a", "value": {"stringValue": None, "intValue": "3"}}]),
    _span(start_time_unix_nano="1714564800000000000"),
    _attribute(gen_ai__usage__output_tokens=None),
]


def _document(spans: list[dict[str, object]], *, service: str) -> dict[str, object]:
    def wire(span: dict[str, object]) -> dict[str, object]:
        attributes = span["attributes"]
        if isinstance(attributes, dict):
            return {**span, "attributes": _attributes(attributes)}
        return span

    resource = {"attributes": _attributes({"service.name": service, "team": "team-res"})}
    return {
        "resourceSpans": [
            {
                "resource": resource,
                "scopeSpans": [{"scope": {"name": "x"}, "spans": [wire(s) for s in spans]}],
            }
        ]
    }


BAD_LINES = [
    "",
    "{bad json",
    '{"notResourceSpans": []}',
    '{"resourceSpans": [null]}',
    '{"resourceSpans": [{"scopeSpans": [{"spans": [5]}]}]}',
    '{"resourceSpans": null}',
]


def _generated_jsonl(
    lines: int, *, seed: int, unusual: float = 0.3, block_breakers: float = 0.0
) -> bytes:
    rng = random.Random(seed)
    out = []
    number = 0
    for line in range(lines):
        if line and rng.random() < block_breakers / 3:
            out.append(rng.choice(BAD_LINES))
            continue
        spans = []
        for _ in range(rng.randrange(1, 6)):
            span = _good_span(number, rng)
            number += 1
            if line and rng.random() < block_breakers:
                rng.choice(BLOCK_BREAKERS)(span)
            elif rng.random() < unusual:
                rng.choice(SPAN_MUTATIONS)(span)
            spans.append(span)
        service = rng.choice(["checkout", "support-agent", ""])
        out.append(json.dumps(_document(spans, service=service)))
    return ("\n".join(out) + "\n").encode()


# --- equivalence --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("chunk_rows", "block_bytes"), [(97, None), (50, 8192), (7, 3000), (100_000, 20_000)]
)
def test_generated_file_matches_the_row_path(chunk_rows: int, block_bytes: int | None) -> None:
    data = _generated_jsonl(300, seed=chunk_rows)
    chunks = _assert_same_as_row_path(data, chunk_rows=chunk_rows, block_bytes=block_bytes)
    assert sum(len(c.frame) for c in chunks if c.frame is not None) > 500


@pytest.mark.parametrize("seed", range(3))
def test_every_span_mutation_matches_the_row_path(seed: int) -> None:
    data = _generated_jsonl(len(SPAN_MUTATIONS) * 3, seed=seed, unusual=0.9)
    _assert_same_as_row_path(data, chunk_rows=40, block_bytes=6000)


@pytest.mark.parametrize("seed", range(3))
def test_blocks_and_lines_the_columnar_path_cannot_read_match_the_row_path(seed: int) -> None:
    data = _generated_jsonl(300, seed=seed, block_breakers=0.03)
    chunks = _assert_same_as_row_path(data, chunk_rows=30, block_bytes=5000)
    assert any(c.frame is not None and len(c.frame) for c in chunks)
    assert any(c.frame is None for c in chunks)


def test_a_span_with_an_attribute_given_twice_is_converted_by_the_row_path() -> None:
    # `otel` keeps the last of two entries with one key; which of them the vectorised pivot
    # keeps is not defined, so the row path converts such a span.
    rng = random.Random(5)
    spans = [_good_span(number, rng) for number in range(6)]
    attributes = spans[3]["attributes"]
    assert isinstance(attributes, dict)
    spans[3]["attributes"] = [
        *_attributes(attributes),
        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "4321"}},
    ]
    lines = [json.dumps(_document(part, service="svc")) for part in (spans[:3], spans[3:])]
    data = ("\n".join(lines) + "\n").encode()
    chunks = _assert_same_as_row_path(data, chunk_rows=100)
    by_rows = [request for chunk in chunks for request in chunk.requests]
    assert [(request.line, request.input_tokens) for request in by_rows] == [(2, 4321)]
    assert sum(len(chunk.frame) for chunk in chunks if chunk.frame is not None) == 5


def test_clean_file_goes_entirely_through_the_frame() -> None:
    data = _generated_jsonl(100, seed=4, unusual=0.0)
    chunks = _assert_same_as_row_path(data, chunk_rows=100_000)
    assert not any(c.requests or c.rejects for c in chunks)


def test_resources_without_attributes_go_through_the_frame() -> None:
    # A block in which no resource has an attribute (none listed, or an empty list) has no
    # entry to look a resource's attributes up in; that raised IndexError, and the ingest of
    # the whole file failed.
    rng = random.Random(12)
    spans = [_good_span(number, rng) for number in range(8)]
    documents = []
    for number, resource in enumerate([{}, {"attributes": []}] * 2):
        document = _document(spans[2 * number : 2 * number + 2], service="svc")
        document["resourceSpans"][0]["resource"] = resource  # type: ignore[index]
        documents.append(json.dumps(document))
    data = ("\n".join(documents) + "\n").encode()
    chunks = _assert_same_as_row_path(data, chunk_rows=100)
    assert not any(c.requests or c.rejects for c in chunks)
    assert sum(len(c.frame) for c in chunks if c.frame is not None) == 8


def test_spans_without_attributes_read_as_the_row_path_reads_them() -> None:
    # Spans with no attribute at all are no gen_ai spans: both paths skip them, and blocks
    # holding only those have no attribute entry to look anything up in.
    span = {"traceId": "01", "spanId": "02", "name": "GET /", "startTimeUnixNano": "1"}
    resource = {"attributes": _attributes({"service.name": "web"})}
    document = {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [span] * 3}]}]}
    data = (json.dumps(document) + "\n").encode() * 40
    assert _assert_same_as_row_path(data, chunk_rows=100) == []


# Every attribute the readers look at, given the same odd value in every span (or resource) of
# the file: blocks where no owner has an entry of some kind, or of any kind, are what a file
# mixing good and odd spans never shows.
UNIFORM_SPAN = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "openai",
    "gen_ai.request.model": "gpt-4o",
    "gen_ai.response.model": "gpt-4o-2024-08-06",
    "gen_ai.usage.input_tokens": 100,
    "gen_ai.usage.output_tokens": 10,
    "gen_ai.usage.cache_read.input_tokens": 3,
    "gen_ai.usage.cost": 0.001,
    "gen_ai.request.stream": True,
    "gen_ai.response.time_to_first_chunk": 0.2,
    "workload": "w",
    "team": "t",
    "pool": "p",
    "user.id": "u",
    "error.type": "timeout",
}
UNIFORM_RESOURCE = {"service.name": "svc", "workload": "rw", "team": "rt", "pool": "rp"}
ODD_VALUES: dict[str, object] = {
    "absent": None,
    "no value": {},
    "an array": {"arrayValue": {"values": []}},
    "an int": 7,
    "a string": "x",
    "a bool": False,
    "a double": 1.5,
}


def _uniform_file(span_attributes: dict[str, object], resource: dict[str, object] | None) -> bytes:
    def wire(values: dict[str, object]) -> list[dict[str, object]]:
        return [
            {"key": key, "value": value if isinstance(value, dict) else _value(value)}
            for key, value in values.items()
        ]

    lines = []
    for line in range(12):
        spans = []
        for number in range(line * 5, line * 5 + 5):
            start = START_NANOS + number * 1_000_000_000
            spans.append(
                {
                    "startTimeUnixNano": str(start),
                    "endTimeUnixNano": str(start + 500_000_000),
                    "attributes": wire(span_attributes),
                }
            )
        resource_spans: dict[str, object] = {"scopeSpans": [{"spans": spans}]}
        if resource is not None:
            resource_spans["resource"] = {"attributes": wire(resource)}
        lines.append(json.dumps({"resourceSpans": [resource_spans]}))
    return ("\n".join(lines) + "\n").encode()


def _with(values: dict[str, object], key: str, odd: str) -> dict[str, object]:
    changed = dict(values)
    if odd == "absent":
        del changed[key]
    else:
        changed[key] = ODD_VALUES[odd]
    return changed


@pytest.mark.parametrize("odd", list(ODD_VALUES))
@pytest.mark.parametrize("key", list(UNIFORM_SPAN))
def test_a_span_attribute_odd_in_every_span_matches_the_row_path(key: str, odd: str) -> None:
    data = _uniform_file(_with(UNIFORM_SPAN, key, odd), UNIFORM_RESOURCE)
    _assert_same_as_row_path(data, chunk_rows=25)


@pytest.mark.parametrize("odd", list(ODD_VALUES))
@pytest.mark.parametrize("key", list(UNIFORM_RESOURCE))
def test_a_resource_attribute_odd_in_every_resource_matches_the_row_path(
    key: str, odd: str
) -> None:
    data = _uniform_file(UNIFORM_SPAN, _with(UNIFORM_RESOURCE, key, odd))
    _assert_same_as_row_path(data, chunk_rows=25)


def test_no_resource_at_all_matches_the_row_path() -> None:
    chunks = _assert_same_as_row_path(_uniform_file(UNIFORM_SPAN, None), chunk_rows=25)
    assert sum(len(c.frame) for c in chunks if c.frame is not None) == 60


def test_documents_longer_than_a_mebibyte_go_through_the_frame() -> None:
    # A collector batches thousands of spans into one export request, one line each. pyarrow
    # refused lines longer than its 1 MiB block, so such files went to the row path whole.
    rng = random.Random(11)
    spans = [_good_span(number, rng) for number in range(6000)]
    lines = [json.dumps(_document(part, service="svc")) for part in (spans[:3000], spans[3000:])]
    assert min(len(line) for line in lines) > 1 << 20
    data = ("\n".join(lines) + "\n").encode()
    chunks = _assert_same_as_row_path(data, chunk_rows=100_000)
    assert not any(c.requests or c.rejects for c in chunks)
    assert sum(len(c.frame) for c in chunks if c.frame is not None) == 6000


def test_fixture_matches_the_row_path() -> None:
    data = (FIXTURES_DIR / "otel" / "traces.jsonl").read_bytes()
    _assert_same_as_row_path(data, chunk_rows=3, block_bytes=500)


def test_demo_export_matches_the_row_path(tmp_path: Path) -> None:
    frame = generate_requests(start=BENCH_START, days=1, workloads=None, scale=0.05, seed=3)
    write_otel_jsonl(frame, tmp_path / "spans.jsonl", spans_per_document=50)
    data = (tmp_path / "spans.jsonl").read_bytes()
    chunks = _assert_same_as_row_path(data, chunk_rows=500)
    assert sum(len(c.frame) for c in chunks if c.frame is not None) > 100


def test_the_paths_are_chosen_by_the_head() -> None:
    line = json.dumps(_document([_good_span(0, random.Random(0))], service="a")).encode()

    def two_documents(data: bytes) -> bool:
        return otel_columnar.starts_with_two_documents(io.BytesIO(data))

    assert two_documents(line + b"\n" + line + b"\n")
    assert two_documents(line + b"\n\n" + line)
    assert not two_documents(line + b"\n")
    assert not two_documents(line + b"\n\n\n")
    assert not two_documents(b"{\n" + line)
    data = _generated_jsonl(400, seed=9, unusual=0.1)
    assert len(data) > 64 * 1024
    chunks = list(otel.read(io.BytesIO(data), chunk_rows=1000))
    assert sum(len(c.frame) for c in chunks if c.frame is not None) > 500
    frame, rejects, _ = _collect(iter(chunks))
    expected_frame, expected_rejects, _ = _collect(
        otel.read_rows(io.BytesIO(data), chunk_rows=1000)
    )
    pd.testing.assert_frame_equal(frame, expected_frame)
    assert rejects == expected_rejects
