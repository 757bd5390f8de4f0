"""Month-end and quarter-end projection (audit_app/budgets/forecast.py), on hand-computed cases."""

from __future__ import annotations

import math
import random
from datetime import date, timedelta
from decimal import Decimal

import pytest

from audit_app.budgets.forecast import forecast_period, period_bounds

DAY = timedelta(days=1)
MARCH = (date(2025, 3, 1), date(2025, 3, 31))  # 1 March 2025 is a Saturday


def _days(first: date, last: date) -> list[date]:
    return [first + DAY * offset for offset in range((last - first).days + 1)]


def _weekly(first: date, last: date, weekday: str, weekend: str) -> dict[date, Decimal]:
    return {
        day: Decimal(weekday) if day.weekday() < 5 else Decimal(weekend)
        for day in _days(first, last)
    }


def test_month_bounds_are_calendar_months() -> None:
    assert period_bounds("month", date(2024, 2, 10)) == (date(2024, 2, 1), date(2024, 2, 29))
    assert period_bounds("month", date(2025, 2, 28)) == (date(2025, 2, 1), date(2025, 2, 28))
    assert period_bounds("month", date(2025, 12, 31)) == (date(2025, 12, 1), date(2025, 12, 31))


def test_quarter_bounds_are_calendar_quarters() -> None:
    assert period_bounds("quarter", date(2025, 1, 1)) == (date(2025, 1, 1), date(2025, 3, 31))
    assert period_bounds("quarter", date(2025, 3, 31)) == (date(2025, 1, 1), date(2025, 3, 31))
    assert period_bounds("quarter", date(2025, 5, 15)) == (date(2025, 4, 1), date(2025, 6, 30))
    assert period_bounds("quarter", date(2025, 8, 1)) == (date(2025, 7, 1), date(2025, 9, 30))
    assert period_bounds("quarter", date(2025, 11, 5)) == (date(2025, 10, 1), date(2025, 12, 31))


def test_an_unknown_period_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="period must be one of month, quarter, not 'week'"):
        period_bounds("week", date(2025, 1, 1))


def test_a_clean_weekly_pattern_lands_exactly_with_its_band() -> None:
    # $100 a weekday, $20 a weekend day since January. Through 14 March: 10 weekdays and 4
    # weekend days = 1,080; the 17 days left are 11 weekdays and 6 weekend days = 1,220.
    spend = _weekly(date(2025, 1, 1), date(2025, 3, 31), "100", "20")
    forecast = forecast_period(
        spend, period_start=MARCH[0], period_end=MARCH[1], as_of=date(2025, 3, 14)
    )
    assert forecast.actual_usd == Decimal("1080.00")
    assert forecast.forecast_usd == Decimal("2300.00")
    # No residual at all: σ is the 5 % floor (25 % / √42 is less); each remaining day adds
    # (5 % of its level)² (11 weekdays of 100, 6 weekend days of 20) and the level error
    # ρ = 5 % / √(14 days spent + 7) applies to the 1,220 still to come.
    noise = 11 * (0.05 * 100) ** 2 + 6 * (0.05 * 20) ** 2
    half = 1.645 * math.sqrt(noise + (0.05 / math.sqrt(21) * 1220) ** 2)
    assert round(half, 2) == 35.21
    assert float(forecast.low_usd) == pytest.approx(2300 - half, abs=0.006)
    assert float(forecast.high_usd) == pytest.approx(2300 + half, abs=0.006)
    assert "weekday's median over the last 42 days" in forecast.method


def test_the_days_are_cumulative_actual_then_projection() -> None:
    spend = _weekly(date(2025, 1, 1), date(2025, 3, 31), "100", "20")
    forecast = forecast_period(
        spend, period_start=MARCH[0], period_end=MARCH[1], as_of=date(2025, 3, 14)
    )
    days = forecast.days
    assert [d.day for d in days] == _days(*MARCH)
    assert days[13].actual_usd == days[13].forecast_usd == days[13].low_usd == Decimal("1080.00")
    assert days[1].actual_usd == Decimal("40.00")  # Saturday and Sunday
    assert days[14].actual_usd is None and days[14].forecast_usd == Decimal("1100.00")
    assert days[16].forecast_usd == Decimal("1220.00")  # + Sunday 20 + Monday 100
    assert days[-1].forecast_usd == forecast.forecast_usd
    assert (days[-1].low_usd, days[-1].high_usd) == (forecast.low_usd, forecast.high_usd)
    widths = [d.high_usd - d.low_usd for d in days[14:]]
    assert widths == sorted(widths) and widths[0] > 0


def test_a_noisy_stationary_pattern_lands_within_a_few_percent() -> None:
    # Twenty Marches of $400 a weekday and $90 a weekend day, each day ±20 % (uniform), with
    # January and February as history; the forecast on the 14th against the month's real sum.
    errors = []
    inside = 0
    for seed in range(20):
        draw = random.Random(seed)
        spend = {
            day: Decimal(
                round((400 if day.weekday() < 5 else 90) * draw.uniform(0.8, 1.2), 2)
            ).quantize(Decimal("0.01"))
            for day in _days(date(2025, 1, 1), MARCH[1])
        }
        truth = sum(amount for day, amount in spend.items() if day >= MARCH[0])
        forecast = forecast_period(
            spend, period_start=MARCH[0], period_end=MARCH[1], as_of=date(2025, 3, 14)
        )
        errors.append(abs(forecast.forecast_usd - truth) / truth)
        inside += forecast.low_usd <= truth <= forecast.high_usd
    assert max(errors) < Decimal("0.05")
    assert sum(errors) / len(errors) < Decimal("0.025")
    assert inside >= 15  # a 90 % band, give or take the luck of twenty draws


