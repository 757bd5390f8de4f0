"""Format detection and the `read_requests` entry point of the importer registry."""

from __future__ import annotations

import io
import json

import pytest

from audit_app.ingestion.reading import ImportFileError
from audit_app.ingestion.token_logs import DETECTION_ORDER, IMPORTERS, detect_format, read_requests
from tests.support.paths import FIXTURES_DIR

FIXTURES = FIXTURES_DIR

LITELLM_RECORD = {
    "request_id": "r1",
    "call_type": "acompletion",
    "startTime": "2024-05-01T12:00:00Z",
    "endTime": "2024-05-01T12:00:01Z",
    "model": "gpt-4o",
    "prompt_tokens": 10,
    "completion_tokens": 2,
}


def test_registry_lists_the_four_formats_with_the_same_signature() -> None:
    assert set(IMPORTERS) == {"litellm", "otel", "litellm-callback", "generic"}
    assert DETECTION_ORDER == ("otel", "litellm", "litellm-callback", "generic")
    for importer in IMPORTERS.values():
        assert callable(importer.sniff)
        assert callable(importer.read)


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"request_id,call_type,spend,startTime,endTime,model\n", "litellm"),
        (b"request_id,call_type,spend\n", "litellm"),  # call_type is enough with request_id
        (b'"request_id","startTime"\r\n', "litellm"),  # quoted header, CRLF
        (b'[{"request_id": "r1", "startTime": "2024-05-01"}]', "litellm"),
        (b'[\n  {\n    "request_id": "r1",\n    "call_type": "acompletion"', "litellm"),  # cut
        (b'{"request_id": "r1", "call_type": "acompletion"}\n', "litellm"),
        (b'{\n  "resourceSpans": [\n', "otel"),
        (b'{"resourceSpans": [{"resource": {}, "scopeSpans": []}]}\n{"resourceSpans"', "otel"),
        (b"started_at,ended_at,model,input_tokens,output_tokens\n", "generic"),
        (b"\xef\xbb\xbf\n\nmodel,input_tokens,started_at\n", "generic"),  # BOM, blank lines
        (b'{"started_at": "2024-05-01T12:00:00Z", "input_tokens": 3}\n', "generic"),
        # LiteLLM's StandardLoggingPayload: `id`, not a spend log's `request_id`
        (
            b'[{"id": "c1", "call_type": "acompletion", "startTime": 1.7e9, "endTime": 1.7e9}]',
            "litellm-callback",
        ),
        (
            b'{"id": "c1", "startTime": 1739235379, "endTime": 1739235380, "prompt_tokens": 9}\n',
            "litellm-callback",
        ),
        (
            b'{"id": "c1", "request_id": "r1", "startTime": 1, "endTime": 2, "call_type": "x"}\n',
            "litellm",
        ),
    ],
)
def test_detect_format(head: bytes, expected: str) -> None:
    assert detect_format(head) == expected


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        # both LiteLLM and generic columns: LiteLLM comes first in DETECTION_ORDER
        (b"request_id,startTime,started_at,input_tokens\n", "litellm"),
        # OTel's top-level key wins over flat-record keys next to it
        (
            b'{"resourceSpans": [], "request_id": "r", "startTime": 1, "started_at": 1, '
            b'"input_tokens": 1}\n',
            "otel",
        ),
        # only the first record's top-level keys count, not keys nested in its metadata
        (
            json.dumps(
                {**LITELLM_RECORD, "metadata": {"started_at": 1, "input_tokens": 2}}
            ).encode(),
            "litellm",
        ),
        (
            json.dumps(
                {"started_at": 1, "input_tokens": 2, "metadata": {"resourceSpans": []}}
            ).encode(),
            "generic",
        ),
    ],
)
def test_detection_order_is_unambiguous(head: bytes, expected: str) -> None:
    assert detect_format(head) == expected


def test_detection_survives_a_first_record_larger_than_the_head() -> None:
    record = {**LITELLM_RECORD, "messages": "x" * 100_000}
    head = (json.dumps(record) + "\n").encode()[: 64 * 1024]
    assert detect_format(head) == "litellm"


@pytest.mark.parametrize(
    "head",
    [
        b"a,b,c\n1,2,3\n",
        b"request_id,model\n",  # request_id alone is not LiteLLM
        b"started_at,model\n",  # started_at alone is not generic
        b'{"data": []}',
        b"[]",
    ],
)
def test_unrecognised_files_fail_with_one_sentence(head: bytes) -> None:
    with pytest.raises(ImportFileError) as caught:
        detect_format(head)
    assert str(caught.value) == (
        "the file is not a recognised token log: expected a LiteLLM spend log (`request_id`, "
        "`startTime`), LiteLLM callback payloads (`id`, `startTime`, `endTime`), OpenTelemetry "
        "spans (`resourceSpans`) or the generic columns (`started_at`, `input_tokens`)"
    )


@pytest.mark.parametrize(
    ("head", "message"),
    [
        (b"", "the file is empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "the file looks binary (NUL byte at byte 8)"),
        (b"started_at,input_tokens\n\x80", "not valid UTF-8 at byte 24"),
    ],
)
def test_detect_refuses_unreadable_heads(head: bytes, message: str) -> None:
    with pytest.raises(ImportFileError) as caught:
        detect_format(head)
    assert str(caught.value) == message


# --- read_requests ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fixture", "accepted", "rejected"),
    [
        ("litellm/spend_logs.csv", 6, 7),
        ("litellm/spend_logs.jsonl", 5, 2),
        ("litellm/spend_logs.json", 2, 1),
        ("otel/traces.json", 4, 8),
        ("otel/traces.jsonl", 3, 3),
        ("generic/requests.csv", 4, 10),
        ("generic/requests.jsonl", 2, 3),
    ],
)
def test_read_requests_detects_and_delegates(fixture: str, accepted: int, rejected: int) -> None:
    data = (FIXTURES / fixture).read_bytes()
    chunks = list(read_requests(io.BytesIO(data)))
    assert sum(len(chunk.requests) for chunk in chunks) == accepted
    assert sum(len(chunk.rejects) for chunk in chunks) == rejected


def test_read_requests_with_a_forced_format_and_chunk_size() -> None:
    data = (FIXTURES / "generic" / "requests.csv").read_bytes()
    chunks = list(read_requests(io.BytesIO(data), format="generic", chunk_rows=5))
    assert [chunk.rows_read for chunk in chunks] == [5, 5, 4]


def test_read_requests_refuses_a_forced_format_that_does_not_fit() -> None:
    data = (FIXTURES / "otel" / "traces.json").read_bytes()
    with pytest.raises(ImportFileError) as caught:
        list(read_requests(io.BytesIO(data), format="litellm"))
    assert str(caught.value).startswith("not a LiteLLM spend log: ")


def test_read_requests_refuses_unknown_format_names() -> None:
    with pytest.raises(ValueError, match="unknown token-log format 'focus'"):
        list(read_requests(io.BytesIO(b"x"), format="focus"))


def test_read_requests_reports_undetectable_files_when_iterated() -> None:
    chunks = read_requests(io.BytesIO(b"a,b\n1,2\n"))
    with pytest.raises(ImportFileError, match="not a recognised token log"):
        next(chunks)


def test_read_requests_on_an_empty_file() -> None:
    with pytest.raises(ImportFileError, match="^the file is empty$"):
        list(read_requests(io.BytesIO(b"")))
