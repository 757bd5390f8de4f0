"""AWS CUR importer: CUR 2.0 (snake_case, map columns) and legacy CUR (`lineItem/...`).

Expected values are worked out by hand from tests/fixtures/billing/cur2_bedrock-gpu.csv and the
small tables written inline below.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from audit_app.ingestion.billing_exports import aws_cur
from audit_app.ingestion.billing_exports.base import BillingLine, BillingReject
from audit_app.ingestion.reading import ImportFileError
from tests.support.paths import FIXTURES_DIR

FIXTURES = FIXTURES_DIR / "billing"
CUR2 = FIXTURES / "cur2_bedrock-gpu.csv"


def read_all(
    data: bytes, chunk_rows: int = 10_000
) -> tuple[list[BillingLine], list[BillingReject]]:
    lines: list[BillingLine] = []
    rejects: list[BillingReject] = []
    for chunk in aws_cur.read(io.BytesIO(data), chunk_rows=chunk_rows):
        lines.extend(chunk.lines)
        rejects.extend(chunk.rejects)
    return lines, rejects


# --- CUR 2.0 hand-written fixture --------------------------------------------------------------


def test_cur2_rows_categories_and_billed_costs() -> None:
    lines, rejects = read_all(CUR2.read_bytes())
    assert rejects == []
    assert [line.line for line in lines] == list(range(2, 13))
    assert {(line.provider, line.provider_raw) for line in lines} == {("aws", "AWS")}
    assert [line.charge_category for line in lines] == [
        *["Usage"] * 8,
        "Credit",
        "Adjustment",  # SavingsPlanNegation
        "Tax",
    ]
    # Net unblended when the cell is filled (li-01: 4.05 after the EDP discount, not 4.50);
    # unblended when it is empty (li-02: 3.00).
    assert [line.billed_cost for line in lines] == [
        Decimal("4.05"),
        Decimal("3.00"),
        Decimal("0.24"),
        Decimal("0.12"),
        Decimal("1.65"),
        Decimal("2359.68"),
        Decimal("215.00"),
        Decimal("7.575"),
        Decimal("-100.00"),
        Decimal("-50.00"),
        Decimal("12.34"),
    ]
    # 4.05 + 3.00 + 0.24 + 0.12 + 1.65 + 2359.68 + 215.00 + 7.575 - 100.00 - 50.00 + 12.34
    assert sum(line.billed_cost for line in lines) == Decimal("2453.655")
    assert {line.currency for line in lines} == {"USD"}
    # CUR has no amortised-cost column here, and none is made up by adding columns.
    assert {line.effective_cost for line in lines} == {None}


def test_cur2_bedrock_token_meters() -> None:
    lines, _ = read_all(CUR2.read_bytes())
    tokens = [
        (
            line.meter.model,
            line.meter.token_class,
            line.meter.tier,
            line.meter.cross_region,
            line.meter.block_size,
        )
        for line in lines[:5]
    ]
    assert tokens == [
        ("Claude3.5Sonnet", "input", "standard", False, 1000),
        ("Claude3.5Sonnet", "output", "standard", False, 1000),
        ("Claude4Sonnet", "cache_read", "standard", False, 1000),
        ("Llama4-Maverick-17B", "input", "batch", False, 1000),
        ("Claude4Sonnet", "output", "standard", True, 1000),
    ]
    first = lines[0]
    # 1500 units of "1K tokens" = 1.5M input tokens.
    assert (first.quantity, first.unit) == (Decimal("1500"), "1K tokens")
    assert first.quantity * first.meter.block_size == Decimal("1500000")
    assert first.service == "AmazonBedrock"
    assert first.sku == "USE1-Claude3.5Sonnet-input-tokens"
    assert first.tags == {"user_team": "search", "user_workload": "rag-api"}
    assert first.period_start == datetime(2025, 3, 1, tzinfo=UTC)
    assert first.period_end == datetime(2025, 3, 2, tzinfo=UTC)
    assert first.account_id == "111122223333"
    # li-03 has no product_region_code: the region comes from the `product` map.
    assert lines[2].region == "us-east-1"


def test_cur2_gpu_instances_credit_and_tax() -> None:
    lines, _ = read_all(CUR2.read_bytes())
    p5, trn1, sagemaker, credit, negation, tax = lines[5:]
    assert (p5.meter.kind, p5.meter.instance_type, p5.meter.instance_family) == (
        "gpu_instance",
        "p5.48xlarge",
        "p",
    )
    assert (p5.quantity, p5.unit, p5.resource_id) == (Decimal(24), "Hrs", "i-0a1b2c3d4e5f60718")
    assert p5.tags == {"user_team": "ml-platform", "user_pool": "vllm-h100"}
    assert (trn1.meter.kind, trn1.meter.instance_type, trn1.meter.instance_family) == (
        "gpu_instance",
        "trn1.32xlarge",
        "trn",
    )
    assert (sagemaker.meter.instance_type, sagemaker.meter.sagemaker_role) == (
        "ml.g5.2xlarge",
        "Host",
    )
    assert credit.billed_cost == Decimal("-100.00")
    assert (credit.sku, credit.meter.kind, credit.quantity) == ("", "other", None)
    assert credit.period_end == datetime(2025, 4, 1, tzinfo=UTC)
    assert negation.billed_cost < 0
    assert tax.description == "Tax for product code AmazonBedrock"


# --- legacy CUR ----------------------------------------------------------------------------

LEGACY_HEADER = (
    "identity/LineItemId,bill/BillingEntity,lineItem/UsageAccountId,lineItem/LineItemType,"
    "lineItem/UsageStartDate,lineItem/UsageEndDate,lineItem/ProductCode,lineItem/UsageType,"
    "lineItem/ResourceId,lineItem/UsageAmount,lineItem/CurrencyCode,lineItem/UnblendedCost,"
    "lineItem/NetUnblendedCost,lineItem/LineItemDescription,product/region,product/regionCode,"
    "pricing/unit,resourceTags/user:team,resourceTags/aws:createdBy"
)


def legacy(*rows: str) -> bytes:
    return ("\n".join([LEGACY_HEADER, *rows]) + "\n").encode()


def test_legacy_cur_columns_tags_and_net_cost() -> None:
    data = legacy(
        "a,AWS,123,Usage,2023-11-01T00:00:00.000Z,2023-11-01T01:00:00.000Z,AmazonEC2,"
        "EUW1-BoxUsage:inf2.8xlarge,i-1,1.0,USD,1.97,1.80,inf2 hour,eu-west-1,,Hrs,search,",
        "b,AWS Marketplace,123,DiscountedUsage,2023-11-01T00:00:00.000Z,2023-11-01T01:00:00.000Z,"
        "AmazonEC2,BoxUsage:g5.xlarge,i-2,1.0,USD,0.0,,RI covered,us-east-1,us-east-1,Hrs,,alice",
        "c,AWS,123,Refund,2023-11-01T00:00:00.000Z,2023-12-01T00:00:00.000Z,AmazonS3,,,"
        ",USD,-4.20,-4.20,refund,,,,,",
    )
    lines, rejects = read_all(data)
    assert rejects == []
    inf2, g5, refund = lines
    assert inf2.billed_cost == Decimal("1.80")  # NetUnblendedCost
    assert g5.billed_cost == Decimal("0.0")  # NetUnblendedCost empty: UnblendedCost
    assert [line.charge_category for line in lines] == ["Usage", "Usage", "Credit"]
    assert refund.billed_cost == Decimal("-4.20")
    assert (inf2.meter.kind, inf2.meter.instance_type) == ("gpu_instance", "inf2.8xlarge")
    assert inf2.region == "eu-west-1"  # product/regionCode empty: product/region
    assert inf2.tags == {"user:team": "search"}
    assert g5.tags == {"aws:createdBy": "alice"}
    assert g5.provider_raw == "AWS Marketplace"
    assert inf2.period_start == datetime(2023, 11, 1, tzinfo=UTC)


def test_athena_style_resource_tag_columns() -> None:
    data = (
        b"line_item_line_item_type,line_item_usage_start_date,line_item_usage_end_date,"
        b"line_item_unblended_cost,line_item_currency_code,resource_tags_user_team\n"
        b"Usage,2025-01-01T00:00:00Z,2025-01-01T01:00:00Z,1.5,USD,search\n"
    )
    lines, rejects = read_all(data)
    assert rejects == []
    assert lines[0].tags == {"user_team": "search"}


@pytest.mark.parametrize(
    ("line_item_type", "expected"),
    [
        ("Usage", "Usage"),
        ("DiscountedUsage", "Usage"),
        ("SavingsPlanCoveredUsage", "Usage"),
        ("Tax", "Tax"),
        ("Credit", "Credit"),
        ("Refund", "Credit"),
        ("Fee", "Purchase"),
        ("RIFee", "Purchase"),
        ("SavingsPlanRecurringFee", "Purchase"),
        ("SavingsPlanUpfrontFee", "Purchase"),
        ("BundledDiscount", "Adjustment"),
        ("EdpDiscount", "Adjustment"),
        ("SavingsPlanNegation", "Adjustment"),
        ("Discount", "Adjustment"),
        ("PrivateRateDiscount", "Adjustment"),
        ("SomeFutureDiscount", "Adjustment"),
        ("usage", "Usage"),
        ("Mystery", None),
    ],
)
def test_line_item_type_table(line_item_type: str, expected: str | None) -> None:
    assert aws_cur.charge_category(line_item_type) == expected


def test_unknown_or_empty_line_item_type_is_rejected() -> None:
    data = legacy(
        "a,AWS,123,Mystery,2023-11-01T00:00:00Z,2023-11-01T01:00:00Z,AmazonS3,,,1,USD,1,,x,,,,,",
        "b,AWS,123,,2023-11-01T00:00:00Z,2023-11-01T01:00:00Z,AmazonS3,,,1,USD,1,,x,,,,,",
        "c,AWS,123,Usage,2023-11-01T00:00:00Z,2023-11-01T01:00:00Z,AmazonS3,,,1,USD,1,,x,,,,,",
    )
    lines, rejects = read_all(data)
    assert [line.line for line in lines] == [4]
    assert [(reject.line, reject.field, reject.reason) for reject in rejects] == [
        (
            2,
            "lineItem/LineItemType",
            "`lineItem/LineItemType` is 'Mystery', not a known CUR line item type.",
        ),
        (3, "lineItem/LineItemType", "`lineItem/LineItemType` is empty."),
    ]


def test_bad_net_cost_is_rejected_naming_the_net_column() -> None:
    data = legacy(
        "a,AWS,123,Usage,2023-11-01T00:00:00Z,2023-11-01T01:00:00Z,AmazonS3,,,1,USD,1,abc,x,,,,,",
    )
    _, rejects = read_all(data)
    assert [(reject.line, reject.field) for reject in rejects] == [(2, "lineItem/NetUnblendedCost")]


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (
            "lineItem/LineItemType,lineItem/UsageStartDate,lineItem/UnblendedCost",
            "line 1: missing required columns `lineItem/UsageEndDate`, `lineItem/CurrencyCode`",
        ),
        (
            "line_item_line_item_type,line_item_usage_start_date,line_item_usage_end_date,"
            "line_item_currency_code",
            "line 1: missing required column `line_item_unblended_cost`",
        ),
    ],
)
def test_missing_required_columns_are_named_in_the_files_own_spelling(
    header: str, message: str
) -> None:
    with pytest.raises(ImportFileError) as error:
        read_all(header.encode() + b"\n")
    assert str(error.value) == message


# --- CUR 2.0 Parquet: map columns ---------------------------------------------------------------


def test_cur2_parquet_with_map_columns() -> None:
    string_map = pa.map_(pa.string(), pa.string())
    table = pa.table(
        {
            "line_item_line_item_type": ["Usage", "Credit"],
            "line_item_usage_start_date": pa.array(
                [datetime(2025, 3, 1, tzinfo=UTC), datetime(2025, 3, 1, tzinfo=UTC)],
                pa.timestamp("ms", tz="UTC"),
            ),
            "line_item_usage_end_date": pa.array(
                [datetime(2025, 3, 1, 1, tzinfo=UTC), datetime(2025, 4, 1, tzinfo=UTC)],
                pa.timestamp("ms", tz="UTC"),
            ),
            "line_item_product_code": ["AmazonBedrock", "AmazonBedrock"],
            "line_item_usage_type": ["USW2-Llama3-70B-output-tokens", None],
            "line_item_usage_amount": [250.0, None],
            "pricing_unit": ["1K tokens", None],
            "line_item_currency_code": ["USD", "USD"],
            "line_item_unblended_cost": [0.875, -0.5],
            "line_item_net_unblended_cost": [None, -0.5],
            "product": pa.array([[("region", "us-west-2")], None], string_map),
            "product_region_code": [None, None],
            "resource_tags": pa.array([[("user_team", "evals")], []], string_map),
        }
    )
    sink = io.BytesIO()
    pq.write_table(table, sink)
    lines, rejects = read_all(sink.getvalue())
    assert rejects == []
    usage, credit = lines
    assert (usage.line, credit.line) == (2, 3)
    # A float cell goes through str, so 0.875 stays exactly 0.875.
    assert (usage.billed_cost, credit.billed_cost) == (Decimal("0.875"), Decimal("-0.5"))
    assert (usage.meter.model, usage.meter.token_class) == ("Llama3-70B", "output")
    assert usage.region == "us-west-2"
    assert usage.tags == {"user_team": "evals"}
    assert credit.tags == {}
    assert usage.period_end == datetime(2025, 3, 1, 1, tzinfo=UTC)
