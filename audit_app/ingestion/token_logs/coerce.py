"""Coercions of one token-log value, shared by every token-log importer.

Each takes a raw value (text, number) or one already coerced (passed through unchanged) and
the name of its field in the file, returns the canonical value (None when missing) and raises
`RowRejected` naming the field for a value it cannot read. The conventions (timestamps, token
counts) are in `token_logs.base`'s docstring.
"""

from __future__ import annotations

import ast
import json
import re
from datetime import UTC, datetime, timedelta, timezone
from decimal import ROUND_FLOOR, Decimal, InvalidOperation

from audit_app.ingestion.reading import RowRejected, check_in_years, is_missing, quoted, text

MAX_TOKENS_PER_REQUEST = 10_000_000
# A single request costing more than this is a unit mistake or garbage, never a real bill.
MAX_COST_PER_REQUEST = Decimal(100_000)

STATUS_SUCCESS = "success"
STATUS_ERROR = "error"

SUCCESS_WORDS = frozenset({"success", "succeeded", "ok", "completed"})
ERROR_WORDS = frozenset({"error", "failure", "failed", "fail"})
TRUE_WORDS = frozenset({"true", "t", "yes", "y", "1", "on"})
FALSE_WORDS = frozenset({"false", "f", "no", "n", "0", "off"})
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Nanoseconds since the epoch that a datetime can still hold (the year 9999 is 2.5e20).
_MAX_UNIX_NANOS = 10**20

_ISO_TIMESTAMP = re.compile(
    r"(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})[T ]"
    r"(?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:[.,](?P<fraction>\d+))?)?"
    r"\s*(?P<zone>Z|UTC|[+-]\d{2}(?::?\d{2})?)?",
    re.IGNORECASE,
)
_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def first_text(*values: object) -> str:
    """The first non-missing value as text, "" when all are missing."""
    for value in values:
        candidate = text(value)
        if candidate:
            return candidate
    return ""


