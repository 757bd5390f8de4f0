"""Importer for Azure cost details exports: EA (PascalCase) and MCA (camelCase), CSV or Parquet.

Its rules in full: `docs/formats.md`, section "Azure cost details".
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import BinaryIO

from audit_app.ingestion.billing_exports.base import (
    ONE_DAY,
    BillingChunk,
    BillingLine,
    ColumnIndex,
    billed_amount,
    cell,
    first_cell_text,
    parse_amount,
    parse_billing_period,
    parse_currency,
    parse_period,
    parse_tag_object,
)
from audit_app.ingestion.billing_exports.meters import parse_meter
from audit_app.ingestion.billing_exports.tables import columns_prepare, head_columns, read_table
from audit_app.ingestion.reading import RowRejected, quoted, text

# How the wrong-format sentence names the format; the upload form's choice; how a sentence
# names such a file (`audit_app.ingestion.formats`).
SHORT_LABEL = "Azure cost details"
LABEL = "Azure cost details (EA or MCA)"
DESCRIPTION = "an Azure cost details billing export"
PROVIDER = "azure"
PROVIDER_RAW = "Microsoft"

COST_COLUMNS = ("CostInBillingCurrency", "Cost", "PreTaxCost")
DATE_COLUMNS = ("Date", "UsageDateTime")
CURRENCY_COLUMNS = ("BillingCurrencyCode", "BillingCurrency", "Currency")
METER_COLUMNS = ("MeterName", "MeterCategory", "MeterId")
REQUIRED = (COST_COLUMNS, DATE_COLUMNS, CURRENCY_COLUMNS)

CHARGE_CATEGORY_BY_CHARGE_TYPE = {
    "usage": "Usage",
    "unusedreservation": "Usage",
    "unusedsavingsplan": "Usage",
    "purchase": "Purchase",
    "refund": "Credit",
    "credit": "Credit",
    "tax": "Tax",
    "adjustment": "Adjustment",
    "roundingadjustment": "Adjustment",
}
DEFAULT_CHARGE_CATEGORY = "Usage"
COMMITMENT_PRICING_MODELS = frozenset({"reservation", "savingsplan"})
COMMITMENT_CHARGE_TYPES = frozenset({"purchase", "unusedreservation", "unusedsavingsplan"})
UNUSED_COMMITMENT_CHARGE_TYPES = frozenset({"unusedreservation", "unusedsavingsplan"})
BILLING_PERIOD_COLUMNS = ("BillingPeriodStartDate", "BillingPeriodEndDate")

AMORTIZED_NOTE = (
    "This is an amortized-cost export: its costs spread reservation purchases over usage, so "
    "they count as effective cost, not as billed cost; upload the actual-cost export for "
    "invoice figures."
)


@dataclass(kw_only=True)
class CostBasisEvidence:
    """What a file's commitment rows say about its costs, gathered chunk by chunk.

    Amortized when usage a commitment covered (or unused commitment) carries a cost, or when a
    commitment purchase costs 0 beside such usage; an actual-cost export has neither.
    """

    commitment_usage_rows: int = 0
    commitment_usage_rows_with_cost: int = 0
    zero_cost_purchase_rows: int = 0

    def add(self, lines: Iterable[BillingLine]) -> None:
        for line in lines:
            if line.commitment in ("used", "unused"):
                self.commitment_usage_rows += 1
                if line.billed_cost != 0:
                    self.commitment_usage_rows_with_cost += 1
            elif line.commitment == "purchase" and line.billed_cost == 0:
                self.zero_cost_purchase_rows += 1

    @property
    def amortized(self) -> bool:
        return self.commitment_usage_rows_with_cost > 0 or (
            self.zero_cost_purchase_rows > 0 and self.commitment_usage_rows > 0
        )


def sniff_columns(columns: frozenset[str]) -> bool:
    return any(name.lower() in columns for name in METER_COLUMNS) and any(
        name.lower() in columns for name in COST_COLUMNS
    )


def sniff(head: bytes) -> bool:
    return sniff_columns(head_columns(head))


def read(stream: BinaryIO, *, chunk_rows: int) -> Iterator[BillingChunk]:
    prepare = columns_prepare(REQUIRED, _AzureColumns.find, _billing_line)
    return read_table(stream, chunk_rows=chunk_rows, prepare=prepare)


@dataclass(frozen=True, kw_only=True)
class _AzureColumns:
    """The file's column for each field this importer reads (None: the file has none)."""

    cost: str
    day: str
    currency: str
    effective: str | None
    charge_type: str | None
    pricing_model: str | None
    meter_name: str | None
    meter_category: str | None
    meter_subcategory: str | None
    consumed_service: str | None
    quantity: str | None
    unit: str | None
    resources: tuple[str | None, ...]
    regions: tuple[str | None, ...]
    accounts: tuple[str | None, ...]
    product: str | None
    tags: str | None
    billing_start_column: str | None
    billing_end_column: str | None
    billing_account: str | None

    @classmethod
    def find(cls, columns: ColumnIndex) -> _AzureColumns:
        col = columns.find
        return cls(
            cost=col(*COST_COLUMNS) or COST_COLUMNS[0],
            day=col(*DATE_COLUMNS) or DATE_COLUMNS[0],
            currency=col(*CURRENCY_COLUMNS) or CURRENCY_COLUMNS[0],
            effective=col("EffectiveCost"),
            charge_type=col("ChargeType"),
            pricing_model=col("PricingModel"),
            meter_name=col("MeterName"),
            meter_category=col("MeterCategory"),
            meter_subcategory=col("MeterSubCategory"),
            consumed_service=col("ConsumedService"),
            quantity=col("Quantity"),
            unit=col("UnitOfMeasure"),
            resources=(col("ResourceId"), col("InstanceId"), col("InstanceName")),
            regions=(col("ResourceLocation"), col("MeterRegion")),
            accounts=(col("SubscriptionId"), col("SubscriptionGuid")),
            product=col("ProductName"),
            tags=col("Tags"),
            billing_start_column=col(BILLING_PERIOD_COLUMNS[0]),
            billing_end_column=col(BILLING_PERIOD_COLUMNS[1]),
            billing_account=col("BillingAccountId"),
        )


