"""Azure cost details importer: MCA (camelCase) and EA (PascalCase) exports.

Expected values are worked out by hand from tests/fixtures/billing/azure-mca_openai-eur.csv
(UTF-8 BOM, CRLF line ends, EUR billing currency) and the small tables written inline below.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from audit_app.ingestion.billing_exports import azure
from audit_app.ingestion.billing_exports.base import BillingLine, BillingReject
from audit_app.ingestion.reading import ImportFileError
from tests.support.paths import FIXTURES_DIR

FIXTURES = FIXTURES_DIR / "billing"
MCA = FIXTURES / "azure-mca_openai-eur.csv"

EA_HEADER = (
    "SubscriptionId,ResourceLocation,Date,ProductName,MeterCategory,MeterSubCategory,MeterName,"
    "UnitOfMeasure,Quantity,CostInBillingCurrency,ResourceId,Tags,ChargeType,PricingModel,"
    "BillingCurrencyCode"
)


def read_all(
    data: bytes, chunk_rows: int = 10_000
) -> tuple[list[BillingLine], list[BillingReject]]:
    lines: list[BillingLine] = []
    rejects: list[BillingReject] = []
    for chunk in azure.read(io.BytesIO(data), chunk_rows=chunk_rows):
        lines.extend(chunk.lines)
        rejects.extend(chunk.rejects)
    return lines, rejects


def ea(*rows: str) -> bytes:
    return ("\r\n".join([EA_HEADER, *rows]) + "\r\n").encode()


# --- MCA hand-written fixture -------------------------------------------------------------------


def test_mca_file_starts_with_a_bom_and_uses_crlf() -> None:
    data = MCA.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    assert b"\r\n" in data


def test_mca_rows_costs_and_totals_in_eur() -> None:
    lines, rejects = read_all(MCA.read_bytes())
    assert rejects == []
    assert [line.line for line in lines] == list(range(2, 10))
    assert {(line.provider, line.provider_raw, line.currency) for line in lines} == {
        ("azure", "Microsoft", "EUR")
    }
    # costInBillingCurrency, never costInUsd (3.73 on the first row) and never converted.
    assert [line.billed_cost for line in lines] == [
        Decimal("3.45"),
        Decimal("2.76"),
        Decimal("27.60"),
        Decimal("9.20"),
        Decimal("46.00"),
        Decimal("2112.00"),
        Decimal("-3.45"),
        Decimal("1500.00"),
    ]
    # 3.45 + 2.76 + 27.60 + 9.20 + 46.00 + 2112.00 - 3.45 + 1500.00
    assert sum(line.billed_cost for line in lines) == Decimal("3697.56")
    assert [line.charge_category for line in lines] == [
        *["Usage"] * 6,
        "Credit",  # Refund
        "Purchase",
    ]
    # Actual-cost export: effective = billed, except the reservation purchase, whose amortised
    # cost the file does not hold.
    assert [line.effective_cost for line in lines[:7]] == [line.billed_cost for line in lines[:7]]
    assert lines[7].effective_cost is None


def test_mca_openai_meters_and_block_sizes() -> None:
    lines, _ = read_all(MCA.read_bytes())
    assert [
        (
            line.meter.kind,
            line.meter.model,
            line.meter.token_class,
            line.meter.tier,
            line.meter.deployment,
            line.meter.block_size,
        )
        for line in lines[:5]
    ] == [
        ("token", "gpt-4o-mini-0718", "input", "standard", "global", 1000),
        ("token", "gpt-4o-mini-0718", "output", "standard", "global", 1000),
        ("token", "gpt-4o-0513", "output", "standard", "regional", 1_000_000),
        ("token", "gpt-4o-1120", "cache_read", "standard", "global", 1000),
        ("token", "gpt-4o-0806", "input", "batch", "global", 1000),
    ]
    first = lines[0]
    # 25000 blocks of 1K = 25M input tokens.
    assert first.quantity * first.meter.block_size == Decimal(25_000_000)
    assert (first.unit, first.sku) == ("1K", "gpt-4o-mini-0718-Inp-glbl Tokens")
    assert first.service == "Cognitive Services"
    assert first.region == "swedencentral"
    assert first.account_id == "5f3c0000-1111-2222-3333-444455556666"
    assert first.tags == {"team": "support", "env": "prod"}
    assert first.description == "Azure OpenAI - gpt-4o-mini"


def test_mca_gpu_vm_dates_and_tags_without_braces() -> None:
    lines, _ = read_all(MCA.read_bytes())
    vm, refund, purchase = lines[5], lines[6], lines[7]
    assert (vm.meter.kind, vm.meter.instance_type, vm.meter.instance_family) == (
        "gpu_instance",
        "ND96isr_H100_v5",
        "nd",
    )
    assert (vm.quantity, vm.unit) == (Decimal(24), "1 Hour")
    assert vm.tags == {"pool": "vllm-h100", "team": "ml-platform"}
    # `11/01/2024` is M/D/YYYY; a cost details row covers one day.
    assert (lines[0].period_start, lines[0].period_end) == (
        datetime(2024, 11, 1, tzinfo=UTC),
        datetime(2024, 11, 2, tzinfo=UTC),
    )
    assert lines[2].period_start == datetime(2024, 11, 2, tzinfo=UTC)
    assert refund.period_start == datetime(2024, 11, 3, tzinfo=UTC)  # ISO date
    assert refund.tags == {}  # NULL
    assert (purchase.sku, purchase.meter.kind, purchase.service) == ("", "other", "")


# --- EA ------------------------------------------------------------------------------------------


def test_ea_charge_types_map_to_categories() -> None:
    base = (
        "sub,eastus,9/2/2023,P,Virtual Machines,,D2 v3,1 Hour,1,{cost},,,{charge_type},{model},CAD"
    )
    rows = [
        base.format(cost="1.00", charge_type="Usage", model="OnDemand"),
        base.format(cost="2.00", charge_type="UnusedReservation", model="Reservation"),
        base.format(cost="3.00", charge_type="Purchase", model="Reservation"),
        base.format(cost="-4.00", charge_type="Refund", model="OnDemand"),
        base.format(cost="0.01", charge_type="RoundingAdjustment", model=""),
        base.format(cost="5.00", charge_type="Tax", model=""),
        base.format(cost="6.00", charge_type="", model=""),
    ]
    lines, rejects = read_all(ea(*rows))
    assert rejects == []
    assert [line.charge_category for line in lines] == [
        "Usage",
        "Usage",
        "Purchase",
        "Credit",
        "Adjustment",
        "Tax",
        "Usage",  # no ChargeType: usage
    ]
    assert [line.effective_cost for line in lines] == [
        Decimal("1.00"),
        None,  # unused reservation: its amortised cost is not in an actual-cost export
        None,
        Decimal("-4.00"),
        Decimal("0.01"),
        Decimal("5.00"),
        Decimal("6.00"),
    ]
    assert {line.currency for line in lines} == {"CAD"}
    assert lines[0].period_start == datetime(2023, 9, 2, tzinfo=UTC)


def test_ea_row_rejects_with_line_and_reason() -> None:
    good = "sub,eastus,9/2/2023,P,Storage,,Hot LRS Write Operations,10K,1,0.5,,,Usage,OnDemand,CAD"
    lines, rejects = read_all(
        ea(
            good,
            "sub,eastus,9/2/2023,P,Storage,,Hot LRS,10K,1,abc,,,Usage,OnDemand,CAD",
            "sub,eastus,31/12/2023,P,Storage,,Hot LRS,10K,1,0.5,,,Usage,OnDemand,CAD",
            "sub,eastus,,P,Storage,,Hot LRS,10K,1,0.5,,,Usage,OnDemand,CAD",
            "sub,eastus,9/2/2023,P,Storage,,Hot LRS,10K,1,0.5,,,Usage,OnDemand,C$",
            "sub,eastus,9/2/2023,P,Storage,,Hot LRS,10K,1,0.5,,,Giveaway,OnDemand,CAD",
            "sub,eastus,9/2/2023,P,Storage,,Hot LRS,10K,1,Infinity,,,Usage,OnDemand,CAD",
            good,
        )
    )
    assert [line.line for line in lines] == [2, 9]
    assert lines[0].meter.block_size == 10_000
    assert [(reject.line, reject.field, reject.reason) for reject in rejects] == [
        (3, "CostInBillingCurrency", "`CostInBillingCurrency` must be a finite number, got 'abc'."),
        (4, "Date", "`Date` is not a date or timestamp: '31/12/2023'."),
        (5, "Date", "`Date` is empty."),
        (
            6,
            "BillingCurrencyCode",
            "`BillingCurrencyCode` must be a 3-letter ISO currency code, got 'C$'.",
        ),
        (7, "ChargeType", "`ChargeType` is 'Giveaway', not a known Azure charge type."),
        (
            8,
            "CostInBillingCurrency",
            "`CostInBillingCurrency` must be a finite number, got 'Infinity'.",
        ),
    ]


@pytest.mark.parametrize("cost_column", ["Cost", "PreTaxCost", "costInBillingCurrency"])
def test_older_and_camel_case_cost_columns(cost_column: str) -> None:
    data = (
        f"date,meterName,{cost_column},billingCurrency,unitOfMeasure,quantity\n"
        "2024-11-01,gpt-4o-mini-0718-Inp-glbl Tokens,1.25,GBP,1K,100\n"
    ).encode()
    lines, rejects = read_all(data)
    assert rejects == []
    assert (lines[0].billed_cost, lines[0].currency) == (Decimal("1.25"), "GBP")
    assert lines[0].meter.token_class == "input"


def test_missing_required_columns_are_named() -> None:
    with pytest.raises(ImportFileError) as error:
        read_all(b"MeterName,Quantity\nx,1\n")
    assert str(error.value) == (
        "line 1: missing required columns `CostInBillingCurrency` (or `Cost`, `PreTaxCost`), "
        "`Date` (or `UsageDateTime`), `BillingCurrencyCode` (or `BillingCurrency`, `Currency`)"
    )
