"""The targets an asynchronous workload's traffic could move to, priced for a month.

Pure module (no Django): plain frozen dataclasses in, `Option`s out. One builder per target kind
(DESIGN §3.6), each given one provider/model's traffic over the analysis window:

- `batch_option`: the batch tier of the same API model, from its price card. The card's batch
  discount on input (``1 - batch_input / input``) applies to the spend not already on batch.
- `provider_options`: other providers listing the same open model (closed models, whose name
  carries no size, have none), priced per 1M input and output tokens on the same token volume.
- `hardware_options`: dedicated instances, at an assumed throughput for the model's size class,
  through the traffic cost model (`audit_app.costs.costing`), scaled to zero when idle since
  nobody waits on asynchronous work, with a cold start per replica.

Every figure is a month: the window's cost x `HOURS_IN_MONTH` / the window's hours (`monthly`).
Reading the price cards, the catalog and the throughput assumptions, and the rest of the
workload's cost, is `audit_app.recommendations.services`'s part.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum

from audit_app.costs.costing import HOURS_IN_MONTH, Deployment, ScalingMode, monthly_cost
from audit_app.costs.pricing import Price, normalize_model
from audit_app.costs.providers import normalize_provider

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
                    f"${listing.usd_per_million_input_tokens} input / "
                    f"${listing.usd_per_million_output_tokens} output per 1M tokens "
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


def hardware_options(
    model: str, *, demand: Sequence[int], offers: Iterable[HardwareOffer]
) -> list[Option]:
    """Every offer for ``model``'s size class, serving ``demand`` (output tokens per hour of
    the window) and scaled to zero when idle."""
    size = model_class(model)
    if size is None or not any(demand):
        return []
    options = []
    for offer in offers:
        instance, throughput = offer.instance, offer.throughput
        if throughput.model_class != size:
            continue
        accelerators = instance.accelerator_count or 1
        deployment = Deployment(
            tokens_per_second=throughput.tokens_per_second,
            accelerators_per_replica=accelerators,
            usd_per_accelerator_hour=instance.usd_per_hour / accelerators,
            cold_start_seconds=COLD_START_SECONDS,
        )
        projected = monthly_cost(
            deployment=deployment, demand_per_hour=demand, mode=ScalingMode.SCALE_TO_ZERO
        )
        options.append(
            Option(
                kind=TargetKind.DEDICATED_HARDWARE,
                target=f"{instance.name} ({instance.accelerator}), scale to zero",
                projected_monthly=projected,
                assumptions=(
                    f"{throughput.tokens_per_second:,.0f} output tokens/s per {instance.name} "
                    f"for a {size.upper()} model: {throughput.source} ({throughput.source_date}; "
                    f"{throughput.notes})",
                    f"${instance.usd_per_hour}/hour on demand ({instance.source}, "
                    f"{instance.source_date}).",
                    f"Replicas follow the last {WINDOW_DAYS} days' hourly output tokens, down to "
                    f"zero when idle, with a {COLD_START_SECONDS:.0f} s cold start per replica "
                    "added.",
                ),
                confidence="Low until a benchmark gate measures this model on this hardware: "
                "the throughput is an assumption.",
            )
        )
    return options
