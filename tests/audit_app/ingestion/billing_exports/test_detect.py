"""Billing format detection, the `read_billing` entry point and file-level errors."""

from __future__ import annotations

import io
import secrets

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from audit_app.ingestion.billing_exports import (
    BILLING_IMPORTERS,
    DETECTION_ORDER,
    detect_billing_format,
    read_billing,
)
from audit_app.ingestion.reading import ImportFileError
from tests.support.paths import FIXTURES_DIR

FIXTURES = FIXTURES_DIR / "billing"

NOT_BILLING = (
    "the file is not a recognised billing export: expected FOCUS (`BilledCost`, "
    "`ChargePeriodStart`), AWS CUR (`lineItem/UnblendedCost` or `line_item_unblended_cost`) or "
    "Azure cost details (`MeterName`, `CostInBillingCurrency`)"
)


def parquet_bytes(columns: dict[str, list[object]]) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table(columns), sink)
    return sink.getvalue()


def test_registry_lists_the_formats_with_the_same_signature() -> None:
    # The three exports detected by their columns, and the two provider reports.
    assert set(BILLING_IMPORTERS) == {
        "focus",
        "aws-cur",
        "azure",
        "openai-costs-api",
        "anthropic-costs-api",
    }
    assert DETECTION_ORDER == ("focus", "aws-cur", "azure")
    for importer in BILLING_IMPORTERS.values():
        assert callable(importer.sniff)
        assert callable(importer.read)


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b'"AvailabilityZone","BilledCost","BillingCurrency","ChargePeriodStart"\n', "focus"),
        (b"\xef\xbb\xbfBilledCost,ChargePeriodStart,ServiceProviderName\r\n", "focus"),
        (b"billedcost,chargeperiodstart,providername\n", "focus"),  # lower-cased by a query engine
        (b"identity/LineItemId,lineItem/UsageType,lineItem/UnblendedCost\n", "aws-cur"),
        (b"line_item_usage_type,line_item_unblended_cost,resource_tags\n", "aws-cur"),
        (
            b"InvoiceSectionName,Date,MeterName,CostInBillingCurrency,BillingCurrencyCode\r\n",
            "azure",
        ),
        (b"date,meterName,costInBillingCurrency,billingCurrency\n", "azure"),
        (b"\n\nUsageDateTime,MeterCategory,PreTaxCost,Currency\n", "azure"),
        # FOCUS comes first: an AWS FOCUS export with a copied CUR column is still FOCUS.
        (b"BilledCost,ChargePeriodStart,lineItem/UnblendedCost\n", "focus"),
    ],
)
def test_detect_billing_format(head: bytes, expected: str) -> None:
    assert detect_billing_format(head) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("focus-1.3_providers.csv", "focus"),
        ("cur2_bedrock-gpu.csv", "aws-cur"),
        ("azure-mca_openai-eur.csv", "azure"),
    ],
)
def test_hand_written_fixtures_are_detected(name: str, expected: str) -> None:
    data = (FIXTURES / name).read_bytes()
    assert detect_billing_format(data[: 64 * 1024]) == expected
    chunks = list(read_billing(io.BytesIO(data)))
    assert sum(len(chunk.rejects) for chunk in chunks) == 0


def test_a_small_parquet_file_is_detected_from_its_head() -> None:
    data = parquet_bytes(
        {"line_item_unblended_cost": [1.0], "line_item_usage_start_date": ["2025-01-01"]}
    )
    assert detect_billing_format(data) == "aws-cur"


def test_a_large_parquet_file_needs_the_whole_stream() -> None:
    # Random text does not compress, so the file (and its footer) is well past 64 KiB.
    data = parquet_bytes(
        {
            "BilledCost": ["1.00"],
            "BillingCurrency": ["USD"],
            "ChargeCategory": ["Usage"],
            "ChargePeriodStart": ["2025-01-01T00:00:00Z"],
            "ChargePeriodEnd": ["2025-01-01T01:00:00Z"],
            "ProviderName": ["AWS"],
            "ChargeDescription": [secrets.token_hex(60_000)],
        }
    )
    assert len(data) > 64 * 1024
    with pytest.raises(ImportFileError, match="keeps its column names at its end"):
        detect_billing_format(data[: 64 * 1024])
    chunks = list(read_billing(io.BytesIO(data)))
    assert [len(chunk.lines) for chunk in chunks] == [1]
    assert chunks[-1].bytes_read == len(data)


