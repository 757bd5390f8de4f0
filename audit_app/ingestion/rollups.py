"""Hourly rollups and per-workload-day shapes, built from canonical request frames.

Pure module (pandas and numpy, no Django). The ingest service feeds it one chunk at a time as a
DataFrame with the `FRAME_COLUMNS` below; everything here merges by addition, so chunks,
uploads and workers combine in any order. The one exception is a rollup's long-context
threshold, the same for every row of a key (one model, one day: one card), and `MIXED_THRESHOLDS`
if rows counted at different ones ever meet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd

from audit_app.costs.model_names import canonical_pair
from audit_app.costs.pricing import (
    LONG_CONTEXT_THRESHOLD_TOKENS,
    MIXED_THRESHOLDS,
    merged_threshold,
)
from audit_app.ingestion.histograms import ZERO_BIN, LatencyHistogram, bin_indices
from audit_app.ingestion.token_logs.frame import (
    BATCH_API,
    CACHE_CREATION_INPUT_TOKENS,
    CACHED_INPUT_TOKENS,
    CALLER,
    COST_NANOS,
    END_USER,
    ENDED_AT,
    FIRST_TOKEN_AT,
    INPUT_TOKENS,
    IS_ERROR,
    MODEL,
    NO_COST,
    OPERATION,
    OUTPUT_TOKENS,
    POOL,
    PROVIDER,
    STARTED_AT,
    STREAMING,
    TEAM,
    WORKLOAD,
    nanos_to_usd,
)

KEY_COLUMNS = ("hour", WORKLOAD, TEAM, PROVIDER, MODEL, POOL, OPERATION, BATCH_API)
MAX_CALLERS_PER_DAY = 200
# Distinct end users are kept as a k-minimum-values sketch: the KMV_SIZE smallest 64-bit hashes.
# Sketches merge by union (keep the smallest again); below KMV_SIZE users the count is exact,
# above it the estimate's relative error is about 1 / sqrt(KMV_SIZE), some 3 %.
KMV_SIZE = 1024
_HASH_SPACE = 2**64
# (provider as logged, model, day) -> the input size above which a request's tokens are
# counted as long-context (`pricing.counting_threshold` of its card, looked up by the caller).
ThresholdLookup = Callable[[str, str, date], int]
THRESHOLD = "long_context_threshold_tokens"


def distinct_sketch(hashes: Iterable[int]) -> list[int]:
    """The KMV sketch of a set of signed 64-bit hashes (sorted, at most KMV_SIZE)."""
    return sorted(set(hashes))[:KMV_SIZE]


def distinct_estimate(sketch: Sequence[int]) -> int:
    """Distinct values behind a sketch: exact when it is not full, else (k - 1) / u_k."""
    if len(sketch) < KMV_SIZE:
        return len(sketch)
    # Signed hashes shifted into [0, 2^64) keep their order; u_k is the k-th smallest / 2^64.
    largest = (int(sketch[KMV_SIZE - 1]) + 2**63 + 1) / _HASH_SPACE
    return round((KMV_SIZE - 1) / largest)


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
    cache_creation_input_tokens: int = 0
    unlogged_cache_creation_input_tokens: int = 0
    unlogged_long_context_input_tokens: int = 0
    unlogged_long_context_cached_input_tokens: int = 0
    unlogged_long_context_cache_creation_input_tokens: int = 0
    unlogged_long_context_output_tokens: int = 0
    # The threshold the long-context tokens above were counted with.
    long_context_threshold_tokens: int = LONG_CONTEXT_THRESHOLD_TOKENS
    end_users: set[int] | np.ndarray = field(default_factory=set)  # distinct hashes, no 0
    ttft: LatencyHistogram = field(default_factory=LatencyHistogram)
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    tpot: LatencyHistogram = field(default_factory=LatencyHistogram)

    @property
    def logged_cost_usd(self) -> Decimal:
        return nanos_to_usd(self.logged_cost_nanos)

    # Pickled (ingest fan-out's part results) with the end-user hashes as one int64 array, and
    # unpickled as that array of distinct values: landing needs only their number, and a set is
    # built only for the few rollups two parts share (`users_set`). Rebuilding every set took
    # most of the time of reading the parts back.
    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        users = self.end_users
        if isinstance(users, set):
            users = np.fromiter(users, np.int64, len(users))
        state["end_users"] = users.tobytes()
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        users = state["end_users"]
        if isinstance(users, bytes):
            state = {**state, "end_users": np.frombuffer(users, np.int64)}
        self.__dict__.update(state)

    def users_set(self) -> set[int]:
        """`end_users` as a set (the one to change), turning an unpickled array into one."""
        if not isinstance(self.end_users, set):
            self.end_users = set(self.end_users.tolist())
        return self.end_users


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
    CACHE_CREATION_INPUT_TOKENS,
    "unlogged_cache_creation_input_tokens",
    "unlogged_long_context_input_tokens",
    "unlogged_long_context_cached_input_tokens",
    "unlogged_long_context_cache_creation_input_tokens",
    "unlogged_long_context_output_tokens",
)


@dataclass(kw_only=True)
class IngestAggregate:
    """Everything an upload contributes, accumulated chunk by chunk."""

    rollups: dict[RollupKey, RollupTotals] = field(default_factory=dict)
    days: dict[tuple[date, str], DayShape] = field(default_factory=dict)

    def add_frame(self, frame: pd.DataFrame, thresholds: ThresholdLookup | None = None) -> None:
        """Add a chunk's requests. ``thresholds`` gives each (provider, model, day) its
        long-context threshold; without it every request is counted above
        LONG_CONTEXT_THRESHOLD_TOKENS."""
        if frame.empty:
            return
        work = _derived_columns(frame, thresholds)
        grouped = work.groupby(list(KEY_COLUMNS), sort=False, observed=True, dropna=False)
        codes = grouped.ngroup().to_numpy()
        sums = grouped[list(_SUMMED)].sum()
        # Every token-log path (row by row and columnar) lands here, so this is where a
        # provider and its model get their one stored names (`model_names.canonical_pair`):
        # once per distinct key, not per row. Keys that differ only in the spelling of the
        # provider or in a routing prefix (``openai/gpt-4o``) fall into one rollup.
        pairs: dict[tuple[str, str], tuple[str, str]] = {}
        keys = []
        for values in sums.index:
            # Values read back from the frame's group keys: their types are the frame's.
            key: dict[str, Any] = dict(zip(KEY_COLUMNS, _plain(values), strict=True))
            raw = (key[PROVIDER], key[MODEL])
            if raw not in pairs:
                pairs[raw] = canonical_pair(*raw)
            key[PROVIDER], key[MODEL] = pairs[raw]
            keys.append(RollupKey(**key))
        totals = [self._totals(key) for key in keys]
        # One model on one day has one card, so a key's rows share their threshold. Two groups
        # of the chunk can share a rollup (two spellings of one provider or model): the second
        # merges.
        limits = grouped[THRESHOLD].agg(["min", "max"])
        counted: set[int] = set()
        for target, low, high in zip(
            totals, limits["min"].tolist(), limits["max"].tolist(), strict=True
        ):
            mine = int(low) if low == high else MIXED_THRESHOLDS
            fresh = target.requests == 0 and id(target) not in counted
            counted.add(id(target))
            target.long_context_threshold_tokens = (
                mine if fresh else merged_threshold(target.long_context_threshold_tokens, mine)
            )
        for column in _SUMMED:
            for target, value in zip(totals, sums[column].tolist(), strict=True):
                setattr(target, column, getattr(target, column) + int(value))
        for target, users in zip(totals, grouped["end_user_hash"].unique().tolist(), strict=True):
            known = target.users_set()
            known.update(users.tolist())
            known.discard(0)
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
        def shape_for(day: pd.Timestamp, workload: str) -> DayShape:
            key = (day.date(), workload)
            shape = self.days.get(key)
            if shape is None:
                shape = self.days[key] = DayShape()
            return shape

        by_day = work.groupby(["day", WORKLOAD], sort=False, observed=True)
        # Every aggregation of one groupby lists its groups in the same order; `ngroup` numbers
        # them in that order, so the minute and hour counts are one bincount per chunk.
        sizes = by_day.size()
        group = by_day.ngroup().to_numpy()
        shapes = [shape_for(day, workload) for day, workload in sizes.index.tolist()]
        minutes = _counts_by_group(group, work["minute"].to_numpy(), len(shapes), 60)
        hours = _counts_by_group(group, work["hour_of_day"].to_numpy(), len(shapes), 24)
        for shape, requests, minute_row, hour_row in zip(
            shapes, sizes.tolist(), minutes, hours, strict=True
        ):
            shape.requests += int(requests)
            shape.minute_counts += minute_row
            shape.hour_counts += hour_row
        for shape, users in zip(shapes, by_day["end_user_hash"].unique().tolist(), strict=True):
            shape.end_users.update(users[users != 0].tolist())
        for shape, callers in zip(shapes, by_day[CALLER].unique().tolist(), strict=True):
            if len(shape.callers) < MAX_CALLERS_PER_DAY:
                shape.callers.update(c for c in callers if c)

    def merge(self, other: IngestAggregate) -> IngestAggregate:
        """Add ``other`` into this aggregate. Keys only ``other`` has are taken over as they are
        (not copied and added), so ``other`` must not be used afterwards: parts of one file
        cover mostly different hours, so most keys move without any arithmetic."""
        for key, theirs in other.rollups.items():
            self._add_rollup(key, theirs)
        for day_key, shape in other.days.items():
            self._add_day(day_key, shape)
        return self

    def _add_rollup(self, key: RollupKey, theirs: RollupTotals) -> None:
        if key not in self.rollups:
            self.rollups[key] = theirs
            return
        mine = self.rollups[key]
        mine.long_context_threshold_tokens = merged_threshold(
            mine.long_context_threshold_tokens, theirs.long_context_threshold_tokens
        )
        for column in _SUMMED:
            setattr(mine, column, getattr(mine, column) + getattr(theirs, column))
        mine.users_set().update(theirs.users_set())
        mine.ttft.merge(theirs.ttft)
        mine.latency.merge(theirs.latency)
        mine.tpot.merge(theirs.tpot)

    def _add_day(self, key: tuple[date, str], shape: DayShape) -> None:
        if key not in self.days:
            self.days[key] = shape
            return
        target = self.days[key]
        target.requests += shape.requests
        target.minute_counts += shape.minute_counts
        target.hour_counts += shape.hour_counts
        target.end_users |= shape.end_users
        target.callers |= shape.callers

    def token_weights(self, dimension: str) -> dict[str, tuple[int, int]]:
        """(input + output tokens, requests) per value of a key field (`workload`, `team`)."""
        weights: dict[str, tuple[int, int]] = {}
        for key, t in self.rollups.items():
            name = getattr(key, dimension)
            tokens, requests = weights.get(name, (0, 0))
            weights[name] = (tokens + t.input_tokens + t.output_tokens, requests + t.requests)
        return weights

    def renamed(self, *, workloads: Mapping[str, str], teams: Mapping[str, str]) -> IngestAggregate:
        """This aggregate with the named workloads and teams renamed (folded: several names
        into one), keys that meet added up. Nothing is lost, so every total is unchanged;
        this aggregate must not be used afterwards (its totals move into the new one). A
        folded day's callers are capped again at MAX_CALLERS_PER_DAY."""
        out = IngestAggregate()
        for key, totals in self.rollups.items():
            workload = workloads.get(key.workload, key.workload)
            team = teams.get(key.team, key.team)
            if workload != key.workload or team != key.team:
                key = replace(key, workload=workload, team=team)
            out._add_rollup(key, totals)
        for (day, workload), shape in self.days.items():
            out._add_day((day, workloads.get(workload, workload)), shape)
        buckets = set(workloads.values())
        for (_, workload), shape in out.days.items():
            if workload in buckets and len(shape.callers) > MAX_CALLERS_PER_DAY:
                shape.callers = set(sorted(shape.callers)[:MAX_CALLERS_PER_DAY])
        return out

    # Totals over every rollup, for the upload's summary.
    def total(self, column: str) -> int:
        return sum(getattr(t, column) for t in self.rollups.values())


