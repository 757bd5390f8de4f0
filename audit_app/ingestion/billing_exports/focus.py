"""Importer for FOCUS 1.0–1.3 cost and usage exports (CSV or Parquet).

Its rules in full: `docs/formats.md`, section "FOCUS".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import BinaryIO

from audit_app.costs.providers import billing_provider
from audit_app.ingestion.billing_exports.base import (
    BillingChunk,
    BillingLine,
    ColumnIndex,
    billed_amount,
    cell,
    first_cell_text,
    parse_amount,
    parse_billing_period,
    parse_currency,
    parse_period_pair,
    parse_tag_object,
)
from audit_app.ingestion.billing_exports.meters import parse_meter
from audit_app.ingestion.billing_exports.tables import columns_prepare, head_columns, read_table
from audit_app.ingestion.reading import RowRejected, quoted, text

# How the wrong-format sentence names the format; the upload form's choice; how a sentence
# names such a file (`audit_app.ingestion.formats`).
SHORT_LABEL = "FOCUS"
LABEL = "FOCUS 1.0-1.3 billing export (CSV, Parquet)"
DESCRIPTION = "a FOCUS billing export"
MARKER_COLUMNS = ("BilledCost", "ChargePeriodStart")
CHARGE_CATEGORIES = ("Usage", "Purchase", "Tax", "Credit", "Adjustment")
CHARGE_CLASS_CORRECTION = "Correction"

REQUIRED = (
    ("BilledCost",),
    ("BillingCurrency",),
    ("ChargeCategory",),
    ("ChargePeriodStart",),
    ("ChargePeriodEnd",),
    ("ServiceProviderName", "ProviderName"),
)

_CATEGORY_BY_LOWER = {category.lower(): category for category in CHARGE_CATEGORIES}


def sniff_columns(columns: frozenset[str]) -> bool:
    """Lower-cased column names that only a FOCUS file has together."""
    return all(marker.lower() in columns for marker in MARKER_COLUMNS)


def sniff(head: bytes) -> bool:
    return sniff_columns(head_columns(head))


def read(stream: BinaryIO, *, chunk_rows: int) -> Iterator[BillingChunk]:
    prepare = columns_prepare(REQUIRED, _FocusColumns.find, _billing_line)
    return read_table(stream, chunk_rows=chunk_rows, prepare=prepare)


@dataclass(frozen=True, kw_only=True)
class _FocusColumns:
    """The file's column for each field this importer reads (None: the file has none)."""

    billed: str | None
    effective: str | None
    currency: str | None
    category: str | None
    charge_class: str | None
    start: str | None
    end: str | None
    service_provider: str | None
    provider: str | None
    service: str | None
    quantity: str | None
    unit: str | None
    resource: str | None
    region_id: str | None
    region_name: str | None
    sub_account: str | None
    billing_account: str | None
    meters: tuple[str | None, ...]
    description: str | None
    tags: str | None
    billing_period_start: str | None
    billing_period_end: str | None

    @classmethod
    def find(cls, columns: ColumnIndex) -> _FocusColumns:
        col = columns.find
        consumed = col("ConsumedQuantity")
        quantity, unit = (
            (consumed, col("ConsumedUnit"))
            if consumed is not None
            else (col("PricingQuantity"), col("PricingUnit"))
        )
        return cls(
            billed=col("BilledCost"),
            effective=col("EffectiveCost"),
            currency=col("BillingCurrency"),
            category=col("ChargeCategory"),
            charge_class=col("ChargeClass"),
            start=col("ChargePeriodStart"),
            end=col("ChargePeriodEnd"),
            service_provider=col("ServiceProviderName"),
            provider=col("ProviderName"),
            service=col("ServiceName"),
            quantity=quantity,
            unit=unit,
            resource=col("ResourceId"),
            region_id=col("RegionId"),
            region_name=col("RegionName"),
            sub_account=col("SubAccountId"),
            billing_account=col("BillingAccountId"),
            meters=(col("x_UsageType"), col("SkuMeter"), col("x_SkuMeterName"), col("SkuId")),
            description=col("ChargeDescription"),
            tags=col("Tags"),
            billing_period_start=col("BillingPeriodStart"),
            billing_period_end=col("BillingPeriodEnd"),
        )


