"""Shared pieces of the billing-export importers: the canonical line, its coercions, columns.

Its rules in full: `docs/formats.md`, section "Billing exports: what every importer shares".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from audit_app.ingestion.billing_exports.meters import ParsedMeter
from audit_app.ingestion.reading import (
    ImportFileError,
    RowReject,
    RowRejected,
    check_in_years,
    check_storable,
    inert_text,
    is_missing,
    missing_message,
    quoted,
    text,
)
from audit_app.ingestion.token_logs.coerce import parse_timestamp

PARQUET_MAGIC = b"PAR1"
ZERO = Decimal(0)

_US_DATE = re.compile(
    r"(?P<month>\d{1,2})/(?P<day>\d{1,2})/(?P<year>\d{4})"
    r"(?:[ T](?P<hour>\d{1,2}):(?P<minute>\d{2})(?::(?P<second>\d{2}))?\s*(?P<half>[AaPp][Mm])?)?"
)
_ISO_DATE = re.compile(r"(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})")
_BARE_NUMBER = re.compile(r"[+-]?\d+(\.\d*)?")
_CURRENCY = re.compile(r"[A-Za-z]{3}")


# ---------------------------------------------------------------------------------------------
# Data crossing layers
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class BillingLine:
    """One charge of a billing export, whatever format it came from."""

    line: int
    provider: str
    provider_raw: str
    service: str
    charge_category: str
    charge_class: str
    period_start: datetime
    period_end: datetime
    billed_cost: Decimal
    effective_cost: Decimal | None
    currency: str
    quantity: Decimal | None
    unit: str
    resource_id: str
    region: str
    account_id: str
    sku: str
    meter: ParsedMeter
    tags: dict[str, str]
    description: str
    billing_period_start: datetime
    billing_period_end: datetime
    billing_account: str
    # What a commitment (reservation / savings plan) line is: "used" (usage it covered),
    # "unused" (commitment nobody used), "purchase" (buying it), or "" (not a commitment
    # line). Azure cost details set it; it tells an amortized-cost export from an actual one.
    commitment: str = ""


_LINE_TEXTS = (
    "provider",
    "provider_raw",
    "service",
    "charge_category",
    "charge_class",
    "currency",
    "unit",
    "resource_id",
    "region",
    "account_id",
    "sku",
    "description",
    "billing_account",
    "commitment",
)
_METER_TEXTS = ("kind", "model", "token_class", "tier", "instance_type", "instance_family")


def check_line_storable(line: BillingLine) -> BillingLine:
    """The line, or a reject naming the first text it keeps that no database can store (a NUL
    character or a lone surrogate: `reading.check_storable`), as token logs are refused."""
    for name in _LINE_TEXTS:
        check_storable(getattr(line, name), field=name)
    for name in _METER_TEXTS:
        check_storable(getattr(line.meter, name), field=f"meter.{name}")
    for key, value in line.tags.items():
        check_storable(key, field="tags")
        check_storable(value, field=f"tags.{inert_text(key)}")
    return line


# The reject type both importer stacks share, under the name the billing stack's callers use.
BillingReject = RowReject


@dataclass(frozen=True, kw_only=True)
class BillingChunk:
    """Up to `chunk_rows` rows; `bytes_read` grows monotonically and ends at the file size."""

    lines: list[BillingLine]
    rejects: list[BillingReject]
    rows_read: int
    bytes_read: int


# ---------------------------------------------------------------------------------------------
# Coercions
# ---------------------------------------------------------------------------------------------


# No billing line is worth (or counts) more than this; larger values are garbage or overflow.
MAX_ABS_AMOUNT = Decimal(10) ** 15


def parse_amount(value: object, *, field: str) -> Decimal | None:
    """A finite Decimal, sign kept; None when missing. Floats go through `str` (0.1 stays 0.1)."""
    if is_missing(value):
        return None
    amount: Decimal | None
    if isinstance(value, bool):
        amount = None
    elif isinstance(value, Decimal):
        amount = value
    elif isinstance(value, int):
        amount = Decimal(value)
    elif isinstance(value, float):
        amount = Decimal(str(value))
    else:
        try:
            amount = Decimal(str(value).strip())
        except InvalidOperation:
            amount = None
    if amount is None or not amount.is_finite():
        raise RowRejected(
            field=field,
            value=value,
            reason=f"`{field}` must be a finite number, got {quoted(value)}.",
        )
    if abs(amount) > MAX_ABS_AMOUNT:
        raise RowRejected(
            field=field,
            value=value,
            reason=f"`{field}` is {quoted(value)}, beyond any real bill (over {MAX_ABS_AMOUNT:,}).",
        )
    return amount


def parse_period(value: object, *, field: str) -> datetime:
    """A timezone-aware UTC datetime (forms in the module docstring); missing is a reject."""
    if is_missing(value):
        raise RowRejected(field=field, value=value, reason=f"`{field}` is empty.")
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    try:
        moment = _period_from_text(str(value).strip())
    except (ValueError, OverflowError, RowRejected) as error:
        raise RowRejected(
            field=field,
            value=value,
            reason=f"`{field}` is not a date or timestamp: {quoted(value)}.",
        ) from error
    # Charge periods outside 2000-2099 are placeholders or typos.
    return check_in_years(moment, field=field, value=value)


@lru_cache(maxsize=16_384)
def _period_from_text(stripped: str) -> datetime:
    # Hourly and daily exports repeat the same few hundred period strings; failures raise and
    # are therefore never cached.
    us_date = _US_DATE.fullmatch(stripped)
    if us_date is not None:
        return _from_us_date(us_date)
    iso_date = _ISO_DATE.fullmatch(stripped)
    if iso_date is not None:
        return datetime(
            int(iso_date["year"]), int(iso_date["month"]), int(iso_date["day"]), tzinfo=UTC
        )
    if _BARE_NUMBER.fullmatch(stripped):
        raise ValueError("a bare number is not a billing date")
    moment = parse_timestamp(stripped, field="")
    if moment is None:
        raise ValueError("empty")
    return moment


def _from_us_date(match: re.Match[str]) -> datetime:
    hour = int(match["hour"] or "0")
    half = (match["half"] or "").lower()
    if half:
        if not 1 <= hour <= 12:
            raise ValueError("hour out of range for a 12-hour clock")
        hour = hour % 12 + (12 if half == "pm" else 0)
    return datetime(
        int(match["year"]),
        int(match["month"]),
        int(match["day"]),
        hour,
        int(match["minute"] or "0"),
        int(match["second"] or "0"),
        tzinfo=UTC,
    )


def parse_currency(value: object, *, field: str) -> str:
    """The 3-letter ISO code, upper-cased; anything else rejects the row."""
    code = text(value)
    if not code:
        raise RowRejected(field=field, value=value, reason=f"`{field}` is empty.")
    if _CURRENCY.fullmatch(code) is None:
        raise RowRejected(
            field=field,
            value=value,
            reason=f"`{field}` must be a 3-letter ISO currency code, got {quoted(value)}.",
        )
    return code.upper()


def parse_tag_object(value: object, *, field: str) -> dict[str, str]:
    """Tags as `dict[str, str]` from the spellings listed in the module docstring."""
    if is_missing(value):
        return {}
    pairs: Iterable[object]
    if isinstance(value, Mapping):
        pairs = value.items()
    elif isinstance(value, list | tuple):
        # A Parquet map column arrives as a list of (key, value) pairs.
        pairs = value
    else:
        pairs = _tag_pairs_from_text(str(value), field=field, value=value)
    tags: dict[str, str] = {}
    for pair in pairs:
        if isinstance(pair, Mapping) and "key" in pair:
            key, item = pair["key"], pair.get("value")
        elif isinstance(pair, list | tuple) and len(pair) == 2:
            key, item = pair
        else:
            raise RowRejected(
                field=field, value=value, reason=f"`{field}` is not a set of key/value tags."
            )
        tags[str(key)] = _tag_value(item)
    return tags


def _tag_pairs_from_text(raw: str, *, field: str, value: object) -> list[tuple[str, object]]:
    stripped = raw.strip()
    candidates = [stripped] if stripped.startswith("{") else [stripped, "{" + stripped + "}"]
    # Doubled quotes left over from CSV quoting applied twice: {""a"": ""b""}.
    candidates += [candidate.replace('""', '"') for candidate in candidates]
    for candidate in candidates:
        try:
            # object_pairs_hook keeps the pairs in file order; the dict keeps the last of a
            # duplicated key, as JSON parsers do.
            parsed = json.loads(candidate, object_pairs_hook=list, parse_float=Decimal)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(parsed, list) and all(
            isinstance(pair, tuple) and len(pair) == 2 for pair in parsed
        ):
            return parsed
    raise RowRejected(
        field=field, value=value, reason=f"`{field}` is not a JSON object of tags: {quoted(raw)}."
    )


def _tag_value(item: object) -> str:
    if item is None:
        return ""
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, str):
        return item
    if isinstance(item, int | float | Decimal):
        return str(item)
    if isinstance(item, list) and all(isinstance(pair, tuple) for pair in item):
        item = dict(item)
    return json.dumps(item, default=str)


# ---------------------------------------------------------------------------------------------
# Columns
# ---------------------------------------------------------------------------------------------


class ColumnIndex:
    """A file's column names, looked up case-insensitively."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        self._by_lower: dict[str, str] = {}
        for name in self.names:
            self._by_lower.setdefault(name.lower(), name)

    def find(self, *candidates: str) -> str | None:
        """The file's spelling of the first candidate it has, or None."""
        for candidate in candidates:
            name = self._by_lower.get(candidate.lower())
            if name is not None:
                return name
        return None