def _counts_by_group(group: np.ndarray, slot: np.ndarray, groups: int, slots: int) -> np.ndarray:
    """A (groups x slots) table: how many rows of each group fall in each slot."""
    combined = group.astype(np.int64) * slots + slot
    return np.bincount(combined, minlength=groups * slots).reshape(groups, slots)


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


def _row_thresholds(
    frame: pd.DataFrame, days: pd.Series, thresholds: ThresholdLookup | None
) -> np.ndarray:
    """Each request's long-context threshold, looked up once per distinct (provider, model,
    day) of the chunk."""
    if thresholds is None:
        return np.full(len(frame), LONG_CONTEXT_THRESHOLD_TOKENS, dtype=np.int64)
    # Integer codes per column (categorical columns have them already), one combined code per
    # row, factorized again (hashing, no sort), then one lookup per distinct combination.
    providers, models, dates = (
        pd.factorize(frame[PROVIDER], use_na_sentinel=False),
        pd.factorize(frame[MODEL], use_na_sentinel=False),
        pd.factorize(days, use_na_sentinel=False),
    )
    provider_names = [str(name) for name in providers[1].tolist()]
    model_names = [str(name) for name in models[1].tolist()]
    day_dates = [pd.Timestamp(day).date() for day in dates[1].tolist()]
    n_models, n_days = len(model_names), len(day_dates)
    combined = (providers[0].astype(np.int64) * n_models + models[0]) * n_days + dates[0]
    codes, distinct = pd.factorize(combined)
    values = np.empty(len(distinct), dtype=np.int64)
    for i, code in enumerate(distinct.tolist()):
        rest, day = divmod(code, n_days)
        provider, model = divmod(rest, n_models)
        values[i] = thresholds(provider_names[provider], model_names[model], day_dates[day])
    return values[codes]


