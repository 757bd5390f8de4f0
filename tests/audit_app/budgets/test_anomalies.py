"""Spend anomalies and their cause (audit_app/budgets/anomalies.py), on hand-computed cases."""

from __future__ import annotations

import random
from datetime import date, timedelta
from decimal import Decimal
from fractions import Fraction
from itertools import permutations

import pytest

from audit_app.budgets.anomalies import Cause, DayUsage, decompose, detect

D0 = date(2025, 3, 3)  # a Monday
WEEK = timedelta(days=7)


def _usage(requests: int, tokens: int, spend: str, day: date = D0) -> DayUsage:
    return DayUsage(day=day, requests=requests, tokens=tokens, spend_usd=Decimal(spend))


def _total(cause: Cause) -> Decimal:
    return cause.volume_usd + cause.mix_usd + cause.price_usd


def _shapley_by_orders(before: DayUsage, after: DayUsage) -> tuple[Fraction, ...]:
    """The second method: change the three factors one at a time in each of the 6 orders."""
    start = (
        Fraction(before.requests),
        Fraction(before.tokens, before.requests),
        Fraction(before.spend_usd) / before.tokens,
    )
    end = (
        Fraction(after.requests),
        Fraction(after.tokens, after.requests),
        Fraction(after.spend_usd) / after.tokens,
    )
    shares = [Fraction(0)] * 3
    for order in permutations(range(3)):
        current = list(start)
        for index in order:
            was = current[0] * current[1] * current[2]
            current[index] = end[index]
            shares[index] += (current[0] * current[1] * current[2] - was) / 6
    return tuple(shares)


def test_the_three_causes_split_a_change_by_hand() -> None:
    # 100 requests × 1,000 tokens × $0.0001 = $10 → 200 × 1,200 × $0.00015 = $36.
    # Volume: 100 × ((1000·0.0001 + 1200·0.00015)/3 + (1000·0.00015 + 1200·0.0001)/6) = 13.8333…
    # Mix: 200 × ((100·0.0001 + 200·0.00015)/3 + (100·0.00015 + 200·0.0001)/6) = 3.8333…
    # Price: 0.00005 × ((100·1000 + 200·1200)/3 + (100·1200 + 200·1000)/6) = 8.3333…
    expected, actual = _usage(100, 100_000, "10"), _usage(200, 240_000, "36")
    assert _shapley_by_orders(expected, actual) == (
        Fraction(83, 6),
        Fraction(23, 6),
        Fraction(25, 3),
    )
    # Each is a third of a cent over; the cent left goes by largest remainder, ties by name.
    cause = decompose(expected, actual)
    assert cause == Cause(
        volume_usd=Decimal("13.83"), mix_usd=Decimal("3.84"), price_usd=Decimal("8.33")
    )
    assert _total(cause) == Decimal("26")


def test_the_causes_sum_exactly_to_the_change() -> None:
    draw = random.Random(16)
    for _ in range(500):
        expected = DayUsage(
            day=D0,
            requests=draw.randint(0, 5_000),
            tokens=draw.randint(0, 5_000_000),
            spend_usd=Decimal(draw.randint(0, 10**8)) / 10**6,
        )
        actual = DayUsage(
            day=D0,
            requests=draw.randint(0, 5_000),
            tokens=draw.randint(0, 5_000_000),
            spend_usd=Decimal(draw.randint(0, 10**8)) / 10**6,
        )
        cause = decompose(expected, actual)
        assert _total(cause) == actual.spend_usd - expected.spend_usd
        if min(expected.requests, expected.tokens, actual.requests, actual.tokens) > 0:
            exact = _shapley_by_orders(expected, actual)
            parts = (cause.volume_usd, cause.mix_usd, cause.price_usd)
            for part, share in zip(parts, exact, strict=True):
                assert abs(Fraction(part) - share) <= Fraction(1, 100)


def test_five_times_the_requests_is_all_volume() -> None:
    cause = decompose(_usage(100, 100_000, "10.00"), _usage(500, 500_000, "50.00"))
    assert cause == Cause(
        volume_usd=Decimal("40.00"), mix_usd=Decimal("0.00"), price_usd=Decimal("0.00")
    )


def test_longer_prompts_at_the_same_price_are_all_mix() -> None:
    cause = decompose(_usage(100, 100_000, "10.00"), _usage(100, 250_000, "25.00"))
    assert cause == Cause(
        volume_usd=Decimal("0.00"), mix_usd=Decimal("15.00"), price_usd=Decimal("0.00")
    )


def test_a_new_price_at_the_same_volume_and_mix_is_all_price() -> None:
    # A change of more digits than cents stays exact: the part of a cent goes to the price.
    cause = decompose(_usage(100, 100_000, "10"), _usage(100, 100_000, "13.337"))
    assert cause == Cause(
        volume_usd=Decimal("0.00"), mix_usd=Decimal("0.00"), price_usd=Decimal("3.337")
    )


