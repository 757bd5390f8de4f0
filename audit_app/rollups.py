"""Hourly rollups and per-workload-day shapes, built from canonical request frames.

Pure module (pandas and numpy, no Django). The ingest service feeds it one chunk at a time as a
DataFrame with the `FRAME_COLUMNS` below; everything here merges by addition, so chunks,
uploads and workers combine in any order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal

import numpy as np
import pandas as pd

from audit_app.histograms import LatencyHistogram, bin_indices
from audit_app.importers.base import CanonicalRequest

# --- The canonical frame: one row per accepted request --------------------------------------
STARTED_AT = "started_at"
ENDED_AT = "ended_at"
FIRST_TOKEN_AT = "first_token_at"
WORKLOAD = "workload"
TEAM = "team"
END_USER = "end_user"
CALLER = "caller"
PROVIDER = "provider"
MODEL = "model"
OPERATION = "operation"
POOL = "pool"
STREAMING = "streaming"  # 1 streamed, 0 not, -1 unknown
BATCH_API = "batch_api"
IS_ERROR = "is_error"
INPUT_TOKENS = "input_tokens"
OUTPUT_TOKENS = "output_tokens"
CACHED_INPUT_TOKENS = "cached_input_tokens"
COST_NANOS = "cost_nanos"  # the log's own cost in 1e-9 USD; -1 when the log has none
LINE = "line"

TEXT_COLUMNS = (WORKLOAD, TEAM, END_USER, CALLER, PROVIDER, MODEL, OPERATION, POOL)
INT_COLUMNS = (INPUT_TOKENS, OUTPUT_TOKENS, CACHED_INPUT_TOKENS, COST_NANOS, LINE)
FRAME_COLUMNS = (
    STARTED_AT,
    ENDED_AT,
    FIRST_TOKEN_AT,
    *TEXT_COLUMNS,
    STREAMING,
    BATCH_API,
    IS_ERROR,
    *INT_COLUMNS,
)
NO_COST = -1
NANOS_PER_USD = Decimal(1_000_000_000)

KEY_COLUMNS = ("hour", WORKLOAD, TEAM, PROVIDER, MODEL, POOL, OPERATION, BATCH_API)
MAX_CALLERS_PER_DAY = 200


def cost_to_nanos(cost: Decimal | None) -> int:
    if cost is None:
        return NO_COST
    return int((cost * NANOS_PER_USD).to_integral_value())


def nanos_to_usd(nanos: int) -> Decimal:
    return Decimal(nanos) / NANOS_PER_USD


def requests_to_frame(requests: Sequence[CanonicalRequest]) -> pd.DataFrame:
    """Canonical rows (from the row-by-row importers) as a frame."""
    columns: dict[str, list[object]] = {name: [] for name in FRAME_COLUMNS}
    for r in requests:
        columns[STARTED_AT].append(r.started_at)
        columns[ENDED_AT].append(r.ended_at)
        columns[FIRST_TOKEN_AT].append(r.first_token_at)
        columns[WORKLOAD].append(r.workload)
        columns[TEAM].append(r.team)
        columns[END_USER].append(r.end_user)
        columns[CALLER].append(r.caller)
        columns[PROVIDER].append(r.provider)
        columns[MODEL].append(r.model)
        columns[OPERATION].append(r.operation)
        columns[POOL].append(r.pool)
        columns[STREAMING].append(-1 if r.streaming is None else int(r.streaming))
        columns[BATCH_API].append(r.batch_api)
        columns[IS_ERROR].append(r.status == "error")
        columns[INPUT_TOKENS].append(r.input_tokens)
        columns[OUTPUT_TOKENS].append(r.output_tokens)
        columns[CACHED_INPUT_TOKENS].append(r.cached_input_tokens)
        columns[COST_NANOS].append(cost_to_nanos(r.cost_usd))
        columns[LINE].append(r.line)
    return normalize_frame(pd.DataFrame(columns))


def normalize_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Coerce a frame to the canonical dtypes (UTC timestamps, str, int64, bool)."""
    out = pd.DataFrame(index=frame.index)
    for name in (STARTED_AT, ENDED_AT, FIRST_TOKEN_AT):
        out[name] = pd.to_datetime(frame[name], utc=True).astype("datetime64[ns, UTC]")
    for name in TEXT_COLUMNS:
        out[name] = frame[name].fillna("").astype(str)
    out[STREAMING] = frame[STREAMING].astype(np.int8)
    out[BATCH_API] = frame[BATCH_API].astype(bool)
    out[IS_ERROR] = frame[IS_ERROR].astype(bool)
    for name in INT_COLUMNS:
        out[name] = frame[name].astype(np.int64)
    return out.reset_index(drop=True)


