"""Vectorised coercions of the text columns of a parsed LiteLLM CSV block.

Each reads a whole pyarrow string column the way `token_logs.base` reads one value and returns,
beside the values, the rows it vouches for; `litellm_columnar` sends every other row to the row
path, which gives the answer (or the reject) in its own words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from audit_app.ingestion.reading import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, future_cutoff
from audit_app.ingestion.token_logs import frame as canonical
from audit_app.ingestion.token_logs.coerce import MAX_COST_PER_REQUEST, MAX_TOKENS_PER_REQUEST

# Spellings `reading.is_missing` treats as missing that the vectorised checks recognise exactly;
# other spellings (" NULL ", "nUlL") take the row path, which gives the same answer.
MISSING_SPELLINGS = pa.array(["", "null", "NULL", "Null", "none", "None", "NONE"], pa.string())
# ISO 8601 forms that `coerce.parse_timestamp` and pandas read alike, limited to years pandas
# holds in nanoseconds. Used only when pyarrow's own cast refuses a column.
ISO_TIMESTAMP_PATTERN = (
    r"^(19|2[01])\d\d-\d\d-\d\d[T ]([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,9})?)?"
    r"(Z|[+-]([01]\d|2[0-3])(:?[0-5]\d)?)?$"
)
DECIMAL_PATTERN = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
ZERO_PATTERN = r"^[+-]?(0+\.?0*|\.0+)([eE][+-]?[0-9]+)?$"
MAX_TOKEN_DIGITS = len(str(MAX_TOKENS_PER_REQUEST))
# Costs at or above this many nanos take the row path (float64 has no fraction left there).
MAX_FAST_COST_NANOS = 2.0**50
NANOS_PER_USD = 1e9


def string_parts(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(start offsets, lengths) of each string of a non-chunked string array."""
    offsets = np.frombuffer(column.buffers()[1], np.int32)[
        column.offset : column.offset + len(column) + 1
    ]
    return offsets[:-1], np.diff(offsets)


def null_where(mask: np.ndarray, column: pa.Array) -> pa.Array:
    if not mask.any():
        return column
    return pc.if_else(pa.array(mask), pa.scalar(None, pa.string()), column)


def missing_cells(column: pa.Array, lengths: np.ndarray) -> np.ndarray:
    missing: np.ndarray = lengths == 0
    if ((lengths == 4) & ~missing).any():
        missing |= pc.is_in(column, value_set=MISSING_SPELLINGS).to_numpy(zero_copy_only=False)
    return missing


EARLIEST_NS = int(EARLIEST_TIMESTAMP.timestamp()) * 1_000_000_000
LATEST_NS = int(LATEST_TIMESTAMP.timestamp()) * 1_000_000_000


def latest_ns() -> int:
    """The latest time, in nanoseconds, the row path accepts without a reject: before
    `LATEST_TIMESTAMP` and not more than a day in the future (`reading.future_cutoff`)."""
    cutoff = future_cutoff()
    return min(LATEST_NS - 1, int(cutoff.timestamp()) * 1_000_000_000 + cutoff.microsecond * 1000)


_ZONED = re.compile(r"(Z|[+-]\d{2}:?\d{2})$", re.IGNORECASE)


