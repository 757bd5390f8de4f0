"""Shared pieces of the token-log importers: the canonical row, its coercions and validation.

Reading the files (JSON, JSONL, CSV of flat records) is in `token_logs.tabular`.

Every importer turns its format into `CanonicalRequest` rows through `build_request`, so the
validation rules (and the wording of every reject) are the same for LiteLLM, OpenTelemetry and
the generic format. A row that fails validation becomes a `RowReject`; a file that cannot be
read at all raises `ImportFileError` with one sentence naming the line, byte or column. Those
two, the chunking, the CSV row loop and the text decoding are shared with the billing importers
in `audit_app.ingestion.reading`.

Conventions fixed here for all formats:
- Timestamps become timezone-aware UTC datetimes. Accepted: ISO 8601 with `T` or a space, with or
  without `Z` / `UTC` / an offset and with any number of fraction digits (cut to microseconds),
  and epoch numbers whose magnitude tells the unit (seconds, ms, µs or ns). Naive means UTC.
  A date without a time of day is rejected: a request log needs the time.
- `input_tokens` includes cached input tokens (OpenAI and OTel semantics), so
  `cached_input_tokens` can never exceed it.
- A missing input/output token count is 0 on an error row and an embedding has 0 output tokens
  when none is given; anywhere else a missing count is a reject, because a silent 0 would
  under-report spend.
- Byte offsets in messages are 0-based (what a hex editor shows); line numbers are 1-based.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from decimal import ROUND_FLOOR, Decimal, InvalidOperation
from typing import Any, BinaryIO

from audit_app.ingestion.identity import resolve_workload
from audit_app.ingestion.reading import (
    RowReject,
    RowRejected,
    check_chunk_rows,
    check_in_years,
    group_outcomes,
    is_missing,
    quoted,
    text,
)

MAX_TOKENS_PER_REQUEST = 10_000_000
# A single request costing more than this is a unit mistake or garbage, never a real bill.
MAX_COST_PER_REQUEST = Decimal(100_000)

STATUS_SUCCESS = "success"
STATUS_ERROR = "error"
OPERATION_EMBEDDING = "embedding"

SUCCESS_WORDS = frozenset({"success", "succeeded", "ok", "completed"})
ERROR_WORDS = frozenset({"error", "failure", "failed", "fail"})
TRUE_WORDS = frozenset({"true", "t", "yes", "y", "1", "on"})
FALSE_WORDS = frozenset({"false", "f", "no", "n", "0", "off"})

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MILLISECOND = timedelta(milliseconds=1)

_ISO_TIMESTAMP = re.compile(
    r"(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})[T ]"
    r"(?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:[.,](?P<fraction>\d+))?)?"
    r"\s*(?P<zone>Z|UTC|[+-]\d{2}(?::?\d{2})?)?",
    re.IGNORECASE,
)
_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


# ---------------------------------------------------------------------------------------------
# Data crossing layers
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CanonicalRequest:
    """One LLM request, whatever format it came from."""

    started_at: datetime
    ended_at: datetime
    first_token_at: datetime | None
    workload: str
    team: str
    end_user: str
    caller: str
    provider: str
    model: str
    operation: str
    streaming: bool | None
    batch_api: bool
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cost_usd: Decimal | None
    status: str
    request_id: str
    pool: str
    line: int

    @property
    def latency_ms(self) -> float:
        return (self.ended_at - self.started_at) / MILLISECOND

    @property
    def ttft_ms(self) -> float | None:
        if self.first_token_at is None:
            return None
        return (self.first_token_at - self.started_at) / MILLISECOND

    @property
    def tpot_ms(self) -> float | None:
        """Time per output token after the first (vLLM / MLPerf definition, DESIGN 4.1)."""
        ttft_ms = self.ttft_ms
        if ttft_ms is None or self.output_tokens <= 1:
            return None
        return (self.latency_ms - ttft_ms) / (self.output_tokens - 1)


@dataclass(frozen=True, kw_only=True)
class ParsedChunk:
    """Up to `chunk_rows` rows of a file; `bytes_read` is the stream position after them."""

    requests: list[CanonicalRequest]
    rejects: list[RowReject]
    rows_read: int
    bytes_read: int
    # Columnar fast paths hand over a canonical frame (audit_app.ingestion.token_logs.frame) instead
    # of
    # `requests`; the rows in it are in addition to any in `requests`.
    frame: Any = None


@dataclass(frozen=True, kw_only=True)
class SourceFields:
    """The names a format uses for the canonical fields, so rejects speak the file's language."""

    started_at: str = "started_at"
    ended_at: str = "ended_at"
    first_token_at: str = "first_token_at"
    model: str = "model"
    input_tokens: str = "input_tokens"
    output_tokens: str = "output_tokens"
    cached_input_tokens: str = "cached_input_tokens"
    cost_usd: str = "cost_usd"
    streaming: str = "streaming"
    batch_api: str = "batch_api"
    status: str = "status"


RowOutcome = CanonicalRequest | RowReject


# ---------------------------------------------------------------------------------------------
# Scalar coercions
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# The one validator every importer goes through
# ---------------------------------------------------------------------------------------------


def _required_timestamp(value: object, *, field: str) -> datetime:
    moment = parse_timestamp(value, field=field)
    if moment is None:
        raise RowRejected(field=field, value=value, reason=f"`{field}` is empty.")
    return moment


def _token_count_or_default(value: object, *, field: str, zero_when_missing: bool) -> int:
    count = parse_token_count(value, field=field)
    if count is not None:
        return count
    if zero_when_missing:
        return 0
    raise RowRejected(field=field, value=value, reason=f"`{field}` is empty.")