def test_a_day_from_or_to_nothing_is_all_volume() -> None:
    nothing = _usage(0, 0, "0")
    day = _usage(200, 240_000, "36")
    assert decompose(nothing, day) == Cause(
        volume_usd=Decimal("36.00"), mix_usd=Decimal("0.00"), price_usd=Decimal("0.00")
    )
    assert decompose(day, nothing) == Cause(
        volume_usd=Decimal("-36.00"), mix_usd=Decimal("0.00"), price_usd=Decimal("0.00")
    )


def test_spend_without_tokens_counts_as_price() -> None:
    # 10 requests that failed (no tokens) but cost $2 → the same 10 with 10,000 tokens at $5.
    # Expected side: mix 0, price borrowed ($5 / 10,000); it models $0, so its $2 is unexplained.
    # Volume is 0 (same requests); mix takes the whole modeled $5; price: 0 − 2 = −2.
    cause = decompose(_usage(10, 0, "2"), _usage(10, 10_000, "5"))
    assert cause == Cause(
        volume_usd=Decimal("0.00"), mix_usd=Decimal("5.00"), price_usd=Decimal("-2.00")
    )


def test_negative_counts_are_refused_naming_the_day() -> None:
    with pytest.raises(ValueError, match="requests and tokens of 2025-03-03 cannot be negative"):
        decompose(_usage(-1, 0, "0"), _usage(1, 1, "1"))


def _weeks_of_traffic(weeks: int) -> list[DayUsage]:
    """A workload with a weekly batch job: weekdays of ~1,000 requests of 1,000 tokens at $0.01
    per 1,000 tokens (~$10), Saturdays idle, and every Sunday a batch ten times that."""
    wobble = [1000, 1020, 980, 1040, 1010, 990, 1030, 970]
    series = []
    for week in range(weeks):
        for weekday in range(7):
            day = D0 + WEEK * week + timedelta(days=weekday)
            requests = wobble[(week + weekday) % len(wobble)]
            if weekday == 5:
                continue
            if weekday == 6:
                requests *= 10
            series.append(
                DayUsage(
                    day=day,
                    requests=requests,
                    tokens=requests * 1_000,
                    spend_usd=Decimal(requests) / 100,
                )
            )
    return series


def test_a_weekly_batch_job_is_not_an_anomaly() -> None:
    series = _weeks_of_traffic(8)
    sundays = [usage for usage in series if usage.day.weekday() == 6]
    weekdays = [usage for usage in series if usage.day.weekday() < 5]
    assert min(u.spend_usd for u in sundays) >= 9 * max(u.spend_usd for u in weekdays)
    assert detect(series) == []


def test_a_planted_five_times_volume_day_is_an_anomaly() -> None:
    series = _weeks_of_traffic(8)
    planted = D0 + WEEK * 6 + timedelta(days=2)  # a Wednesday
    # Its references, the four Wednesdays before (weeks 2..5): wobble[4..7] = 1010, 990, 1030,
    # 970 requests: medians 1,000 requests, 1,000,000 tokens, $10.00; MAD $0.20 → spread
    # max(1.4826 × 0.20, 10 % of $10) = $1.00.
    index = next(i for i, usage in enumerate(series) if usage.day == planted)
    series[index] = DayUsage(
        day=planted, requests=5_000, tokens=5_000_000, spend_usd=Decimal("50.00")
    )
    [anomaly] = detect(series)
    assert anomaly.day == planted
    assert (anomaly.spend_usd, anomaly.expected_usd) == (Decimal("50.00"), Decimal("10.00"))
    assert anomaly.score == pytest.approx(40.0)
    assert anomaly.expected == DayUsage(
        day=planted, requests=1_000, tokens=1_000_000, spend_usd=Decimal("10.00")
    )
    assert anomaly.cause == Cause(
        volume_usd=Decimal("40.00"), mix_usd=Decimal("0.00"), price_usd=Decimal("0.00")
    )
    # Outside [start, end] it is not reported.
    assert detect(series, start=planted + timedelta(days=1)) == []
    assert detect(series, end=planted - timedelta(days=1)) == []
    assert [a.day for a in detect(series, start=planted, end=planted)] == [planted]


def test_a_spread_is_floored_so_a_flat_series_keeps_its_cents() -> None:
    flat = [_usage(100, 100_000, "20.00", D0 + WEEK * week) for week in range(5)]
    # MAD 0; the floor is 10 % of $20 = $2: $26 scores 3.0 (not enough), $27 scores 3.5.
    nudged = [*flat[:4], _usage(100, 100_000, "26.00", flat[4].day)]
    assert detect(nudged) == []
    jumped = [*flat[:4], _usage(100, 100_000, "27.00", flat[4].day)]
    [anomaly] = detect(jumped)
    assert anomaly.score == pytest.approx(3.5)
    assert anomaly.cause.price_usd == Decimal("7.00")


