"""The query-parameter parsers: typed values, defaults, and the exact message for each refusal."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from audit_app.lib.query_params import (
    ParameterError,
    bool_param,
    choice_param,
    date_param,
    decimal_param,
    int_param,
    shown,
    text_param,
)

LONG = "x" * 10_000
LONG_SHOWN = "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'… (10000 characters)"


def _refusal(parse: object, params: dict[str, str], *args: object, **kwargs: object) -> str:
    with pytest.raises(ParameterError) as caught:
        parse(params, *args, **kwargs)  # type: ignore[operator]
    return f"{caught.value.field}: {caught.value}"


def test_shown_quotes_short_values_and_cuts_long_ones() -> None:
    assert shown("a\x00b") == "'a\\x00b'"
    assert shown(LONG) == LONG_SHOWN


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2026-11-02", date(2026, 11, 2)),
        (" 2026-11-02 ", date(2026, 11, 2)),
        ("2000-01-01", date(2000, 1, 1)),
        ("2100-12-31", date(2100, 12, 31)),
        ("", None),
    ],
)
def test_date_param_reads_days_in_range(raw: str, expected: date | None) -> None:
    assert date_param({"end": raw}, "end") == expected


def test_date_param_absent_is_none() -> None:
    assert date_param({}, "end") is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("0001-01-01", "end='0001-01-01' is outside 2000-01-01 to 2100-12-31, the days we handle"),
        ("9999-12-31", "end='9999-12-31' is outside 2000-01-01 to 2100-12-31, the days we handle"),
        ("1999-12-31", "end='1999-12-31' is outside 2000-01-01 to 2100-12-31, the days we handle"),
        ("2101-01-01", "end='2101-01-01' is outside 2000-01-01 to 2100-12-31, the days we handle"),
        ("yesterday", "end='yesterday' is not a date (use YYYY-MM-DD)"),
        ("2026-02-30", "end='2026-02-30' is not a date (use YYYY-MM-DD)"),
        ("2026\x00-11-02", "end='2026\\x00-11-02' is not a date (use YYYY-MM-DD)"),
        (LONG, f"end={LONG_SHOWN} is not a date (use YYYY-MM-DD)"),
    ],
)
def test_date_param_refuses(raw: str, message: str) -> None:
    assert _refusal(date_param, {"end": raw}, "end") == f"end: {message}"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("web", "web"), ("  web ", "web"), ("", ""), ("équipe-ü", "équipe-ü"), ("x" * 200, "x" * 200)],
)
def test_text_param_reads_names(raw: str, expected: str) -> None:
    assert text_param({"team": raw}, "team") == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("web\x00", "team='web\\x00' contains a control character"),
        ("a\nb", "team='a\\nb' contains a control character"),
        ("a\x1bb", "team='a\\x1bb' contains a control character"),
        ("x" * 201, f"team='{'x' * 40}'… (201 characters) is longer than 200 characters"),
        (LONG, f"team={LONG_SHOWN} is longer than 200 characters"),
    ],
)
def test_text_param_refuses(raw: str, message: str) -> None:
    assert _refusal(text_param, {"team": raw}, "team") == f"team: {message}"


def test_choice_param() -> None:
    choices = ("provider", "model")
    assert choice_param({"stack": "model"}, "stack", choices, default="provider") == "model"
    assert choice_param({}, "stack", choices, default="provider") == "provider"
    assert choice_param({"stack": " "}, "stack", choices, default="provider") == "provider"
    assert (
        _refusal(choice_param, {"stack": "Model"}, "stack", choices, default="provider")
        == "stack: stack='Model' must be one of provider, model"
    )
    assert (
        _refusal(choice_param, {"stack": "a\x00"}, "stack", choices, default="provider")
        == "stack: stack='a\\x00' must be one of provider, model"
    )


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1", True), ("TRUE", True), ("true", True), ("0", False), ("False", False), ("", False)],
)
def test_bool_param(raw: str, expected: bool) -> None:
    assert bool_param({"flagged": raw}, "flagged") is expected


def test_bool_param_refuses() -> None:
    assert (
        _refusal(bool_param, {"flagged": "yes"}, "flagged")
        == "flagged: flagged='yes' must be 1, true, 0 or false"
    )


THRESHOLD = {"default": Decimal(10), "minimum": Decimal(0), "maximum": Decimal(100_000)}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("", Decimal(10)),
        ("12.5", Decimal("12.5")),
        ("0", Decimal(0)),
        ("100000", Decimal(100_000)),
        ("1e2", Decimal(100)),
    ],
)
def test_decimal_param(raw: str, expected: Decimal) -> None:
    assert decimal_param({"threshold": raw}, "threshold", **THRESHOLD) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("1e308", "threshold='1e308' must be between 0 and 100000"),
        ("-1", "threshold='-1' must be between 0 and 100000"),
        ("100000.01", "threshold='100000.01' must be between 0 and 100000"),
        ("nan", "threshold='nan' is not a number"),
        ("sNaN", "threshold='sNaN' is not a number"),
        ("inf", "threshold='inf' is not a number"),
        ("-Infinity", "threshold='-Infinity' is not a number"),
        ("lots", "threshold='lots' is not a number"),
        ("1" * 41, f"threshold='{'1' * 40}'… (41 characters) is not a number"),
    ],
)
def test_decimal_param_refuses(raw: str, message: str) -> None:
    refusal = _refusal(decimal_param, {"threshold": raw}, "threshold", **THRESHOLD)
    assert refusal == f"threshold: {message}"


PAGE_SIZE = {"default": 50, "minimum": 1, "maximum": 1000}


@pytest.mark.parametrize(("raw", "expected"), [("", 50), ("1", 1), ("1000", 1000), (" 7 ", 7)])
def test_int_param(raw: str, expected: int) -> None:
    assert int_param({"limit": raw}, "limit", **PAGE_SIZE) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("0", "limit='0' must be between 1 and 1000"),
        ("-1", "limit='-1' must be between 1 and 1000"),
        ("1001", "limit='1001' must be between 1 and 1000"),
        ("1e3", "limit='1e3' is not a whole number"),
        ("--5", "limit='--5' is not a whole number"),
        ("٣", "limit='٣' is not a whole number"),  # a digit, but not one we read
        ("9" * 41, f"limit='{'9' * 40}'… (41 characters) is not a whole number"),
    ],
)
def test_int_param_refuses(raw: str, message: str) -> None:
    assert _refusal(int_param, {"limit": raw}, "limit", **PAGE_SIZE) == f"limit: {message}"
