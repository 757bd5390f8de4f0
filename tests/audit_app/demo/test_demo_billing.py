"""The demo FOCUS bill: it imports whole through the FOCUS importer, its token lines match the
token logs (computed here by an independent groupby) except on the one planted day, its pool
lines are every instance-hour at the catalog price, and the pools have idle hours."""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from audit_app.costs.catalog import CATALOG_PATH
from audit_app.demo.billing import (
    DEFAULT_POOLS,
    Discrepancy,
    FocusExportSummary,
    write_focus_export,
)
from audit_app.demo.traffic import generate_requests
from audit_app.ingestion.billing_exports import BillingLine, read_billing

MONDAY = datetime(2025, 3, 3, tzinfo=UTC)
DAYS = 7
CENT = Decimal("0.01")
# The log cost is a float sum; the bill writes it with 10 decimals.
EXACT = Decimal("0.000001")
PLANTED = ("openai", "gpt-4o-2024-08-06", date(2025, 3, 5))  # DEFAULT_DISCREPANCY: day 2
MONEY_COLUMNS = (
    "BilledCost",
    "EffectiveCost",
    "ListCost",
    "ListUnitPrice",
    "ContractedCost",
    "ContractedUnitPrice",
)


@dataclass(frozen=True, kw_only=True)
class Export:
    requests: pd.DataFrame
    path: Path
    summary: FocusExportSummary
    lines: list[BillingLine]
    rejects: list[object]


def _read(path: Path) -> tuple[list[BillingLine], list[object]]:
    lines: list[BillingLine] = []
    rejects: list[object] = []
    with path.open("rb") as stream:
        for chunk in read_billing(stream, format="focus"):
            lines.extend(chunk.lines)
            rejects.extend(chunk.rejects)
    return lines, rejects


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Export:
    requests = generate_requests(start=MONDAY, days=DAYS, scale=0.01, seed=3)
    path = tmp_path_factory.mktemp("focus") / "demo-focus.csv"
    summary = write_focus_export(requests, path)
    lines, rejects = _read(path)
    return Export(requests=requests, path=path, summary=summary, lines=lines, rejects=rejects)


def _token_lines(export: Export) -> list[BillingLine]:
    return [line for line in export.lines if "pool" not in line.tags]


def _pool_lines(export: Export, pool: str) -> list[BillingLine]:
    return [line for line in export.lines if line.tags.get("pool") == pool]


def _catalog_instance_price(name: str) -> Decimal:
    with CATALOG_PATH.open(newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if row["name"] == name]
    assert len(rows) == 1
    return Decimal(rows[0]["usd_per_hour"])


def _usd(value: float) -> Decimal:
    """A float sum from the frame as Decimal, by its shortest repr (0.1 stays 0.1)."""
    return Decimal(repr(float(value)))


def _log_days(requests: pd.DataFrame) -> pd.DataFrame:
    """Provider × model × UTC day sums of the API requests, straight from the frame."""
    api = requests[requests["pool"] == ""].assign(
        day=requests["started_at"].dt.tz_convert("UTC").dt.date,
        has_cost=requests["cost_usd"].notna(),
    )
    return api.groupby(["provider", "model", "day"]).agg(
        cost=("cost_usd", "sum"),
        has_cost=("has_cost", "all"),
        input_tokens=("input_tokens", "sum"),
        output_tokens=("output_tokens", "sum"),
        cached_tokens=("cached_input_tokens", "sum"),
    )


def _bill_days(export: Export) -> dict[tuple[str, str, date], dict[str, Decimal]]:
    """Billed cost and tokens per token class, keyed by the tags and the charge day."""
    days: dict[tuple[str, str, date], dict[str, Decimal]] = defaultdict(
        lambda: defaultdict(Decimal)
    )
    for line in _token_lines(export):
        assert line.period_end - line.period_start == timedelta(days=1)
        key = (line.tags["provider"], line.tags["model"], line.period_start.date())
        days[key]["billed"] += line.billed_cost
        days[key][f"{line.meter.token_class}_billed"] += line.billed_cost
        days[key][f"{line.meter.token_class}_tokens"] += line.quantity or Decimal(0)
    return days


# --- the file as the importer reads it ---------------------------------------------------------


def test_the_export_imports_whole_and_totals_agree(export: Export) -> None:
    assert export.rejects == []
    assert len(export.lines) == export.summary.rows_written
    billed = sum((line.billed_cost for line in export.lines), Decimal(0))
    assert billed == export.summary.billed_total_usd
    api = sum((line.billed_cost for line in _token_lines(export)), Decimal(0))
    assert api == export.summary.api_billed_usd
    assert {line.currency for line in export.lines} == {"USD"}
    assert {line.charge_category for line in export.lines} == {"Usage"}
    assert export.summary.first_day == date(2025, 3, 3)
    assert export.summary.last_day == date(2025, 3, 9)