def require_columns(columns: ColumnIndex, *, where: str, required: Sequence[Sequence[str]]) -> None:
    """Each entry lists the accepted spellings of one column; name every one that is absent."""
    missing = [
        _column_with_alternatives(spellings)
        for spellings in required
        if columns.find(*spellings) is None
    ]
    if missing:
        raise ImportFileError(missing_message(where, noun="column", names=missing))


def _column_with_alternatives(spellings: Sequence[str]) -> str:
    """`Cost` alone, or `CostInBillingCurrency` (or `Cost`, `PreTaxCost`)."""
    first, *others = spellings
    if not others:
        return f"`{first}`"
    return f"`{first}` (or " + ", ".join(f"`{name}`" for name in others) + ")"


# ---------------------------------------------------------------------------------------------
# Helpers the format modules share
# ---------------------------------------------------------------------------------------------


def cell(fields: Mapping[str, object], column: str | None) -> object:
    """The record's value for a resolved column (None when the file has no such column)."""
    if column is None:
        return None
    return fields.get(column)


def first_cell_text(fields: Mapping[str, object], *columns: str | None) -> str:
    """The first non-missing value among resolved columns, as stripped text."""
    for column in columns:
        value = text(cell(fields, column))
        if value:
            return value
    return ""


def billed_amount(value: object, *, field: str) -> Decimal:
    """A billed cost: empty / NULL is 0 (see the module docstring), bad text rejects."""
    amount = parse_amount(value, field=field)
    return ZERO if amount is None else amount


