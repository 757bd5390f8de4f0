"""FOCUS importer (CSV and Parquet, 1.0–1.3) and the coercions every billing importer shares.

Expected values are worked out by hand from tests/fixtures/billing/focus-1.3_providers.csv and
from the small tables written inline below.
"""

from __future__ import annotations

import io
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from audit_app.ingestion.billing_exports import focus, read_billing
from audit_app.ingestion.billing_exports.base import (
    BillingChunk,
    BillingLine,
    BillingReject,
    parse_amount,
    parse_currency,
    parse_period,
    parse_tag_object,
)
from audit_app.ingestion.reading import ImportFileError, RowRejected
from tests.support.paths import FIXTURES_DIR

FIXTURES = FIXTURES_DIR / "billing"
FOCUS_13 = FIXTURES / "focus-1.3_providers.csv"

FOCUS_10_HEADER = (
    "BilledCost,BillingCurrency,ChargeCategory,ChargeClass,ChargePeriodStart,ChargePeriodEnd,"
    "EffectiveCost,ProviderName,ServiceName,ConsumedQuantity,ConsumedUnit,Tags"
)


def read_all(
    data: bytes, chunk_rows: int = 10_000
) -> tuple[list[BillingLine], list[BillingReject], list[BillingChunk]]:
    chunks = list(focus.read(io.BytesIO(data), chunk_rows=chunk_rows))
    lines = [line for chunk in chunks for line in chunk.lines]
    rejects = [reject for chunk in chunks for reject in chunk.rejects]
    return lines, rejects, chunks


def totals_by_currency(lines: list[BillingLine], attribute: str) -> dict[str, Decimal]:
    totals: dict[str, Decimal] = {}
    for line in lines:
        value = getattr(line, attribute)
        if value is not None:
            totals[line.currency] = totals.get(line.currency, Decimal(0)) + value
    return totals


# --- FOCUS 1.3 hand-written fixture ------------------------------------------------------------


def test_focus_13_rows_providers_and_categories() -> None:
    lines, rejects, _ = read_all(FOCUS_13.read_bytes())
    assert rejects == []
    assert [line.line for line in lines] == [2, 3, 4, 5, 6, 7, 8, 9, 10]
    # ServiceProviderName wins over ProviderName; NULL falls back to ProviderName per row.
    assert [(line.provider, line.provider_raw) for line in lines] == [
        ("aws", "Amazon Web Services"),
        ("aws", "Amazon Web Services"),
        ("anthropic", "Anthropic"),
        ("azure", "Microsoft"),
        ("aws", "Amazon Web Services"),
        ("aws", "Amazon Web Services"),
        ("aws", "Amazon Web Services"),
        ("aws", "Amazon Web Services"),
        ("aws", "Amazon Web Services"),
    ]
    assert [line.charge_category for line in lines] == [
        "Usage",
        "Usage",
        "Purchase",
        "Usage",
        "Credit",
        "Usage",
        "Purchase",
        "Usage",
        "Tax",
    ]
    assert [line.charge_class for line in lines] == ["", "", "", "", "", "Correction", "", "", ""]


def test_focus_13_costs_signs_and_totals_per_currency() -> None:
    lines, _, _ = read_all(FOCUS_13.read_bytes())
    assert [line.billed_cost for line in lines] == [
        Decimal("3.60"),
        Decimal("4.50"),
        Decimal("500.00"),
        Decimal("1.20"),
        Decimal("-25.00"),
        Decimal("-1.10"),
        Decimal("1000.00"),
        Decimal("98.32"),
        Decimal("8.00"),
    ]
    # 3.60 + 4.50 + 500 - 25 - 1.10 + 1000 + 98.32 + 8 = 1588.32 USD; the Azure row is EUR.
    assert totals_by_currency(lines, "billed_cost") == {
        "USD": Decimal("1588.32"),
        "EUR": Decimal("1.20"),
    }
    # Effective cost is kept beside billed, never added: the upfront purchase amortises to 0
    # and the Savings-Plan-covered p5 hour costs 55.00 instead of 98.32.
    # 3.60 + 4.50 + 500 - 25 - 1.10 + 0 + 55 + 8 = 545.00
    assert totals_by_currency(lines, "effective_cost") == {
        "USD": Decimal("545.00"),
        "EUR": Decimal("1.20"),
    }


