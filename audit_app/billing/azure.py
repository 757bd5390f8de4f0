"""Importer for Azure cost details exports: EA (PascalCase) and MCA (camelCase), CSV or Parquet.

Column names are matched case-insensitively, so `CostInBillingCurrency` (EA) and
`costInBillingCurrency` (MCA) are the same column. Expected: an **actual-cost** export (what the
invoice bills); an amortised export reads the same way but its costs are amortised.

Fields (the first column present wins):
- provider "azure"; provider_raw "Microsoft".
- service: MeterCategory, else ConsumedService.
- charge_category: ChargeType, mapped below (no such column, or an empty cell: Usage).
- period_start: Date (EA `9/2/2023` is M/D/YYYY; MCA `09/02/2023` or ISO), else UsageDateTime;
  period_end = period_start + 1 day, as cost details rows are daily.
- billed_cost: CostInBillingCurrency, else Cost, else PreTaxCost.
- effective_cost: EffectiveCost when the export has it. Otherwise the billed cost, since in an
  actual-cost export they agree, except on commitment rows (PricingModel Reservation or
  SavingsPlan; ChargeType Purchase, UnusedReservation or UnusedSavingsPlan), whose amortised
  cost the file does not hold: None.
- currency: BillingCurrencyCode, else BillingCurrency, else Currency.
- quantity, unit: Quantity and UnitOfMeasure as written. The quantity counts billed blocks and
  `meter.block_size` says what one block holds (`1K` → 1000 tokens, `10K` → 10000 operations).
- resource_id: ResourceId, else InstanceId / InstanceName. region: ResourceLocation, else
  MeterRegion. account_id: SubscriptionId, else SubscriptionGuid.
- sku: MeterName (parsed into `meter`). description: ProductName.
- tags: Tags (JSON, or pairs without braces as EA writes them).

ChargeType → charge_category: Usage, UnusedReservation, UnusedSavingsPlan → Usage; Purchase →
Purchase; Refund, Credit → Credit; Tax → Tax; Adjustment, RoundingAdjustment → Adjustment.
Any other value rejects the row.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import BinaryIO

from audit_app.billing.base import (
    ONE_DAY,
    BillingChunk,
    BillingLine,
    ColumnIndex,
    RowConverter,
    billed_amount,
    cell,
    first_cell_text,
    head_columns,
    parse_amount,
    parse_currency,
    parse_period,
    parse_tag_object,
    read_table,
    require_columns,
)
from audit_app.billing.meters import parse_meter
from audit_app.importers.base import RowRejected, quoted, text

LABEL = "Azure cost details"
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


def sniff_columns(columns: frozenset[str]) -> bool:
    return any(name.lower() in columns for name in METER_COLUMNS) and any(
        name.lower() in columns for name in COST_COLUMNS
    )


def sniff(head: bytes) -> bool:
    return sniff_columns(head_columns(head))


def read(stream: BinaryIO, *, chunk_rows: int) -> Iterator[BillingChunk]:
    return read_table(stream, chunk_rows=chunk_rows, prepare=_prepare)


def _prepare(columns: ColumnIndex, where: str) -> RowConverter:
    require_columns(columns, where=where, required=REQUIRED)
    col = columns.find
    cost = col(*COST_COLUMNS) or COST_COLUMNS[0]
    day = col(*DATE_COLUMNS) or DATE_COLUMNS[0]
    currency = col(*CURRENCY_COLUMNS) or CURRENCY_COLUMNS[0]
    effective = col("EffectiveCost")
    charge_type = col("ChargeType")
    pricing_model = col("PricingModel")
    meter_name = col("MeterName")
    meter_category, meter_subcategory = col("MeterCategory"), col("MeterSubCategory")
    consumed_service = col("ConsumedService")
    quantity = col("Quantity")
    unit = col("UnitOfMeasure")
    resources = (col("ResourceId"), col("InstanceId"), col("InstanceName"))
    regions = (col("ResourceLocation"), col("MeterRegion"))
    accounts = (col("SubscriptionId"), col("SubscriptionGuid"))
    product = col("ProductName")
    tags = col("Tags")

    def convert(fields: Mapping[str, object], line: int) -> BillingLine:
        charge_type_text = text(cell(fields, charge_type))
        category = _charge_category(charge_type_text, field=charge_type or "ChargeType")
        period_start = parse_period(cell(fields, day), field=day)
        billed = billed_amount(cell(fields, cost), field=cost)
        if effective is not None:
            effective_cost = parse_amount(cell(fields, effective), field=effective)
        elif (
            text(cell(fields, pricing_model)).lower() in COMMITMENT_PRICING_MODELS
            or charge_type_text.lower() in COMMITMENT_CHARGE_TYPES
        ):
            effective_cost = None
        else:
            effective_cost = billed
        sku = text(cell(fields, meter_name))
        unit_text = text(cell(fields, unit))
        service = first_cell_text(fields, meter_category, consumed_service)
        description = text(cell(fields, product))
        meter_service = " ".join(
            text(cell(fields, column))
            for column in (meter_category, meter_subcategory, consumed_service)
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
            currency=parse_currency(cell(fields, currency), field=currency),
            quantity=parse_amount(cell(fields, quantity), field=quantity or "Quantity"),
            unit=unit_text,
            resource_id=first_cell_text(fields, *resources),
            region=first_cell_text(fields, *regions),
            account_id=first_cell_text(fields, *accounts),
            sku=sku,
            meter=parse_meter(
                provider=PROVIDER,
                sku=sku,
                unit=unit_text,
                description=description,
                service=meter_service,
            ),
            tags=parse_tag_object(cell(fields, tags), field=tags or "Tags"),
            description=description,
        )

    return convert


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
