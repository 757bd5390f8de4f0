"""Importer for AWS Cost and Usage Reports: legacy CUR (`lineItem/...`) and CUR 2.0 (snake_case).

Its rules in full: `docs/formats.md`, section "AWS Cost and Usage Reports".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal
from typing import BinaryIO

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
    require_columns,
)
from audit_app.ingestion.billing_exports.meters import parse_meter
from audit_app.ingestion.billing_exports.tables import RowConverter, head_columns, read_table
from audit_app.ingestion.reading import RowRejected, is_missing, quoted, text

# How the wrong-format sentence names the format; the upload form's choice; how a sentence
# names such a file (`audit_app.ingestion.formats`).
SHORT_LABEL = "AWS CUR"
LABEL = "AWS Cost and Usage Report (legacy or 2.0)"
DESCRIPTION = "an AWS CUR billing export"
PROVIDER = "aws"
PROVIDER_RAW_DEFAULT = "AWS"
MARKER_COLUMNS = ("lineItem/UnblendedCost", "line_item_unblended_cost")
BEDROCK_EDITION_SUFFIX = "(Amazon Bedrock Edition)"

CHARGE_CATEGORY_BY_LINE_ITEM_TYPE = {
    "Usage": "Usage",
    "DiscountedUsage": "Usage",
    "SavingsPlanCoveredUsage": "Usage",
    "Tax": "Tax",
    "Credit": "Credit",
    "Refund": "Credit",
    "Fee": "Purchase",
    "RIFee": "Purchase",
    "SavingsPlanRecurringFee": "Purchase",
    "SavingsPlanUpfrontFee": "Purchase",
    "BundledDiscount": "Adjustment",
    "EdpDiscount": "Adjustment",
    "PrivateRateDiscount": "Adjustment",
    "DistributorDiscount": "Adjustment",
    "RiVolumeDiscount": "Adjustment",
    "Discount": "Adjustment",
    "SavingsPlanNegation": "Adjustment",
}
_CATEGORY_BY_LOWER = {
    key.lower(): value for key, value in CHARGE_CATEGORY_BY_LINE_ITEM_TYPE.items()
}

# (legacy CUR, CUR 2.0 / Athena) spellings of each column this importer reads.
COLUMNS = {
    "line_item_type": ("lineItem/LineItemType", "line_item_line_item_type"),
    "start": ("lineItem/UsageStartDate", "line_item_usage_start_date"),
    "end": ("lineItem/UsageEndDate", "line_item_usage_end_date"),
    "unblended": ("lineItem/UnblendedCost", "line_item_unblended_cost"),
    "net_unblended": ("lineItem/NetUnblendedCost", "line_item_net_unblended_cost"),
    "net_amortized": ("lineItem/NetAmortizedCost", "line_item_net_amortized_cost"),
    "amortized": ("lineItem/AmortizedCost", "line_item_amortized_cost"),
    "currency": ("lineItem/CurrencyCode", "line_item_currency_code"),
    "quantity": ("lineItem/UsageAmount", "line_item_usage_amount"),
    "unit": ("pricing/unit", "pricing_unit"),
    "usage_type": ("lineItem/UsageType", "line_item_usage_type"),
    "product_code": ("lineItem/ProductCode", "line_item_product_code"),
    "service_code": ("product/servicecode", "product_servicecode"),
    "product_name": ("product/ProductName", "product_product_name"),
    "resource": ("lineItem/ResourceId", "line_item_resource_id"),
    "region_code": ("product/regionCode", "product_region_code"),
    "region": ("product/region", "product_region"),
    "account": ("lineItem/UsageAccountId", "line_item_usage_account_id"),
    "description": ("lineItem/LineItemDescription", "line_item_line_item_description"),
    "billing_entity": ("bill/BillingEntity", "bill_billing_entity"),
    "billing_period_start": ("bill/BillingPeriodStartDate", "bill_billing_period_start_date"),
    "billing_period_end": ("bill/BillingPeriodEndDate", "bill_billing_period_end_date"),
    "payer_account": ("bill/PayerAccountId", "bill_payer_account_id"),
}
REQUIRED_KEYS = ("line_item_type", "start", "end", "unblended", "currency")
PRODUCT_MAP_COLUMN = "product"
PRODUCT_MAP_REGION_KEYS = ("region_code", "regionCode", "region")
TAG_MAP_COLUMN = "resource_tags"
TAG_COLUMN_PREFIXES = ("resourcetags/", "resource_tags_")


def sniff_columns(columns: frozenset[str]) -> bool:
    return any(marker.lower() in columns for marker in MARKER_COLUMNS)


def sniff(head: bytes) -> bool:
    return sniff_columns(head_columns(head))


def read(stream: BinaryIO, *, chunk_rows: int) -> Iterator[BillingChunk]:
    return read_table(stream, chunk_rows=chunk_rows, prepare=_prepare)


def charge_category(line_item_type: str) -> str | None:
    """The FOCUS charge category of a CUR line item type (table in the module docstring)."""
    lowered = line_item_type.lower()
    category = _CATEGORY_BY_LOWER.get(lowered)
    if category is None and lowered.endswith("discount"):
        return "Adjustment"
    return category


def _prepare(columns: ColumnIndex, where: str) -> RowConverter:
    legacy = any("/" in name for name in columns.names)
    spelling = 0 if legacy else 1
    require_columns(
        columns, where=where, required=[(COLUMNS[key][spelling],) for key in REQUIRED_KEYS]
    )
    found = {key: columns.find(*spellings) for key, spellings in COLUMNS.items()}
    product_map = None if legacy else columns.find(PRODUCT_MAP_COLUMN)
    tag_map = None if legacy else columns.find(TAG_MAP_COLUMN)
    tag_columns = _tag_columns(columns)
    effective = found["net_amortized"] or found["amortized"]
    names = {
        key: found[key] or COLUMNS[key][spelling]
        for key in (*REQUIRED_KEYS, "billing_period_start", "billing_period_end")
    }

    def convert(fields: Mapping[str, object], line: int) -> BillingLine:
        category = _row_charge_category(
            cell(fields, found["line_item_type"]), field=names["line_item_type"]
        )
        period_start, period_end = parse_period_pair(
            cell(fields, found["start"]),
            cell(fields, found["end"]),
            start_field=names["start"],
            end_field=names["end"],
        )
        billing_start, billing_end = parse_billing_period(
            cell(fields, found["billing_period_start"]),
            cell(fields, found["billing_period_end"]),
            start_field=names["billing_period_start"],
            end_field=names["billing_period_end"],
            charge_start=period_start,
        )
        account_id = text(cell(fields, found["account"]))
        billed = _billed_cost(fields, found=found, names=names)
        sku = text(cell(fields, found["usage_type"]))
        unit = text(cell(fields, found["unit"]))
        service = first_cell_text(fields, found["product_code"], found["service_code"])
        product_name = text(cell(fields, found["product_name"]))
        description = text(cell(fields, found["description"]))
        tags = _row_tags(fields, tag_map=tag_map, tag_columns=tag_columns)
        return BillingLine(
            line=line,
            provider=PROVIDER,
            provider_raw=text(cell(fields, found["billing_entity"])) or PROVIDER_RAW_DEFAULT,
            service=service,
            charge_category=category,
            charge_class="",
            period_start=period_start,
            period_end=period_end,
            billed_cost=billed,
            effective_cost=parse_amount(cell(fields, effective), field=effective or ""),
            currency=parse_currency(cell(fields, found["currency"]), field=names["currency"]),
            quantity=parse_amount(cell(fields, found["quantity"]), field=found["quantity"] or ""),
            unit=unit,
            resource_id=text(cell(fields, found["resource"])),
            region=first_cell_text(fields, found["region_code"], found["region"])
            or _region_from_product_map(cell(fields, product_map)),
            account_id=account_id,
            sku=sku,
            meter=parse_meter(
                provider=PROVIDER,
                sku=sku,
                unit=unit,
                description=description,
                # Bedrock Marketplace usage types do not name the model; the product does.
                service=product_name if product_name.endswith(BEDROCK_EDITION_SUFFIX) else service,
            ),
            tags=tags,
            description=description,
            billing_period_start=billing_start,
            billing_period_end=billing_end,
            billing_account=text(cell(fields, found["payer_account"])) or account_id,
        )

    return convert


def _tag_columns(columns: ColumnIndex) -> list[tuple[str, str]]:
    """(column, tag key) of each per-tag column (`resourceTags/user:team`, `resource_tags_team`)."""
    return [
        (name, name[len(prefix) :])
        for name in columns.names
        for prefix in TAG_COLUMN_PREFIXES
        if name.lower().startswith(prefix)
    ]


def _row_charge_category(value: object, *, field: str) -> str:
    """The charge category of a row's line item type; an unknown or empty type is a reject."""
    line_item_type = text(value)
    category = charge_category(line_item_type)
    if category is None:
        raise RowRejected(
            field=field,
            value=line_item_type,
            reason=(
                f"`{field}` is {quoted(line_item_type)}, not a known CUR line item type."
                if line_item_type
                else f"`{field}` is empty."
            ),
        )
    return category


