"""Typed parsers for query parameters (and the CLI options that mirror them), so every page, CSV
export, API view and command refuses the same bad values the same way.

Each parser reads one parameter from a mapping (a QueryDict, DRF's ``query_params`` or a plain
dict) and returns a typed value, its default when the parameter is absent or blank, or raises
ParameterError naming the parameter and the value. Pages show the message and answer 400; the API
answers 400 with ``{"errors": {"<parameter>": ["<message>"]}}``; commands print it.

Why the bounds: dates outside EARLIEST_DATE..LATEST_DATE overflow date arithmetic (the last day
plus one, 29 days before the first), text with a NUL byte cannot be sent to PostgreSQL, and a
number like 1e308 or NaN has no meaning as a percentage.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Mapping
from datetime import date
from decimal import Decimal, InvalidOperation

from audit_app.lib.errors import DomainError

EARLIEST_DATE = date(2000, 1, 1)
LATEST_DATE = date(2100, 12, 31)
MAX_TEXT_LENGTH = 200
MAX_NUMBER_LENGTH = 40  # digits enough for any bound here; longer text is not a number we take
SHOWN_LENGTH = 40  # a long value is quoted by its start, so a message stays readable

_TRUE = ("1", "true")
_FALSE = ("0", "false")

QueryParams = Mapping[str, str]


class ParameterError(DomainError, ValueError):
    """A query parameter (or CLI option) with a value we refuse; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message, field=field)


def shown(value: str) -> str:
    """The value as quoted in a message: its repr (so control characters are visible), cut to
    its first SHOWN_LENGTH characters with the full length when it is longer."""
    if len(value) <= SHOWN_LENGTH:
        return repr(value)
    return f"{value[:SHOWN_LENGTH]!r}… ({len(value)} characters)"


def _raw(params: QueryParams, name: str) -> str:
    return (params.get(name) or "").strip()


def _refuse(name: str, raw: str, reason: str) -> ParameterError:
    return ParameterError(name, f"{name}={shown(raw)} {reason}")


def text_param(params: QueryParams, name: str) -> str:
    """Free text (a team, provider or model name): at most MAX_TEXT_LENGTH characters, no control
    characters (PostgreSQL refuses NUL; the others are never part of a name)."""
    raw = _raw(params, name)
    if len(raw) > MAX_TEXT_LENGTH:
        raise _refuse(name, raw, f"is longer than {MAX_TEXT_LENGTH} characters")
    if any(unicodedata.category(char) == "Cc" for char in raw):
        raise _refuse(name, raw, "contains a control character")
    return raw


def date_param(params: QueryParams, name: str) -> date | None:
    """A day, YYYY-MM-DD, between EARLIEST_DATE and LATEST_DATE; None when absent."""
    raw = _raw(params, name)
    if not raw:
        return None
    try:
        day = date.fromisoformat(raw) if len(raw) <= MAX_NUMBER_LENGTH else None
    except ValueError:
        day = None
    if day is None:
        raise _refuse(name, raw, "is not a date (use YYYY-MM-DD)")
    if not EARLIEST_DATE <= day <= LATEST_DATE:
        raise _refuse(name, raw, f"is outside {EARLIEST_DATE} to {LATEST_DATE}, the days we handle")
    return day


def choice_param(params: QueryParams, name: str, choices: Collection[str], *, default: str) -> str:
    """One of a fixed set of values; ``default`` when absent."""
    raw = _raw(params, name)
    if not raw:
        return default
    if raw not in choices:
        raise _refuse(name, raw, f"must be one of {', '.join(choices)}")
    return raw


def bool_param(params: QueryParams, name: str) -> bool:
    """``1``/``true`` is True; ``0``/``false`` or absent is False (any case)."""
    raw = _raw(params, name)
    value = raw.lower()
    if value in _TRUE:
        return True
    if not value or value in _FALSE:
        return False
    raise _refuse(name, raw, "must be 1, true, 0 or false")


def decimal_param(
    params: QueryParams, name: str, *, default: Decimal, minimum: Decimal, maximum: Decimal
) -> Decimal:
    """A finite decimal number between ``minimum`` and ``maximum``; ``default`` when absent."""
    raw = _raw(params, name)
    if not raw:
        return default
    try:
        value = Decimal(raw) if len(raw) <= MAX_NUMBER_LENGTH else None
    except InvalidOperation:
        value = None
    if value is None or not value.is_finite():
        raise _refuse(name, raw, "is not a number")
    if not minimum <= value <= maximum:
        raise _refuse(name, raw, f"must be between {minimum} and {maximum}")
    return value


def int_param(params: QueryParams, name: str, *, default: int, minimum: int, maximum: int) -> int:
    """A whole number between ``minimum`` and ``maximum`` (a page size, an offset);
    ``default`` when absent."""
    raw = _raw(params, name)
    if not raw:
        return default
    if len(raw) > MAX_NUMBER_LENGTH or not re.fullmatch(r"-?[0-9]+", raw):
        raise _refuse(name, raw, "is not a whole number")
    value = int(raw)
    if not minimum <= value <= maximum:
        raise _refuse(name, raw, f"must be between {minimum} and {maximum}")
    return value
