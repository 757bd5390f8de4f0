"""CSV downloads that are safe to open in a spreadsheet.

A text cell starting with ``=``, ``+``, ``-``, ``@`` (or a tab / carriage return) is read as a
formula by Excel and LibreOffice; such cells get a leading apostrophe (OWASP's advice). Numbers
are written as numbers, so a negative amount stays numeric.

Decimals and floats are rounded half-up to at most six decimal places and written in plain
fixed-point form without trailing zeros: ``0.1234567890123456789012`` is ``0.123457``, a money
column's ``0.100000000`` is ``0.1``, ``1E-9`` is ``0`` (never ``1E-9`` or ``-0``), ``1E+3`` is
``1000``. NaN and infinities are left blank, like a missing value.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from decimal import ROUND_HALF_UP, Decimal, localcontext

from django.http import HttpResponse

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
MAX_DECIMALS = 6


def number_cell(value: Decimal | float) -> Decimal | str:
    """A number rounded to at most MAX_DECIMALS places, as a Decimal whose text has no exponent
    and no trailing zeros ("" when it is not finite)."""
    number = Decimal(repr(value)) if isinstance(value, float) else value
    if not number.is_finite():
        return ""
    with localcontext() as context:
        context.prec = max(number.adjusted(), 0) + MAX_DECIMALS + 3
        rounded = number.quantize(Decimal(1).scaleb(-MAX_DECIMALS), rounding=ROUND_HALF_UP)
    if not rounded:
        return Decimal(0)
    text = f"{rounded:f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return Decimal(text)  # built from fixed-point text, so str() gives that text back


def safe_cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return value
    if isinstance(value, float | Decimal):
        return number_cell(value)
    text = str(value)
    if text.startswith(FORMULA_PREFIXES):
        return "'" + text
    return text


def csv_response(
    *, filename: str, header: Sequence[str], rows: Iterable[Sequence[object]]
) -> HttpResponse:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([safe_cell(h) for h in header])
    for row in rows:
        writer.writerow([safe_cell(cell) for cell in row])
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