def test_a_period_running_hotter_is_scaled_shrunk_by_a_week() -> None:
    # $100 a day through February, $200 a day in March. On 14 March the last 42 days hold each
    # weekday four times at 100 and twice at 200: median 100. The scale is
    # (2,800 + 7 × 100) / (1,400 + 7 × 100) = 5/3, so the 17 days left project 17 × 500/3.
    spend = _weekly(date(2025, 1, 1), date(2025, 2, 28), "100", "100")
    spend |= _weekly(MARCH[0], MARCH[1], "200", "200")
    forecast = forecast_period(
        spend, period_start=MARCH[0], period_end=MARCH[1], as_of=date(2025, 3, 14)
    )
    assert forecast.actual_usd == Decimal("2800.00")
    assert forecast.forecast_usd == Decimal("5633.33")  # 2,800 + 8,500 / 3
    assert "scaled by 1.67" in forecast.method


def test_under_a_week_of_history_projects_the_mean() -> None:
    spend = {date(2025, 3, 1): Decimal(30), date(2025, 3, 2): Decimal(60)}
    spend[date(2025, 3, 3)] = Decimal(90)
    forecast = forecast_period(
        spend, period_start=MARCH[0], period_end=MARCH[1], as_of=date(2025, 3, 3)
    )
    # Mean 60 a day; the scale is (180 + 420) / (180 + 420) = 1: 180 + 28 × 60.
    assert forecast.forecast_usd == Decimal("1860.00")
    assert "with only 3 days of history" in forecast.method
    assert forecast.low_usd >= forecast.actual_usd == Decimal("180.00")


def test_days_after_as_of_are_not_read() -> None:
    spend = _weekly(date(2025, 1, 1), date(2025, 3, 14), "100", "20")
    with_future = spend | _weekly(date(2025, 3, 15), MARCH[1], "5000", "5000")
    bounds = {"period_start": MARCH[0], "period_end": MARCH[1], "as_of": date(2025, 3, 14)}
    assert forecast_period(with_future, **bounds) == forecast_period(spend, **bounds)


def test_a_finished_period_is_all_actual() -> None:
    spend = _weekly(date(2025, 1, 1), date(2025, 4, 10), "100", "20")
    forecast = forecast_period(
        spend, period_start=MARCH[0], period_end=MARCH[1], as_of=date(2025, 4, 10)
    )
    assert forecast.actual_usd == forecast.forecast_usd == forecast.high_usd == Decimal("2300.00")
    assert all(d.actual_usd is not None for d in forecast.days)
    assert forecast.method.startswith("Every day of the period is actual spend")


def test_a_period_not_started_is_all_projection() -> None:
    spend = _weekly(date(2025, 1, 1), date(2025, 2, 28), "100", "20")
    forecast = forecast_period(
        spend, period_start=MARCH[0], period_end=MARCH[1], as_of=date(2025, 2, 28)
    )
    assert forecast.actual_usd == Decimal("0.00")
    assert forecast.forecast_usd == Decimal("2300.00")  # 21 weekdays, 10 weekend days
    assert all(d.actual_usd is None for d in forecast.days)
    assert forecast.method.startswith("The period has not started by 2025-02-28;")


def test_no_history_projects_nothing() -> None:
    forecast = forecast_period(
        {}, period_start=MARCH[0], period_end=MARCH[1], as_of=date(2025, 2, 1)
    )
    assert forecast.forecast_usd == forecast.high_usd == Decimal("0.00")
    assert "with no spend history" in forecast.method


def test_a_quarter_projects_all_its_days() -> None:
    spend = _weekly(date(2025, 1, 1), date(2025, 5, 14), "100", "20")
    start, end = period_bounds("quarter", date(2025, 5, 14))
    forecast = forecast_period(spend, period_start=start, period_end=end, as_of=date(2025, 5, 14))
    # April to June 2025: 65 weekdays and 26 weekend days.
    assert len(forecast.days) == 91
    assert forecast.forecast_usd == Decimal(65 * 100 + 26 * 20).quantize(Decimal("0.01"))


def test_an_inverted_period_is_refused() -> None:
    with pytest.raises(ValueError, match="period_end 2025-02-01 is before period_start 2025-03-01"):
        forecast_period({}, period_start=MARCH[0], period_end=date(2025, 2, 1), as_of=MARCH[0])


def test_data_starting_mid_period_is_projected_from_its_own_level() -> None:
    # A quarter whose data starts on 1 November at $100 every day: October is unknown, not a
    # month of $0 days, so December is projected at $100 a day: 30 × 100 + 31 × 100 = $6,100.
    daily = {date(2026, 11, 1) + timedelta(days=i): Decimal(100) for i in range(30)}
    forecast = forecast_period(
        daily,
        period_start=date(2026, 10, 1),
        period_end=date(2026, 12, 31),
        as_of=date(2026, 11, 30),
    )
    assert forecast.actual_usd == Decimal("3000.00")
    assert forecast.forecast_usd == Decimal("6100.00")