def test_a_small_workloads_threefold_day_is_an_anomaly_and_small_money_is_not() -> None:
    base = [_usage(10, 10_000, "0.10", D0 + WEEK * week) for week in range(4)]
    # From $0.10 to $0.30: three times its usual (the spread is the 1-cent floor: score 20),
    # $0.20 over it, above the $0.05 floor though far under $1.
    [anomaly] = detect([*base, _usage(30, 30_000, "0.30", D0 + WEEK * 4)])
    assert (anomaly.spend_usd, anomaly.score) == (Decimal("0.30"), pytest.approx(20.0))
    assert anomaly.cause.volume_usd == Decimal("0.20")
    # Three times the tokens per request at the usual requests and price: all of it is mix.
    [anomaly] = detect([*base, _usage(10, 30_000, "0.30", D0 + WEEK * 4)])
    assert (anomaly.cause.mix_usd, anomaly.cause.volume_usd) == (Decimal("0.20"), Decimal(0))
    # $0.29 is under three times $0.10 and under $1 over it: not an anomaly, whatever its score.
    assert detect([*base, _usage(29, 29_000, "0.29", D0 + WEEK * 4)]) == []
    # A raised absolute floor (the ANOMALY_MIN_USD setting) hides it.
    assert detect([*base, _usage(30, 30_000, "0.30", D0 + WEEK * 4)], min_usd=Decimal("0.25")) == []
    # Under the default floor ($0.05): $0.01 to $0.04 is four times, but 3 cents.
    cents = [_usage(1, 1_000, "0.01", D0 + WEEK * week) for week in range(4)]
    assert detect([*cents, _usage(4, 4_000, "0.04", D0 + WEEK * 4)]) == []
    # A large workload: $1 or more over its usual counts without tripling.
    big = [_usage(1000, 1_000_000, "100", D0 + WEEK * week) for week in range(4)]
    assert [a.day for a in detect([*big, _usage(1500, 1_500_000, "150", D0 + WEEK * 4)])] == [
        D0 + WEEK * 4
    ]
    # A bursty series (references $0, $0, $0.10, $0.20: expected $0.05, spread $0.07) is not
    # steady: its $0.40 day (score 4.7) is no anomaly although it is eight times the median.
    bursty = [
        _usage(n, n * 1_000, f"{n / 100:.2f}", D0 + WEEK * w) for w, n in enumerate((0, 0, 10, 20))
    ]
    assert detect([*bursty, _usage(40, 40_000, "0.40", D0 + WEEK * 4)]) == []
    # Drops are not anomalies.
    assert detect([*big, _usage(10, 10_000, "1", D0 + WEEK * 4)]) == []


def test_a_day_needs_two_known_references() -> None:
    # The series starts on D0: D0 + 1 week has one reference and is not judged; after two it is.
    series = [_usage(100, 100_000, "10", D0), _usage(900, 900_000, "90", D0 + WEEK)]
    assert detect(series) == []
    series.append(_usage(900, 900_000, "90", D0 + WEEK * 2))  # references: $10 and $90
    assert detect(series) == []  # median $50, MAD $40: spread $59.30, score 0.67
    series = [_usage(100, 100_000, "10", D0 + WEEK * w) for w in range(2)]
    series.append(_usage(900, 900_000, "90", D0 + WEEK * 2))
    assert [a.day for a in detect(series)] == [D0 + WEEK * 2]


def test_a_missing_reference_day_is_a_zero_day() -> None:
    # Mondays at $10 for three weeks, nothing the fourth, then $10: references $10, $10, $10,
    # $0 → median $10, not anomalous; a week later references $10, $10, $0, $10 again.
    series = [_usage(100, 100_000, "10", D0 + WEEK * w) for w in (0, 1, 2, 4, 5)]
    assert detect(series) == []
    # Four zero references, then $5: a workload waking up; spread is the 1-cent floor.
    series = [_usage(1, 1_000, "0.01", D0), _usage(500, 500_000, "5", D0 + WEEK * 5)]
    [anomaly] = detect(series)
    assert anomaly.expected_usd == Decimal("0") and anomaly.cause.volume_usd == Decimal("5.00")


def test_bad_series_are_refused() -> None:
    with pytest.raises(ValueError, match="the series holds 2025-03-03 twice"):
        detect([_usage(1, 1, "1"), _usage(2, 2, "2")])
    with pytest.raises(ValueError, match="weeks must be at least 1, not 0"):
        detect([], weeks=0)
