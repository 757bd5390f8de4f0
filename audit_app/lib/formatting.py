"""How numbers read on pages: money, per-unit prices, durations, percentages and counts.

Pure module (no Django); the template filters in ``audit_app.templatetags.formatting`` call it,
and so can views.

Its rules in full: `docs/architecture.md`, section "How numbers read".
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation, localcontext

DASH = "—"
MINUS = "−"  # U+2212, for percent changes

Number = Decimal | int | float | str | None

CENT = Decimal("0.01")
_CURRENCY_SYMBOLS = {"USD": "$"}
_UNIT_SIGNIFICANT = 3  # digits a price under a dollar keeps
_SUB_CENT_DECIMALS = 6
_SUB_CENT_MAX_DECIMALS = 12

# (shown below this many ms, divide by, decimals, unit), tried in order; hours take the rest.
_DURATION_STEPS: tuple[tuple[Decimal, Decimal, int, str], ...] = (
    (Decimal(1), Decimal(1), 2, "ms"),
    (Decimal(100), Decimal(1), 1, "ms"),
    (Decimal(1_000), Decimal(1), 0, "ms"),
    (Decimal(10_000), Decimal(1_000), 2, "s"),
    (Decimal(60_000), Decimal(1_000), 1, "s"),
    (Decimal(3_600_000), Decimal(60_000), 1, "min"),
)
_HOUR_MS = Decimal(3_600_000)


def to_decimal(value: Number) -> Decimal | None:
    """The value as a finite Decimal; None for None, a blank string, NaN and infinities.

    Raises ValueError naming the value when it is not a number at all.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a number")
    if isinstance(value, Decimal):
        number = value
    elif isinstance(value, int):
        number = Decimal(value)
    elif isinstance(value, float):
        number = Decimal(repr(value))  # the shortest decimal that reads back as this float
    elif isinstance(value, str):
        if not value.strip():
            return None  # a blank cell or a missing template variable: no value
        try:
            number = Decimal(value.strip().replace(",", ""))
        except InvalidOperation:
            raise ValueError(f"{value!r} is not a number") from None
    else:
        raise ValueError(f"{value!r} is not a number")
    return number if number.is_finite() else None


def _round(value: Decimal, decimals: int) -> Decimal:
    """``value`` rounded half-up to ``decimals`` places, exactly, however large it is."""
    with localcontext() as context:
        context.prec = max(value.adjusted(), 0) + decimals + 3
        rounded = value.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    return rounded if rounded else rounded.copy_abs()  # never "-0.00"


def _grouped(value: Decimal) -> str:
    """Fixed-point text with thousands separators (never exponent notation)."""
    return f"{value:,f}"


def _with_currency(magnitude: str, negative: bool, currency: str) -> str:
    code = (currency or "USD").upper()
    sign = "-" if negative else ""
    symbol = _CURRENCY_SYMBOLS.get(code)
    if symbol:
        return f"{sign}{symbol}{magnitude}"
    return f"{sign}{magnitude} {code}"


def money(value: Number, currency: str = "USD") -> str:
    """An amount in cents with thousands separators: ``$1,234.50``, ``-$12.00``, ``$0.00``.

    USD takes the dollar sign; other currencies are never converted, only named after the
    amount (``1,234.50 EUR``). A value that rounds to zero reads ``$0.00``, never ``-$0.00``.
    """
    number = to_decimal(value)
    if number is None:
        return DASH
    rounded = _round(number, 2)
    return _with_currency(_grouped(rounded.copy_abs()), rounded < 0, currency)


def money_unit(value: Number, currency: str = "USD") -> str:
    """A price per unit (token, 1K or 1M tokens): cents, with more digits only where cents
    would hide the price.

    From a dollar up: cents (``$2.50``, ``$15.37``). From a cent to a dollar: three significant
    digits, trailing zeros dropped down to cents (``$0.075``, ``$0.15``, ``$0.123``), since a
    $0.075 cached-input price is not $0.08. Below a cent: six decimals (``$0.000150``), or as
    many as three significant digits need, at most twelve (``$0.000000150`` per token).
    """
    number = to_decimal(value)
    if number is None:
        return DASH
    negative = number < 0
    magnitude = number.copy_abs()
    if not magnitude:
        return _with_currency("0.00", False, currency)
    if magnitude < CENT:
        rounded = _round(
            magnitude,
            min(max(_SUB_CENT_DECIMALS, _significant_decimals(magnitude)), _SUB_CENT_MAX_DECIMALS),
        )
        if rounded < CENT:
            return _with_currency(_grouped(rounded), negative and bool(rounded), currency)
        magnitude = rounded  # rounded up to a cent: read as one
    if magnitude < 1:
        rounded = _round(magnitude, max(2, _significant_decimals(magnitude)))
        if rounded < 1:
            whole, _, decimals = _grouped(rounded).partition(".")
            decimals = decimals.rstrip("0").ljust(2, "0")
            return _with_currency(f"{whole}.{decimals}", negative, currency)
    return _with_currency(_grouped(_round(magnitude, 2)), negative, currency)