def _derived_columns(frame: pd.DataFrame, thresholds: ThresholdLookup | None) -> pd.DataFrame:
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
            CACHE_CREATION_INPUT_TOKENS,
        ]
    ].copy()
    work["hour"] = started.dt.floor("h")
    # Midnight timestamps, not Python dates: far cheaper per row; keys become dates later.
    work["day"] = started.dt.floor("D")
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
    work["unlogged_cache_creation_input_tokens"] = (
        frame[CACHE_CREATION_INPUT_TOKENS].to_numpy() * unlogged
    )
    # Long-context tiers price every token of a request whose input is above the threshold,
    # so those requests' tokens are kept apart (per request, here, where requests still exist),
    # above the threshold of the request's own card.
    limit = _row_thresholds(frame, work["day"], thresholds)
    work[THRESHOLD] = limit
    long_context = unlogged * (frame[INPUT_TOKENS].to_numpy() > limit)
    for column in (INPUT_TOKENS, CACHED_INPUT_TOKENS, CACHE_CREATION_INPUT_TOKENS, OUTPUT_TOKENS):
        work[f"unlogged_long_context_{column}"] = frame[column].to_numpy() * long_context
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
    sums_by_code = np.bincount(codes, weights=values, minlength=len(targets))
    # Count (group, bin) pairs with one bincount over a combined key: linear time, no sort.
    # The zero bucket gets the slot just below the smallest real bin.
    real = bins != ZERO_BIN
    base = int(bins[real].min()) - 1 if real.any() else 0
    slots = np.where(real, bins - base, 0)
    span = int(slots.max()) + 1
    if span * (int(codes.max()) + 1) > 50_000_000:  # a pathological spread: sort instead
        pairs, counts = np.unique(codes.astype(np.int64) * span + slots, return_counts=True)
    else:
        counts_all = np.bincount(codes.astype(np.int64) * span + slots)
        pairs = np.flatnonzero(counts_all)
        counts = counts_all[pairs]
    pair_codes = pairs // span
    pair_bins = np.where(pairs % span == 0, ZERO_BIN, pairs % span + base)
    edges = np.flatnonzero(np.diff(pair_codes)) + 1
    for piece_codes, piece_bins, piece_counts in zip(
        np.split(pair_codes, edges),
        np.split(pair_bins, edges),
        np.split(counts, edges),
        strict=True,
    ):
        code = int(piece_codes[0])
        targets[code].add_bin_counts(
            piece_bins.tolist(), piece_counts.tolist(), float(sums_by_code[code])
        )