def _billed_cost(
    fields: Mapping[str, object], *, found: Mapping[str, str | None], names: Mapping[str, str]
) -> Decimal:
    """The net unblended cost when the row has one, else the unblended cost."""
    net = cell(fields, found["net_unblended"])
    if is_missing(net):
        return billed_amount(cell(fields, found["unblended"]), field=names["unblended"])
    return billed_amount(net, field=found["net_unblended"] or "")


def _row_tags(
    fields: Mapping[str, object], *, tag_map: str | None, tag_columns: Sequence[tuple[str, str]]
) -> dict[str, str]:
    """The tags of the map column, overridden by non-empty per-tag columns."""
    tags = parse_tag_object(cell(fields, tag_map), field=tag_map or TAG_MAP_COLUMN)
    for column, key in tag_columns:
        value = text(fields.get(column))
        if value:
            tags[key] = value
    return tags


def _region_from_product_map(value: object) -> str:
    """CUR 2.0 keeps some product attributes only in the `product` map column."""
    if is_missing(value):
        return ""
    try:
        product = parse_tag_object(value, field=PRODUCT_MAP_COLUMN)
    except RowRejected:
        # The region is a label; an unreadable product map must not cost the row its charge.
        return ""
    for key in PRODUCT_MAP_REGION_KEYS:
        if product.get(key):
            return product[key]
    return ""