def parse_period_pair(
    start_value: object, end_value: object, *, start_field: str, end_field: str
) -> tuple[datetime, datetime]:
    """A charge period: both ends required, the end (exclusive) not before the start."""
    start = parse_period(start_value, field=start_field)
    end = parse_period(end_value, field=end_field)
    if end < start:
        raise RowRejected(
            field=end_field,
            value=end_value,
            reason=(
                f"`{end_field}` ({end.isoformat()}) is before `{start_field}` "
                f"({start.isoformat()})."
            ),
        )
    return start, end


ONE_DAY = timedelta(days=1)


def billing_month(moment: datetime) -> tuple[datetime, datetime]:
    """The UTC calendar month holding `moment`: its first instant and the next month's."""
    utc = moment.astimezone(UTC)
    start = datetime(utc.year, utc.month, 1, tzinfo=UTC)
    end = datetime(utc.year + utc.month // 12, utc.month % 12 + 1, 1, tzinfo=UTC)
    return start, end


def parse_billing_period(
    start_value: object,
    end_value: object,
    *,
    start_field: str,
    end_field: str,
    charge_start: datetime,
    end_is_last_day: bool = False,
) -> tuple[datetime, datetime]:
    """A line's billing period from its own columns, else the calendar month of its charge.

    Both cells empty (or the file has neither column): `billing_month(charge_start)`. One
    empty, or text that is not a date, rejects the row naming the column: a wrong period
    would let this line replace another account's month. `end_is_last_day` reads an end that
    names the period's last day (Azure `9/30/2023`) as the exclusive midnight after it.
    """
    if is_missing(start_value) and is_missing(end_value):
        return billing_month(charge_start)
    start = parse_period(start_value, field=start_field)
    end = parse_period(end_value, field=end_field)
    if end_is_last_day:
        end = datetime(end.year, end.month, end.day, tzinfo=UTC) + ONE_DAY
    if end <= start:
        raise RowRejected(
            field=end_field,
            value=end_value,
            reason=(
                f"`{end_field}` ({end.isoformat()}) does not end after `{start_field}` "
                f"({start.isoformat()})."
            ),
        )
    return start, end