def test_focus_13_meters_quantities_and_labels() -> None:
    lines, _, _ = read_all(FOCUS_13.read_bytes())
    bedrock_input, bedrock_batch, _, azure_output, _, correction, _, p5, _ = lines
    assert (bedrock_input.meter.kind, bedrock_input.meter.model) == ("token", "Claude3.5Sonnet")
    assert bedrock_input.meter.token_class == "input"
    # ConsumedQuantity is the raw token count, so the block size is 1.
    assert (bedrock_input.quantity, bedrock_input.unit, bedrock_input.meter.block_size) == (
        Decimal("1200000"),
        "Tokens",
        1,
    )
    assert bedrock_input.sku == "USE1-Claude3.5Sonnet-input-tokens"
    assert bedrock_input.tags == {"team": "search", "workload": "rag-api"}
    assert (bedrock_batch.meter.token_class, bedrock_batch.meter.tier) == ("output", "batch")
    assert azure_output.sku == "gpt-4o-mini-0718-Outp-glbl Tokens"  # SkuMeter (no x_UsageType)
    assert (azure_output.meter.model, azure_output.meter.deployment) == (
        "gpt-4o-mini-0718",
        "global",
    )
    assert azure_output.currency == "EUR"
    assert azure_output.region == "westeurope"
    assert azure_output.account_id == "/subscriptions/0000-aaaa"
    # `2025-06-01 00:00:00` (no T, no Z) is UTC.
    assert azure_output.period_start == datetime(2025, 6, 1, tzinfo=UTC)
    assert azure_output.period_end == datetime(2025, 6, 2, tzinfo=UTC)
    assert correction.quantity == Decimal("-100000")
    assert correction.meter.token_class == "cache_read"
    assert correction.period_start == datetime(2025, 5, 31, tzinfo=UTC)
    assert (p5.meter.kind, p5.meter.instance_type) == ("gpu_instance", "p5.48xlarge")
    assert p5.resource_id == "i-0a1b2c3d4e5f60718"
    assert p5.tags == {"team": "ml-platform", "pool": "vllm-h100"}
    assert p5.description == "$98.32 per On Demand Linux p5.48xlarge Instance Hour"
    assert p5.service == "Amazon Elastic Compute Cloud"


def test_chunks_are_sized_and_bytes_read_ends_at_the_file_size() -> None:
    data = FOCUS_13.read_bytes()
    _, _, chunks = read_all(data, chunk_rows=4)
    assert [chunk.rows_read for chunk in chunks] == [4, 4, 1]
    positions = [chunk.bytes_read for chunk in chunks]
    assert positions == sorted(positions)
    assert positions[-1] == len(data)


def test_blank_lines_and_rows_of_empty_cells_are_skipped_but_counted_as_lines() -> None:
    data = "\n".join([FOCUS_10_HEADER, "", FOCUS_10_ROWS[0], ",,,,,,,,,,,", FOCUS_10_ROWS[1], ""])
    lines, rejects, chunks = read_all(data.encode())
    assert rejects == []
    assert [line.line for line in lines] == [3, 5]
    assert sum(chunk.rows_read for chunk in chunks) == 2


def test_header_only_file_yields_one_empty_chunk_at_the_file_size() -> None:
    data = (FOCUS_10_HEADER + "\n\n").encode()
    _, _, chunks = read_all(data)
    assert [(chunk.rows_read, chunk.bytes_read) for chunk in chunks] == [(0, len(data))]


# --- FOCUS 1.0 CSV quirks: NULL, dates without T/Z, BOM, CRLF ---------------------------------

FOCUS_10_ROWS = [
    '0.00000080000,"USD","Usage",NULL,"2024-09-18 22:00:00","2024-09-18 23:00:00",0.00000000000,'
    '"AWS","Amazon Simple Queue Service",2.000000000000000,"Requests",NULL',
    '-2.61370000000,"USD","Credit",NULL,"2024-09-24 03:00:00","2024-09-24 04:00:00",'
    '-3.00000000000,"AWS","Amazon Elastic Compute Cloud",NULL,NULL,NULL',
    'NULL,"USD","Usage",NULL,"2024-09-04 00:00:00","2024-09-05 00:00:00",NULL,"Microsoft",'
    '"Storage Accounts",0.000300000000000,"Units",'
    '"{""env"": ""prod"", ""org"": ""trey"", "" org"": ""trey""}"',
]