def _billing_line(fields: Mapping[str, object], line: int, found: _AzureColumns) -> BillingLine:
    """One Azure cost row as a billing line; raises `RowRejected` naming the first bad column."""
    charge_type_text = text(cell(fields, found.charge_type))
    category = _charge_category(charge_type_text, field=found.charge_type or "ChargeType")
    period_start = parse_period(cell(fields, found.day), field=found.day)
    billing_start, billing_end = parse_billing_period(
        cell(fields, found.billing_start_column),
        cell(fields, found.billing_end_column),
        start_field=found.billing_start_column or BILLING_PERIOD_COLUMNS[0],
        end_field=found.billing_end_column or BILLING_PERIOD_COLUMNS[1],
        charge_start=period_start,
        end_is_last_day=True,
    )
    billed = billed_amount(cell(fields, found.cost), field=found.cost)
    pricing_model_text = text(cell(fields, found.pricing_model))
    effective_cost = _effective_cost(
        fields,
        column=found.effective,
        billed=billed,
        charge_type=charge_type_text,
        pricing_model=pricing_model_text,
    )
    account_id = first_cell_text(fields, *found.accounts)
    sku = text(cell(fields, found.meter_name))
    unit_text = text(cell(fields, found.unit))
    service = first_cell_text(fields, found.meter_category, found.consumed_service)
    description = text(cell(fields, found.product))
    meter_service = " ".join(
        text(cell(fields, column))
        for column in (found.meter_category, found.meter_subcategory, found.consumed_service)
    )
    return BillingLine(
        line=line,
        provider=PROVIDER,
        provider_raw=PROVIDER_RAW,
        service=service,
        charge_category=category,
        charge_class="",
        period_start=period_start,
        period_end=period_start + ONE_DAY,
        billed_cost=billed,
        effective_cost=effective_cost,
        currency=parse_currency(cell(fields, found.currency), field=found.currency),
        quantity=parse_amount(cell(fields, found.quantity), field=found.quantity or "Quantity"),
        unit=unit_text,
        resource_id=first_cell_text(fields, *found.resources),
        region=first_cell_text(fields, *found.regions),
        account_id=account_id,
        sku=sku,
        meter=parse_meter(
            provider=PROVIDER,
            sku=sku,
            unit=unit_text,
            description=description,
            service=meter_service,
        ),
        tags=parse_tag_object(cell(fields, found.tags), field=found.tags or "Tags"),
        description=description,
        billing_period_start=billing_start,
        billing_period_end=billing_end,
        billing_account=text(cell(fields, found.billing_account)) or account_id,
        commitment=_commitment(charge_type_text, pricing_model_text),
    )


def _effective_cost(
    fields: Mapping[str, object],
    *,
    column: str | None,
    billed: Decimal,
    charge_type: str,
    pricing_model: str,
) -> Decimal | None:
    """The file's effective cost; without the column, the billed cost, unless the row is a
    commitment's (its effective cost is unknown then: None)."""
    if column is not None:
        return parse_amount(cell(fields, column), field=column)
    if (
        pricing_model.lower() in COMMITMENT_PRICING_MODELS
        or charge_type.lower() in COMMITMENT_CHARGE_TYPES
    ):
        return None
    return billed


def _commitment(charge_type: str, pricing_model: str) -> str:
    lowered = charge_type.lower()
    if lowered in UNUSED_COMMITMENT_CHARGE_TYPES:
        return "unused"
    if pricing_model.lower() not in COMMITMENT_PRICING_MODELS:
        return ""
    if lowered == "purchase":
        return "purchase"
    if lowered in ("", "usage"):
        return "used"
    return ""


def _charge_category(charge_type: str, *, field: str) -> str:
    if not charge_type:
        return DEFAULT_CHARGE_CATEGORY
    category = CHARGE_CATEGORY_BY_CHARGE_TYPE.get(charge_type.lower())
    if category is None:
        raise RowRejected(
            field=field,
            value=charge_type,
            reason=f"`{field}` is {quoted(charge_type)}, not a known Azure charge type.",
        )
    return category
