"""Budget forecast backtest: how far the month-end forecast made on days 7, 14 and 21 lands.

Two daily spend series, made without a database:

- **demo**: the demo's own traffic generator (`audit_app.demo.traffic.generate_requests`, the
  workloads, scale and seed `seed_demo` uses) run over a year instead of a month, summed per UTC
  day from the cost the gateway logs (API traffic; the self-hosted pools log none, and their
  instance-hours are a flat bill);
- **stationary**: a generated year of $1,000 weekdays, weekends at 35 % (Saturday) and 25 %
  (Sunday), every day times lognormal noise (σ 0.15).

Every calendar month wholly inside a series except the first (which is the first month's
history) is forecast as of its 7th, 14th and 21st day with everything before it known; the
error is |forecast − the month's real total| / that total, averaged over the months (MAPE).
The band's hit rate is how often the month's total fell between its low and high.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import numpy as np

from audit_app.budgets.forecast import forecast_period, period_bounds
from audit_app.demo.traffic import generate_requests

START = date(2025, 1, 1)
DAYS = 365
AS_OF_DAYS = (7, 14, 21)
DEMO_SCALE = 0.02  # seed_demo's defaults
DEMO_SEED = 7
STATIONARY_SEED = 0
WEEKDAY_USD = 1_000.0
WEEKDAY_FACTORS = (1.0, 1.0, 1.0, 1.0, 1.0, 0.35, 0.25)
NOISE_SIGMA = 0.15
TARGET_DAY = 14
TARGET_MAPE = 0.10


@dataclass(frozen=True, kw_only=True)
class Backtest:
    months: int
    mape: dict[int, float]  # by day of the month the forecast was made on
    band_hits: int  # month-end totals inside their band, over every forecast made
    forecasts: int
    seconds: float


def demo_daily_spend(*, start: date = START, days: int = DAYS) -> dict[date, Decimal]:
    """Logged API cost per UTC day of the demo's workloads over `days` days."""
    frame = generate_requests(
        start=datetime(start.year, start.month, start.day, tzinfo=UTC),
        days=days,
        scale=DEMO_SCALE,
        seed=DEMO_SEED,
    )
    per_day = frame.groupby(frame["started_at"].dt.date)["cost_usd"].sum()  # NaN skipped
    spend = {start + timedelta(days=offset): Decimal(0) for offset in range(days)}
    for day, usd in zip(per_day.index, per_day.to_numpy(), strict=True):
        spend[day] = Decimal(f"{usd:.6f}")
    return spend


def stationary_daily_spend(
    *, start: date = START, days: int = DAYS, seed: int = STATIONARY_SEED
) -> dict[date, Decimal]:
    """A weekly pattern with lognormal noise, to the cent."""
    noise = np.random.default_rng(seed).lognormal(0.0, NOISE_SIGMA, size=days)
    spend = {}
    for offset in range(days):
        day = start + timedelta(days=offset)
        usd = WEEKDAY_USD * WEEKDAY_FACTORS[day.weekday()] * float(noise[offset])
        spend[day] = Decimal(f"{usd:.2f}")
    return spend


def _months(daily: Mapping[date, Decimal]) -> list[tuple[date, date]]:
    """Calendar months wholly inside the series, the first one left out as history."""
    first, last = min(daily), max(daily)
    start, end = period_bounds("month", period_bounds("month", first)[1] + timedelta(days=1))
    months = []
    while end <= last:
        months.append((start, end))
        start, end = period_bounds("month", end + timedelta(days=1))
    return months


def backtest(daily: Mapping[date, Decimal], *, as_of_days: Sequence[int] = AS_OF_DAYS) -> Backtest:
    """MAPE of the month-end forecast made on each of `as_of_days` (module docstring)."""
    errors: dict[int, list[float]] = {day: [] for day in as_of_days}
    hits = 0
    started = time.perf_counter()
    months = _months(daily)
    for start, end in months:
        truth = sum(
            (
                daily.get(start + timedelta(days=i), Decimal(0))
                for i in range((end - start).days + 1)
            ),
            Decimal(0),
        )
        for day in as_of_days:
            as_of = start + timedelta(days=day - 1)
            # forecast_period reads nothing after as_of (tests/audit_app/budgets/test_forecast.py).
            forecast = forecast_period(daily, period_start=start, period_end=end, as_of=as_of)
            errors[day].append(float(abs(forecast.forecast_usd - truth) / truth))
            hits += forecast.low_usd <= truth <= forecast.high_usd
    seconds = time.perf_counter() - started
    return Backtest(
        months=len(months),
        mape={
            day: sum(values) / len(values) if values else float("nan")
            for day, values in errors.items()
        },
        band_hits=hits,
        forecasts=len(months) * len(as_of_days),
        seconds=seconds,
    )


def _line(name: str, result: Backtest) -> str:
    mape = ", ".join(f"day {day} {value * 100:.1f} %" for day, value in result.mape.items())
    months = f"{result.months} month{'' if result.months == 1 else 's'}"
    return (
        f"forecast: {name}: {months}, MAPE of the month-end forecast {mape}; "
        f"band held the total {result.band_hits}/{result.forecasts}; "
        f"{result.forecasts} forecasts in {result.seconds:.2f} s "
        f"({result.seconds / max(result.forecasts, 1) * 1000:.1f} ms each)"
    )


def run(*, demo_days: int = DAYS, stationary_days: int = DAYS) -> list[str]:
    started = time.perf_counter()
    demo = demo_daily_spend(days=demo_days)
    generated = time.perf_counter() - started
    demo_result = backtest(demo)
    stationary_result = backtest(stationary_daily_spend(days=stationary_days))
    day14 = stationary_result.mape.get(TARGET_DAY, float("nan"))
    verdict = "met" if day14 <= TARGET_MAPE else "NOT met"
    return [
        f"forecast: demo traffic ({demo_days} days from {START.isoformat()}, scale "
        f"{DEMO_SCALE}, seed {DEMO_SEED}, logged API cost; generated in {generated:.2f} s)",
        _line("demo", demo_result),
        _line("stationary year", stationary_result),
        f"forecast: stationary day-{TARGET_DAY} MAPE {day14 * 100:.1f} % "
        f"(target <= {TARGET_MAPE * 100:.0f} %: {verdict})",
    ]
