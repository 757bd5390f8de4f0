"""The three real billing exports in tests/fixtures/real/billing/ import whole and add up.

Every expectation here is computed independently of the importers: the plain `csv` module reads
the raw file and `decimal.Decimal` sums the raw cost column (`NULL` / empty counts as 0), so a
parsing mistake in the importer cannot also fix its own expected value. Category counts are the
ones stated in SOURCES.md. The files are required: a missing one fails, it never skips.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from audit_app.ingestion.billing_exports import (
    BillingLine,
    BillingReject,
    detect_billing_format,
    read_billing,
)
from tests.support.paths import FIXTURES_DIR

REAL = FIXTURES_DIR / "real" / "billing"
FOCUS_FILE = REAL / "focus-1.0_official-sample_1000rows.csv"
CUR_FILE = REAL / "aws-cur-legacy_anonymous-sample_1281rows.csv"
AZURE_FILE = REAL / "azure-ea-costdetails_anonymous-sample_27rows.csv"
CENT = Decimal("0.01")


@dataclass(frozen=True)
class RealFile:
    path: Path
    format: str
    cost_column: str
    currency_column: str
    data_rows: int
    categories: dict[str, int]


REAL_FILES = [
    RealFile(
        FOCUS_FILE,
        "focus",
        "BilledCost",
        "BillingCurrency",
        1000,
        {"Usage": 997, "Adjustment": 2, "Credit": 1},
    ),
    RealFile(
        CUR_FILE,
        "aws-cur",
        "lineItem/UnblendedCost",  # the file has no lineItem/NetUnblendedCost column
        "lineItem/CurrencyCode",
        1281,
        {"Usage": 1269, "Tax": 12},
    ),
    RealFile(
        AZURE_FILE,
        "azure",
        "CostInBillingCurrency",
        "BillingCurrencyCode",
        27,
        {"Usage": 27},
    ),
]


def raw_rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def raw_number(cell: str) -> Decimal:
    return Decimal(0) if cell.strip() in ("", "NULL") else Decimal(cell)


def independent_totals(real: RealFile) -> dict[str, Decimal]:
    totals: dict[str, Decimal] = {}
    for row in raw_rows(real.path):
        currency = row[real.currency_column]
        totals[currency] = totals.get(currency, Decimal(0)) + raw_number(row[real.cost_column])
    return totals


def imported(path: Path) -> tuple[list[BillingLine], list[BillingReject], list[int]]:
    data = path.read_bytes()
    chunks = list(read_billing(io.BytesIO(data), chunk_rows=400))
    lines = [line for chunk in chunks for line in chunk.lines]
    rejects = [reject for chunk in chunks for reject in chunk.rejects]
    return lines, rejects, [chunk.bytes_read for chunk in chunks]


@pytest.mark.parametrize("real", REAL_FILES, ids=lambda real: real.format)
def test_real_file_imports_whole_with_no_rejects(real: RealFile) -> None:
    assert detect_billing_format(real.path.read_bytes()[: 64 * 1024]) == real.format
    lines, rejects, positions = imported(real.path)
    assert rejects == []
    assert len(raw_rows(real.path)) == real.data_rows
    assert len(lines) == real.data_rows
    # No cell spans lines in these files, so data row n sits on physical line n + 1.
    assert [line.line for line in lines] == list(range(2, real.data_rows + 2))
    assert positions == sorted(positions)
    assert positions[-1] == real.path.stat().st_size


@pytest.mark.parametrize("real", REAL_FILES, ids=lambda real: real.format)
def test_real_file_billed_total_per_currency_matches_an_independent_sum(real: RealFile) -> None:
    lines, _, _ = imported(real.path)
    totals: dict[str, Decimal] = {}
    for line in lines:
        totals[line.currency] = totals.get(line.currency, Decimal(0)) + line.billed_cost
    expected = independent_totals(real)
    assert totals == expected
    assert {currency: total.quantize(CENT) for currency, total in totals.items()} == {
        currency: total.quantize(CENT) for currency, total in expected.items()
    }


def test_real_totals_are_the_known_values() -> None:
    # Pinned so a change to the fixtures themselves is noticed.
    assert independent_totals(REAL_FILES[0]) == {"USD": Decimal("20.52022672899")}
    assert independent_totals(REAL_FILES[1]) == {"USD": Decimal("1.68230869740")}
    assert independent_totals(REAL_FILES[2]) == {"CAD": Decimal("1.26136926505726")}


@pytest.mark.parametrize("real", REAL_FILES, ids=lambda real: real.format)
def test_real_file_category_counts_from_sources_md(real: RealFile) -> None:
    lines, _, _ = imported(real.path)
    assert Counter(line.charge_category for line in lines) == Counter(real.categories)


def test_focus_sample_providers_effective_cost_and_dates() -> None:
    lines, _, _ = imported(FOCUS_FILE)
    rows = raw_rows(FOCUS_FILE)
    assert Counter(line.provider for line in lines) == Counter(
        {"aws": 942, "azure": 51, "oracle": 7}
    )
    assert Counter(line.provider_raw for line in lines) == Counter(
        row["ProviderName"] for row in rows
    )
    # EffectiveCost is kept apart from BilledCost (AWS rows: 0 effective, > 0 billed).
    expected_effective = sum(
        (Decimal(row["EffectiveCost"]) for row in rows if row["EffectiveCost"] != "NULL"),
        Decimal(0),
    )
    assert sum((line.effective_cost or Decimal(0) for line in lines), Decimal(0)) == (
        expected_effective
    )
    assert [line.effective_cost is None for line in lines] == [
        row["EffectiveCost"] == "NULL" for row in rows
    ]
    # `2024-09-18 22:00:00` (no T, no Z) is UTC, and every charge lies in September 2024.
    assert lines[0].period_start == datetime(2024, 9, 18, 22, tzinfo=UTC)
    assert all(
        datetime(2024, 9, 1, tzinfo=UTC) <= line.period_start < datetime(2024, 10, 1, tzinfo=UTC)
        for line in lines
    )
    assert {line.currency for line in lines} == {"USD"}


def test_focus_sample_keeps_the_org_and_space_org_tags_apart() -> None:
    lines, _, _ = imported(FOCUS_FILE)
    expected_lines = [
        number
        for number, row in enumerate(raw_rows(FOCUS_FILE), start=2)
        if row["Tags"] != "NULL" and {"org", " org"} <= set(json.loads(row["Tags"]))
    ]
    assert expected_lines  # the quirk SOURCES.md describes is there
    with_both = [line for line in lines if {"org", " org"} <= set(line.tags)]
    assert [line.line for line in with_both] == expected_lines
    assert {line.provider for line in with_both} == {"azure"}
    assert with_both[0].tags["org"] == "trey"
    assert with_both[0].tags[" org"] == "trey"
    # Every tagged row keeps exactly the keys of its JSON.
    for line, row in zip(lines, raw_rows(FOCUS_FILE), strict=True):
        assert set(line.tags) == (set() if row["Tags"] == "NULL" else set(json.loads(row["Tags"])))


def test_focus_sample_gpu_instances_are_found_from_the_charge_description() -> None:
    lines, _, _ = imported(FOCUS_FILE)
    gpu = Counter(line.meter.instance_type for line in lines if line.meter.kind == "gpu_instance")
    rows = raw_rows(FOCUS_FILE)
    assert gpu == Counter(
        {
            "g5.4xlarge": sum("g5.4xlarge" in row["ChargeDescription"] for row in rows),
            "g3.4xlarge": sum("g3.4xlarge" in row["ChargeDescription"] for row in rows),
        }
    )
    assert sum(gpu.values()) == 10
    # The sample has no token meters (SOURCES.md) and nothing unreadable.
    assert {line.meter.kind for line in lines} == {"other", "gpu_instance"}


def test_cur_sample_fields() -> None:
    lines, _, _ = imported(CUR_FILE)
    rows = raw_rows(CUR_FILE)
    assert {(line.provider, line.provider_raw) for line in lines} == {("aws", "AWS")}
    assert Counter(line.service for line in lines) == Counter(
        row["lineItem/ProductCode"] for row in rows
    )
    assert [line.sku for line in lines] == [row["lineItem/UsageType"] for row in rows]
    # `2023-11-01T00:00:00.000Z`; usage from 1 to 14 November, tax for the whole month.
    assert lines[0].period_start == datetime(2023, 11, 1, tzinfo=UTC)
    assert all(line.period_start.month == 11 for line in lines)
    assert {line.effective_cost for line in lines} == {None}
    # No EC2, SageMaker or Bedrock rows (SOURCES.md): nothing token- or GPU-priced.
    assert {line.meter.kind for line in lines} == {"other"}
    assert all(line.tags == {} for line in lines)  # the file has no resourceTags/* columns


def test_azure_sample_fields() -> None:
    lines, _, _ = imported(AZURE_FILE)
    # `Date` is `9/2/2023`: M/D/YYYY, 2 September, one day.
    assert {(line.period_start, line.period_end) for line in lines} == {
        (datetime(2023, 9, 2, tzinfo=UTC), datetime(2023, 9, 3, tzinfo=UTC))
    }
    assert {line.currency for line in lines} == {"CAD"}
    # Tags without braces.
    assert {tuple(sorted(line.tags.items())) for line in lines} == {
        (("tagA", "valueA"), ("tagB", "valueB"), ("tagC", "valueC"))
    }
    assert Counter(line.service for line in lines) == Counter(
        {
            "Virtual Network": 12,
            "Virtual Machines": 7,
            "Storage": 5,
            "Azure Data Factory v2": 2,
            "Event Hubs": 1,
        }
    )
    # UnitOfMeasure carries the block size: `10K` operations, `1 Hour`, `1 GB`.
    assert Counter(line.meter.block_size for line in lines) == Counter({1: 21, 10_000: 5, 1_000: 1})
    assert {line.meter.kind for line in lines} == {"other"}