@pytest.mark.parametrize(
    ("prefix", "newline"),
    [(b"", b"\n"), (b"\xef\xbb\xbf", b"\r\n")],
    ids=["plain", "bom-crlf"],
)
def test_focus_10_nulls_dates_without_t_and_z_bom_and_crlf(prefix: bytes, newline: bytes) -> None:
    data = prefix + newline.join(line.encode() for line in [FOCUS_10_HEADER, *FOCUS_10_ROWS, ""])
    lines, rejects, _ = read_all(data)
    assert rejects == []
    sqs, credit, storage = lines
    assert sqs.billed_cost == Decimal("8.0E-7")
    assert sqs.effective_cost == Decimal(0)
    assert sqs.charge_class == ""
    assert sqs.period_start == datetime(2024, 9, 18, 22, tzinfo=UTC)
    assert sqs.tags == {}
    assert credit.billed_cost == Decimal("-2.6137")
    assert (credit.quantity, credit.unit) == (None, "")
    # A NULL billed cost is no charge: 0, not a reject; a NULL effective cost is unknown.
    assert (storage.billed_cost, storage.effective_cost) == (Decimal(0), None)
    assert storage.tags == {"env": "prod", "org": "trey", " org": "trey"}
    assert (storage.provider, storage.provider_raw) == ("azure", "Microsoft")


# --- Parquet ------------------------------------------------------------------------------------


def focus_parquet_bytes() -> bytes:
    """A FOCUS 1.2 Parquet file written from a hand-made table (decimal costs, UTC timestamps,
    Tags as a map column)."""
    money = pa.decimal128(18, 6)
    table = pa.table(
        {
            "BilledCost": pa.array([Decimal("12.500000"), Decimal("-2.000000"), None], money),
            "EffectiveCost": pa.array([Decimal("10.000000"), Decimal("-2.000000"), None], money),
            "BillingCurrency": ["USD", "USD", "JPY"],
            "ChargeCategory": ["Usage", "Credit", "Usage"],
            "ChargeClass": [None, None, "Correction"],
            "ChargePeriodStart": pa.array(
                [
                    datetime(2025, 1, 1, tzinfo=UTC),
                    datetime(2025, 1, 1, tzinfo=UTC),
                    datetime(2025, 1, 2, tzinfo=UTC),
                ],
                pa.timestamp("us", tz="UTC"),
            ),
            "ChargePeriodEnd": pa.array(
                [
                    datetime(2025, 1, 1, 1, tzinfo=UTC),
                    datetime(2025, 2, 1, tzinfo=UTC),
                    datetime(2025, 1, 3, tzinfo=UTC),
                ],
                pa.timestamp("us", tz="UTC"),
            ),
            "ProviderName": ["Google Cloud", "Google Cloud", "Google Cloud"],
            "ServiceName": ["Vertex AI", "Vertex AI", "Vertex AI"],
            "SkuMeter": [
                "Gemini 2.5 Pro Text Input (≤200k)",
                None,
                "Gemini 2.5 Pro Text and Thinking Output (≤200k)",
            ],
            "ConsumedQuantity": pa.array([5_000_000.0, None, 100.0], pa.float64()),
            "ConsumedUnit": ["count", None, "count"],
            "Tags": pa.array(
                [[("team", "search")], None, [("team", "evals"), ("env", "prod")]],
                pa.map_(pa.string(), pa.string()),
            ),
        }
    )
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def test_focus_parquet() -> None:
    data = focus_parquet_bytes()
    lines, rejects, chunks = read_all(data)
    assert rejects == []
    # A Parquet row's line is its 1-based ordinal + 1, as in the equivalent CSV.
    assert [line.line for line in lines] == [2, 3, 4]
    assert [line.provider for line in lines] == ["gcp", "gcp", "gcp"]
    assert [line.billed_cost for line in lines] == [Decimal("12.5"), Decimal(-2), Decimal(0)]
    assert [line.effective_cost for line in lines] == [Decimal(10), Decimal(-2), None]
    assert [line.currency for line in lines] == ["USD", "USD", "JPY"]
    assert [line.charge_class for line in lines] == ["", "", "Correction"]
    assert lines[1].period_end == datetime(2025, 2, 1, tzinfo=UTC)
    assert lines[0].quantity == Decimal("5000000.0")
    assert (lines[0].meter.kind, lines[0].meter.model, lines[0].meter.token_class) == (
        "token",
        "Gemini 2.5 Pro",
        "input",
    )
    assert lines[2].tags == {"team": "evals", "env": "prod"}
    assert chunks[-1].bytes_read == len(data)


def test_focus_parquet_is_detected_by_read_billing() -> None:
    chunks = list(read_billing(io.BytesIO(focus_parquet_bytes())))
    assert sum(chunk.rows_read for chunk in chunks) == 3


# --- row rejects --------------------------------------------------------------------------------