def test_unrecognised_file_names_what_was_expected() -> None:
    with pytest.raises(ImportFileError) as error:
        detect_billing_format(b"started_at,model,input_tokens\n")
    assert str(error.value) == NOT_BILLING
    with pytest.raises(ImportFileError) as error:
        list(read_billing(io.BytesIO(b"a,b,c\n1,2,3\n")))
    assert str(error.value) == NOT_BILLING


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "the file is empty"),
        (b" \r\n\n", "the file is empty"),
        (b"\x00\x01\x02BilledCost", "the file looks binary (NUL byte at byte 0)"),
        (b"BilledCost,Ch\xe9rgePeriodStart\n", "not valid UTF-8 at byte 13"),
        (b"PAR1 this is not really parquet", None),
    ],
    ids=["empty", "blank", "binary", "bad-utf8", "bad-parquet"],
)
def test_file_level_errors_are_one_sentence(data: bytes, message: str | None) -> None:
    with pytest.raises(ImportFileError) as error:
        list(read_billing(io.BytesIO(data)))
    if message is None:
        assert str(error.value).startswith("the Parquet file cannot be read (")
    else:
        assert str(error.value) == message


def test_unreadable_parquet_with_a_forced_format() -> None:
    with pytest.raises(ImportFileError, match=r"^the Parquet file cannot be read \("):
        list(read_billing(io.BytesIO(b"PAR1" + b"\x01" * 100 + b"PAR1"), format="focus"))


def test_missing_required_columns_with_a_forced_format() -> None:
    data = b"BilledCost,ChargePeriodStart,BillingCurrency\n1,2025-01-01,USD\n"
    with pytest.raises(ImportFileError) as error:
        list(read_billing(io.BytesIO(data), format="focus"))
    assert str(error.value) == (
        "line 1: missing required columns `ChargeCategory`, `ChargePeriodEnd`, "
        "`ServiceProviderName` (or `ProviderName`)"
    )


def test_missing_required_columns_in_parquet() -> None:
    data = parquet_bytes({"BilledCost": ["1"], "ChargePeriodStart": ["2025-01-01"]})
    with pytest.raises(ImportFileError) as error:
        list(read_billing(io.BytesIO(data)))
    assert str(error.value) == (
        "the Parquet file: missing required columns `BillingCurrency`, `ChargeCategory`, "
        "`ChargePeriodEnd`, `ServiceProviderName` (or `ProviderName`)"
    )


def test_wrong_format_forced_says_what_the_file_looks_like() -> None:
    data = (FIXTURES / "focus-1.3_providers.csv").read_bytes()
    with pytest.raises(ImportFileError) as error:
        list(read_billing(io.BytesIO(data), format="azure"))
    assert str(error.value) == (
        "the file was sent as `azure` but its columns are not Azure cost details: "
        "it looks like FOCUS (`focus`)"
    )
    with pytest.raises(ImportFileError) as error:
        list(read_billing(io.BytesIO(b"a,b\n1,2\n"), format="aws-cur"))
    assert str(error.value) == (
        "the file was sent as `aws-cur` but its columns are not AWS CUR: expected "
        + NOT_BILLING.removeprefix("the file is not a recognised billing export: expected ")
    )


def test_forced_format_that_matches_reads_the_file() -> None:
    data = (FIXTURES / "cur2_bedrock-gpu.csv").read_bytes()
    chunks = list(read_billing(io.BytesIO(data), format="aws-cur", chunk_rows=5))
    assert [chunk.rows_read for chunk in chunks] == [5, 5, 1]


def test_unknown_format_name_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown billing format 'gcp'"):
        list(read_billing(io.BytesIO(b"x"), format="gcp"))
