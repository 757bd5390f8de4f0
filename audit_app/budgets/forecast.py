"""Where a budget period's spend will land: a weekday-aware projection with a band.

Pure module (no Django).

Its rules in full: `docs/methods.md`, section "Forecasts".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal

PERIODS = ("month", "quarter")
HISTORY_DAYS = 42
PRIOR_DAYS = 7
MAD_SCALE = Decimal("1.4826")
BAND_Z = Decimal("1.645")
SPREAD_FLOOR = Decimal("0.05")
SHORT_HISTORY_SPREAD = Decimal("0.25")
CENT = Decimal("0.01")
ZERO = Decimal(0)
DAY = timedelta(days=1)


def period_bounds(period: str, day: date) -> tuple[date, date]:
    """The first and last day of the calendar month or quarter holding `day`."""
    if period == "month":
        first_month = day.month
        months = 1
    elif period == "quarter":
        first_month = (day.month - 1) // 3 * 3 + 1
        months = 3
    else:
        raise ValueError(f"period must be one of {', '.join(PERIODS)}, not {period!r}.")
    start = date(day.year, first_month, 1)
    next_month = first_month + months
    following = (
        date(day.year + 1, next_month - 12, 1) if next_month > 12 else date(day.year, next_month, 1)
    )
    return start, following - DAY


@dataclass(frozen=True, kw_only=True)
class ForecastDay:
    day: date
    actual_usd: Decimal | None  # cumulative spend through this day; None after as_of
    forecast_usd: Decimal  # cumulative projection (= actual through as_of)
    low_usd: Decimal  # cumulative band
    high_usd: Decimal


@dataclass(frozen=True, kw_only=True)
class Forecast:
    period_start: date
    period_end: date
    as_of: date
    actual_usd: Decimal  # spent period_start..as_of
    forecast_usd: Decimal  # projected period total
    low_usd: Decimal
    high_usd: Decimal
    method: str  # one sentence
    days: tuple[ForecastDay, ...]  # every day of the period


@dataclass(frozen=True, kw_only=True)
class _Shape:
    """What the history says about one day's spend."""

    levels: tuple[Decimal, ...]  # by weekday, Monday = 0
    mean: Decimal  # mean of the levels over a week
    spread: Decimal  # σ of one day around its level, as a share of the level
    history_days: int
    weekday_aware: bool


def median(values: Sequence[Decimal]) -> Decimal:
    """The middle value (the mean of the two middle ones for an even count)."""
    if not values:
        raise ValueError("median of no values.")
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def _cents(amount: Decimal) -> Decimal:
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def _history(
    daily_spend: Mapping[date, Decimal], *, period_start: date, as_of: date
) -> list[tuple[date, Decimal]]:
    """Every day of the history window, oldest first (a day with no entry spent nothing)."""
    known = [day for day in daily_spend if day <= as_of]
    # Before the first day the series holds, days are unknown, not $0 (data that starts
    # mid-period); a series holding nothing is a period that has spent nothing so far.
    first = min(known) if known else (period_start if period_start <= as_of else None)
    if first is None:
        return []
    start = max(first, as_of - timedelta(days=HISTORY_DAYS - 1))
    count = (as_of - start).days + 1
    days = [start + timedelta(days=offset) for offset in range(count)]
    return [(day, daily_spend.get(day, ZERO)) for day in days]


def _out_of_sample_residuals(
    history: Sequence[tuple[date, Decimal]], *, weekday_aware: bool
) -> list[Decimal]:
    """Each day against the median of the other days of its group (its weekday, or all days
    without a weekday shape), as a share of that median; a day alone in its group, or whose
    group's median is 0, gives none. Left out of its own level, a day shows the spread a future
    day will have (in-sample residuals around a median of six are too small)."""
    groups: dict[int, list[Decimal]] = {}
    for day, spend in history:
        groups.setdefault(day.weekday() if weekday_aware else 0, []).append(spend)
    residuals = []
    for values in groups.values():
        for index, spend in enumerate(values):
            others = values[:index] + values[index + 1 :]
            level = median(others) if others else ZERO
            if level > 0:
                residuals.append((spend - level) / level)
    return residuals


def _shape(history: Sequence[tuple[date, Decimal]]) -> _Shape:
    """Weekday levels (medians) and the spread of days around them."""
    n = len(history)
    if n == 0:
        return _Shape(
            levels=(ZERO,) * 7, mean=ZERO, spread=ZERO, history_days=0, weekday_aware=False
        )
    weekday_aware = n >= 7
    if weekday_aware:
        levels = tuple(
            median([spend for day, spend in history if day.weekday() == weekday])
            for weekday in range(7)
        )
    else:
        levels = (sum((spend for _, spend in history), ZERO) / n,) * 7
    mean = sum(levels, ZERO) / 7
    relative = _out_of_sample_residuals(history, weekday_aware=weekday_aware)
    floor = max(SPREAD_FLOOR, SHORT_HISTORY_SPREAD / Decimal(n).sqrt())
    if relative:
        center = median(relative)
        floor = max(floor, MAD_SCALE * median([abs(value - center) for value in relative]))
    return _Shape(
        levels=levels, mean=mean, spread=floor, history_days=n, weekday_aware=weekday_aware
    )


