"""Days a workload × model spent more than its usual, and why: volume, mix or price.

Pure module (no Django), Decimal money.

Its rules in full: `docs/methods.md`, section "Anomalies".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

from audit_app.budgets.forecast import median
from audit_app.costs.attribution import round_to_cents

MAD_SCALE = Decimal("1.4826")
SPREAD_FLOOR_SHARE = Decimal("0.1")
SPREAD_FLOOR_USD = Decimal("0.01")
MIN_REFERENCES = 2
MIN_USD = Decimal("0.05")
LARGE_USD = Decimal("1")
MIN_RATIO = Decimal("3")
STEADY_SHARE = Decimal("0.5")
WEEK = timedelta(days=7)


@dataclass(frozen=True, kw_only=True)
class DayUsage:
    day: date
    requests: int
    tokens: int
    spend_usd: Decimal


@dataclass(frozen=True, kw_only=True)
class Cause:
    volume_usd: Decimal
    mix_usd: Decimal
    price_usd: Decimal  # volume + mix + price == spend − expected, exactly


@dataclass(frozen=True, kw_only=True)
class Anomaly:
    day: date
    spend_usd: Decimal
    expected_usd: Decimal
    score: float
    cause: Cause
    expected: DayUsage  # the expected day (requests, tokens, spend)


def _factors(usage: DayUsage, other: DayUsage) -> tuple[Fraction, Fraction, Fraction, Fraction]:
    """(requests, tokens per request, spend per token, spend the three do not explain)."""
    requests = Fraction(usage.requests)
    if usage.requests > 0:
        mix = Fraction(usage.tokens, usage.requests)
    elif other.requests > 0:
        mix = Fraction(other.tokens, other.requests)
    else:
        mix = Fraction(0)
    if usage.tokens > 0:
        price = Fraction(usage.spend_usd) / usage.tokens
    elif other.tokens > 0:
        price = Fraction(other.spend_usd) / other.tokens
    else:
        price = Fraction(0)
    unexplained = Fraction(usage.spend_usd) - requests * mix * price
    return requests, mix, price, unexplained


def _shapley(
    before: tuple[Fraction, Fraction, Fraction], after: tuple[Fraction, Fraction, Fraction]
) -> tuple[Fraction, Fraction, Fraction]:
    """Each factor's share of after[0]·after[1]·after[2] − before[0]·before[1]·before[2]."""
    shares = []
    for index in range(3):
        y0, z0 = (before[other] for other in range(3) if other != index)
        y1, z1 = (after[other] for other in range(3) if other != index)
        weight = (y0 * z0 + y1 * z1) / 3 + (y0 * z1 + y1 * z0) / 6
        shares.append((after[index] - before[index]) * weight)
    return shares[0], shares[1], shares[2]


def decompose(expected: DayUsage, actual: DayUsage) -> Cause:
    """Split actual.spend_usd − expected.spend_usd into volume, mix and price (module docstring)."""
    for usage in (expected, actual):
        if usage.requests < 0 or usage.tokens < 0:
            raise ValueError(f"requests and tokens of {usage.day.isoformat()} cannot be negative.")
    *before, unexplained_before = _factors(expected, actual)
    *after, unexplained_after = _factors(actual, expected)
    volume, mix, price = _shapley((before[0], before[1], before[2]), (after[0], after[1], after[2]))
    price += unexplained_after - unexplained_before
    # Decimal(p) / q keeps 28 significant digits, far below a cent; rounding comes next.
    exact = {
        name: Decimal(share.numerator) / Decimal(share.denominator)
        for name, share in (("volume", volume), ("mix", mix), ("price", price))
    }
    rounded = round_to_cents(exact)
    change = actual.spend_usd - expected.spend_usd
    largest = max(rounded, key=lambda name: (abs(exact[name]), name == "volume"))
    rounded[largest] += change - sum(rounded.values(), Decimal(0))
    return Cause(volume_usd=rounded["volume"], mix_usd=rounded["mix"], price_usd=rounded["price"])


def _nearest_int(value: Decimal) -> int:
    return int(value.to_integral_value(rounding=ROUND_HALF_UP))


def expected_day(day: date, references: Sequence[DayUsage]) -> tuple[DayUsage, Decimal]:
    """The expected day (medians of the references) and the spread of its spend."""
    spends = [reference.spend_usd for reference in references]
    expected_spend = median(spends)
    mad = median([abs(spend - expected_spend) for spend in spends])
    spread = max(MAD_SCALE * mad, SPREAD_FLOOR_SHARE * abs(expected_spend), SPREAD_FLOOR_USD)
    usage = DayUsage(
        day=day,
        requests=_nearest_int(median([Decimal(r.requests) for r in references])),
        tokens=_nearest_int(median([Decimal(r.tokens) for r in references])),
        spend_usd=expected_spend,
    )
    return usage, spread


def _by_day(series: Sequence[DayUsage]) -> dict[date, DayUsage]:
    by_day: dict[date, DayUsage] = {}
    for usage in series:
        if usage.day in by_day:
            raise ValueError(f"the series holds {usage.day.isoformat()} twice.")
        by_day[usage.day] = usage
    return by_day


def _matters(actual: DayUsage, expected: DayUsage, excess: Decimal, spread: Decimal) -> bool:
    """A jump of LARGE_USD or more, or a steady workload's day of MIN_RATIO times its expected
    spend or more (module docstring)."""
    if excess >= LARGE_USD:
        return True
    steady = 0 < spread <= STEADY_SHARE * expected.spend_usd
    return steady and actual.spend_usd >= MIN_RATIO * expected.spend_usd


def detect(
    series: Sequence[DayUsage],
    *,
    start: date | None = None,
    end: date | None = None,
    weeks: int = 4,
    min_score: float = 3.5,
    min_usd: Decimal = MIN_USD,
) -> list[Anomaly]:
    """Anomalous days of one workload × model among the days in [start, end], oldest first.

    Days missing from `series` had no traffic (zero days); references before its first day are
    unknown (see the module docstring).
    """
    if weeks < 1:
        raise ValueError(f"weeks must be at least 1, not {weeks}.")
    by_day = _by_day(series)
    if not by_day:
        return []
    first = min(by_day)
    needed = min(MIN_REFERENCES, weeks)
    anomalies = []
    for day in sorted(by_day):
        if (start is not None and day < start) or (end is not None and day > end):
            continue
        reference_days = [day - WEEK * k for k in range(1, weeks + 1)]
        references = [
            by_day.get(when, DayUsage(day=when, requests=0, tokens=0, spend_usd=Decimal(0)))
            for when in reference_days
            if when >= first
        ]
        if len(references) < needed:
            continue
        actual = by_day[day]
        expected, spread = expected_day(day, references)
        excess = actual.spend_usd - expected.spend_usd
        score = float(excess / spread)
        if score >= min_score and excess >= min_usd and _matters(actual, expected, excess, spread):
            anomalies.append(
                Anomaly(
                    day=day,
                    spend_usd=actual.spend_usd,
                    expected_usd=expected.spend_usd,
                    score=score,
                    cause=decompose(expected, actual),
                    expected=expected,
                )
            )
    return anomalies
