"""bench/forecast.py: the backtest's months and errors on series whose answer is known, and a
short run of the whole benchmark."""

from __future__ import annotations

import re
from datetime import date, timedelta
from decimal import Decimal

import pytest

from bench import forecast as forecast_bench


def _clean(first: date, last: date) -> dict[date, Decimal]:
    days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    return {day: Decimal(100 if day.weekday() < 5 else 30) for day in days}


def test_a_clean_weekly_pattern_backtests_without_error() -> None:
    # Mid-January to 10 April: January is history, April is not whole: February and March.
    result = forecast_bench.backtest(_clean(date(2025, 1, 15), date(2025, 4, 10)))
    assert result.months == 2 and result.forecasts == 6
    assert result.mape == {7: 0.0, 14: 0.0, 21: 0.0}
    assert result.band_hits == 6


def test_a_doubled_month_is_missed_by_what_the_shrinkage_keeps() -> None:
    # $100 every day, then March at $200: on 14 March the forecast is 5,633.33 (see
    # tests/audit_app/budgets/test_forecast.py) against 6,200: 9.14 % short.
    spend = {day: Decimal(100) for day in _clean(date(2025, 1, 1), date(2025, 2, 28))}
    spend |= {day: Decimal(200) for day in _clean(date(2025, 3, 1), date(2025, 3, 31))}
    result = forecast_bench.backtest(spend, as_of_days=(14,))
    assert result.months == 2  # February (flat, exact) and March
    assert result.mape[14] == pytest.approx((6200 - 5633.33) / 6200 / 2, abs=1e-6)


def test_the_stationary_year_has_its_weekly_pattern() -> None:
    spend = forecast_bench.stationary_daily_spend(days=364)
    assert len(spend) == 364 and min(spend) == forecast_bench.START
    by_weekday = [
        sorted(usd for day, usd in spend.items() if day.weekday() == weekday)
        for weekday in range(7)
    ]
    medians = [float(values[len(values) // 2]) for values in by_weekday]
    # Lognormal noise has median 1: each weekday's median is close to its level.
    for median, factor in zip(medians, forecast_bench.WEEKDAY_FACTORS, strict=True):
        assert median == pytest.approx(1000 * factor, rel=0.06)


def test_a_short_run_prints_the_errors_and_the_target() -> None:
    lines = forecast_bench.run(demo_days=70, stationary_days=70)
    assert len(lines) == 4
    assert lines[0].startswith("forecast: demo traffic (70 days from 2025-01-01, scale 0.02")
    pattern = (
        r"forecast: (demo|stationary year): 1 month, MAPE of the month-end forecast "
        r"day 7 (\d+\.\d) %, day 14 (\d+\.\d) %, day 21 (\d+\.\d) %; band held the total "
        r"(\d)/3; 3 forecasts in \d+\.\d\d s"
    )
    for line in lines[1:3]:
        match = re.match(pattern, line)
        assert match, line
        assert float(match[3]) <= 10.0
    assert re.fullmatch(
        r"forecast: stationary day-14 MAPE \d+\.\d % \(target <= 10 %: met\)", lines[3]
    )
