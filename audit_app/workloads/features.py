"""Workload features: what the classifier reads about one workload
(`docs/methods.md`, "Workload classes").

Pure module (numpy, no Django). The caller builds one `WorkloadSummary` per workload from what
the product stores — hourly rollups summed per UTC hour (`HourStats`) and the per-workload-day
shapes (`DayProfile`) — never from request rows. `compute_features(summary)` turns it into
`WorkloadFeatures`: shares (streaming, batch API, embeddings), people (end users, callers), time
shape (hour-of-week profile, best correlation with office hours or a waking day in any time
zone, burstiness, cron-like minutes, flatness), output length and the latency the workload
already tolerates. How much each feature weighs lives in `audit_app.workloads.classifier`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

import numpy as np
import numpy.typing as npt

HOURS_PER_DAY = 24
HOURS_PER_WEEK = 7 * HOURS_PER_DAY
MINUTES_PER_HOUR = 60
# Time zones people work in: UTC−12 … UTC+14 (whole hours; half-hour zones land next door).
UTC_OFFSETS = tuple(range(-12, 15))
# 1970-01-01, where epoch hours start, was a Thursday (Monday = 0).
EPOCH_WEEKDAY = 3
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Feature definitions (what is measured; how much it weighs lives in `ClassifierConfig`).
OFFICE_HOURS = (9, 18)  # local, weekdays
WAKING_HOURS = (8, 23)  # local, every day
TOP_HOURS_SHARE = 0.05  # "the busiest hours" are this share of the window's hours
TOP_MINUTES = 3  # cron-like: requests in the busiest minutes of the hour
DAILY_WINDOW_SHARE = 0.9  # `daily_window_hours` holds this share of requests


# ---------------------------------------------------------------------------------------------
# Inputs: what the product stores, summed per workload
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class HourStats:
    """One UTC hour of a workload: its hourly rollups summed over every other key.

    `batch_api_requests` sums `requests` of the rollups whose key has `batch_api` true;
    `operations` maps an operation name (chat, embedding…) to its requests. The latency
    percentiles come from the hour's merged histograms and may be None (not needed when the
    summary carries window-wide percentiles). Hours without requests may be left out.
    """

    hour: datetime
    requests: int
    errors: int = 0
    streaming_requests: int = 0
    batch_api_requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    operations: Mapping[str, int] = field(default_factory=dict)
    p95_latency_ms: float | None = None
    p95_ttft_ms: float | None = None

    def __post_init__(self) -> None:
        if self.hour.tzinfo is None:
            raise ValueError("HourStats.hour must be timezone-aware (UTC)")
        if min(self.requests, self.errors, self.streaming_requests, self.batch_api_requests) < 0:
            raise ValueError("request counts cannot be negative")


@dataclass(frozen=True, kw_only=True)
class DayProfile:
    """One UTC day of a workload (a `WorkloadDay`, merged over uploads).

    `minute_counts`: 60 ints, requests per minute of the hour; `hour_counts`: 24 ints, requests
    per UTC hour of the day; `end_users`: distinct end users that day (0 when none are logged).
    """

    day: date
    minute_counts: Sequence[int]
    hour_counts: Sequence[int]
    end_users: int = 0

    def __post_init__(self) -> None:
        if len(self.minute_counts) != MINUTES_PER_HOUR or len(self.hour_counts) != HOURS_PER_DAY:
            raise ValueError("DayProfile needs 60 minute_counts and 24 hour_counts")


@dataclass(frozen=True, kw_only=True)
class WorkloadSummary:
    """Everything the classifier reads about one workload over an analysis window.

    - `hours`: one `HourStats` per UTC hour with requests (any order).
    - `days`: one `DayProfile` per UTC day with requests.
    - `end_users`: distinct end users over the whole window; `callers`: the distinct caller
      identities (API key aliases / service names).
    - `p95_latency_ms`, `p95_ttft_ms`: from the histograms merged over the window (None: the
      request-weighted median of the hourly p95s is used instead).
    - `window_start`, `window_end` (UTC, end exclusive): the period looked at, e.g. the last 30
      days. None: from the workload's first to its last day, whole UTC days.
    - `latency_slo_ms`: the workload's latency SLO, if one is set.
    """

    workload: str = ""
    hours: Sequence[HourStats]
    days: Sequence[DayProfile] = ()
    end_users: int = 0
    callers: frozenset[str] = frozenset()
    p95_latency_ms: float | None = None
    p95_ttft_ms: float | None = None
    window_start: datetime | None = None
    window_end: datetime | None = None
    latency_slo_ms: int | None = None

    def __post_init__(self) -> None:
        for moment in (self.window_start, self.window_end):
            if moment is not None and moment.tzinfo is None:
                raise ValueError("the window must be timezone-aware (UTC)")
        if (
            self.window_start is not None
            and self.window_end is not None
            and self.window_end <= self.window_start
        ):
            raise ValueError("window_end must be after window_start")


# ---------------------------------------------------------------------------------------------
# Features
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class WorkloadFeatures:
    """The numbers the classifier weighs; every share is in [0, 1].

    Time features are over the window's hours, empty hours included.
    - `hour_of_week`: mean requests per occurrence of each UTC hour of the week (7 rows,
      Monday first, × 24 hours).
    - `office_hours_*`: the best Pearson correlation, over UTC offsets −12…+14, of
      `hour_of_week` with a weekday 09:00–18:00 local template; its offset; the share of
      requests in those hours.
    - `daily_rhythm_*`: the same for the 24-hour profile against a waking day (08:00–23:00
      local, every day), which weekend and evening consumer traffic follows.
    - `weekend_weekday_ratio`: mean requests per weekend hour over the mean per weekday hour
      (UTC days); None when weekdays have no traffic (so every value stays JSON-safe).
    - `quiet_hour_ratio`: the quietest hour of the 24-hour profile over its mean (0: silent
      nights, 1: flat). `daily_window_hours`: fewest consecutive hours of the day (wrapping at
      midnight) that hold 90 % of requests.
    - `top_hours_share`: share of requests in the busiest `top_hours` hours (5 % of the
      window), which form `burst_count` runs of consecutive hours, the longest
      `longest_burst_hours`. `peak_to_mean`: the busiest hour over the mean hour.
    - `top3_minute_share`: share of requests in the three busiest minutes of the hour (5 % if
      spread evenly), over `minute_requests` requests.
    - `active_hour_share`: share of hours with requests; `hourly_cv`: coefficient of variation
      of requests per hour.
    - `streaming_share` and `mean_output_tokens` are over non-embedding requests (None when
      there are none); `mean_output_tokens` counts successful requests only.
    """

    requests: int
    window_hours: int
    requests_per_day: float
    error_share: float
    streaming_share: float | None
    batch_api_share: float
    embedding_share: float
    end_users: int
    end_users_per_day: float
    callers: int
    hour_of_week: tuple[tuple[float, ...], ...]
    office_hours_correlation: float
    office_hours_offset: int
    office_hours_share: float
    daily_rhythm_correlation: float
    daily_rhythm_offset: int
    weekend_weekday_ratio: float | None
    quiet_hour_ratio: float
    daily_window_hours: int
    peak_to_mean: float
    top_hours: int
    top_hours_share: float
    burst_count: int
    longest_burst_hours: int
    top3_minute_share: float
    minute_requests: int
    active_hour_share: float
    hourly_cv: float
    mean_output_tokens: float | None
    p95_latency_ms: float | None
    p95_ttft_ms: float | None


def _epoch_hour(moment: datetime) -> int:
    return int((moment - _EPOCH) // timedelta(hours=1))


def _hour_of_week(epoch_hours: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    weekday = (epoch_hours // HOURS_PER_DAY + EPOCH_WEEKDAY) % 7
    return weekday * HOURS_PER_DAY + epoch_hours % HOURS_PER_DAY


def _window(summary: WorkloadSummary) -> tuple[int, int]:
    """First epoch hour and number of hours of the analysis window.

    Missing ends default to whole UTC days around the workload's own hours and days.
    """
    marks = [_epoch_hour(stats.hour) for stats in summary.hours]
    marks += [
        _epoch_hour(datetime(d.day.year, d.day.month, d.day.day, tzinfo=UTC)) for d in summary.days
    ]
    if summary.window_start is not None:
        first = _epoch_hour(summary.window_start)
    else:
        first = min(marks, default=0) // HOURS_PER_DAY * HOURS_PER_DAY
    if summary.window_end is not None:
        # An end inside an hour still counts that hour.
        last = -(-int((summary.window_end - _EPOCH).total_seconds()) // 3600)
    else:
        last = (max(marks, default=0) // HOURS_PER_DAY + 1) * HOURS_PER_DAY
    return first, max(last - first, 1)


def _correlation(profile: npt.NDArray[np.float64], template: npt.NDArray[np.float64]) -> float:
    """Pearson correlation; 0 when either side is constant."""
    if profile.size < 2:
        return 0.0
    profile_dev = profile - profile.mean()
    template_dev = template - template.mean()
    denominator = math.sqrt(float(profile_dev @ profile_dev) * float(template_dev @ template_dev))
    if denominator <= 0:
        return 0.0
    return float(profile_dev @ template_dev) / denominator


def office_hours_template(offset: int) -> npt.NDArray[np.float64]:
    """168 UTC hours of the week: 1 on weekdays 09:00–18:00 at UTC+`offset`, else 0."""
    start, end = OFFICE_HOURS
    local = np.zeros(HOURS_PER_WEEK)
    for weekday in range(5):
        local[weekday * HOURS_PER_DAY + start : weekday * HOURS_PER_DAY + end] = 1.0
    # UTC hour u is local hour u + offset.
    return np.roll(local, -offset)


def waking_day_template(offset: int) -> npt.NDArray[np.float64]:
    """24 UTC hours of the day: 1 from 08:00 to 23:00 at UTC+`offset`, else 0."""
    start, end = WAKING_HOURS
    local = np.zeros(HOURS_PER_DAY)
    local[start:end] = 1.0
    return np.roll(local, -offset)


def _best_fit(
    profile: npt.NDArray[np.float64],
    template_for: Callable[[int], npt.NDArray[np.float64]],
    observed: npt.NDArray[np.bool_],
) -> tuple[float, int]:
    """Best correlation over `UTC_OFFSETS` and its offset, on the `observed` slots only."""
    best_correlation, best_offset = -1.0, 0
    for offset in UTC_OFFSETS:
        correlation = _correlation(profile[observed], template_for(offset)[observed])
        # Ties go to the offset nearest UTC, so a flat profile reports UTC+0.
        if correlation > best_correlation + 1e-12 or (
            abs(correlation - best_correlation) <= 1e-12 and abs(offset) < abs(best_offset)
        ):
            best_correlation, best_offset = correlation, offset
    return best_correlation, best_offset


def _daily_window(daily: npt.NDArray[np.float64], share: float) -> int:
    """Fewest consecutive hours of the day (wrapping at midnight) holding `share` of volume."""
    total = float(daily.sum())
    if total <= 0:
        return HOURS_PER_DAY
    doubled = np.concatenate([daily, daily])
    cumulative = np.concatenate([[0.0], np.cumsum(doubled)])
    for length in range(1, HOURS_PER_DAY + 1):
        best = float(
            (cumulative[length : length + HOURS_PER_DAY] - cumulative[:HOURS_PER_DAY]).max()
        )
        if best >= share * total * (1 - 1e-12):
            return length
    return HOURS_PER_DAY


def _weighted_median(values: Sequence[float], weights: Sequence[float]) -> float | None:
    if not values:
        return None
    order = np.argsort(values)
    sorted_values = np.asarray(values, dtype=float)[order]
    cumulative = np.cumsum(np.asarray(weights, dtype=float)[order])
    if cumulative[-1] <= 0:
        return float(np.median(sorted_values))
    return float(sorted_values[np.searchsorted(cumulative, cumulative[-1] / 2)])


def _is_embedding(operation: str) -> bool:
    return "embed" in operation.lower()


@dataclass(frozen=True, kw_only=True)
class _HourSums:
    """The window's hours summed: requests per hour of the window and the counts over it."""

    per_hour: npt.NDArray[np.float64]
    requests: int
    errors: int
    streaming: int
    batch: int
    embedding: int
    output_tokens: int
    p95_latency_ms: float | None  # request-weighted median of the hourly p95s
    p95_ttft_ms: float | None