BAD_ROWS = "\n".join(
    [
        FOCUS_10_HEADER,
        # 2: fine, with a description-free multi-line service name (2 physical lines: 2-3)
        '1.00,USD,Usage,,2025-01-01T00:00:00Z,2025-01-01T01:00:00Z,1.00,AWS,"Amazon\nS3",,,',
        "abc,USD,Usage,,2025-01-01T00:00:00Z,2025-01-01T01:00:00Z,,AWS,S3,,,",  # 4
        "NaN,USD,Usage,,2025-01-01T00:00:00Z,2025-01-01T01:00:00Z,,AWS,S3,,,",  # 5
        "1,USD,Usage,,2025-01-01T00:00:00Z,2025-01-01T01:00:00Z,-Infinity,AWS,S3,,,",  # 6
        "1,USD,Usage,,yesterday,2025-01-01T01:00:00Z,,AWS,S3,,,",  # 7
        "1,USD,Usage,,2025-01-01T00:00:00Z,NULL,,AWS,S3,,,",  # 8
        "1,US,Usage,,2025-01-01T00:00:00Z,2025-01-01T01:00:00Z,,AWS,S3,,,",  # 9
        "1,EURO,Usage,,2025-01-01T00:00:00Z,2025-01-01T01:00:00Z,,AWS,S3,,,",  # 10
        "1,USD,Usages,,2025-01-01T00:00:00Z,2025-01-01T01:00:00Z,,AWS,S3,,,",  # 11
        "1,USD,Usage,,2025-01-02T00:00:00Z,2025-01-01T00:00:00Z,,AWS,S3,,,",  # 12
        "1,USD,Usage,,2025-01-01T00:00:00Z,2025-01-01T01:00:00Z,,AWS,S3,,,{not json",  # 13
        "1,USD,Usage,,2025-01-01T00:00:00Z,2025-01-01T01:00:00Z,,NULL,S3,,,",  # 14
        "1,USD,Usage,,2025-01-01T00:00:00Z,2025-01-01T01:00:00Z,,AWS,S3,lots,,",  # 15
        "1,USD,Usage",  # 16
        "2.00,CAD,Tax,,2025-01-01T00:00:00Z,2025-02-01T00:00:00Z,2.00,AWS,Tax,,,",  # 17
        "",
    ]
).encode()


def test_each_row_level_problem_is_rejected_with_its_line_and_reason() -> None:
    lines, rejects, _ = read_all(BAD_ROWS)
    assert [(line.line, line.billed_cost, line.currency) for line in lines] == [
        (2, Decimal("1.00"), "USD"),
        (17, Decimal("2.00"), "CAD"),
    ]
    assert lines[0].service == "Amazon\nS3"
    assert [(reject.line, reject.field, reject.value, reject.reason) for reject in rejects] == [
        (4, "BilledCost", "abc", "`BilledCost` must be a finite number, got 'abc'."),
        (5, "BilledCost", "NaN", "`BilledCost` must be a finite number, got 'NaN'."),
        (
            6,
            "EffectiveCost",
            "-Infinity",
            "`EffectiveCost` must be a finite number, got '-Infinity'.",
        ),
        (
            7,
            "ChargePeriodStart",
            "yesterday",
            "`ChargePeriodStart` is not a date or timestamp: 'yesterday'.",
        ),
        (8, "ChargePeriodEnd", "NULL", "`ChargePeriodEnd` is empty."),
        (
            9,
            "BillingCurrency",
            "US",
            "`BillingCurrency` must be a 3-letter ISO currency code, got 'US'.",
        ),
        (
            10,
            "BillingCurrency",
            "EURO",
            "`BillingCurrency` must be a 3-letter ISO currency code, got 'EURO'.",
        ),
        (
            11,
            "ChargeCategory",
            "Usages",
            "`ChargeCategory` is 'Usages', not one of Usage, Purchase, Tax, Credit, Adjustment.",
        ),
        (
            12,
            "ChargePeriodEnd",
            "2025-01-01T00:00:00Z",
            "`ChargePeriodEnd` (2025-01-01T00:00:00+00:00) is before `ChargePeriodStart` "
            "(2025-01-02T00:00:00+00:00).",
        ),
        (13, "Tags", "{not json", "`Tags` is not a JSON object of tags: '{not json'."),
        (14, "ProviderName", "NULL", "`ServiceProviderName` and `ProviderName` are both empty."),
        (15, "ConsumedQuantity", "lots", "`ConsumedQuantity` must be a finite number, got 'lots'."),
        (16, "(row)", "1,USD,Usage", "the row has 3 fields but the header has 12."),
    ]