# --- Accumulators ---------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class RollupKey:
    hour: datetime
    workload: str
    team: str
    provider: str
    model: str
    pool: str
    operation: str
    batch_api: bool


@dataclass(kw_only=True)
class RollupTotals:
    requests: int = 0
    errors: int = 0
    streaming_requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    logged_requests: int = 0
    logged_cost_nanos: int = 0
    unlogged_input_tokens: int = 0
    unlogged_cached_input_tokens: int = 0
    unlogged_output_tokens: int = 0
    end_users: set[int] = field(default_factory=set)
    ttft: LatencyHistogram = field(default_factory=LatencyHistogram)
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    tpot: LatencyHistogram = field(default_factory=LatencyHistogram)

    @property
    def logged_cost_usd(self) -> Decimal:
        return nanos_to_usd(self.logged_cost_nanos)


@dataclass(kw_only=True)
class DayShape:
    requests: int = 0
    minute_counts: np.ndarray = field(default_factory=lambda: np.zeros(60, dtype=np.int64))
    hour_counts: np.ndarray = field(default_factory=lambda: np.zeros(24, dtype=np.int64))
    end_users: set[int] = field(default_factory=set)
    callers: set[str] = field(default_factory=set)


_SUMMED = (
    "requests",
    "errors",
    "streaming_requests",
    INPUT_TOKENS,
    OUTPUT_TOKENS,
    CACHED_INPUT_TOKENS,
    "logged_requests",
    "logged_cost_nanos",
    "unlogged_input_tokens",
    "unlogged_cached_input_tokens",
    "unlogged_output_tokens",
)


@dataclass(kw_only=True)
class IngestAggregate:
    """Everything an upload contributes, accumulated chunk by chunk."""

    rollups: dict[RollupKey, RollupTotals] = field(default_factory=dict)
    days: dict[tuple[date, str], DayShape] = field(default_factory=dict)

    def add_frame(self, frame: pd.DataFrame) -> None:
        if frame.empty:
            return
        work = _derived_columns(frame)
        grouped = work.groupby(list(KEY_COLUMNS), sort=False, observed=True)
        codes = grouped.ngroup().to_numpy()
        sums = grouped[list(_SUMMED)].sum()
        keys = [
            RollupKey(**dict(zip(KEY_COLUMNS, _plain(values), strict=True)))
            for values in sums.index
        ]
        totals = [self._totals(key) for key in keys]
        for column in _SUMMED:
            for target, value in zip(totals, sums[column].tolist(), strict=True):
                setattr(target, column, getattr(target, column) + int(value))
        for target, users in zip(totals, grouped["end_user_hash"].unique().tolist(), strict=True):
            target.end_users.update(int(u) for u in users if u != 0)
        for name in ("ttft", "latency", "tpot"):
            _add_histograms(
                codes, work[f"{name}_ms"].to_numpy(), [getattr(t, name) for t in totals]
            )
        self._add_days(work)

    def _totals(self, key: RollupKey) -> RollupTotals:
        totals = self.rollups.get(key)
        if totals is None:
            totals = self.rollups[key] = RollupTotals()
        return totals

    def _add_days(self, work: pd.DataFrame) -> None:
        by_day = work.groupby(["day", WORKLOAD], sort=False)
        minute = by_day["minute"].value_counts()
        hour = by_day["hour_of_day"].value_counts()
        users = by_day["end_user_hash"].unique()
        callers = by_day[CALLER].unique()
        sizes = by_day.size()
        for (day, workload), n in sizes.items():
            shape = self.days.get((day, workload))
            if shape is None:
                shape = self.days[(day, workload)] = DayShape()
            shape.requests += int(n)
            counts = minute.loc[(day, workload)]
            shape.minute_counts[counts.index.to_numpy()] += counts.to_numpy()
            counts = hour.loc[(day, workload)]
            shape.hour_counts[counts.index.to_numpy()] += counts.to_numpy()
            shape.end_users.update(int(u) for u in users.loc[(day, workload)] if u != 0)
            if len(shape.callers) < MAX_CALLERS_PER_DAY:
                shape.callers.update(c for c in callers.loc[(day, workload)] if c)

    def merge(self, other: IngestAggregate) -> IngestAggregate:
        for key, theirs in other.rollups.items():
            mine = self._totals(key)
            for column in _SUMMED:
                setattr(mine, column, getattr(mine, column) + getattr(theirs, column))
            mine.end_users |= theirs.end_users
            mine.ttft.merge(theirs.ttft)
            mine.latency.merge(theirs.latency)
            mine.tpot.merge(theirs.tpot)
        for key, shape in other.days.items():
            target = self.days.setdefault(key, DayShape())
            target.requests += shape.requests
            target.minute_counts += shape.minute_counts
            target.hour_counts += shape.hour_counts
            target.end_users |= shape.end_users
            target.callers |= shape.callers
        return self

    # Totals over every rollup, for the upload's summary.
    def total(self, column: str) -> int:
        return sum(getattr(t, column) for t in self.rollups.values())