def _sum_hours(summary: WorkloadSummary, first_hour: int, window_hours: int) -> _HourSums:
    """The summary's hours inside the window, summed (hours outside it are left out)."""
    per_hour = np.zeros(window_hours)
    requests = errors = streaming = batch = embedding = output_tokens = 0
    hourly_p95: list[float] = []
    hourly_p95_weights: list[float] = []
    hourly_ttft: list[float] = []
    hourly_ttft_weights: list[float] = []
    for stats in summary.hours:
        index = _epoch_hour(stats.hour) - first_hour
        if not 0 <= index < window_hours:
            continue
        per_hour[index] += stats.requests
        requests += stats.requests
        errors += stats.errors
        streaming += stats.streaming_requests
        batch += stats.batch_api_requests
        output_tokens += stats.output_tokens
        embedding += sum(n for name, n in stats.operations.items() if _is_embedding(name))
        if stats.p95_latency_ms is not None:
            hourly_p95.append(stats.p95_latency_ms)
            hourly_p95_weights.append(stats.requests)
        if stats.p95_ttft_ms is not None:
            hourly_ttft.append(stats.p95_ttft_ms)
            hourly_ttft_weights.append(stats.requests)
    return _HourSums(
        per_hour=per_hour,
        requests=requests,
        errors=errors,
        streaming=streaming,
        batch=batch,
        embedding=embedding,
        output_tokens=output_tokens,
        p95_latency_ms=_weighted_median(hourly_p95, hourly_p95_weights),
        p95_ttft_ms=_weighted_median(hourly_ttft, hourly_ttft_weights),
    )


