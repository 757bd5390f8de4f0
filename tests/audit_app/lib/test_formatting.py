"""Money, per-unit prices, durations, percentages and counts as they read on pages.

Every expected string is written by hand from the rules in `audit_app.lib.formatting`.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.template import Context, Template

from audit_app.lib.formatting import (
    count,
    decimal_text,
    duration,
    metric,
    money,
    money_json,
    money_unit,
    number,
    percent,
    percent_change,
)

HUGE = Decimal("123456789012345678901234567890.125")  # 30 integer digits: past the context's 28


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Decimal("1234.5"), "$1,234.50"),
        (Decimal("-12"), "-$12.00"),
        (0, "$0.00"),
        (Decimal("0"), "$0.00"),
        (None, "—"),
        ("", "—"),
        (Decimal("0.1234567890123456789012"), "$0.12"),  # 22 decimals, half-up at the cent
        (Decimal("0.005"), "$0.01"),  # half-up, not half-even
        (Decimal("-0.004"), "$0.00"),  # rounds to zero: no "-$0.00"
        (Decimal("1E-9"), "$0.00"),
        (0.1 + 0.2, "$0.30"),  # the float 0.30000000000000004
        (1234567.891, "$1,234,567.89"),
        (HUGE, "$123,456,789,012,345,678,901,234,567,890.13"),
        (HUGE.copy_negate(), "-$123,456,789,012,345,678,901,234,567,890.13"),
        (Decimal("1E+30"), "$1,000,000,000,000,000,000,000,000,000,000.00"),
        ("98.32", "$98.32"),
        (float("nan"), "—"),
        (float("inf"), "—"),
        (Decimal("NaN"), "—"),
    ],
)
def test_money(value: Any, expected: str) -> None:
    assert money(value) == expected


def test_money_in_another_currency_names_it_after_the_amount() -> None:
    assert money(Decimal("-1234.5"), "eur") == "-1,234.50 EUR"
    assert money(Decimal("7"), "USD") == "$7.00"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Decimal("0.00015"), "$0.000150"),  # $0.15 per 1M tokens, per 1K tokens
        (Decimal("0.0025"), "$0.002500"),
        (Decimal("0.00000015"), "$0.000000150"),  # $0.15 per 1M tokens, per token
        (Decimal("0.000001234567"), "$0.00000123"),  # three significant digits: 8 decimals
        (Decimal("1E-9"), "$0.00000000100"),  # 11 decimals
        (Decimal("1E-15"), "$0.000000000000"),  # past twelve decimals: rounds to zero
        (Decimal("0.0099999999"), "$0.01"),  # rounds up to a cent: read as one
        (Decimal("0.075"), "$0.075"),  # a cached-input price per 1M, not $0.08
        (Decimal("0.15"), "$0.15"),
        (Decimal("0.1234567890123456789012"), "$0.123"),  # three significant digits
        (Decimal("0.9996"), "$1.00"),
        (Decimal("2.5"), "$2.50"),  # from a dollar up: cents
        (Decimal("15.367478"), "$15.37"),
        (Decimal("15.000000"), "$15.00"),
        (Decimal("1234.5678"), "$1,234.57"),
        (Decimal("-0.00015"), "-$0.000150"),
        (Decimal("-1E-15"), "$0.000000000000"),  # no sign on a zero
        (0, "$0.00"),
        (None, "—"),
        (1.5e-07, "$0.000000150"),  # a float, read through its shortest repr
    ],
)
def test_money_unit(value: Any, expected: str) -> None:
    assert money_unit(value) == expected


@pytest.mark.parametrize(
    ("milliseconds", "expected"),
    [
        (None, "—"),
        (0, "0 ms"),
        (0.004, "0 ms"),  # rounds to 0.00 ms
        (0.35, "0.35 ms"),
        (7.5, "7.5 ms"),
        (9.96, "10.0 ms"),
        (35.37255, "35.4 ms"),  # a TPOT
        (99.96, "100 ms"),  # 100.0 would not be under 100 ms: whole milliseconds
        (850, "850 ms"),
        (999.4, "999 ms"),
        (999.6, "1.00 s"),  # 1000 ms once rounded: seconds
        (1250, "1.25 s"),
        (12345, "12.3 s"),
        (59_970, "1.0 min"),  # 60.0 s once rounded: minutes
        (204_000, "3.4 min"),
        (3_063_633, "51.1 min"),  # 3,063.633 s / 60 = 51.06 min
        (3_599_999, "1.0 h"),  # 60.0 min once rounded: hours
        (183_960_000, "51.1 h"),  # 183,960 s / 3,600 = 51.1 h
        (Decimal("3600000000000"), "1,000,000.0 h"),
        (-1500, "-1.50 s"),
        (Decimal("12.3456789012345678901234"), "12.3 ms"),
        (float("nan"), "—"),
    ],
)
def test_duration(milliseconds: Any, expected: str) -> None:
    assert duration(milliseconds) == expected


@pytest.mark.parametrize(
    ("value", "plain", "signed"),
    [
        (Decimal("12.34"), "12.3 %", "+12.3 %"),
        (Decimal("12.35"), "12.4 %", "+12.4 %"),  # half-up
        (-4, "−4.0 %", "−4.0 %"),
        (0, "0.0 %", "0.0 %"),
        (Decimal("-0.04"), "0.0 %", "0.0 %"),  # rounds to no change: no sign
        (Decimal("33.33333333333333333333333"), "33.3 %", "+33.3 %"),
        (1234.5, "1,234.5 %", "+1,234.5 %"),
        (None, "—", "—"),
    ],
)
def test_percent(value: Any, plain: str, signed: str) -> None:
    assert (percent(value), percent_change(value)) == (plain, signed)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, "0"),
        (1234567, "1,234,567"),
        (-42, "-42"),
        (Decimal("1234.5"), "1,235"),
        (Decimal("0.1234567890123456789012"), "0"),
        (10**24, "1,000,000,000,000,000,000,000,000"),
        (None, "—"),
    ],
)
def test_count(value: Any, expected: str) -> None:
    assert count(value) == expected


@pytest.mark.parametrize(
    ("value", "decimals", "expected"),
    [
        (1234.56, 1, "1,234.6"),
        (Decimal("0.125"), 2, "0.13"),  # half-up
        (Decimal("-0.004"), 2, "0.00"),  # no "-0.00"
        (Decimal("-2.5"), 0, "-3"),
        (Decimal("0.1234567890123456789012"), 3, "0.123"),
        (HUGE, 1, "123,456,789,012,345,678,901,234,567,890.1"),
        (None, 1, "—"),
    ],
)
def test_number(value: Any, decimals: int, expected: str) -> None:
    assert number(value, decimals) == expected


def test_a_value_that_is_not_a_number_is_named() -> None:
    with pytest.raises(ValueError, match="'lots' is not a number"):
        money("lots")
    with pytest.raises(ValueError, match="True is not a number"):
        count(True)


def test_template_filters() -> None:
    template = Template(
        "{% load formatting %}{{ a|money }}|{{ a|money:'EUR' }}|{{ p|money_unit }}|"
        "{{ ms|duration }}|{{ share|percent }}|{{ change|percent_change }}|{{ n|count }}|"
        "{{ missing|money }}|{{ text|money }}|{{ rate|number:1 }}|{{ rate|number }}"
    )
    context = Context(
        {
            "a": Decimal("1234.5"),
            "p": Decimal("0.00015"),
            "ms": 3_063_633,
            "share": Decimal("12.34"),
            "change": -4,
            "n": 1234567,
            "text": "n/a",
            "rate": 1234.56,
        }
    )
    assert template.render(context) == (
        "$1,234.50|1,234.50 EUR|$0.000150|51.1 min|12.3 %|−4.0 %|1,234,567|—|n/a|1,234.6|1,234.6"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (322.15591150057884, 322.156),
        (0.0005, 0.001),  # half-up, where round() on the float would give 0.0
        (2.0, 2.0),
        ("1950.0004", 1950.0),
        (None, None),
        (float("nan"), None),
    ],
)
def test_metric_rounds_half_up_to_three_decimals(value: object, expected: float | None) -> None:
    assert metric(value) == expected  # type: ignore[arg-type]


def test_hourly_rates_read_in_cents() -> None:
    assert money_unit(Decimal("21.500000")) + "/hour" == "$21.50/hour"
    assert money(Decimal("196130.00")) == "$196,130.00"


@pytest.mark.parametrize(
    ("amount", "text"),
    [
        (Decimal("21.520226728990"), "21.52022672899"),
        (Decimal("8.5450077867419368"), "8.5450077867419368"),
        (Decimal("0E-12"), "0"),
        (Decimal("-0.000"), "0"),
        (Decimal("100.000000000000"), "100"),
        (Decimal("-50.50"), "-50.5"),
        (Decimal("1.81E-8"), "0.0000000181"),
        (Decimal("1.2E+3"), "1200"),
    ],
)
def test_decimal_text_is_the_amount_exactly_in_plain_digits(amount: Decimal, text: str) -> None:
    assert decimal_text(amount) == text


def test_money_json_orders_currencies() -> None:
    amounts = {"USD": Decimal("1.50"), "EUR": Decimal("2.000")}
    assert list(money_json(amounts).items()) == [("EUR", "2"), ("USD", "1.5")]
