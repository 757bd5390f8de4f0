"""Spread a self-hosted serving pool's bill over the workloads it served, with idle cost.

Pure module (no Django). Per hour, the pool's cost is split over the workloads by their share
of the tokens the pool served in that hour. What no workload used is **idle cost**:

- an hour with no traffic is idle as a whole;
- when the pool's capacity (tokens per hour) is known, a busy hour is split too: workloads get
  ``min(1, tokens / capacity)`` of it, the rest is idle. Without a capacity a busy hour is
  counted as fully used, so idle cost is a lower bound (the pages say so).

Money stays exact (Decimal) until the end; then `round_to_cents` rounds the final amounts with
the largest-remainder method, so attributed plus idle equals the billed total to the cent.
Rounding is done per UTC day and key (idle included), so sums by workload, by day or by any
other part of the key all come from the same cents.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_FLOOR, ROUND_HALF_EVEN, Decimal
from typing import Generic, TypeVar, cast

CENT = Decimal("0.01")
HOUR = timedelta(hours=1)
IDLE = "(idle)"

K = TypeVar("K", bound=Hashable)


def round_to_cents(amounts: Mapping[K, Decimal]) -> dict[K, Decimal]:
    """Round each amount to cents so that the rounded amounts add up to the rounded total.

    Largest remainder: floor every amount to the cent, then hand the missing cents to the
    amounts with the largest remainders (ties broken by key order, so results are stable).
    Works for negative amounts (credits) too.
    """
    if not amounts:
        return {}
    total = sum(amounts.values(), Decimal(0)).quantize(CENT, rounding=ROUND_HALF_EVEN)
    floored = {k: v.quantize(CENT, rounding=ROUND_FLOOR) for k, v in amounts.items()}
    missing = int((total - sum(floored.values(), Decimal(0))) / CENT)
    order = sorted(amounts, key=lambda k: (-(amounts[k] - floored[k]), str(k)))
    for key in order[:missing]:
        floored[key] += CENT
    return floored


def hours_of(start: datetime, end: datetime) -> list[datetime]:
    """The whole UTC hours a charge period covers (a period shorter than an hour counts as its
    hour)."""
    first = start.replace(minute=0, second=0, microsecond=0)
    hours = []
    hour = first
    while hour < end or hour == first:
        hours.append(hour)
        hour += HOUR
    return hours


def spread_over_hours(
    charges: Iterable[tuple[datetime, datetime, Decimal]],
) -> dict[datetime, Decimal]:
    """Exact cost per hour: each (start, end, cost) charge split evenly over its hours."""
    per_hour: dict[datetime, Decimal] = defaultdict(Decimal)
    for start, end, cost in charges:
        hours = hours_of(start, end)
        share = cost / len(hours)
        for hour in hours:
            per_hour[hour] += share
    return dict(per_hour)


@dataclass(frozen=True, kw_only=True)
class PoolAttribution(Generic[K]):
    """One pool over a period: cents per key (a workload, or any finer key the caller gives)
    and idle, plus how busy the pool was.

    Rounding happens once, on ``lines`` (per UTC day and key, idle included), with the largest
    remainder method; every other figure is a sum of those cents. So any grouping of the lines
    (by workload, by day, by model...) adds up to the same billed total to the cent.
    """

    billed: Decimal  # the bill, rounded to the cent
    by_workload: dict[K, Decimal]  # rounded; with `idle`, adds up to `billed` exactly
    idle: Decimal
    hours_billed: int
    hours_with_traffic: int
    tokens: int
    daily: dict[datetime, dict[K | str, Decimal]]  # day -> key or IDLE -> exact amount
    lines: dict[tuple[datetime, K | str], Decimal]  # (day, key or IDLE) -> rounded cents

    @property
    def attributed(self) -> Decimal:
        return sum(self.by_workload.values(), Decimal(0))

    @property
    def utilisation(self) -> float | None:
        """Share of the bill that served traffic (0..1); None for an empty bill."""
        if not self.billed:
            return None
        return float(self.attributed / self.billed)

    @property
    def utilisation_percent(self) -> Decimal | None:
        if not self.billed:
            return None
        return self.attributed / self.billed * 100


def attribute_pool(
    *,
    hourly_cost: Mapping[datetime, Decimal],
    hourly_tokens: Mapping[datetime, Mapping[K, int]],
    capacity_tokens_per_hour: int | None = None,
) -> PoolAttribution[K]:
    """Split each hour's cost by token share (see the module docstring)."""
    exact: dict[tuple[datetime, K | str], Decimal] = defaultdict(Decimal)
    busy_hours = 0
    total_tokens = 0
    for hour, cost in hourly_cost.items():
        day = hour.replace(hour=0)
        tokens = {key: n for key, n in hourly_tokens.get(hour, {}).items() if n > 0}
        hour_tokens = sum(tokens.values())
        total_tokens += hour_tokens
        if not hour_tokens:
            exact[(day, IDLE)] += cost
            continue
        busy_hours += 1
        used = Decimal(1)
        if capacity_tokens_per_hour:
            used = min(Decimal(1), Decimal(hour_tokens) / Decimal(capacity_tokens_per_hour))
        used_cost = cost * used
        for key, n in tokens.items():
            exact[(day, key)] += used_cost * Decimal(n) / Decimal(hour_tokens)
        if used < 1:
            exact[(day, IDLE)] += cost - used_cost
    lines = round_to_cents(exact)
    by_key: dict[K, Decimal] = defaultdict(Decimal)
    idle = Decimal("0.00")
    daily: dict[datetime, dict[K | str, Decimal]] = defaultdict(dict)
    for (day, line_key), amount in sorted(
        exact.items(), key=lambda item: (item[0][0], str(item[0][1]))
    ):
        daily[day][line_key] = amount
    for (_, line_key), cents in lines.items():
        if line_key == IDLE:
            idle += cents
        else:
            # Every key but the IDLE sentinel is one of the caller's keys.
            by_key[cast(K, line_key)] += cents
    return PoolAttribution(
        billed=sum(lines.values(), Decimal("0.00")),
        by_workload=dict(sorted(by_key.items(), key=lambda item: (-item[1], str(item[0])))),
        idle=idle,
        hours_billed=len(hourly_cost),
        hours_with_traffic=busy_hours,
        tokens=total_tokens,
        daily=dict(daily),
        lines=lines,
    )