@dataclass(frozen=True, kw_only=True)
class _WeekShape:
    """How the window's traffic falls over the week and the day (see `WorkloadFeatures`)."""

    profile: npt.NDArray[np.float64]  # 168 hours of the week
    daily: npt.NDArray[np.float64]  # 24 hours of the day
    office_hours_correlation: float
    office_hours_offset: int
    office_hours_share: float
    daily_rhythm_correlation: float
    daily_rhythm_offset: int
    weekend_weekday_ratio: float | None
    quiet_hour_ratio: float


def _week_shape(per_hour: npt.NDArray[np.float64], first_hour: int, requests: int) -> _WeekShape:
    """The hour-of-week profile (mean requests per occurrence of each hour of the week) and how
    closely it follows office hours or a waking day in any time zone."""
    how = _hour_of_week(np.arange(first_hour, first_hour + per_hour.size))
    occurrences = np.bincount(how, minlength=HOURS_PER_WEEK)
    totals_by_how = np.bincount(how, weights=per_hour, minlength=HOURS_PER_WEEK)
    profile = np.divide(
        totals_by_how, occurrences, out=np.zeros(HOURS_PER_WEEK), where=occurrences > 0
    )
    # A window shorter than a week leaves hours of the week unobserved: they do not count.
    office_correlation, office_offset = _best_fit(profile, office_hours_template, occurrences > 0)
    office_share = (
        float(totals_by_how @ office_hours_template(office_offset)) / requests if requests else 0.0
    )
    daily = profile.reshape(7, HOURS_PER_DAY).sum(axis=0)
    rhythm_correlation, rhythm_offset = _best_fit(
        daily, waking_day_template, np.ones(HOURS_PER_DAY, dtype=bool)
    )
    weekday_mean = float(profile[: 5 * HOURS_PER_DAY].mean())
    weekend_mean = float(profile[5 * HOURS_PER_DAY :].mean())
    daily_mean = float(daily.mean())
    return _WeekShape(
        profile=profile,
        daily=daily,
        office_hours_correlation=office_correlation,
        office_hours_offset=office_offset,
        office_hours_share=office_share,
        daily_rhythm_correlation=rhythm_correlation,
        daily_rhythm_offset=rhythm_offset,
        weekend_weekday_ratio=weekend_mean / weekday_mean if weekday_mean > 0 else None,
        quiet_hour_ratio=float(daily.min()) / daily_mean if daily_mean > 0 else 0.0,
    )