def timestamps(column: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(UTC nanoseconds cut to microseconds, parsed, missing) per row, as `parse_timestamp`.

    pyarrow's cast reads every ISO form the row path reads except that it also takes a date
    alone or with an hour alone; requiring `:` at position 13 (`YYYY-MM-DD hh:`) rules those
    out. A column the cast refuses as a whole (a mix of zoned and naive values, a bad value)
    is read value by value: the anchored pattern, then pandas.
    """
    starts, lengths = string_parts(column)
    missing = missing_cells(column, lengths)
    present = ~missing
    values = null_where(missing, column)
    nanos = None
    # A failed cast costs far more than a good one, so try first the type the first value
    # calls for.
    targets = [pa.timestamp("ns"), pa.timestamp("ns", tz="UTC")]
    first = pc.drop_null(values)
    if len(first) and _ZONED.search(first[0].as_py()):
        targets.reverse()
    for target in targets:
        try:
            cast = pc.cast(values, target)
        except pa.ArrowInvalid:
            continue
        nanos = pc.fill_null(cast.cast(pa.int64()), 0).to_numpy()
        parsed = present & _colon_at_13(column, starts, lengths)
        break
    if nanos is None:
        nanos, parsed = _timestamps_one_by_one(column, present)
    # Outside the row path's years, or in the future, the row path rejects the row; send it
    # there.
    parsed &= (nanos >= EARLIEST_NS) & (nanos <= latest_ns())
    # The row path cuts fractions to microseconds; floor division does that for any sign.
    return nanos // 1000 * 1000, parsed, missing


def _colon_at_13(column: pa.Array, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    data = column.buffers()[2]
    raw = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    if not raw.size:
        return np.zeros(len(column), bool)
    long_enough = lengths > 13
    positions = np.where(long_enough, starts + 13, 0)
    colons: np.ndarray = long_enough & (raw[positions] == ord(":"))
    return colons


def _timestamps_one_by_one(column: pa.Array, present: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    candidates = present & pc.match_substring_regex(column, ISO_TIMESTAMP_PATTERN).to_numpy(
        zero_copy_only=False
    )
    nanos = np.zeros(len(column), np.int64)
    rows = np.flatnonzero(candidates)
    if rows.size:
        texts = column.take(pa.array(rows)).to_pylist()
        moments = pd.DatetimeIndex(
            pd.to_datetime(
                pd.Series(texts, dtype=object), format="ISO8601", utc=True, errors="coerce"
            )
        ).as_unit("ns")
        valid = ~np.asarray(moments.isna())
        nanos[rows[valid]] = moments.asi8[valid]
        candidates[rows[~valid]] = False
    return nanos, candidates


def token_counts(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(count, readable) per row: plain digits within the per-request limit.

    Anything else, empty included, takes the row path (which, for instance, reads an empty
    count as 0 on an error row and rejects it elsewhere).
    """
    _, lengths = string_parts(column)
    readable = (lengths <= MAX_TOKEN_DIGITS) & pc.ascii_is_decimal(column).to_numpy(
        zero_copy_only=False
    )
    values = column if readable.all() else pc.if_else(pa.array(readable), column, "0")
    counts = pc.cast(values, pa.int64()).to_numpy()
    return counts, readable & (counts <= MAX_TOKENS_PER_REQUEST)


@dataclass(frozen=True, kw_only=True)
class Costs:
    nanos: np.ndarray
    zero: np.ndarray
    missing: np.ndarray
    readable: np.ndarray


def costs(column: pa.Array | None, rows: int) -> Costs:
    """`spend` as the row path's `cost_to_nanos(parse_cost(...))`, per row.

    float64 carries the value; the nearest integer of value * 1e9 equals Decimal's
    half-even rounding except within float error of a tie, and those rows (and zeros written
    with a non-zero digit that underflowed) are computed with Decimal.
    """
    if column is None:
        nothing = np.zeros(rows, bool)
        return Costs(
            nanos=np.zeros(rows, np.int64), zero=nothing, missing=~nothing, readable=~nothing
        )
    _, lengths = string_parts(column)
    missing = missing_cells(column, lengths)
    values = null_where(missing, column)
    try:
        amounts = pc.cast(values, pa.float64())
        numeric = ~missing
    except pa.ArrowInvalid:
        numeric = ~missing & pc.match_substring_regex(column, DECIMAL_PATTERN).to_numpy(
            zero_copy_only=False
        )
        amounts = pc.cast(null_where(~numeric, column), pa.float64())
    usd = pc.fill_null(amounts, 0.0).to_numpy()
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = usd * NANOS_PER_USD
        readable = (
            numeric
            & np.isfinite(scaled)
            & (usd >= 0)
            & (scaled < MAX_FAST_COST_NANOS)
            # Above the limit the row path rejects the row; send it there.
            & (usd <= float(MAX_COST_PER_REQUEST))
        )
        nanos = np.rint(np.where(readable, scaled, 0.0))
        exact = readable & near_tie(scaled)
    zero = readable & (usd == 0)
    if zero.any():
        written_zero = pc.match_substring_regex(column, ZERO_PATTERN).to_numpy(zero_copy_only=False)
        exact |= zero & ~written_zero
    nanos = nanos.astype(np.int64)
    for row in np.flatnonzero(exact):
        amount = Decimal(column[int(row)].as_py())
        nanos[row] = canonical.cost_to_nanos(amount)
        zero[row] = amount == 0
        # A negative amount can underflow to -0.0, which passed the sign check above.
        readable[row] = amount >= 0
    return Costs(nanos=nanos, zero=zero, missing=missing, readable=readable)


def plain_column(column: pa.ChunkedArray | None, rows: int) -> pa.Array | None:
    if column is None:
        return None
    return column.combine_chunks() if rows else pa.array([], pa.string())


def group_rows(codes: Sequence[np.ndarray], rows: int) -> tuple[np.ndarray, np.ndarray]:
    """A group number per row for each distinct combination of codes, and one row per group."""
    key = np.zeros(rows, np.int64)
    span = 1
    for column in codes:
        size = int(column.max()) + 1 if rows else 1
        if span * size >= 2**62:
            key, distinct = pd.factorize(key)
            span = len(distinct)
        key = key * size + column
        span *= size
    group, distinct = pd.factorize(key)
    representative = np.empty(len(distinct), np.intp)
    representative[group] = np.arange(rows)
    return group, representative


def near_tie(scaled: np.ndarray) -> np.ndarray:
    """Where a float, in the unit it is rounded to, is within float error of a rounding tie:
    the float alone cannot tell which way `Decimal` rounds the written amount."""
    with np.errstate(invalid="ignore", over="ignore"):
        near: np.ndarray = np.abs(scaled - np.floor(scaled) - 0.5) <= np.abs(scaled) * 1e-14 + 1e-9
    return near


def bools(column: pa.Array) -> np.ndarray:
    """A boolean column as numpy, null read as False."""
    values: np.ndarray = pc.fill_null(column, False).to_numpy(zero_copy_only=False)
    return values