def _checked_times(
    *, started_at: object, ended_at: object, first_token_at: object, names: SourceFields
) -> tuple[datetime, datetime, datetime | None]:
    """(start, end, first token): the end not before the start, the first token between them."""
    started = _required_timestamp(started_at, field=names.started_at)
    ended = _required_timestamp(ended_at, field=names.ended_at)
    if ended < started:
        raise RowRejected(
            field=names.ended_at,
            value=ended_at,
            reason=(
                f"`{names.ended_at}` ({ended.isoformat()}) is before "
                f"`{names.started_at}` ({started.isoformat()})."
            ),
        )
    first_token = parse_timestamp(first_token_at, field=names.first_token_at)
    if first_token is not None and not started <= first_token <= ended:
        side = (
            f"before `{names.started_at}`" if first_token < started else f"after `{names.ended_at}`"
        )
        raise RowRejected(
            field=names.first_token_at,
            value=first_token_at,
            reason=f"`{names.first_token_at}` ({first_token.isoformat()}) is {side}.",
        )
    return started, ended, first_token


def _model_name(model: object, *, names: SourceFields) -> str:
    model_name = text(model)
    if not model_name:
        raise RowRejected(
            field=names.model,
            value=model,
            reason=f"`{names.model}` is empty, so the request cannot be priced or grouped.",
        )
    return model_name


def _token_counts(
    *,
    input_tokens: object,
    output_tokens: object,
    cached_input_tokens: object,
    names: SourceFields,
    is_error: bool,
    is_embedding: bool,
) -> tuple[int, int, int]:
    """(input, output, cached input) token counts; cached ones are part of the input."""
    # A failed request often carries no usage, and an embedding produces no output tokens;
    # anywhere else an empty count would silently under-report spend, so it is a reject.
    input_count = _token_count_or_default(
        input_tokens, field=names.input_tokens, zero_when_missing=is_error
    )
    output_count = _token_count_or_default(
        output_tokens, field=names.output_tokens, zero_when_missing=is_error or is_embedding
    )
    cached_count = _token_count_or_default(
        cached_input_tokens, field=names.cached_input_tokens, zero_when_missing=True
    )
    if cached_count > input_count:
        raise RowRejected(
            field=names.cached_input_tokens,
            value=cached_input_tokens,
            reason=(
                f"`{names.cached_input_tokens}` ({cached_count}) is more than "
                f"`{names.input_tokens}` ({input_count}); input tokens must include cached ones."
            ),
        )
    return input_count, output_count, cached_count


def build_request(
    *,
    line: int,
    names: SourceFields,
    started_at: object,
    ended_at: object,
    model: object,
    input_tokens: object,
    output_tokens: object,
    first_token_at: object = None,
    cached_input_tokens: object = None,
    cost_usd: object = None,
    streaming: object = None,
    batch_api: object = None,
    status: object = None,
    provider: object = None,
    operation: object = None,
    team: object = None,
    end_user: object = None,
    caller: object = None,
    request_id: object = None,
    pool: object = None,
    tags: Sequence[str] = (),
    metadata: Mapping[str, object] | None = None,
) -> CanonicalRequest:
    """Coerce and validate one row; raise `RowRejected` naming the first bad field.

    Values may be raw (text, numbers) or already coerced by the importer (datetime, int,
    Decimal, bool): every coercion passes its own output through unchanged.
    """
    started, ended, first_token = _checked_times(
        started_at=started_at, ended_at=ended_at, first_token_at=first_token_at, names=names
    )
    model_name = _model_name(model, names=names)
    status_word = parse_status(status, field=names.status)
    operation_name = text(operation).lower()
    input_count, output_count, cached_count = _token_counts(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_input_tokens=cached_input_tokens,
        names=names,
        is_error=status_word == STATUS_ERROR,
        is_embedding=operation_name == OPERATION_EMBEDDING,
    )
    team_name = text(team)
    caller_name = text(caller)
    return CanonicalRequest(
        started_at=started,
        ended_at=ended,
        first_token_at=first_token,
        workload=resolve_workload(
            tags=tags,
            metadata=metadata or {},
            caller=caller_name,
            team=team_name,
            model=model_name,
        ),
        team=team_name,
        end_user=text(end_user),
        caller=caller_name,
        provider=text(provider),
        model=model_name,
        operation=operation_name,
        streaming=parse_bool(streaming, field=names.streaming),
        batch_api=parse_bool(batch_api, field=names.batch_api) or False,
        input_tokens=input_count,
        output_tokens=output_count,
        cached_input_tokens=cached_count,
        cost_usd=parse_cost(cost_usd, field=names.cost_usd),
        status=status_word,
        request_id=text(request_id),
        pool=text(pool),
        line=line,
    )


def chunk_outcomes(
    outcomes: Iterable[RowOutcome], *, stream: BinaryIO, chunk_rows: int
) -> Iterator[ParsedChunk]:
    """Group row outcomes into chunks of `chunk_rows` rows; a file without rows yields none.

    `outcomes` must be lazy so `stream.tell()` is the position just after the chunk's last row.
    """
    check_chunk_rows(chunk_rows)
    for group in group_outcomes(
        outcomes, chunk_rows=chunk_rows, position=stream.tell, end_at_file_end=False
    ):
        yield ParsedChunk(
            requests=group.accepted,
            rejects=group.rejects,
            rows_read=group.rows_read,
            bytes_read=group.bytes_read,
        )