@dataclass(frozen=True, kw_only=True)
class _Bursts:
    top_hours: int
    top_hours_share: float
    burst_count: int
    longest_burst_hours: int


def _bursts(per_hour: npt.NDArray[np.float64], requests: int) -> _Bursts:
    """Burstiness over the window's hours: the busiest 5 % of hours, their share of requests,
    and the runs of consecutive hours they form."""
    top_hours = max(1, math.ceil(TOP_HOURS_SHARE * per_hour.size))
    order = np.argsort(-per_hour, kind="stable")[:top_hours]
    busy = np.sort(order[per_hour[order] > 0])
    if busy.size:
        run_breaks = np.flatnonzero(np.diff(busy) > 1)
        run_lengths = np.diff(np.concatenate([[0], run_breaks + 1, [busy.size]]))
        burst_count, longest_burst = int(run_lengths.size), int(run_lengths.max())
    else:
        burst_count, longest_burst = 0, 0
    return _Bursts(
        top_hours=top_hours,
        top_hours_share=float(per_hour[order].sum()) / requests if requests else 0.0,
        burst_count=burst_count,
        longest_burst_hours=longest_burst,
    )


def _minute_counts(days: Sequence[DayProfile]) -> npt.NDArray[np.float64]:
    """Requests per minute of the hour, over every day."""
    minutes = np.zeros(MINUTES_PER_HOUR)
    for day in days:
        minutes += np.asarray(day.minute_counts, dtype=float)
    return minutes