def _finite_decimal(value: object) -> Decimal | None:
    """The value as a Decimal, or None when it is not a number at all.

    Floats go through `str` so 0.1 stays 0.1 instead of its binary expansion.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, Decimal):
        return value
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, str):
        stripped = value.strip()
        try:
            return Decimal(stripped)
        except InvalidOperation:
            return None
    return None


def parse_token_count(value: object, *, field: str) -> int | None:
    """A whole, non-negative, plausible token count; None when missing."""
    if type(value) is int and 0 <= value <= MAX_TOKENS_PER_REQUEST:
        return value  # already a count (OTLP's intValue): what the checks below would return
    if is_missing(value):
        return None
    number = _finite_decimal(value)
    if number is None:
        raise RowRejected(
            field=field, value=value, reason=f"`{field}` is not a number: {quoted(value)}."
        )
    if not number.is_finite():
        raise RowRejected(
            field=field,
            value=value,
            reason=f"`{field}` must be a finite number, got {quoted(value)}.",
        )
    if number < 0:
        raise RowRejected(
            field=field, value=value, reason=f"`{field}` cannot be negative, got {quoted(value)}."
        )
    if number != number.to_integral_value():
        raise RowRejected(
            field=field,
            value=value,
            reason=f"`{field}` must be a whole number of tokens, got {quoted(value)}.",
        )
    if number > MAX_TOKENS_PER_REQUEST:
        raise RowRejected(
            field=field,
            value=value,
            reason=(
                f"`{field}` is {quoted(value)}, above the limit of {MAX_TOKENS_PER_REQUEST} "
                "tokens per request."
            ),
        )
    return int(number)


def parse_cost(value: object, *, field: str) -> Decimal | None:
    """A non-negative USD amount as Decimal; None when missing."""
    if is_missing(value):
        return None
    amount = _finite_decimal(value)
    if amount is None or not amount.is_finite():
        raise RowRejected(
            field=field,
            value=value,
            reason=f"`{field}` must be a finite amount of money, got {quoted(value)}.",
        )
    if amount < 0:
        raise RowRejected(
            field=field, value=value, reason=f"`{field}` cannot be negative, got {quoted(value)}."
        )
    if amount > MAX_COST_PER_REQUEST:
        raise RowRejected(
            field=field,
            value=value,
            reason=f"`{field}` is {quoted(value)}, above the limit of "
            f"${MAX_COST_PER_REQUEST} per request.",
        )
    return amount


def parse_bool(value: object, *, field: str) -> bool | None:
    """true/false, yes/no, 1/0 and friends; None when missing."""
    if is_missing(value):
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int | Decimal) and value in (0, 1):
        return bool(value)
    word = str(value).strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise RowRejected(
        field=field, value=value, reason=f"`{field}` is not true or false: {quoted(value)}."
    )


def parse_status(value: object, *, field: str) -> str:
    """Collapse the status words of the formats (and HTTP codes) to "success" or "error"."""
    if is_missing(value):
        return STATUS_SUCCESS
    word = str(value).strip().lower()
    if word in SUCCESS_WORDS:
        return STATUS_SUCCESS
    if word in ERROR_WORDS:
        return STATUS_ERROR
    if word.isdigit() and len(word) == 3:
        return STATUS_ERROR if int(word) >= 400 else STATUS_SUCCESS
    raise RowRejected(
        field=field,
        value=value,
        reason=f"`{field}` is not a known status (success or error): {quoted(value)}.",
    )


def _timestamp_from_epoch(number: Decimal) -> datetime:
    """Epoch seconds, ms, µs or ns, told apart by magnitude (1e11 s is the year 5138)."""
    magnitude = abs(number)
    if magnitude < Decimal("1e11"):
        seconds = number
    elif magnitude < Decimal("1e14"):
        seconds = number / 1_000
    elif magnitude < Decimal("1e17"):
        seconds = number / 1_000_000
    elif magnitude < Decimal("1e20"):
        seconds = number / 1_000_000_000
    else:
        raise ValueError("epoch number too large")
    # Cut, not rounded, like the fraction of an ISO string, so both spellings of one instant
    # give the same datetime.
    microseconds = int((seconds * 1_000_000).to_integral_value(rounding=ROUND_FLOOR))
    return EPOCH + timedelta(microseconds=microseconds)


def _timestamp_from_text(value: str) -> datetime:
    match = _ISO_TIMESTAMP.fullmatch(value)
    if match is None:
        raise ValueError("not an ISO 8601 timestamp")
    # Fractions beyond microseconds (ns from Go or .NET writers) are cut: datetime cannot hold
    # them and a sub-microsecond difference changes no latency bin.
    fraction = (match["fraction"] or "").ljust(6, "0")[:6]
    zone = (match["zone"] or "Z").upper()
    if zone in ("Z", "UTC"):
        offset = timedelta(0)
    else:
        digits = zone[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or "0"))
        if zone.startswith("-"):
            offset = -offset
    moment = datetime(
        int(match["year"]),
        int(match["month"]),
        int(match["day"]),
        int(match["hour"]),
        int(match["minute"]),
        int(match["second"] or "0"),
        int(fraction),
        tzinfo=timezone(offset),
    )
    return moment.astimezone(UTC)


def parse_timestamp(value: object, *, field: str) -> datetime | None:
    """A timezone-aware UTC datetime; None when missing (see the module docstring for forms).
    Times outside 2000-2099 are rejected."""
    if type(value) is datetime and value.tzinfo is UTC:
        return check_in_years(value, field=field, value=value)  # already canonical
    moment = _parse_timestamp(value, field=field)
    return None if moment is None else check_in_years(moment, field=field, value=value)


def _parse_timestamp(value: object, *, field: str) -> datetime | None:
    if is_missing(value):
        return None
    if isinstance(value, datetime):
        # A naive datetime is taken as UTC, like a naive string.
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    reason = f"`{field}` is not a timestamp: {quoted(value)}."
    try:
        if isinstance(value, str):
            stripped = value.strip()
            if _DATE_ONLY.fullmatch(stripped):
                reason = f"`{field}` has a date but no time of day: {quoted(value)}."
                raise ValueError(reason)
            if _NUMBER.fullmatch(stripped):
                number = Decimal(stripped)
            else:
                return _timestamp_from_text(stripped)
        else:
            finite = _finite_decimal(value)
            if finite is None:
                raise ValueError("not a number")
            number = finite
        if not number.is_finite() or number < 0:
            raise ValueError("not a usable epoch number")
        return _timestamp_from_epoch(number)
    except (ValueError, OverflowError, InvalidOperation) as error:
        raise RowRejected(field=field, value=value, reason=reason) from error


def parse_unix_nanos(value: object, *, field: str) -> datetime | None:
    """OTLP `...UnixNano` fields: integer nanoseconds, as a number or a string; 0 means unset."""
    if type(value) is int and 0 < value < _MAX_UNIX_NANOS:
        # A protobuf fixed64: the checks below, without the detour through Decimal.
        moment = EPOCH + timedelta(microseconds=value // 1_000)
        return check_in_years(moment, field=field, value=value)
    if is_missing(value):
        return None
    number = _finite_decimal(value)
    if number is None or not number.is_finite() or number < 0 or number != int(number):
        raise RowRejected(
            field=field,
            value=value,
            reason=f"`{field}` is not a whole number of nanoseconds: {quoted(value)}.",
        )
    if number == 0:
        return None
    try:
        moment = EPOCH + timedelta(microseconds=int(number) // 1_000)
    except OverflowError:
        raise RowRejected(
            field=field, value=value, reason=f"`{field}` is out of range: {quoted(value)}."
        ) from None
    return check_in_years(moment, field=field, value=value)


def parse_duration_seconds(value: object, *, field: str) -> timedelta | None:
    """A non-negative duration given in seconds (OTel latency attributes); None when missing."""
    if is_missing(value):
        return None
    seconds = _finite_decimal(value)
    if seconds is None or not seconds.is_finite() or seconds < 0:
        raise RowRejected(
            field=field,
            value=value,
            reason=f"`{field}` must be a non-negative number of seconds, got {quoted(value)}.",
        )
    return timedelta(microseconds=int((seconds * 1_000_000).to_integral_value()))


def parse_json_object(value: object, *, field: str) -> dict[str, object]:
    """A JSON object given as a dict or as JSON text (CSV exports); {} when missing."""
    if is_missing(value):
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value, parse_float=Decimal)
        except json.JSONDecodeError as error:
            raise RowRejected(
                field=field,
                value=value,
                reason=f"`{field}` is not valid JSON ({error.msg} at character {error.pos}).",
            ) from error
        except RecursionError:
            raise RowRejected(
                field=field, value=value, reason=f"`{field}` is JSON nested too deeply."
            ) from None
        if isinstance(parsed, dict):
            return parsed
        if parsed is None:
            return {}
    raise RowRejected(field=field, value=value, reason=f"`{field}` is not a JSON object.")


def parse_tags(value: object, *, field: str) -> list[str]:
    """Tags as a list, JSON list text, Python-style list text or comma separated text."""
    if is_missing(value):
        return []
    items: object = value
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("["):
            try:
                items = json.loads(stripped)
            except RecursionError:
                raise RowRejected(
                    field=field, value=value, reason=f"`{field}` is JSON nested too deeply."
                ) from None
            except json.JSONDecodeError:
                try:
                    # Python-style lists (['a', 'b']) come from str(list) in ad-hoc exports;
                    # literal_eval only evaluates literals, so this is safe on untrusted text.
                    items = ast.literal_eval(stripped)
                except (ValueError, SyntaxError) as error:
                    raise RowRejected(
                        field=field, value=value, reason=f"`{field}` is not a readable list."
                    ) from error
        else:
            items = stripped.split(",")
    if not isinstance(items, list | tuple):
        raise RowRejected(field=field, value=value, reason=f"`{field}` is not a list of tags.")
    tags = []
    for item in items:
        # Nested objects are not tags; numbers are kept as their text ("2024" is a fine tag).
        if isinstance(item, str | int | float | Decimal) and not isinstance(item, bool):
            tag = str(item).strip()
            if tag:
                tags.append(tag)
    return tags
