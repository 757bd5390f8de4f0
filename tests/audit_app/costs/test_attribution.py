"""GPU pool cost attribution and idle cost, on hand-computed cases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from audit_app.costs.attribution import (
    attribute_pool,
    hours_of,
    round_to_cents,
    spread_over_hours,
)

H0 = datetime(2026, 11, 2, 0, tzinfo=UTC)
H = timedelta(hours=1)


def test_round_to_cents_keeps_the_total() -> None:
    # Three equal thirds of $1.00: 0.33 + 0.33 + 0.34 (the largest remainder ties go by key).
    thirds = {"a": Decimal(1) / 3, "b": Decimal(1) / 3, "c": Decimal(1) / 3}
    assert round_to_cents(thirds) == {
        "a": Decimal("0.34"),
        "b": Decimal("0.33"),
        "c": Decimal("0.33"),
    }
    amounts = {"x": Decimal("10.004"), "y": Decimal("0.006"), "z": Decimal("-2.5051")}
    rounded = round_to_cents(amounts)
    assert sum(rounded.values()) == Decimal("7.50")  # 10.004 + 0.006 - 2.5051 = 7.5049
    assert rounded == {"x": Decimal("10.00"), "y": Decimal("0.01"), "z": Decimal("-2.51")}
    assert round_to_cents({}) == {}


def test_hours_of_a_period() -> None:
    assert hours_of(H0, H0 + H) == [H0]
    assert hours_of(H0, H0 + 3 * H) == [H0, H0 + H, H0 + 2 * H]
    assert hours_of(H0 + timedelta(minutes=10), H0 + timedelta(minutes=20)) == [H0]


def test_a_daily_charge_is_spread_evenly() -> None:
    per_hour = spread_over_hours(
        [(H0, H0 + 24 * H, Decimal("24.00")), (H0 + 5 * H, H0 + 6 * H, Decimal("1.50"))]
    )
    assert len(per_hour) == 24
    assert per_hour[H0] == Decimal("1")
    assert per_hour[H0 + 5 * H] == Decimal("2.50")


def test_token_share_and_an_hour_with_no_traffic() -> None:
    # Hour 0: $98.32, chat 3,000 tokens and evals 1,000 -> 73.74 and 24.58.
    # Hour 1: $98.32, no traffic -> idle.
    # Hour 2: $98.32, evals only -> 98.32 to evals.
    cost = Decimal("98.32")
    result = attribute_pool(
        hourly_cost={H0: cost, H0 + H: cost, H0 + 2 * H: cost},
        hourly_tokens={H0: {"chat": 3000, "evals": 1000}, H0 + 2 * H: {"evals": 500}},
    )
    assert result.by_workload == {"evals": Decimal("122.90"), "chat": Decimal("73.74")}
    assert result.idle == Decimal("98.32")
    assert result.billed == Decimal("294.96")
    assert result.attributed + result.idle == result.billed
    assert (result.hours_billed, result.hours_with_traffic, result.tokens) == (3, 2, 4500)
    assert result.utilisation == pytest.approx(196.64 / 294.96)


def test_capacity_makes_part_of_a_busy_hour_idle() -> None:
    # $10 hour, capacity 10,000 tokens/h, 2,500 used: 25 % busy -> $2.50 to chat, $7.50 idle.
    result = attribute_pool(
        hourly_cost={H0: Decimal("10")},
        hourly_tokens={H0: {"chat": 2500}},
        capacity_tokens_per_hour=10_000,
    )
    assert result.by_workload == {"chat": Decimal("2.50")}
    assert result.idle == Decimal("7.50")
    # Over capacity counts as fully used, never more than the bill.
    over = attribute_pool(
        hourly_cost={H0: Decimal("10")},
        hourly_tokens={H0: {"chat": 50_000}},
        capacity_tokens_per_hour=10_000,
    )
    assert over.by_workload == {"chat": Decimal("10.00")} and over.idle == Decimal("0.00")


def test_books_balance_to_the_cent_on_awkward_amounts() -> None:
    hourly_cost = {H0 + i * H: Decimal("32.7726") for i in range(48)}
    hourly_tokens = {H0 + i * H: {"a": 7 + i, "b": 13, "c": (i % 5)} for i in range(0, 48, 2)}
    result = attribute_pool(hourly_cost=hourly_cost, hourly_tokens=hourly_tokens)
    assert result.billed == Decimal("1573.08")  # 48 x 32.7726 = 1573.0848
    assert result.attributed + result.idle == result.billed
    assert result.idle == Decimal("786.54")  # the 24 odd hours: 24 x 32.7726 = 786.5424
    # Daily amounts add up to the unrounded bill (Decimal division keeps 28 digits).
    exact = sum(v for day in result.daily.values() for v in day.values())
    assert abs(exact - Decimal("32.7726") * 48) < Decimal("1e-20")
