"""The targets an asynchronous workload's traffic could move to, priced for a month.

Pure module (no Django): plain frozen dataclasses in, `Option`s out.

Its rules in full: `docs/methods.md`, section "Workload options".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from enum import StrEnum

from audit_app.costs.costing import HOURS_IN_MONTH, Deployment, ScalingMode, cost_on_profile
from audit_app.costs.pricing import Price, normalize_model
from audit_app.costs.providers import normalize_provider
from audit_app.lib.formatting import money_unit

# The analysis window the sentences name (`audit_app.workloads.services.WINDOW_DAYS`).
WINDOW_DAYS = 30
COLD_START_SECONDS = 600.0
MILLION = Decimal(1_000_000)
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*b\b")


class TargetKind(StrEnum):
    """The values of `Recommendation.TargetKind`."""

    BATCH_API = "batch_api"
    CHEAPER_PROVIDER = "cheaper_provider"
    DEDICATED_HARDWARE = "dedicated_hardware"


@dataclass(frozen=True, kw_only=True)
class Usage:
    """One provider/model's traffic of a workload over the window."""

    provider: str
    model: str
    spend: Decimal  # its API spend: what a batch tier discounts
    input_tokens: int
    output_tokens: int
    batch_share: float  # of its requests, already on the batch API


@dataclass(frozen=True, kw_only=True)
class ApiListing:
    """A provider's published per-token price for a model (a catalog row of kind ``api``)."""

    provider: str
    name: str
    usd_per_million_input_tokens: Decimal
    usd_per_million_output_tokens: Decimal | None
    source: str
    source_date: str


@dataclass(frozen=True, kw_only=True)
class Instance:
    """A rentable instance and its on-demand price (a catalog row of kind ``instance``)."""

    name: str
    accelerator: str
    accelerator_count: int | None  # None: one
    usd_per_hour: Decimal
    source: str
    source_date: str


@dataclass(frozen=True, kw_only=True)
class Throughput:
    """Output tokens/s one replica is assumed to sustain for a model size class."""

    model_class: str  # 8b, 70b
    tokens_per_second: float
    source: str
    source_date: str
    notes: str


@dataclass(frozen=True, kw_only=True)
class HardwareOffer:
    instance: Instance
    throughput: Throughput


@dataclass(frozen=True, kw_only=True)
class Option:
    kind: TargetKind
    target: str
    projected_monthly: Decimal
    assumptions: tuple[str, ...]
    confidence: str


def model_class(model: str) -> str | None:
    """'70b' for Llama-3.3-70B-Instruct, '8b' for an 8B model; None when no size is named."""
    match = _SIZE.search(model.lower().replace("-", " "))
    if not match:
        return None
    size = float(match.group(1))
    return "8b" if size <= 13 else "70b" if size <= 90 else None


def monthly(amount: Decimal, hours: int) -> Decimal:
    """``amount`` spent over ``hours``, scaled to a month of `HOURS_IN_MONTH` hours."""
    return amount * Decimal(HOURS_IN_MONTH) / Decimal(hours)


def batch_option(usage: Usage, *, hours: int, price: Price | None) -> Option | None:
    """The batch tier of ``usage``'s model; ``price`` is its card (None: no card)."""
    if usage.batch_share >= 0.99 or usage.spend <= 0:
        return None
    if price is None or not price.batch_input or not price.input:
        return None
    discount = 1 - price.batch_input / price.input
    non_batch = usage.spend * Decimal(str(1 - usage.batch_share))
    projected = usage.spend - non_batch * discount
    return Option(
        kind=TargetKind.BATCH_API,
        target=f"{usage.provider} batch API, {usage.model}",
        projected_monthly=monthly(projected, hours),
        assumptions=(
            f"Batch price {price.batch_input}/{price.batch_output or price.output} $ per 1M "
            f"input/output tokens vs {price.input}/{price.output} from the price card "
            f"({price.model}, valid from {price.valid_from}).",
            f"{usage.batch_share:.0%} of its requests already use the batch API.",
            "Batch results arrive within 24 hours; the workload is asynchronous.",
        ),
        confidence="High: a published price; only the turnaround changes.",
    )


