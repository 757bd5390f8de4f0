"""Cost of serving a traffic shape on dedicated replicas.

Pure module (no Django).

Its rules in full: `docs/methods.md`, section "The cost model".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction
from itertools import pairwise

MILLION = Decimal(1_000_000)
SECONDS_PER_HOUR = 3600
HOURS_IN_MONTH = 730


class ScalingMode(StrEnum):
    """How replicas follow demand; the one spelling of the modes for every form, API, command
    line, chart and gate input."""

    ALWAYS_ON = "always_on"
    AUTOSCALE = "autoscale"
    SCALE_TO_ZERO = "scale_to_zero"

    @property
    def label(self) -> str:
        """``scale_to_zero`` -> ``scale to zero``: the words pages and charts show."""
        return self.value.replace("_", " ")


@dataclass(frozen=True, kw_only=True)
class Deployment:
    """One way of serving a model: a replica of ``accelerators_per_replica`` accelerators."""

    tokens_per_second: float  # T: measured decode tok/s of ONE replica
    accelerators_per_replica: int  # G
    usd_per_accelerator_hour: Decimal  # P
    cold_start_seconds: float = 0.0  # C
    watts_per_accelerator: float | None = None  # W: mean power per accelerator
    usd_per_kwh: Decimal | None = None  # E
    grid_to_compute_efficiency: float = 0.6  # η

    def __post_init__(self) -> None:
        if not (math.isfinite(self.tokens_per_second) and self.tokens_per_second > 0):
            raise ValueError("tokens_per_second must be a positive number")
        if self.accelerators_per_replica < 1:
            raise ValueError("accelerators_per_replica must be at least 1")
        if not self.usd_per_accelerator_hour >= 0:
            raise ValueError("usd_per_accelerator_hour must not be negative")
        if not (math.isfinite(self.cold_start_seconds) and self.cold_start_seconds >= 0):
            raise ValueError("cold_start_seconds must not be negative")
        if self.watts_per_accelerator is not None and not self.watts_per_accelerator >= 0:
            raise ValueError("watts_per_accelerator must not be negative")
        if self.usd_per_kwh is not None and not self.usd_per_kwh >= 0:
            raise ValueError("usd_per_kwh must not be negative")
        if not 0 < self.grid_to_compute_efficiency <= 1:
            raise ValueError("grid_to_compute_efficiency must be in (0, 1]")

    @property
    def tokens_per_replica_hour(self) -> Decimal:
        """``T × 3600``: what one fully busy replica produces in an hour."""
        return _decimal(self.tokens_per_second) * SECONDS_PER_HOUR


@dataclass(frozen=True, kw_only=True)
class CostBreakdown:
    mode: ScalingMode
    hours: int
    replicas_per_hour: tuple[int, ...]  # provisioned, per the mode
    provisioned_replica_hours: int
    cold_start_replica_hours: Decimal
    accelerator_hours: Decimal  # A
    busy_accelerator_hours: Decimal  # B
    idle_accelerator_hours: Decimal  # A − B
    compute_cost_usd: Decimal
    energy_cost_usd: Decimal  # 0 when the deployment has no W or no E
    total_cost_usd: Decimal
    tokens: int
    usd_per_million_tokens: Decimal | None  # None when no token is demanded
    utilisation: Decimal | None  # B / A; None when nothing is provisioned


def default_profile(deployment: Deployment, hours: int = 1) -> list[int]:
    """Constant demand of ``T × 3600`` tokens every hour: one replica, fully busy.

    Demand is whole tokens, so a fractional ``T × 3600`` is rounded down (rounding up would need
    a second replica).
    """
    if hours < 1:
        raise ValueError("hours must be at least 1")
    return [math.floor(deployment.tokens_per_replica_hour)] * hours


def cost_on_profile(
    *, deployment: Deployment, demand_per_hour: Sequence[int], mode: ScalingMode
) -> CostBreakdown:
    """Price ``demand_per_hour`` (output tokens per hour) on ``deployment`` run in ``mode``."""
    _check_demand(demand_per_hour)
    mode = ScalingMode(mode)
    capacity = deployment.tokens_per_replica_hour
    # Fraction keeps the ceiling exact: a Decimal quotient rounded to 28 digits could land on a
    # whole number it is not.
    needed = [math.ceil(Fraction(demand) / Fraction(capacity)) for demand in demand_per_hour]
    if mode is ScalingMode.ALWAYS_ON:
        provisioned = [max(needed)] * len(needed)
    elif mode is ScalingMode.AUTOSCALE:
        provisioned = [max(1, replicas) for replicas in needed]
    else:
        provisioned = needed

    replicas_added = sum(max(0, later - earlier) for earlier, later in pairwise(provisioned))
    cold_start_replica_hours = (
        replicas_added * _decimal(deployment.cold_start_seconds) / SECONDS_PER_HOUR
    )
    accelerators = deployment.accelerators_per_replica
    accelerator_hours = accelerators * (sum(provisioned) + cold_start_replica_hours)
    tokens = sum(demand_per_hour)
    busy_accelerator_hours = accelerators * Decimal(tokens) / capacity
    compute_cost, energy_cost = _cost(deployment, accelerator_hours)
    total_cost = compute_cost + energy_cost
    return CostBreakdown(
        mode=mode,
        hours=len(provisioned),
        replicas_per_hour=tuple(provisioned),
        provisioned_replica_hours=sum(provisioned),
        cold_start_replica_hours=cold_start_replica_hours,
        accelerator_hours=accelerator_hours,
        busy_accelerator_hours=busy_accelerator_hours,
        idle_accelerator_hours=accelerator_hours - busy_accelerator_hours,
        compute_cost_usd=compute_cost,
        energy_cost_usd=energy_cost,
        total_cost_usd=total_cost,
        tokens=tokens,
        usd_per_million_tokens=total_cost / Decimal(tokens) * MILLION if tokens else None,
        utilisation=busy_accelerator_hours / accelerator_hours if accelerator_hours else None,
    )


def busy_only_usd_per_million(deployment: Deployment) -> Decimal:
    """``P × G / (T × 3600) × 1e6`` (+ energy): cost per 1M tokens with no idle time at all."""
    compute_cost, energy_cost = _cost(deployment, Decimal(deployment.accelerators_per_replica))
    return (compute_cost + energy_cost) / deployment.tokens_per_replica_hour * MILLION


def monthly_cost(
    *,
    deployment: Deployment,
    demand_per_hour: Sequence[int],
    mode: ScalingMode,
    hours_in_month: int = HOURS_IN_MONTH,
) -> Decimal:
    """The profile's cost per hour × ``hours_in_month``, to price a recommendation.

    The profile stands for a typical stretch of the month; cold starts where one repetition of it
    would meet the next are not counted.
    """
    if hours_in_month < 1:
        raise ValueError("hours_in_month must be at least 1")
    breakdown = cost_on_profile(deployment=deployment, demand_per_hour=demand_per_hour, mode=mode)
    return breakdown.total_cost_usd * hours_in_month / breakdown.hours


def _cost(deployment: Deployment, accelerator_hours: Decimal) -> tuple[Decimal, Decimal]:
    """(compute, energy) dollars for ``accelerator_hours``."""
    compute = accelerator_hours * _decimal(deployment.usd_per_accelerator_hour)
    if deployment.watts_per_accelerator is None or deployment.usd_per_kwh is None:
        return compute, Decimal(0)
    # A × W / 1000 / η × E, with a single division so rounding happens once.
    energy = (
        accelerator_hours
        * _decimal(deployment.watts_per_accelerator)
        * _decimal(deployment.usd_per_kwh)
        / (1000 * _decimal(deployment.grid_to_compute_efficiency))
    )
    return compute, energy


def _check_demand(demand_per_hour: Sequence[int]) -> None:
    if not demand_per_hour:
        raise ValueError("demand_per_hour must have at least one hour")
    for hour, demand in enumerate(demand_per_hour):
        if isinstance(demand, bool) or not isinstance(demand, int) or demand < 0:
            raise ValueError(f"demand_per_hour[{hour}] must be a non-negative int, got {demand!r}")


def _decimal(value: float | Decimal) -> Decimal:
    # str() first: Decimal(0.6) would carry the float's binary error into the money.
    return value if isinstance(value, Decimal) else Decimal(str(value))