def _top_minutes_share(minutes: npt.NDArray[np.float64]) -> float:
    """Share of requests in the `TOP_MINUTES` busiest minutes of the hour (cron-like)."""
    minute_total = float(minutes.sum())
    top_minutes = float(np.sort(minutes)[-TOP_MINUTES:].sum())
    return top_minutes / minute_total if minute_total else 0.0


def _end_users_per_day(days: Sequence[DayProfile]) -> float:
    """Mean distinct end users over the days with requests."""
    end_users_by_day = [day.end_users for day in days if sum(day.hour_counts) > 0]
    return float(np.mean(end_users_by_day)) if end_users_by_day else 0.0


def compute_features(summary: WorkloadSummary) -> WorkloadFeatures:
    """The classifier's inputs, from a workload's stored summaries."""
    first_hour, window_hours = _window(summary)
    sums = _sum_hours(summary, first_hour, window_hours)
    requests, per_hour = sums.requests, sums.per_hour

    def share(part: float) -> float:
        return part / requests if requests else 0.0

    non_embedding = requests - sums.embedding
    successful_non_embedding = non_embedding * (1.0 - share(sums.errors))
    week = _week_shape(per_hour, first_hour, requests)
    bursts = _bursts(per_hour, requests)
    minutes = _minute_counts(summary.days)
    mean_hourly = float(per_hour.mean())
    return WorkloadFeatures(
        requests=requests,
        window_hours=window_hours,
        requests_per_day=requests / (window_hours / HOURS_PER_DAY),
        error_share=share(sums.errors),
        streaming_share=sums.streaming / non_embedding if non_embedding > 0 else None,
        batch_api_share=share(sums.batch),
        embedding_share=share(sums.embedding),
        end_users=summary.end_users,
        end_users_per_day=_end_users_per_day(summary.days),
        callers=len(summary.callers),
        hour_of_week=tuple(tuple(float(v) for v in row) for row in week.profile.reshape(7, 24)),
        office_hours_correlation=week.office_hours_correlation,
        office_hours_offset=week.office_hours_offset,
        office_hours_share=week.office_hours_share,
        daily_rhythm_correlation=week.daily_rhythm_correlation,
        daily_rhythm_offset=week.daily_rhythm_offset,
        weekend_weekday_ratio=week.weekend_weekday_ratio,
        quiet_hour_ratio=week.quiet_hour_ratio,
        daily_window_hours=_daily_window(week.daily, DAILY_WINDOW_SHARE),
        peak_to_mean=float(per_hour.max()) / mean_hourly if mean_hourly > 0 else 0.0,
        top_hours=bursts.top_hours,
        top_hours_share=bursts.top_hours_share,
        burst_count=bursts.burst_count,
        longest_burst_hours=bursts.longest_burst_hours,
        top3_minute_share=_top_minutes_share(minutes),
        minute_requests=int(minutes.sum()),
        active_hour_share=float((per_hour > 0).mean()),
        hourly_cv=float(per_hour.std()) / mean_hourly if mean_hourly > 0 else 0.0,
        mean_output_tokens=(
            sums.output_tokens / successful_non_embedding if successful_non_embedding > 0 else None
        ),
        p95_latency_ms=(
            sums.p95_latency_ms if summary.p95_latency_ms is None else summary.p95_latency_ms
        ),
        p95_ttft_ms=sums.p95_ttft_ms if summary.p95_ttft_ms is None else summary.p95_ttft_ms,
    )