def _scale(shape: _Shape, spent: Sequence[tuple[date, Decimal]]) -> Decimal:
    """This period's level against the shape's, shrunk toward 1 by PRIOR_DAYS of mean level."""
    prior = PRIOR_DAYS * shape.mean
    expected = sum((shape.levels[day.weekday()] for day, _ in spent), ZERO) + prior
    if expected <= 0:
        return Decimal(1)
    return (sum((spend for _, spend in spent), ZERO) + prior) / expected


def _method(shape: _Shape, *, scale: Decimal, as_of: date, spent: int, remaining: int) -> str:
    if remaining == 0:
        return f"Every day of the period is actual spend through {as_of.isoformat()}."
    spent_text = (
        f"Days through {as_of.isoformat()} are actual spend; "
        if spent
        else f"The period has not started by {as_of.isoformat()}; "
    )
    if shape.history_days == 0:
        return spent_text + "with no spend history the remaining days are not projected."
    level = f", scaled by {scale:.2f} to this period's level so far" if spent else ""
    if shape.weekday_aware:
        projected = (
            f"each remaining day is its weekday's median over the last {shape.history_days} "
            f"days{level}"
        )
    else:
        days = "1 day" if shape.history_days == 1 else f"{shape.history_days} days"
        projected = f"with only {days} of history each remaining day is their mean{level}"
    return (
        spent_text + projected + ", within a 90 % band from how far days stray from their level "
        "(1.4826 × MAD), widening with the days left."
    )


def _actual_days(spent: Sequence[tuple[date, Decimal]]) -> list[ForecastDay]:
    days = []
    actual = ZERO
    for day, spend in spent:
        actual += spend
        total = _cents(actual)
        days.append(
            ForecastDay(
                day=day, actual_usd=total, forecast_usd=total, low_usd=total, high_usd=total
            )
        )
    return days


def _projected_days(
    remaining: Sequence[date],
    *,
    shape: _Shape,
    scale: Decimal,
    actual: Decimal,
    level_error: Decimal,
) -> list[ForecastDay]:
    """The cumulative projection and its band for each day after as_of (step 5)."""
    days = []
    projected = ZERO
    noise = ZERO  # variance of the days' own noise, summed
    for day in remaining:
        level = shape.levels[day.weekday()] * scale
        projected += level
        noise += (shape.spread * level) ** 2
        half = BAND_Z * (noise + (level_error * projected) ** 2).sqrt()
        days.append(
            ForecastDay(
                day=day,
                actual_usd=None,
                forecast_usd=_cents(actual + projected),
                low_usd=_cents(actual + max(projected - half, ZERO)),
                high_usd=_cents(actual + projected + half),
            )
        )
    return days


def forecast_period(
    daily_spend: Mapping[date, Decimal], *, period_start: date, period_end: date, as_of: date
) -> Forecast:
    """Project the period's total from daily spend (see the module docstring for the method).

    `daily_spend` may hold history before `period_start` (it teaches the weekday shape); days
    after `as_of` are ignored. `as_of` before the period projects all of it; after its end the
    forecast is what was spent.
    """
    if period_end < period_start:
        raise ValueError(
            f"period_end {period_end.isoformat()} is before period_start "
            f"{period_start.isoformat()}."
        )
    shape = _shape(_history(daily_spend, period_start=period_start, as_of=as_of))
    last_spent = min(as_of, period_end)
    spent_count = max((last_spent - period_start).days + 1, 0)
    period = [
        period_start + timedelta(days=offset)
        for offset in range((period_end - period_start).days + 1)
    ]
    spent = [(day, daily_spend.get(day, ZERO)) for day in period[:spent_count]]
    known = [day for day in daily_spend if day <= as_of]
    first_known = min(known) if known else period_start
    scale = _scale(shape, [(day, spend) for day, spend in spent if day >= first_known])
    days = _actual_days(spent)
    actual = sum((spend for _, spend in spent), ZERO)
    days += _projected_days(
        period[spent_count:],
        shape=shape,
        scale=scale,
        actual=actual,
        level_error=shape.spread / (spent_count + PRIOR_DAYS) ** Decimal("0.5"),
    )
    end = days[-1]
    return Forecast(
        period_start=period_start,
        period_end=period_end,
        as_of=as_of,
        actual_usd=_cents(actual),
        forecast_usd=end.forecast_usd,
        low_usd=end.low_usd,
        high_usd=end.high_usd,
        method=_method(
            shape,
            scale=scale,
            as_of=as_of,
            spent=spent_count,
            remaining=len(period) - spent_count,
        ),
        days=tuple(days),
    )