def test_money_is_plain_decimal_text_with_at_most_ten_decimals(export: Export) -> None:
    money = re.compile(r"-?\d+(\.\d{1,10})?")
    with export.path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            for column in MONEY_COLUMNS:
                assert money.fullmatch(row[column]), (column, row[column])


def test_the_same_seed_writes_the_same_file(export: Export, tmp_path: Path) -> None:
    again = write_focus_export(export.requests, tmp_path / "again.csv", seed=0)
    other = write_focus_export(export.requests, tmp_path / "other.csv", seed=1)
    assert (tmp_path / "again.csv").read_bytes() == export.path.read_bytes()
    assert (tmp_path / "other.csv").read_bytes() != export.path.read_bytes()
    assert again == export.summary
    assert other.billed_total_usd == export.summary.billed_total_usd


# --- token lines --------------------------------------------------------------------------------


def test_token_lines_bill_the_log_cost_except_on_the_planted_day(export: Export) -> None:
    logs = _log_days(export.requests)
    bills = _bill_days(export)
    assert set(bills) == set(logs.index)
    checked = 0
    for key, row in logs.iterrows():
        bill = bills[key]
        assert bill["input_tokens"] == row["input_tokens"]
        assert bill["output_tokens"] == row["output_tokens"]
        if not row["has_cost"]:
            continue
        log_cost = _usd(row["cost"])
        factor = Decimal("1.25") if key == PLANTED else Decimal(1)
        assert abs(bill["billed"] - factor * log_cost) < EXACT, key
        assert (bill["billed"] - factor * log_cost).quantize(CENT) == 0
        checked += 1
    assert checked >= 30


def test_only_the_planted_day_is_off_by_more_than_five_percent(export: Export) -> None:
    logs = _log_days(export.requests)
    bills = _bill_days(export)
    flagged = [
        key
        for key, row in logs[logs["has_cost"] & (logs["cost"] > 0)].iterrows()
        if abs(bills[key]["billed"] / _usd(row["cost"]) - 1) > Decimal("0.05")
    ]
    assert flagged == [PLANTED]
    planted = export.summary.discrepancy
    assert planted is not None
    assert (planted.provider, planted.model, planted.day) == PLANTED
    assert planted.factor == Decimal("1.25")
    assert planted.billed_usd == bills[PLANTED]["billed"]
    assert abs(planted.log_usd - _usd(logs.loc[PLANTED, "cost"])) < EXACT
    assert planted.billed_usd == (planted.log_usd * Decimal("1.25")).quantize(Decimal("1E-10"))


def test_input_and_output_lines_split_the_day_by_catalog_prices(export: Export) -> None:
    # gpt-4o-mini: input $0.15 / M, cached input $0.075 / M, output $0.60 / M; no batch traffic.
    key = ("openai", "gpt-4o-mini-2024-07-18", date(2025, 3, 4))
    row = _log_days(export.requests).loc[key]
    uncached = int(row["input_tokens"]) - int(row["cached_tokens"])
    input_usd = (uncached * Decimal("0.15") + int(row["cached_tokens"]) * Decimal("0.075")) / (
        1_000_000
    )
    output_usd = int(row["output_tokens"]) * Decimal("0.6") / 1_000_000
    bill = _bill_days(export)[key]
    assert abs(bill["input_billed"] - input_usd) < EXACT
    assert abs(bill["output_billed"] - output_usd) < EXACT
    assert bill["input_billed"] + bill["output_billed"] == bill["billed"]


def test_a_fine_tune_without_logged_cost_is_billed_at_twice_its_base_price(
    export: Export,
) -> None:
    logs = _log_days(export.requests)
    fine_tunes = logs[~logs["has_cost"]]
    assert len(fine_tunes) > 0
    bills = _bill_days(export)
    for key, row in fine_tunes.iterrows():
        assert key[1].startswith("ft:gpt-4.1-mini-2025-04-14:")
        # gpt-4.1-mini is $0.40 / $1.60 per M; fine-tuned inference costs twice that.
        expected = (
            int(row["input_tokens"]) * Decimal("0.8") + int(row["output_tokens"]) * Decimal("3.2")
        ) / 1_000_000
        assert abs(bills[key]["billed"] - expected) < EXACT


def test_token_meters_parse_to_the_model_and_token_class(export: Export) -> None:
    seen = set()
    for line in _token_lines(export):
        assert line.meter.kind == "token"
        assert line.meter.token_class in ("input", "output")
        assert line.unit == "Tokens"
        assert line.meter.block_size == 1
        if line.tags["provider"] == "bedrock":
            assert line.provider == "aws"
            assert line.service == "Amazon Bedrock"
            assert line.sku == f"USE1-Claude4.5Haiku-{line.meter.token_class}-tokens"
            assert line.meter.model == "Claude4.5Haiku"
        else:
            assert line.provider == line.tags["provider"]
            assert line.meter.model == line.tags["model"]
        seen.add((line.provider, line.meter.token_class))
    assert seen == {
        (provider, token_class)
        for provider in ("openai", "anthropic", "aws")
        for token_class in ("input", "output")
    }


