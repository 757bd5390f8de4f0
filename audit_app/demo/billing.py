"""A FOCUS 1.2 billing export for the demo organisation, consistent with its token logs.

One concern: the demo organisation's bill, whose three kinds of line above share the columns,
accounts, identifiers and money format of one FOCUS file (hence one module over 600 lines).

Its rules in full: `docs/methods.md`, section "The demo's bill".
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd

from audit_app.costs.catalog import CATALOG_PATH
from audit_app.costs.pricing import MILLION, Price, PriceBook, normalize_model
from audit_app.demo.traffic import GATEWAY_PRICES

FOCUS_COLUMNS = (
    "BillingAccountId",
    "BillingAccountName",
    "BillingCurrency",
    "BillingPeriodStart",
    "BillingPeriodEnd",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "BilledCost",
    "EffectiveCost",
    "ListCost",
    "ListUnitPrice",
    "ContractedCost",
    "ContractedUnitPrice",
    "ConsumedQuantity",
    "ConsumedUnit",
    "PricingCategory",
    "PricingQuantity",
    "PricingUnit",
    "InvoiceId",
    "InvoiceIssuerName",
    "ProviderName",
    "PublisherName",
    "ServiceName",
    "ServiceCategory",
    "ServiceSubcategory",
    "RegionId",
    "RegionName",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "SkuId",
    "SkuMeter",
    "SkuPriceDetails",
    "SubAccountId",
    "SubAccountName",
    "Tags",
    "x_UsageType",
)
REQUEST_COLUMNS_USED = (
    "provider",
    "model",
    "pool",
    "started_at",
    "ended_at",
    "batch_api",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "cost_usd",
)

MONEY_QUANTUM = Decimal("1E-10")
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
HOUR_US = 3_600_000_000
DAY_US = 24 * HOUR_US
TOKEN_CLASSES = ("input", "output")
FINE_TUNE_PRICE_MULTIPLIER = Decimal(2)
FINE_TUNE_PREFIX = "ft:"

ORGANISATION = "Acme Corp"
AWS_ACCOUNT_ID = "210987654321"
AWS_REGION = "us-east-1"
AWS_REGION_NAME = "US East (N. Virginia)"
AWS_USAGE_PREFIX = "USE1"
SERVICE_CATEGORY_AI = "AI and Machine Learning"
SERVICE_CATEGORY_COMPUTE = "Compute"
TAG_PROVIDER = "provider"
TAG_MODEL = "model"
TAG_POOL = "pool"

# Bedrock bills a model under a billing name of its own (`USE1-Claude4.5Haiku-input-tokens`);
# keys are API model ids without the cross-region prefix, matched as prefixes.
BEDROCK_BILLING_NAMES: Mapping[str, str] = {
    "anthropic.claude-haiku-4-5": "Claude4.5Haiku",
    "anthropic.claude-sonnet-4-5": "Claude4.5Sonnet",
    "anthropic.claude-sonnet-4-6": "Claude4.6Sonnet",
    "meta.llama3-3-70b-instruct": "Llama3.3-70B-Instruct",
}


@dataclass(frozen=True, kw_only=True)
class ApiVendor:
    """How one token-log provider appears on a bill."""

    provider_name: str
    publisher_name: str
    service_name: str
    account_prefix: str
    region_id: str = ""
    region_name: str = ""


API_VENDORS: Mapping[str, ApiVendor] = {
    "openai": ApiVendor(
        provider_name="OpenAI",
        publisher_name="OpenAI",
        service_name="OpenAI API",
        account_prefix="proj_",
    ),
    "anthropic": ApiVendor(
        provider_name="Anthropic",
        publisher_name="Anthropic",
        service_name="Claude API",
        account_prefix="wrkspc_",
    ),
    "bedrock": ApiVendor(
        provider_name="AWS",
        publisher_name="AWS",
        service_name="Amazon Bedrock",
        account_prefix="",
        region_id=AWS_REGION,
        region_name=AWS_REGION_NAME,
    ),
}


def catalog_instance(instance_type: str, *, path: Path = CATALOG_PATH) -> tuple[Decimal, int]:
    """On-demand USD per hour and accelerator count of an instance row of the hardware catalog."""
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["kind"] == "instance" and row["name"] == instance_type:
                return Decimal(row["usd_per_hour"]), int(row["accelerator_count"])
    raise ValueError(f"the hardware catalog has no instance row named {instance_type!r}")


@dataclass(frozen=True, kw_only=True)
class DemoPool:
    """A self-hosted pool: its instances run (and are billed) every hour of the export.

    The last of `resource_ids` keeps running `idle_tail_hours` after the requests end.
    """

    name: str
    instance_type: str
    resource_ids: tuple[str, ...]
    usd_per_hour: Decimal
    accelerators: int
    region: str = AWS_REGION
    idle_tail_hours: int = 0

    def __post_init__(self) -> None:
        if not self.resource_ids:
            raise ValueError(f"pool {self.name!r} needs at least one instance")
        if self.usd_per_hour < 0 or self.idle_tail_hours < 0:
            raise ValueError("usd_per_hour and idle_tail_hours cannot be negative")


def _instance_arn(instance_id: str) -> str:
    return f"arn:aws:ec2:{AWS_REGION}:{AWS_ACCOUNT_ID}:instance/{instance_id}"


def _default_pools() -> tuple[DemoPool, ...]:
    p5_price, p5_accelerators = catalog_instance("p5.48xlarge")
    trn1_price, trn1_accelerators = catalog_instance("trn1.32xlarge")
    return (
        DemoPool(
            name="h100-pool",
            instance_type="p5.48xlarge",
            resource_ids=(
                _instance_arn("i-0a5e1f00000000001"),
                _instance_arn("i-0a5e1f00000000002"),
            ),
            usd_per_hour=p5_price,
            accelerators=p5_accelerators,
        ),
        DemoPool(
            name="trn1-pool",
            instance_type="trn1.32xlarge",
            resource_ids=(
                _instance_arn("i-07b1e100000000001"),
                _instance_arn("i-07b1e100000000002"),
            ),
            usd_per_hour=trn1_price,
            accelerators=trn1_accelerators,
            idle_tail_hours=48,  # forgotten after the last request: two days of pure idle
        ),
    )


DEFAULT_POOLS: tuple[DemoPool, ...] = _default_pools()


@dataclass(frozen=True, kw_only=True)
class Discrepancy:
    """Bill `factor` × the log cost for one provider × model on day `day_offset` (0 = first)."""

    provider: str
    model: str
    day_offset: int
    factor: Decimal = Decimal("1.25")

    def __post_init__(self) -> None:
        if self.day_offset < 0 or self.factor <= 0:
            raise ValueError("day_offset cannot be negative and factor must be positive")


DEFAULT_DISCREPANCY = Discrepancy(
    provider="openai", model="gpt-4o-2024-08-06", day_offset=2, factor=Decimal("1.25")
)


@dataclass(frozen=True, kw_only=True)
class PlantedDiscrepancy:
    """Where the discrepancy landed, and its exact billed and log totals (USD)."""

    provider: str
    model: str
    day: date
    factor: Decimal
    billed_usd: Decimal
    log_usd: Decimal


@dataclass(frozen=True, kw_only=True)
class FocusExportSummary:
    """What `write_focus_export` wrote; money is exactly as written in the file."""

    rows_written: int
    billed_total_usd: Decimal
    api_billed_usd: Decimal
    pool_billed_usd: Mapping[str, Decimal]
    pool_instance_hours: Mapping[str, int]
    discrepancy: PlantedDiscrepancy | None
    first_day: date
    last_day: date
    span_start: datetime
    span_end: datetime


@dataclass(frozen=True, kw_only=True)
class _DayUsage:
    """One API provider × model × UTC day, summed over its requests."""

    provider: str
    model: str
    day: date
    input_tokens: int = 0
    output_tokens: int = 0
    # The day's cost before any planting: the log's cost, plus the catalog price of requests
    # whose log has none.
    day_usd: Decimal = Decimal(0)
    has_logged_cost: bool = False
    catalog_input_usd: Decimal = Decimal(0)
    catalog_output_usd: Decimal = Decimal(0)
    list_price: Price | None = None


def write_focus_export(
    requests: pd.DataFrame,
    path: Path,
    *,
    pools: Sequence[DemoPool] = DEFAULT_POOLS,
    discrepancy: Discrepancy | None = DEFAULT_DISCREPANCY,
    seed: int = 0,
    until: datetime | None = None,
) -> FocusExportSummary:
    """Write the demo organisation's FOCUS bill for `requests` to `path` (see module docstring).
    Pool hours from `until` on (the first instant not yet complete) are left out: a bill
    charges no hour that has not happened yet.

    Raises ValueError for an empty frame, an API provider this module cannot bill, an unlogged
    model with no catalog price, or a discrepancy whose provider × model × day has no logged cost.
    """
    missing = [name for name in REQUEST_COLUMNS_USED if name not in requests.columns]
    if missing:
        raise ValueError(f"the requests frame lacks columns {', '.join(missing)}")
    if requests.empty:
        raise ValueError("the requests frame is empty: there is no span to bill")
    started_us = _epoch_us(requests["started_at"])
    span = _bill_span(started_us, _epoch_us(requests["ended_at"]))
    usages = _api_day_usages(requests, started_us=started_us)
    rows, api_total, planted = _api_rows(
        usages, discrepancy=discrepancy, first_day=span.first_day, seed=seed
    )
    pool_billed: dict[str, Decimal] = {}
    pool_hours: dict[str, int] = {}
    for pool in pools:
        pool_rows = _pool_rows(
            pool, span_start=span.start, span_end=span.end, seed=seed, until=until
        )
        rows.extend(pool_rows)
        pool_hours[pool.name] = len(pool_rows)
        pool_billed[pool.name] = pool.usd_per_hour * len(pool_rows)

    with Path(path).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(FOCUS_COLUMNS)
        writer.writerows(rows)

    return FocusExportSummary(
        rows_written=len(rows),
        billed_total_usd=api_total + sum(pool_billed.values(), Decimal(0)),
        api_billed_usd=api_total,
        pool_billed_usd=pool_billed,
        pool_instance_hours=pool_hours,
        discrepancy=planted,
        first_day=span.first_day,
        last_day=span.last_day,
        span_start=span.start,
        span_end=span.end,
    )


@dataclass(frozen=True, kw_only=True)
class _BillSpan:
    """What the bill covers: whole UTC days of the requests' starts, stretched to the hour of
    the last request's end (the pools run until then)."""

    start: datetime
    end: datetime
    first_day: date
    last_day: date


