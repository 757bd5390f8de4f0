"""CSV cells: numbers rounded to at most six decimals, in plain fixed-point text."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest

from audit_app.lib.csv_export import csv_response, safe_cell


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Decimal("0.1234567890123456789012"), "0.123457"),  # 22 decimals -> 6, half-up
        (Decimal("1E-9"), "0"),  # never "1E-9"
        (Decimal("-1E-9"), "0"),  # never "-0"
        (Decimal("-0.0000005"), "-0.000001"),  # half-up away from zero, sign kept
        (Decimal("0.100000000"), "0.1"),  # a 9-decimal money field: no trailing zeros
        (Decimal("-12.50"), "-12.5"),
        (Decimal("1E+3"), "1000"),  # never "1E+3"
        (Decimal("98.320000"), "98.32"),
        (
            Decimal("123456789012345678901234567890.1234567"),
            "123456789012345678901234567890.123457",
        ),
        (Decimal("0"), "0"),
        (0.1 + 0.2, "0.3"),  # the float 0.30000000000000004
        (1 / 3, "0.333333"),
        (1e20, "100000000000000000000"),
        (1.5e-7, "0"),
        (float("nan"), ""),
        (Decimal("Infinity"), ""),
        (-5, "-5"),  # integers as they are
    ],
)
def test_numbers_have_at_most_six_decimals(value: object, text: str) -> None:
    assert str(safe_cell(value)) == text


def test_a_response_writes_the_rounded_numbers_and_neutralises_formulas() -> None:
    response = csv_response(
        filename="x.csv",
        header=["name", "amount", "share", "flagged"],
        rows=[["=cmd", Decimal("0.1234567890123456789012"), 0.1 + 0.2, True], ["b", None, 1e-7, 0]],
    )
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows == [
        ["name", "amount", "share", "flagged"],
        ["'=cmd", "0.123457", "0.3", "true"],
        ["b", "", "0", "0"],
    ]
    assert response["Content-Disposition"] == 'attachment; filename="x.csv"'