def _billing_line(fields: Mapping[str, object], line: int, found: _FocusColumns) -> BillingLine:
    """One FOCUS row as a billing line; raises `RowRejected` naming the first bad column."""
    provider_raw = _provider_raw(fields, found)
    period_start, period_end = parse_period_pair(
        cell(fields, found.start),
        cell(fields, found.end),
        start_field=found.start or "ChargePeriodStart",
        end_field=found.end or "ChargePeriodEnd",
    )
    billing_start, billing_end = parse_billing_period(
        cell(fields, found.billing_period_start),
        cell(fields, found.billing_period_end),
        start_field=found.billing_period_start or "BillingPeriodStart",
        end_field=found.billing_period_end or "BillingPeriodEnd",
        charge_start=period_start,
    )
    account_id = first_cell_text(fields, found.sub_account, found.billing_account)
    short_provider = billing_provider(provider_raw)
    sku = first_cell_text(fields, *found.meters)
    unit_text = text(cell(fields, found.unit))
    service_name = text(cell(fields, found.service))
    description_text = text(cell(fields, found.description))
    return BillingLine(
        line=line,
        provider=short_provider,
        provider_raw=provider_raw,
        service=service_name,
        charge_category=_charge_category(
            cell(fields, found.category), field=found.category or "ChargeCategory"
        ),
        charge_class=_charge_class(
            cell(fields, found.charge_class), field=found.charge_class or ""
        ),
        period_start=period_start,
        period_end=period_end,
        billed_cost=billed_amount(cell(fields, found.billed), field=found.billed or "BilledCost"),
        effective_cost=parse_amount(cell(fields, found.effective), field=found.effective or ""),
        currency=parse_currency(
            cell(fields, found.currency), field=found.currency or "BillingCurrency"
        ),
        quantity=parse_amount(cell(fields, found.quantity), field=found.quantity or ""),
        unit=unit_text,
        resource_id=text(cell(fields, found.resource)),
        region=first_cell_text(fields, found.region_id, found.region_name),
        account_id=account_id,
        sku=sku,
        meter=parse_meter(
            provider=short_provider,
            sku=sku,
            unit=unit_text,
            description=description_text,
            service=service_name,
        ),
        tags=parse_tag_object(cell(fields, found.tags), field=found.tags or "Tags"),
        description=description_text,
        billing_period_start=billing_start,
        billing_period_end=billing_end,
        billing_account=text(cell(fields, found.billing_account)) or account_id,
    )


def _provider_raw(fields: Mapping[str, object], found: _FocusColumns) -> str:
    """The provider as the file names it; a row naming none is a reject."""
    provider_raw = first_cell_text(fields, found.service_provider, found.provider)
    if not provider_raw:
        raise RowRejected(
            field=found.service_provider or found.provider or "ProviderName",
            value=cell(fields, found.service_provider or found.provider),
            reason="`ServiceProviderName` and `ProviderName` are both empty.",
        )
    return provider_raw


def _charge_category(value: object, *, field: str) -> str:
    word = text(value)
    category = _CATEGORY_BY_LOWER.get(word.lower())
    if category is None:
        expected = ", ".join(CHARGE_CATEGORIES)
        reason = (
            f"`{field}` is empty; expected one of {expected}."
            if not word
            else f"`{field}` is {quoted(value)}, not one of {expected}."
        )
        raise RowRejected(field=field, value=value, reason=reason)
    return category


def _charge_class(value: object, *, field: str) -> str:
    word = text(value)
    if not word:
        return ""
    if word.lower() == CHARGE_CLASS_CORRECTION.lower():
        return CHARGE_CLASS_CORRECTION
    raise RowRejected(
        field=field,
        value=value,
        reason=f"`{field}` is {quoted(value)}; FOCUS allows only `Correction` or empty.",
    )