def provider_options(usage: Usage, *, hours: int, listings: Iterable[ApiListing]) -> list[Option]:
    """Every other provider in ``listings`` serving ``usage``'s open model."""
    family = normalize_model(usage.model).split("/")[-1].removesuffix("-instruct")
    if not model_class(family):
        return []  # closed models have no other provider
    options = []
    for listing in listings:
        name = normalize_model(listing.name).split("/")[-1]
        if family.replace(".", "-")[:14] not in name.replace(".", "-"):
            continue
        if normalize_provider(listing.provider) == normalize_provider(usage.provider):
            continue
        cost = (
            Decimal(usage.input_tokens) * listing.usd_per_million_input_tokens
            + Decimal(usage.output_tokens) * (listing.usd_per_million_output_tokens or 0)
        ) / MILLION
        options.append(
            Option(
                kind=TargetKind.CHEAPER_PROVIDER,
                target=f"{listing.provider} {listing.name}",
                projected_monthly=monthly(cost, hours),
                assumptions=(
                    f"{listing.provider} lists {listing.name} at "
                    f"{money_unit(listing.usd_per_million_input_tokens)} input / "
                    f"{money_unit(listing.usd_per_million_output_tokens)} output per 1M tokens "
                    f"(source: {listing.source}, {listing.source_date}).",
                    f"Same token volume: {usage.input_tokens:,} input and "
                    f"{usage.output_tokens:,} output tokens in {WINDOW_DAYS} days.",
                ),
                confidence="Medium: a published price for the same open model; check quality and "
                "quantisation with an evaluation on that provider (a gate verifies only "
                "dedicated hardware).",
            )
        )
    return options


@dataclass(frozen=True, kw_only=True)
class DedicatedPrice:
    monthly: Decimal
    replicas: int  # provisioned in the busiest hour
    peak: int  # output tokens demanded in the busiest hour
    capacity: int  # output tokens an hour those replicas serve


def with_headroom(demand: Sequence[int], headroom: Decimal) -> list[int]:
    """``ceil(D_h × (1 + headroom))`` for each hour: the demand each hour is sized for."""
    factor = 1 + headroom
    return [int((Decimal(d) * factor).to_integral_value(rounding=ROUND_CEILING)) for d in demand]


def dedicated_price(
    *,
    instance: Instance,
    tokens_per_second: float,
    demand: Sequence[int],
    always_on: bool,
    headroom: Decimal = Decimal(0),
) -> DedicatedPrice:
    """``demand`` (output tokens per hour of the window) served by ``instance`` replicas of
    ``tokens_per_second`` each, priced for a month: always on at the busiest hour's replicas
    (sized with ``headroom``), or scaled to zero with a `COLD_START_SECONDS` cold start per
    replica added."""
    accelerators = instance.accelerator_count or 1
    deployment = Deployment(
        tokens_per_second=tokens_per_second,
        accelerators_per_replica=accelerators,
        usd_per_accelerator_hour=instance.usd_per_hour / accelerators,
        cold_start_seconds=COLD_START_SECONDS,
    )
    mode = ScalingMode.ALWAYS_ON if always_on else ScalingMode.SCALE_TO_ZERO
    profile = with_headroom(demand, headroom) if always_on else list(demand)
    breakdown = cost_on_profile(deployment=deployment, demand_per_hour=profile, mode=mode)
    busiest = max(range(len(demand)), key=lambda h: (demand[h], -h)) if demand else 0
    replicas = breakdown.replicas_per_hour[busiest] if demand else 0
    return DedicatedPrice(
        monthly=monthly(breakdown.total_cost_usd, len(demand)),
        replicas=replicas,
        peak=demand[busiest] if demand else 0,
        capacity=int(replicas * deployment.tokens_per_replica_hour),
    )