def test_discrepancy_can_be_left_out_or_moved(export: Export, tmp_path: Path) -> None:
    clean = write_focus_export(export.requests, tmp_path / "clean.csv", discrepancy=None)
    assert clean.discrepancy is None
    assert clean.api_billed_usd < export.summary.api_billed_usd
    moved = write_focus_export(
        export.requests,
        tmp_path / "moved.csv",
        discrepancy=Discrepancy(
            provider="anthropic",
            model="claude-sonnet-4-5-20250929",
            day_offset=0,
            factor=Decimal("0.5"),
        ),
    )
    assert moved.discrepancy is not None
    assert moved.discrepancy.day == date(2025, 3, 3)
    assert moved.discrepancy.billed_usd == (moved.discrepancy.log_usd / 2).quantize(
        Decimal("1E-10")
    )


def test_a_discrepancy_on_a_day_without_that_traffic_is_refused(
    export: Export, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match="cannot plant"):
        write_focus_export(
            export.requests,
            tmp_path / "bad.csv",
            discrepancy=Discrepancy(provider="openai", model="gpt-4o-2024-08-06", day_offset=30),
        )


# --- pool instance-hours ------------------------------------------------------------------------


def test_pool_totals_are_instances_times_hours_times_the_catalog_price(export: Export) -> None:
    last_end = export.requests["ended_at"].max().ceil("h").to_pydatetime()
    span_end = max(MONDAY + timedelta(days=DAYS), last_end)
    hours = int((span_end - MONDAY) / timedelta(hours=1))
    assert hours >= DAYS * 24
    expected = {
        "h100-pool": 2 * hours * _catalog_instance_price("p5.48xlarge"),
        # The second trn1 instance is left running two days after the span.
        "trn1-pool": (2 * hours + 48) * _catalog_instance_price("trn1.32xlarge"),
    }
    for pool, total in expected.items():
        lines = _pool_lines(export, pool)
        assert sum((line.billed_cost for line in lines), Decimal(0)) == total
        assert export.summary.pool_billed_usd[pool] == total
    assert export.summary.billed_total_usd == export.summary.api_billed_usd + sum(expected.values())


def test_every_instance_is_billed_every_hour_of_the_span(export: Export) -> None:
    span_end = export.summary.span_end
    for pool in DEFAULT_POOLS:
        by_instance: dict[str, list[datetime]] = defaultdict(list)
        for line in _pool_lines(export, pool.name):
            assert line.period_end - line.period_start == timedelta(hours=1)
            assert line.quantity == 1
            assert line.unit == "Hours"
            by_instance[line.resource_id].append(line.period_start)
        assert sorted(by_instance) == sorted(pool.resource_ids)
        for resource_id, starts in by_instance.items():
            tail = 48 if pool.name == "trn1-pool" and resource_id == pool.resource_ids[-1] else 0
            count = int((span_end - MONDAY) / timedelta(hours=1)) + tail
            assert sorted(starts) == [MONDAY + timedelta(hours=hour) for hour in range(count)]


def test_pool_meters_parse_as_gpu_instances(export: Export) -> None:
    expected = {"h100-pool": "p5.48xlarge", "trn1-pool": "trn1.32xlarge"}
    for pool, instance_type in expected.items():
        lines = _pool_lines(export, pool)
        assert len(lines) > 0
        for line in lines:
            assert line.provider == "aws"
            assert line.sku == f"USE1-BoxUsage:{instance_type}"
            assert line.meter.kind == "gpu_instance"
            assert line.meter.instance_type == instance_type
            assert line.resource_id.startswith("arn:aws:ec2:us-east-1:")


def test_pools_have_hours_without_requests(export: Export) -> None:
    requests = export.requests
    idle: dict[str, int] = {}
    for pool in ("h100-pool", "trn1-pool"):
        busy = set(
            requests.loc[requests["pool"] == pool, "started_at"].dt.floor("h").dt.to_pydatetime()
        )
        assert busy
        last_request = max(busy)
        billed_hours = {line.period_start for line in _pool_lines(export, pool)}
        idle[pool] = len(billed_hours - busy)
        # After the last request, every billed hour is idle: the forgotten trn1 instance.
        after = {hour for hour in billed_hours if hour > last_request}
        assert after.isdisjoint(busy)
    # The sales copilot sleeps at night and at weekends; the tagger's pool idles in its tail.
    assert idle["h100-pool"] > 48
    assert idle["trn1-pool"] >= 48