def _plain(values: Iterable[object]) -> list[object]:
    out: list[object] = []
    for value in values:
        if isinstance(value, pd.Timestamp):
            out.append(value.to_pydatetime())
        elif isinstance(value, np.bool_):
            out.append(bool(value))
        else:
            out.append(value)
    return out


def _derived_columns(frame: pd.DataFrame) -> pd.DataFrame:
    started = frame[STARTED_AT]
    work = frame[
        [
            WORKLOAD,
            TEAM,
            PROVIDER,
            MODEL,
            POOL,
            OPERATION,
            BATCH_API,
            CALLER,
            INPUT_TOKENS,
            OUTPUT_TOKENS,
            CACHED_INPUT_TOKENS,
        ]
    ].copy()
    work["hour"] = started.dt.floor("h")
    work["day"] = started.dt.date
    work["minute"] = started.dt.minute.astype(np.int64)
    work["hour_of_day"] = started.dt.hour.astype(np.int64)
    work["requests"] = 1
    work["errors"] = frame[IS_ERROR].astype(np.int64)
    work["streaming_requests"] = (frame[STREAMING] == 1).astype(np.int64)
    logged = frame[COST_NANOS].to_numpy() != NO_COST
    work["logged_requests"] = logged.astype(np.int64)
    work["logged_cost_nanos"] = np.where(logged, frame[COST_NANOS].to_numpy(), 0)
    unlogged = (~logged).astype(np.int64)
    work["unlogged_input_tokens"] = frame[INPUT_TOKENS].to_numpy() * unlogged
    work["unlogged_cached_input_tokens"] = frame[CACHED_INPUT_TOKENS].to_numpy() * unlogged
    work["unlogged_output_tokens"] = frame[OUTPUT_TOKENS].to_numpy() * unlogged
    # 0 stands for "no end user"; a real hash of 0 is as likely as a cosmic ray.
    users = frame[END_USER]
    hashed = pd.util.hash_pandas_object(users, index=False).to_numpy().astype(np.int64)
    work["end_user_hash"] = np.where(users.to_numpy() == "", 0, hashed)

    latency = (frame[ENDED_AT] - started).dt.total_seconds().to_numpy() * 1000.0
    ttft = (frame[FIRST_TOKEN_AT] - started).dt.total_seconds().to_numpy() * 1000.0
    outputs = frame[OUTPUT_TOKENS].to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(outputs > 1, (latency - ttft) / (outputs - 1), np.nan)
    work["latency_ms"] = latency
    work["ttft_ms"] = ttft  # NaN where no first-token time
    work["tpot_ms"] = tpot
    return work


def _add_histograms(
    codes: np.ndarray, values: np.ndarray, targets: Sequence[LatencyHistogram]
) -> None:
    known = ~np.isnan(values)
    if not known.any():
        return
    codes = codes[known]
    values = np.clip(values[known], 0.0, None)
    bins = bin_indices(values)
    order = np.lexsort((bins, codes))
    codes, bins, values = codes[order], bins[order], values[order]
    # Run-length encode (code, bin) pairs, then split the runs by code.
    change = np.ones(codes.size, dtype=bool)
    change[1:] = (codes[1:] != codes[:-1]) | (bins[1:] != bins[:-1])
    starts = np.flatnonzero(change)
    run_counts = np.diff(np.append(starts, codes.size))
    run_codes = codes[starts]
    run_bins = bins[starts]
    sums_by_code = np.bincount(codes, weights=values, minlength=len(targets))
    code_edges = np.flatnonzero(np.diff(run_codes)) + 1
    for piece_codes, piece_bins, piece_counts in zip(
        np.split(run_codes, code_edges),
        np.split(run_bins, code_edges),
        np.split(run_counts, code_edges),
        strict=True,
    ):
        code = int(piece_codes[0])
        targets[code].add_bin_counts(
            piece_bins.tolist(), piece_counts.tolist(), float(sums_by_code[code])
        )