def test_missing_required_columns_are_named() -> None:
    data = b"BilledCost,ChargePeriodStart,Tags\n1,2025-01-01,\n"
    with pytest.raises(ImportFileError) as error:
        read_all(data)
    assert str(error.value) == (
        "line 1: missing required columns `BillingCurrency`, `ChargeCategory`, "
        "`ChargePeriodEnd`, `ServiceProviderName` (or `ProviderName`)"
    )


def test_bad_utf8_after_the_head_fails_the_file_with_its_byte_offset() -> None:
    good = FOCUS_10_HEADER + "\n" + FOCUS_10_ROWS[0] + "\n"
    data = good.encode() * 1 + b"1,USD,Usage,,2025-01-01,2025-01-02,,AWS,S\xff3,,,\n"
    offset = data.index(b"\xff")
    with pytest.raises(ImportFileError, match=f"^not valid UTF-8 at byte {offset}$"):
        read_all(data)


# --- shared coercions ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-09-18 22:00:00", datetime(2024, 9, 18, 22, tzinfo=UTC)),
        ("2023-11-01T00:00:00.000Z", datetime(2023, 11, 1, tzinfo=UTC)),
        ("2025-06-01T02:00:00+02:00", datetime(2025, 6, 1, tzinfo=UTC)),
        ("2024-11-03", datetime(2024, 11, 3, tzinfo=UTC)),
        ("9/2/2023", datetime(2023, 9, 2, tzinfo=UTC)),
        ("11/01/2023", datetime(2023, 11, 1, tzinfo=UTC)),
        ("11/01/2023 1:30 PM", datetime(2023, 11, 1, 13, 30, tzinfo=UTC)),
        ("2023-09-02T00:00:00.0000000Z", datetime(2023, 9, 2, tzinfo=UTC)),
        (datetime(2025, 1, 1, 5), datetime(2025, 1, 1, 5, tzinfo=UTC)),  # noqa: DTZ001 naive is UTC
        (date(2025, 1, 1), datetime(2025, 1, 1, tzinfo=UTC)),
    ],
)
def test_parse_period_forms(value: object, expected: datetime) -> None:
    assert parse_period(value, field="Date") == expected


@pytest.mark.parametrize("value", ["13/01/2023", "20231101", "2023-02-30", "soon", "NULL", ""])
def test_parse_period_rejects(value: str) -> None:
    with pytest.raises(RowRejected):
        parse_period(value, field="Date")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1.81E-8", Decimal("1.81E-8")),
        ("-2.61370000000", Decimal("-2.6137")),
        (0.1, Decimal("0.1")),
        (3, Decimal(3)),
        ("NULL", None),
        ("", None),
    ],
)
def test_parse_amount(value: object, expected: Decimal | None) -> None:
    assert parse_amount(value, field="BilledCost") == expected


@pytest.mark.parametrize("value", ["abc", "NaN", "inf", "-Infinity", "$1.00", "1,000.00", True])
def test_parse_amount_rejects(value: object) -> None:
    with pytest.raises(RowRejected):
        parse_amount(value, field="BilledCost")


def test_parse_currency_keeps_the_code_and_never_converts() -> None:
    assert parse_currency(" cad ", field="BillingCurrency") == "CAD"
    assert parse_currency("EUR", field="BillingCurrency") == "EUR"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('{"a": "b", "c": "d"}', {"a": "b", "c": "d"}),
        ('{""a"": ""b""}', {"a": "b"}),  # doubled quotes left in the text
        ('"tagA": "valueA","tagB": "valueB"', {"tagA": "valueA", "tagB": "valueB"}),  # no braces
        ('""tagA"": ""valueA""', {"tagA": "valueA"}),  # no braces and doubled quotes
        ('{"org": "trey", " org": "trey"}', {"org": "trey", " org": "trey"}),
        ('{"flag": true, "n": 3, "none": null}', {"flag": "true", "n": "3", "none": ""}),
        ("NULL", {}),
        ("", {}),
        ("{}", {}),
        ({"k": "v"}, {"k": "v"}),
        ([("k", "v"), ("k2", "v2")], {"k": "v", "k2": "v2"}),  # a Parquet map
    ],
)
def test_parse_tag_object(value: Any, expected: dict[str, str]) -> None:
    assert parse_tag_object(value, field="Tags") == expected


@pytest.mark.parametrize("value", ["{not json", "[1, 2]", "just text"])
def test_parse_tag_object_rejects(value: str) -> None:
    with pytest.raises(RowRejected):
        parse_tag_object(value, field="Tags")
