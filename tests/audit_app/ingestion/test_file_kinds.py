"""Token log or billing export: `audit_app.ingestion.file_kinds` on the real-looking fixtures."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

from audit_app.ingestion.file_kinds import (
    DetectedFile,
    detect_file,
    other_kind,
    unrecognised_message,
    wrong_kind_message,
)
from audit_app.ingestion.formats import FORMATS, KIND_LABELS
from audit_app.ingestion.reading import ImportFileError
from audit_app.models import Upload
from tests.support.paths import FIXTURES_DIR

FIXTURES = FIXTURES_DIR


def _stream(fixture: str) -> io.BytesIO:
    return io.BytesIO((FIXTURES / fixture).read_bytes())


def focus_parquet() -> bytes:
    """The FOCUS CSV fixture written as Parquet (its schema sits in the footer)."""
    table = pa_csv.read_csv(FIXTURES / "billing" / "focus-1.3_providers.csv")
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


FILES = [
    ("litellm/spend_logs.csv", "token_log", "litellm"),
    ("litellm/spend_logs.json", "token_log", "litellm"),
    ("litellm/spend_logs.jsonl", "token_log", "litellm"),
    ("otel/traces.json", "token_log", "otel"),
    ("generic/requests.csv", "token_log", "generic"),
    ("generic/requests.jsonl", "token_log", "generic"),
    ("billing/focus-1.3_providers.csv", "billing", "focus"),
    ("billing/cur2_bedrock-gpu.csv", "billing", "aws-cur"),
    ("billing/azure-mca_openai-eur.csv", "billing", "azure"),  # with a BOM
]


def test_kind_names_are_the_models() -> None:
    assert {
        Upload.Kind.TOKEN_LOG.value: Upload.Kind.TOKEN_LOG.label,
        Upload.Kind.BILLING.value: Upload.Kind.BILLING.label,
    } == KIND_LABELS
    assert {name: found.kind for name, found in FORMATS.items()} == {
        "litellm": "token_log",
        "otel": "token_log",
        "litellm-callback": "token_log",
        "generic": "token_log",
        "focus": "billing",
        "aws-cur": "billing",
        "azure": "billing",
        "openai-costs-api": "billing",
        "anthropic-costs-api": "billing",
    }


@pytest.mark.parametrize(("fixture", "kind", "fmt"), FILES)
def test_detect_file(fixture: str, kind: str, fmt: str) -> None:
    stream = _stream(fixture)
    assert detect_file(stream) == DetectedFile(kind=kind, format=fmt)
    assert stream.tell() == 0  # rewound for whoever reads it next


@pytest.mark.parametrize(("fixture", "kind", "fmt"), FILES)
def test_other_kind_names_a_file_sent_as_the_wrong_kind(fixture: str, kind: str, fmt: str) -> None:
    wrong = "billing" if kind == "token_log" else "token_log"
    assert other_kind(_stream(fixture), kind=wrong) == DetectedFile(kind=kind, format=fmt)
    assert other_kind(_stream(fixture), kind=kind) is None  # sent as what it is


def test_parquet_is_read_for_its_columns_from_the_footer() -> None:
    data = focus_parquet()
    assert data[:4] == b"PAR1"
    assert detect_file(io.BytesIO(data)) == DetectedFile(kind="billing", format="focus")
    assert other_kind(io.BytesIO(data), kind="token_log") == DetectedFile(
        kind="billing", format="focus"
    )
    other = io.BytesIO()
    pq.write_table(pa.table({"a": [1], "b": [2]}), other)
    assert detect_file(io.BytesIO(other.getvalue())) is None


def test_both_families_markers_make_a_token_log() -> None:
    data = b"started_at,input_tokens,BilledCost,ChargePeriodStart\n"
    assert detect_file(io.BytesIO(data)) == DetectedFile(kind="token_log", format="generic")
    assert other_kind(io.BytesIO(data), kind="billing") is None  # billing knows it too


@pytest.mark.parametrize(
    "data",
    [
        b"hello,world\n1,2\n",
        b'{"benchmarks": [{"type": "throughput"}]}',
        (FIXTURES / "benchmarks" / "nvidia_smi.csv").read_bytes(),
    ],
)
def test_neither_family_knows_the_file(data: bytes) -> None:
    assert detect_file(io.BytesIO(data)) is None
    assert other_kind(io.BytesIO(data), kind="token_log") is None
    assert other_kind(io.BytesIO(data), kind="billing") is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x00\x01binary", "the file looks binary (NUL byte at byte 0)"),
        (b"\x1f\x8b\x08\x00", "the file is gzip-compressed"),
        # 24 bytes of header and newline, then "caf": the é is byte 24 + 3 = 27
        (b"started_at,input_tokens\ncaf\xe9\n", "not valid UTF-8 at byte 27"),
    ],
)
def test_an_unreadable_file_says_why(data: bytes, message: str) -> None:
    with pytest.raises(ImportFileError) as caught:
        detect_file(io.BytesIO(data))
    assert str(caught.value).startswith(message)
    assert other_kind(io.BytesIO(data), kind="token_log") is None  # the ingest says it


def test_wrong_kind_messages() -> None:
    focus = DetectedFile(kind="billing", format="focus")
    assert wrong_kind_message(sent_as="token_log", detected=focus, requested_format="auto") == (
        "This looks like a FOCUS billing export, not a token log: upload it as a Billing export "
        "(kind=billing)."
    )
    litellm = DetectedFile(kind="token_log", format="litellm")
    assert wrong_kind_message(sent_as="billing", detected=litellm, requested_format="focus") == (
        "This looks like a LiteLLM spend log, not a billing export: upload it as a Token / "
        "request log (kind=token_log, format auto or litellm)."
    )


def test_unrecognised_message_names_both_families_and_the_benchmarks_page() -> None:
    message = unrecognised_message()
    assert message.startswith("The file is neither a token log nor a billing export")
    assert "(`started_at`, `input_tokens`)" in message
    assert "FOCUS (`BilledCost`, `ChargePeriodStart`)" in message
    assert message.endswith("Benchmark results are imported on the Benchmarks page.")