def _significant_decimals(magnitude: Decimal) -> int:
    """Decimals that keep _UNIT_SIGNIFICANT significant digits of a value below 1."""
    # The first significant digit sits at decimal -adjusted().
    return -magnitude.adjusted() + _UNIT_SIGNIFICANT - 1


def duration(milliseconds: Number) -> str:
    """A duration given in milliseconds, in the unit its size calls for.

    ``0.35 ms`` (under 1 ms, 2 decimals), ``35.4 ms`` (under 100 ms, 1 decimal: a TPOT),
    ``850 ms`` (under 1 s), ``1.25 s`` (under 10 s, 2 decimals), ``12.3 s`` (under 1 min,
    1 decimal), ``3.4 min`` (under 1 h, 1 decimal), ``51.1 h`` (1 decimal, thousands
    separators). The unit is chosen after rounding, so 59,970 ms reads ``1.0 min``, not
    ``60.0 s``. Zero is ``0 ms``.
    """
    number = to_decimal(milliseconds)
    if number is None:
        return DASH
    sign = "-" if number < 0 else ""
    magnitude = number.copy_abs()
    if not _round(magnitude, 2):
        return "0 ms"
    for limit, divisor, decimals, unit in _DURATION_STEPS:
        shown = _round(magnitude / divisor, decimals)
        if shown * divisor < limit:
            return f"{sign}{_grouped(shown)} {unit}"
    return f"{sign}{_grouped(_round(magnitude / _HOUR_MS, 1))} h"


def percent(value: Number) -> str:
    """A percentage with one decimal: ``12.3 %``, ``−4.0 %``, ``1,250.0 %``."""
    number = to_decimal(value)
    if number is None:
        return DASH
    rounded = _round(number, 1)
    sign = MINUS if rounded < 0 else ""
    return f"{sign}{_grouped(rounded.copy_abs())} %"


def percent_change(value: Number) -> str:
    """A change in percent, always signed: ``+12.3 %``, ``−4.0 %``; ``0.0 %`` when it rounds to
    no change."""
    number = to_decimal(value)
    if number is None:
        return DASH
    rounded = _round(number, 1)
    sign = "+" if rounded > 0 else MINUS if rounded < 0 else ""
    return f"{sign}{_grouped(rounded.copy_abs())} %"


def count(value: Number) -> str:
    """A whole number with thousands separators: ``1,234,567``, ``-42``, ``0``; a fraction is
    rounded half-up first."""
    number = to_decimal(value)
    if number is None:
        return DASH
    rounded = _round(number, 0)
    sign = "-" if rounded < 0 else ""
    return f"{sign}{rounded.copy_abs():,.0f}"


def number(value: Number, decimals: int = 1) -> str:
    """A measure with thousands separators and ``decimals`` decimals (half-up): ``1,234.5``,
    ``-0.25`` with 2; ``0.0`` rather than ``-0.0``."""
    parsed = to_decimal(value)
    if parsed is None:
        return DASH
    rounded = _round(parsed, max(int(decimals), 0))
    sign = "-" if rounded < 0 else ""
    return f"{sign}{_grouped(rounded.copy_abs())}"


# Decimals a measured figure (milliseconds, tokens per second) keeps in the API, CSV and CLI.
METRIC_DECIMALS = 3


def metric(value: Number) -> float | None:
    """A measured figure as machine-readable output gives it: a float rounded half-up to
    ``METRIC_DECIMALS`` decimals (``322.15591150057884`` → ``322.156``); None for no value."""
    parsed = to_decimal(value)
    return None if parsed is None else float(_round(parsed, METRIC_DECIMALS))


def decimal_text(amount: Decimal) -> str:
    """Money as machine-readable output gives it: the Decimal exactly, as plain digits without
    an exponent or trailing zeros (``21.520226728990`` → ``21.52022672899``, ``1.81E-8`` →
    ``0.0000000181``, zero → ``0``); never through a float."""
    if amount == 0:
        return "0"
    return format(amount.normalize(), "f")


def money_json(amounts: Mapping[str, Decimal]) -> dict[str, str]:
    """Amounts per currency as ``decimal_text``, by currency code."""
    return {currency: decimal_text(amounts[currency]) for currency in sorted(amounts)}
