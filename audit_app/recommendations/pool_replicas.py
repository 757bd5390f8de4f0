"""What one replica of a serving pool is, what it costs and what it serves.

Its rules in full: `docs/methods.md`, section "A serving pool's replicas".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from audit_app.costs.attribution import spread_over_hours
from audit_app.costs.costing import SECONDS_PER_HOUR
from audit_app.lib.formatting import money_unit
from audit_app.models import BillingCharge, ServingPool
from audit_app.recommendations.evidence import MeasuredPoint
from audit_app.recommendations.options import HardwareOffer, Instance, model_class
from audit_app.recommendations.pool_options import replicas_from_cost

NO_THROUGHPUT = "no throughput known: set capacity_tokens_per_hour or add a benchmark run"
NO_REPLICA_PRICE = (
    "no replica price known: add the instance type to the hardware catalog, or upload a bill "
    "whose lines give instance-hours"
)
_HOUR_UNIT = re.compile(r"\b(hours?|hrs?)\b", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True)
class MeasuredThroughput:
    """A benchmark run's output tokens/s on one replica of ``accelerators`` accelerators."""

    tokens_per_second: float
    accelerators: int
    source: str  # "benchmark run 12 (name, vllm), point 3 of 5"


MeasuredSource = Callable[..., MeasuredThroughput | None]
_measured_sources: list[MeasuredSource] = []


def measured_throughput_register(source: MeasuredSource) -> None:
    """Add a reader of measured throughput, called as ``source(model=..., hardware=...)``."""
    if source not in _measured_sources:
        _measured_sources.append(source)


def measured_throughput(*, model: str, hardware: str) -> MeasuredThroughput | None:
    for source in _measured_sources:
        found = source(model=model, hardware=hardware)
        if found is not None:
            return found
    return None


PointsSource = Callable[..., list[MeasuredPoint]]
_point_sources: list[PointsSource] = []


def measured_points_register(source: PointsSource) -> None:
    """Add a reader of measured points, called as ``source(model=..., hardware=...)``."""
    if source not in _point_sources:
        _point_sources.append(source)


def measured_points(*, model: str, hardware: str) -> list[MeasuredPoint]:
    """Every measured point of ``model`` on ``hardware`` (an instance's accelerator, or a
    provider's name for a hosted API), newest run first."""
    return [point for source in _point_sources for point in source(model=model, hardware=hardware)]


@dataclass(frozen=True, kw_only=True)
class Replica:
    """One replica of a pool: its name as plans show it, accelerators, price and source."""

    instance: str
    name: str  # "p5.48xlarge (NVIDIA H100 80GB)"
    accelerators: int | None  # None: the catalog does not know the instance
    usd_per_hour: Decimal
    price_source: str
    provisioned: tuple[int, ...]  # replicas billed in each hour of the window


@dataclass(frozen=True, kw_only=True)
class ReplicaThroughput:
    tokens_per_second: float
    assumption: str  # the figure and where it comes from
    measured: bool


def _hourly(
    values: Iterable[tuple[datetime, datetime, Decimal]], *, origin: datetime, hours: int
) -> list[Decimal]:
    out = [Decimal(0)] * hours
    for hour, value in spread_over_hours(values).items():
        index = int((hour - origin).total_seconds() // 3600)
        if 0 <= index < hours:
            out[index] += value
    return out


def pool_replica(
    charges: list[BillingCharge],
    *,
    instance_type: str,
    instances: dict[str, Instance],
    origin: datetime,
    hours: int,
) -> Replica | None:
    """The pool's replica from its USD ``charges``; None when neither the catalog nor the bill
    (instance-hours) gives its price."""
    costs = _hourly(
        ((c.period_start, c.period_end, c.billed_cost) for c in charges), origin=origin, hours=hours
    )
    instance = instances.get(instance_type)
    if instance is not None:
        return Replica(
            instance=instance.name,
            name=f"{instance.name} ({instance.accelerator})",
            accelerators=instance.accelerator_count or 1,
            usd_per_hour=instance.usd_per_hour,
            price_source=f"{money_unit(instance.usd_per_hour)}/hour per replica "
            f"({instance.source}, {instance.source_date}); today's cost is the pool's bill.",
            provisioned=tuple(replicas_from_cost(costs, instance.usd_per_hour)),
        )
    timed = [c for c in charges if c.quantity and _HOUR_UNIT.search(c.unit)]
    instance_hours = _hourly(
        ((c.period_start, c.period_end, Decimal(c.quantity or 0) * c.block_size) for c in timed),
        origin=origin,
        hours=hours,
    )
    total_hours = sum(instance_hours, Decimal(0))
    if not total_hours:
        return None
    usd_per_hour = (sum((c.billed_cost for c in timed), Decimal(0)) / total_hours).quantize(
        Decimal("0.0001")
    )
    return Replica(
        instance=instance_type,
        name=instance_type,
        accelerators=None,
        usd_per_hour=usd_per_hour,
        price_source=f"{money_unit(usd_per_hour)}/hour per replica: the bill's cost over its "
        f"{total_hours.normalize():f} instance-hours ({instance_type} is not in the hardware "
        "catalog); today's cost is the pool's bill.",
        provisioned=tuple(int(h + Decimal("0.5")) for h in instance_hours),
    )


def replica_throughput(
    pool: ServingPool, *, model: str, replica: Replica, offers: tuple[HardwareOffer, ...]
) -> ReplicaThroughput | None:
    """Output tokens/s one replica serves: measured, else catalogued, else the pool's capacity
    over its peak billed replicas; None when none is known."""
    measured = measured_throughput(model=model, hardware=replica.name)
    if measured is not None:
        per_replica = measured.tokens_per_second
        scaled = ""
        if replica.accelerators is not None and replica.accelerators != measured.accelerators:
            per_replica = per_replica / measured.accelerators * replica.accelerators
            scaled = (
                f", scaled from its {measured.accelerators} accelerator(s) to the replica's "
                f"{replica.accelerators}"
            )
        return ReplicaThroughput(
            tokens_per_second=per_replica,
            assumption=f"{per_replica:,.0f} output tokens/s per {replica.name} for {model}: "
            f"measured, {measured.source}{scaled}.",
            measured=True,
        )
    size = model_class(model)
    offer = next(
        (
            o
            for o in offers
            if size and o.instance.name == replica.instance and o.throughput.model_class == size
        ),
        None,
    )
    if offer is not None:
        t = offer.throughput
        return ReplicaThroughput(
            tokens_per_second=t.tokens_per_second,
            assumption=f"{t.tokens_per_second:,.0f} output tokens/s per {replica.instance} for "
            f"a {size.upper() if size else ''} model: {t.source} ({t.source_date}; {t.notes}). "
            "Catalogued, not measured: a benchmark run of this model on this hardware would "
            "replace it.",
            measured=False,
        )
    peak = max(replica.provisioned, default=0)
    if pool.capacity_tokens_per_hour and peak:
        per_replica = pool.capacity_tokens_per_hour / peak / SECONDS_PER_HOUR
        return ReplicaThroughput(
            tokens_per_second=per_replica,
            assumption=f"{per_replica:,.2f} output tokens/s per {replica.name}: the pool's "
            f"stated capacity ({pool.capacity_tokens_per_hour:,} tokens/hour) over its "
            f"{peak} billed replica(s) at the busiest hour. Neither measured nor catalogued: "
            "a benchmark run of this model on this hardware would replace it.",
            measured=False,
        )
    return None