def _bill_span(started_us: np.ndarray, ended_us: np.ndarray) -> _BillSpan:
    first_day_us = int(started_us.min()) // DAY_US * DAY_US
    last_day_end_us = (int(started_us.max()) // DAY_US + 1) * DAY_US
    last_end_hour_us = -(-int(ended_us.max()) // HOUR_US) * HOUR_US
    start = _from_us(first_day_us)
    return _BillSpan(
        start=start,
        end=_from_us(max(last_day_end_us, last_end_hour_us)),
        first_day=start.date(),
        last_day=_from_us(last_day_end_us).date() - DAY,
    )


def _api_rows(
    usages: Sequence[_DayUsage], *, discrepancy: Discrepancy | None, first_day: date, seed: int
) -> tuple[list[list[str]], Decimal, PlantedDiscrepancy | None]:
    """(rows, billed total, the discrepancy planted) of the API token lines; raises ValueError
    when the discrepancy's provider × model × day has no logged cost to scale."""
    planted_key = (
        (
            discrepancy.provider,
            discrepancy.model,
            first_day + timedelta(days=discrepancy.day_offset),
        )
        if discrepancy is not None
        else None
    )
    planted: PlantedDiscrepancy | None = None
    rows: list[list[str]] = []
    api_total = Decimal(0)
    for usage in usages:
        billed = usage.day_usd
        is_planted = (usage.provider, usage.model, usage.day) == planted_key
        if is_planted and discrepancy is not None and usage.has_logged_cost:
            billed = _quantize(usage.day_usd * discrepancy.factor)
            planted = PlantedDiscrepancy(
                provider=usage.provider,
                model=usage.model,
                day=usage.day,
                factor=discrepancy.factor,
                billed_usd=billed,
                log_usd=usage.day_usd,
            )
        rows.extend(_token_rows(usage, billed=billed, seed=seed))
        api_total += billed
    if discrepancy is not None and (planted is None or planted.log_usd == 0):
        raise ValueError(
            f"cannot plant the discrepancy: no logged cost for {discrepancy.provider} / "
            f"{discrepancy.model} on {planted_key[2] if planted_key else ''}"
        )
    return rows, api_total, planted


# ---------------------------------------------------------------------------------------------
# API token lines
# ---------------------------------------------------------------------------------------------


def _api_day_usages(requests: pd.DataFrame, *, started_us: np.ndarray) -> list[_DayUsage]:
    """Provider × model × day sums of the API requests, sorted, with their catalog costs.

    A month of demo traffic is millions of rows, so the grouping is done with integer codes
    and `np.bincount` (one pass per summed column), and Python only loops over the groups.
    """
    is_api = (requests["pool"] == "").to_numpy(dtype=bool)
    if not is_api.any():
        return []
    provider_codes, providers = pd.factorize(requests["provider"][is_api])
    model_codes, models = pd.factorize(requests["model"][is_api])
    pair_codes = provider_codes.astype(np.int64) * len(models) + model_codes
    pairs, pair_codes = np.unique(pair_codes, return_inverse=True)
    days = started_us[is_api] // DAY_US
    first_day = int(days.min())
    day_count = int(days.max()) - first_day + 1
    cost = requests["cost_usd"].to_numpy(dtype=np.float64)[is_api]
    has_cost = ~np.isnan(cost)
    batch = requests["batch_api"].to_numpy(dtype=bool)[is_api]
    # Key: pair, day, batch (priced differently), and whether the log has a cost.
    keys = ((pair_codes * day_count + (days - first_day)) * 2 + batch) * 2 + has_cost
    size = len(pairs) * day_count * 4

    def total(values: np.ndarray) -> np.ndarray:
        # Token sums stay far below 2**53, so float64 bins hold them exactly.
        return np.bincount(keys, weights=values.astype(np.float64), minlength=size)

    counts = np.bincount(keys, minlength=size)
    input_tokens = total(requests["input_tokens"].to_numpy()[is_api])
    cached_tokens = total(requests["cached_input_tokens"].to_numpy()[is_api])
    output_tokens = total(requests["output_tokens"].to_numpy()[is_api])
    logged = total(np.where(has_cost, cost, 0.0))

    book = PriceBook(GATEWAY_PRICES)
    usages: dict[tuple[str, str, date], _DayUsage] = {}
    for key in np.flatnonzero(counts):
        rest, logged_flag = divmod(int(key), 2)
        rest, batch_flag = divmod(rest, 2)
        pair_index, day_index = divmod(rest, day_count)
        provider_index, model_index = divmod(int(pairs[pair_index]), len(models))
        provider = str(providers[provider_index])
        model = str(models[model_index])
        if provider not in API_VENDORS:
            raise ValueError(
                f"API provider {provider!r} cannot be billed; known: {', '.join(API_VENDORS)}"
            )
        day = _from_us((first_day + day_index) * DAY_US).date()
        price = _catalog_price(book, provider=provider, model=model, day=day)
        uncached = int(input_tokens[key]) - int(cached_tokens[key])
        cached = int(cached_tokens[key])
        outputs = int(output_tokens[key])
        catalog_input = catalog_output = Decimal(0)
        if price is not None:
            catalog_input, catalog_output = _catalog_parts(
                price, uncached=uncached, cached=cached, output=outputs, batch=bool(batch_flag)
            )
        if logged_flag:
            amount = _quantize(Decimal(float(logged[key])))
        elif price is None:
            raise ValueError(
                f"{provider} / {model} has requests without a logged cost and no catalog price"
            )
        else:
            amount = _quantize(catalog_input + catalog_output)
        previous = usages.get((provider, model, day)) or _DayUsage(
            provider=provider, model=model, day=day, list_price=price
        )
        usages[(provider, model, day)] = _DayUsage(
            provider=provider,
            model=model,
            day=day,
            input_tokens=previous.input_tokens + uncached + cached,
            output_tokens=previous.output_tokens + outputs,
            day_usd=previous.day_usd + amount,
            has_logged_cost=previous.has_logged_cost or bool(logged_flag),
            catalog_input_usd=previous.catalog_input_usd + catalog_input,
            catalog_output_usd=previous.catalog_output_usd + catalog_output,
            list_price=price,
        )
    return [usages[key] for key in sorted(usages)]


def _catalog_price(book: PriceBook, *, provider: str, model: str, day: date) -> Price | None:
    price = book.find(provider=provider, model=model, day=day)
    if price is not None or not model.startswith(FINE_TUNE_PREFIX):
        return price
    base = book.find(provider=provider, model=model.removeprefix(FINE_TUNE_PREFIX), day=day)
    if base is None:
        return None
    # `ft:gpt-4.1-mini-2025-04-14:org:name:id`: the base model's card, at fine-tune prices.
    return Price(
        card_id=None,
        provider=base.provider,
        model=model,
        valid_from=base.valid_from,
        input=base.input * FINE_TUNE_PRICE_MULTIPLIER,
        output=base.output * FINE_TUNE_PRICE_MULTIPLIER,
        cached_input=(
            base.cached_input * FINE_TUNE_PRICE_MULTIPLIER if base.cached_input else None
        ),
    )


def _catalog_parts(
    price: Price, *, uncached: int, cached: int, output: int, batch: bool
) -> tuple[Decimal, Decimal]:
    """Input and output USD at catalog prices, the way the gateway prices a request."""
    input_price = price.batch_input if batch and price.batch_input else price.input
    output_price = price.batch_output if batch and price.batch_output else price.output
    cached_price = price.cached_input if price.cached_input is not None else input_price
    input_usd = (Decimal(uncached) * input_price + Decimal(cached) * cached_price) / MILLION
    return input_usd, Decimal(output) * output_price / MILLION


def _token_rows(usage: _DayUsage, *, billed: Decimal, seed: int) -> list[list[str]]:
    """The input and output lines of one provider × model × day; they sum to `billed`."""
    catalog_total = usage.catalog_input_usd + usage.catalog_output_usd
    if catalog_total > 0:
        input_share = usage.catalog_input_usd / catalog_total
    else:
        # No catalog price to split by: the money goes with the tokens, input first.
        has_input = usage.input_tokens > 0 or usage.output_tokens == 0
        input_share = Decimal(1) if has_input else Decimal(0)
    input_billed = _quantize(billed * input_share)
    amounts = {"input": input_billed, "output": billed - input_billed}
    tokens = {"input": usage.input_tokens, "output": usage.output_tokens}
    vendor = API_VENDORS[usage.provider]
    start = datetime(usage.day.year, usage.day.month, usage.day.day, tzinfo=UTC)
    rows = []
    for token_class in TOKEN_CLASSES:
        if tokens[token_class] == 0 and amounts[token_class] == 0:
            continue
        unit_price = Decimal(0)
        if usage.list_price is not None:
            unit_price = (
                usage.list_price.input if token_class == "input" else usage.list_price.output
            )
        pricing_quantity = Decimal(tokens[token_class]) / MILLION
        list_cost = _quantize(unit_price * pricing_quantity)
        meter = _token_meter(usage.provider, usage.model, token_class)
        is_bedrock = usage.provider == "bedrock"
        values = {
            **_billing_columns(vendor.provider_name, start, seed=seed),
            **_accounts(vendor, seed=seed),
            "ChargePeriodStart": _timestamp(start),
            "ChargePeriodEnd": _timestamp(start + DAY),
            "ChargeDescription": f"{usage.model} {token_class} tokens",
            "BilledCost": _money(amounts[token_class]),
            "EffectiveCost": _money(amounts[token_class]),
            "ListCost": _money(list_cost),
            "ListUnitPrice": _money(unit_price),
            "ContractedCost": _money(list_cost),
            "ContractedUnitPrice": _money(unit_price),
            "ConsumedQuantity": str(tokens[token_class]),
            "ConsumedUnit": "Tokens",
            "PricingQuantity": _money(pricing_quantity),
            "PricingUnit": "1M Tokens",
            "ProviderName": vendor.provider_name,
            "PublisherName": vendor.publisher_name,
            "InvoiceIssuerName": vendor.provider_name,
            "ServiceName": vendor.service_name,
            "ServiceCategory": SERVICE_CATEGORY_AI,
            "ServiceSubcategory": "Generative AI",
            "RegionId": vendor.region_id,
            "RegionName": vendor.region_name,
            "ResourceId": (
                f"arn:aws:bedrock:{AWS_REGION}:{AWS_ACCOUNT_ID}:inference-profile/{usage.model}"
                if is_bedrock
                else ""
            ),
            "ResourceName": usage.model if is_bedrock else "",
            "ResourceType": "Inference Profile" if is_bedrock else "",
            "SkuId": f"{usage.provider}:{usage.model}:{token_class}",
            "SkuMeter": meter,
            "Tags": json.dumps({TAG_PROVIDER: usage.provider, TAG_MODEL: usage.model}),
            "x_UsageType": meter if is_bedrock else "",
        }
        rows.append(_row(values))
    return rows


def _token_meter(provider: str, model: str, token_class: str) -> str:
    """The meter `parse_meter` reads as a token meter of this model and class."""
    if provider != "bedrock":
        return f"{model}-{token_class}-tokens"
    return f"{AWS_USAGE_PREFIX}-{bedrock_billing_name(model)}-{token_class}-tokens"


def bedrock_billing_name(model: str) -> str:
    """The model segment of a Bedrock usage type for an API model id (`Claude4.5Haiku`)."""
    model_id = normalize_model(model)
    for prefix, name in BEDROCK_BILLING_NAMES.items():
        if model_id.startswith(prefix):
            return name
    # Unknown models keep their id, made safe for the usage-type grammar (no `:`).
    return model_id.replace(":", "-")


# ---------------------------------------------------------------------------------------------
# Pool instance-hours
# ---------------------------------------------------------------------------------------------


def _pool_rows(
    pool: DemoPool,
    *,
    span_start: datetime,
    span_end: datetime,
    seed: int,
    until: datetime | None = None,
) -> list[list[str]]:
    """One line per instance per hour of the span; the last instance adds its idle tail; no
    hour from `until` on."""
    hours = int((span_end - span_start) / HOUR)
    usage_type = f"{AWS_USAGE_PREFIX}-BoxUsage:{pool.instance_type}"
    price = _money(pool.usd_per_hour)
    constant = {
        "BilledCost": price,
        "EffectiveCost": price,
        "ListCost": price,
        "ListUnitPrice": price,
        "ContractedCost": price,
        "ContractedUnitPrice": price,
        "ChargeDescription": (f"${price} per On Demand Linux {pool.instance_type} Instance Hour"),
        "ConsumedQuantity": "1",
        "ConsumedUnit": "Hours",
        "PricingQuantity": "1",
        "PricingUnit": "Hours",
        "ProviderName": "AWS",
        "PublisherName": "AWS",
        "InvoiceIssuerName": "AWS",
        "ServiceName": "Amazon Elastic Compute Cloud",
        "ServiceCategory": SERVICE_CATEGORY_COMPUTE,
        "ServiceSubcategory": "Virtual Machines",
        "RegionId": pool.region,
        "RegionName": AWS_REGION_NAME if pool.region == AWS_REGION else "",
        "ResourceType": "Virtual Machine",
        "SkuId": f"{pool.instance_type}:OnDemand:Linux",
        "SkuMeter": "Compute",
        "SkuPriceDetails": json.dumps({"x_AcceleratorCount": pool.accelerators}),
        **_accounts(API_VENDORS["bedrock"], seed=seed),
        "Tags": json.dumps({TAG_POOL: pool.name}),
        "x_UsageType": usage_type,
    }
    rows = []
    last = len(pool.resource_ids) - 1
    for index, resource_id in enumerate(pool.resource_ids):
        instance_hours = hours + (pool.idle_tail_hours if index == last else 0)
        name = f"{pool.name}-{index + 1}"
        for hour in range(instance_hours):
            start = span_start + hour * HOUR
            if until is not None and start >= until:
                break
            values = {
                **_billing_columns("AWS", start, seed=seed),
                **constant,
                "ChargePeriodStart": _timestamp(start),
                "ChargePeriodEnd": _timestamp(start + HOUR),
                "ResourceId": resource_id,
                "ResourceName": name,
            }
            rows.append(_row(values))
    return rows


# ---------------------------------------------------------------------------------------------
# Shared
# ---------------------------------------------------------------------------------------------


def _billing_columns(issuer: str, moment: datetime, *, seed: int) -> dict[str, str]:
    """The columns every line has: account name, currency, billing period and invoice."""
    period_start = datetime(moment.year, moment.month, 1, tzinfo=UTC)
    period_end = (period_start + timedelta(days=32)).replace(day=1)
    invoice = _digest(f"{seed}:{issuer}:{period_start:%Y%m}")[:10].upper()
    return {
        "BillingAccountName": ORGANISATION,
        "BillingCurrency": "USD",
        "BillingPeriodStart": _timestamp(period_start),
        "BillingPeriodEnd": _timestamp(period_end),
        "ChargeCategory": "Usage",
        "ChargeClass": "",
        "ChargeFrequency": "Usage-Based",
        "PricingCategory": "Standard",
        "InvoiceId": f"INV-{period_start:%Y%m}-{invoice}",
    }


def _accounts(vendor: ApiVendor, *, seed: int) -> dict[str, str]:
    """AWS bills one account; the API vendors bill an organisation and a project under it."""
    if vendor.provider_name == "AWS":
        organisation = project = AWS_ACCOUNT_ID
    else:
        organisation = "org-" + _digest(f"{seed}:{vendor.provider_name}:org")[:24]
        project = vendor.account_prefix + _digest(f"{seed}:{vendor.provider_name}:project")[:24]
    return {
        "BillingAccountId": organisation,
        "SubAccountId": project,
        "SubAccountName": f"{ORGANISATION} production",
    }


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _row(values: Mapping[str, str]) -> list[str]:
    return [values.get(name, "") for name in FOCUS_COLUMNS]


def _epoch_us(column: pd.Series) -> np.ndarray:
    naive = column.dt.tz_convert(UTC).dt.tz_localize(None)
    return naive.to_numpy(dtype="datetime64[us]").astype(np.int64)


def _from_us(epoch_us: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=int(epoch_us))


def _timestamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _quantize(amount: Decimal) -> Decimal:
    return amount.quantize(MONEY_QUANTUM)


def _money(amount: Decimal) -> str:
    """Decimal text with at most 10 decimals, no exponent and no trailing zeros."""
    text = format(_quantize(amount), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text
