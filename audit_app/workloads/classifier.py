"""Real-time or asynchronous: workload features and a transparent classifier (DESIGN 3.5).

Pure module (numpy, no Django). The caller builds one `WorkloadSummary` per workload from what
the product stores — hourly rollups summed per UTC hour (`HourStats`) and the per-workload-day
shapes (`DayProfile`) — never from request rows. Then:

- `compute_features(summary)` turns it into `WorkloadFeatures`: shares (streaming, batch API,
  embeddings), people (end users, callers), time shape (hour-of-week profile, best correlation
  with office hours or a waking day in any time zone, burstiness, cron-like minutes, flatness),
  output length and the latency the workload already tolerates;
- `classify(features, slo_ms=...)` adds up one contribution per signal (log-odds style: positive
  points lean real-time, negative lean async) and returns a `Classification` with a label, a
  confidence and the evidence as plain sentences with the numbers that drove it.

A latency SLO, when set, decides (≥ 2 s: async candidate; < 2 s: real-time). Otherwise no single
signal decides: every weight and threshold lives in `ClassifierConfig` (`CLASSIFIER_CONFIG`).

Low volume: below `min_requests` the label is `unknown`. Between that and
`full_confidence_requests` the label still follows the score — a low-volume internal tool used
in office hours by several people leans real-time — but the confidence shrinks with the volume,
and the timing signals that small counts make noisy (bursts, cron minutes, flatness) count less.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

import numpy as np
import numpy.typing as npt

LABEL_REALTIME = "realtime"
LABEL_ASYNC = "async"
LABEL_UNKNOWN = "unknown"
LABELS = (LABEL_REALTIME, LABEL_ASYNC, LABEL_UNKNOWN)

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


def compute_features(summary: WorkloadSummary) -> WorkloadFeatures:
    """The classifier's inputs, from a workload's stored summaries."""
    first_hour, window_hours = _window(summary)
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

    def share(part: float) -> float:
        return part / requests if requests else 0.0

    non_embedding = requests - embedding
    successful_non_embedding = non_embedding * (1.0 - share(errors))

    # Hour-of-week profile: mean requests per occurrence of each hour of the week.
    how = _hour_of_week(np.arange(first_hour, first_hour + window_hours))
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
    quiet_ratio = float(daily.min()) / daily_mean if daily_mean > 0 else 0.0
    weekend_ratio = weekend_mean / weekday_mean if weekday_mean > 0 else None

    # Burstiness over the window's hours.
    mean_hourly = float(per_hour.mean())
    top_hours = max(1, math.ceil(TOP_HOURS_SHARE * window_hours))
    order = np.argsort(-per_hour, kind="stable")[:top_hours]
    top_share = float(per_hour[order].sum()) / requests if requests else 0.0
    busy = np.sort(order[per_hour[order] > 0])
    if busy.size:
        run_breaks = np.flatnonzero(np.diff(busy) > 1)
        run_lengths = np.diff(np.concatenate([[0], run_breaks + 1, [busy.size]]))
        burst_count, longest_burst = int(run_lengths.size), int(run_lengths.max())
    else:
        burst_count, longest_burst = 0, 0

    minutes = np.zeros(MINUTES_PER_HOUR)
    end_users_by_day = []
    for day in summary.days:
        minutes += np.asarray(day.minute_counts, dtype=float)
        if sum(day.hour_counts) > 0:
            end_users_by_day.append(day.end_users)
    minute_total = float(minutes.sum())
    top_minutes = float(np.sort(minutes)[-TOP_MINUTES:].sum())
    top3_minutes = top_minutes / minute_total if minute_total else 0.0

    p95_latency = summary.p95_latency_ms
    if p95_latency is None:
        p95_latency = _weighted_median(hourly_p95, hourly_p95_weights)
    p95_ttft = summary.p95_ttft_ms
    if p95_ttft is None:
        p95_ttft = _weighted_median(hourly_ttft, hourly_ttft_weights)

    return WorkloadFeatures(
        requests=requests,
        window_hours=window_hours,
        requests_per_day=requests / (window_hours / HOURS_PER_DAY),
        error_share=share(errors),
        streaming_share=streaming / non_embedding if non_embedding > 0 else None,
        batch_api_share=share(batch),
        embedding_share=share(embedding),
        end_users=summary.end_users,
        end_users_per_day=float(np.mean(end_users_by_day)) if end_users_by_day else 0.0,
        callers=len(summary.callers),
        hour_of_week=tuple(tuple(float(v) for v in row) for row in profile.reshape(7, 24)),
        office_hours_correlation=office_correlation,
        office_hours_offset=office_offset,
        office_hours_share=office_share,
        daily_rhythm_correlation=rhythm_correlation,
        daily_rhythm_offset=rhythm_offset,
        weekend_weekday_ratio=weekend_ratio,
        quiet_hour_ratio=quiet_ratio,
        daily_window_hours=_daily_window(daily, DAILY_WINDOW_SHARE),
        peak_to_mean=float(per_hour.max()) / mean_hourly if mean_hourly > 0 else 0.0,
        top_hours=top_hours,
        top_hours_share=top_share,
        burst_count=burst_count,
        longest_burst_hours=longest_burst,
        top3_minute_share=top3_minutes,
        minute_requests=int(minute_total),
        active_hour_share=float((per_hour > 0).mean()),
        hourly_cv=float(per_hour.std()) / mean_hourly if mean_hourly > 0 else 0.0,
        mean_output_tokens=(
            output_tokens / successful_non_embedding if successful_non_embedding > 0 else None
        ),
        p95_latency_ms=p95_latency,
        p95_ttft_ms=p95_ttft,
    )


# ---------------------------------------------------------------------------------------------
# Classifier
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ClassifierConfig:
    """Every threshold and weight of the classifier, in one place.

    Points are log-odds style: positive leans real-time, negative leans async. Each signal ramps
    its feature linearly (end users and latency on a log scale) from a neutral threshold, worth
    0, to a full one, worth 1, and multiplies by its weight.
    """

    # A set SLO decides.
    slo_async_ms: int = 2_000
    slo_confidence: float = 0.95
    # Volume: below `min_requests` nothing can be told; confidence is full from
    # `full_confidence_requests` (log scale in between).
    min_requests: int = 50
    full_confidence_requests: int = 2_000
    # |score| below this gives `unknown`; confidence = tanh(|score| / confidence_scale).
    unknown_margin: float = 1.0
    confidence_scale: float = 2.5
    # Only sentences of signals worth at least this many points are kept as evidence.
    evidence_min_points: float = 0.15
    # Streaming: share 1 → +weight, share 0 → −weight.
    streaming_weight: float = 1.0
    # Batch API: −weight at `batch_full_share` and above.
    batch_weight: float = 3.0
    batch_full_share: float = 0.2
    # People: end users a day, log scale up to `end_users_full` → +weight; none → −no_users.
    end_users_weight: float = 1.5
    end_users_full: float = 100.0
    no_end_users_weight: float = 0.8
    single_caller_weight: float = 0.3
    many_callers: int = 3
    many_callers_weight: float = 0.3
    # Human rhythm: best of office-hours and waking-day correlations.
    rhythm_weight: float = 2.5
    rhythm_neutral: float = 0.35
    rhythm_full: float = 0.75
    rhythm_floor: float = -0.3  # lowest scaled value: no rhythm counts only a little
    # A rhythm counts for real-time in full only when quiet hours are really quiet: a queue
    # that follows the day by ±20 % over a steady floor is machine traffic. Depth is
    # 1 − quiet_hour_ratio, ramped from `rhythm_depth_neutral` to `rhythm_depth_full`.
    rhythm_depth_neutral: float = 0.4
    rhythm_depth_full: float = 0.8
    # Schedule: 90 % of requests within a few consecutive hours of the day (people spread over
    # a working or waking day): 0 points at `schedule_neutral_hours`, full at `schedule_full_hours`.
    schedule_weight: float = 2.0
    schedule_neutral_hours: float = 7.0
    schedule_full_hours: float = 3.0
    # Bursts: share of requests in the busiest 5 % of hours.
    burst_weight: float = 2.5
    burst_neutral: float = 0.25
    burst_full: float = 0.6
    # Cron: share of requests in the busiest 3 minutes of the hour.
    cron_weight: float = 2.0
    cron_neutral: float = 0.15
    cron_full: float = 0.4
    cron_min_requests: int = 200
    # Below `full_confidence_requests`, the timing signals (bursts, cron, flatness) count
    # between this share (at `min_requests`) and in full, as small counts make them noisy.
    low_volume_timing_share: float = 0.5
    # Flat 24/7: active in at least `flat_active_share` of hours, hourly variation below.
    flat_weight: float = 2.0
    flat_active_share: float = 0.9
    flat_cv_neutral: float = 0.6
    flat_cv_full: float = 0.25
    # Output length: short answers lean real-time, long ones async.
    short_output_weight: float = 0.5
    short_output_tokens: float = 100.0
    long_output_weight: float = 0.7
    long_output_tokens: float = 800.0
    neutral_output_tokens: float = 300.0
    # p95 end-to-end latency: fast answers lean real-time, long waits async.
    fast_latency_weight: float = 0.8
    fast_latency_ms: float = 3_000.0
    fast_latency_neutral_ms: float = 8_000.0
    slow_latency_weight: float = 1.5
    slow_latency_neutral_ms: float = 20_000.0
    slow_latency_ms: float = 120_000.0
    # Embeddings: −weight × embedding share.
    embedding_weight: float = 1.0


CLASSIFIER_CONFIG = ClassifierConfig()


@dataclass(frozen=True, kw_only=True)
class SignalContribution:
    """One signal's points towards real-time (+) or async (−) and the sentence that says why."""

    signal: str
    points: float
    sentence: str


@dataclass(frozen=True, kw_only=True)
class Classification:
    """`label` in `LABELS`, `confidence` in [0, 1], `evidence` as plain sentences.

    `score` is the sum of the contributions' points (positive leans real-time); `confidence` is
    0 for `unknown`.
    """

    label: str
    confidence: float
    evidence: tuple[str, ...]
    score: float = 0.0
    contributions: tuple[SignalContribution, ...] = ()


def _ramp(value: float, neutral: float, full: float) -> float:
    """0 at `neutral`, 1 at `full` (either direction), clipped to [0, 1]."""
    if full == neutral:
        return 1.0 if value >= full else 0.0
    return min(1.0, max(0.0, (value - neutral) / (full - neutral)))


def _percent(share: float) -> str:
    return f"{share * 100:.0f} %"


def _duration(ms: float) -> str:
    if ms < 1_000:
        return f"{ms:.0f} ms"
    if ms < 60_000:
        return f"{ms / 1_000:.1f} s" if ms < 10_000 else f"{ms / 1_000:.0f} s"
    if ms < 3_600_000:
        return f"{ms / 60_000:.1f} min"
    return f"{ms / 3_600_000:.1f} h"


def _utc(offset: int) -> str:
    if offset == 0:
        return "UTC"
    return f"UTC{'+' if offset > 0 else '−'}{abs(offset)}"


def _clock(hour: int) -> str:
    return f"{hour % 24:02d}:00"


def _streaming_signal(features: WorkloadFeatures, config: ClassifierConfig) -> SignalContribution:
    share = features.streaming_share
    if share is None:
        return SignalContribution(signal="streaming", points=0.0, sentence="")
    points = config.streaming_weight * (2.0 * share - 1.0)
    if share == 0:
        sentence = "no request streamed"
    elif share == 1:
        sentence = "every request streamed"
    else:
        sentence = f"{_percent(share)} of requests streamed"
    return SignalContribution(signal="streaming", points=points, sentence=sentence)


def _batch_signal(features: WorkloadFeatures, config: ClassifierConfig) -> SignalContribution:
    share = features.batch_api_share
    points = -config.batch_weight * _ramp(share, 0.0, config.batch_full_share)
    return SignalContribution(
        signal="batch_api",
        points=points,
        sentence=f"{_percent(share)} of requests went through a batch API" if share else "",
    )


def _people_signal(features: WorkloadFeatures, config: ClassifierConfig) -> SignalContribution:
    per_day = features.end_users_per_day
    if features.end_users == 0:
        return SignalContribution(
            signal="end_users",
            points=-config.no_end_users_weight,
            sentence="no request carries an end-user id",
        )
    scaled = min(1.0, math.log10(1.0 + per_day) / math.log10(1.0 + config.end_users_full))
    return SignalContribution(
        signal="end_users",
        points=config.end_users_weight * scaled,
        sentence=(f"{features.end_users:,} distinct end users ({per_day:,.0f} a day on average)"),
    )


def _caller_signal(features: WorkloadFeatures, config: ClassifierConfig) -> SignalContribution:
    if features.callers == 1:
        return SignalContribution(
            signal="callers",
            points=-config.single_caller_weight,
            sentence="one caller identity for 100 % of traffic",
        )
    if features.callers >= config.many_callers:
        return SignalContribution(
            signal="callers",
            points=config.many_callers_weight,
            sentence=f"{features.callers} caller identities",
        )
    return SignalContribution(signal="callers", points=0.0, sentence="")


def _rhythm_signal(features: WorkloadFeatures, config: ClassifierConfig) -> SignalContribution:
    office = features.office_hours_correlation
    daily = features.daily_rhythm_correlation
    best = max(office, daily)
    scaled = (best - config.rhythm_neutral) / (config.rhythm_full - config.rhythm_neutral)
    depth = 1.0 - features.quiet_hour_ratio
    if scaled > 0:
        scaled = min(1.0, scaled) * _ramp(
            depth, config.rhythm_depth_neutral, config.rhythm_depth_full
        )
    points = config.rhythm_weight * max(config.rhythm_floor, scaled)
    if office >= daily:
        offset = features.office_hours_offset
        sentence = (
            f"{_percent(features.office_hours_share)} of requests arrive on weekdays "
            f"{_clock(9 - offset)}–{_clock(18 - offset)} UTC (office hours at {_utc(offset)}); "
            f"correlation with a working week {office:.2f}"
        )
    else:
        offset = features.daily_rhythm_offset
        ratio = features.weekend_weekday_ratio
        weekend = (
            "only on weekends" if ratio is None else f"weekend to weekday volume {ratio:.1f} to 1"
        )
        sentence = (
            f"requests follow a waking day {_clock(8 - offset)}–{_clock(23 - offset)} UTC "
            f"(08:00–23:00 at {_utc(offset)}), correlation {daily:.2f}; {weekend}"
        )
    if best > config.rhythm_neutral and depth < config.rhythm_depth_full:
        sentence += (
            f"; but the quietest hour still has {_percent(features.quiet_hour_ratio)} "
            "of the mean hourly volume"
        )
    if best <= config.rhythm_neutral:
        sentence = (
            f"no human rhythm: best correlation with office hours {office:.2f}, "
            f"with a waking day {daily:.2f}"
        )
    return SignalContribution(signal="rhythm", points=points, sentence=sentence)


def _schedule_signal(features: WorkloadFeatures, config: ClassifierConfig) -> SignalContribution:
    hours = features.daily_window_hours
    narrow = _ramp(hours, config.schedule_neutral_hours, config.schedule_full_hours)
    return SignalContribution(
        signal="schedule",
        points=-config.schedule_weight * narrow,
        sentence=(
            f"{_percent(DAILY_WINDOW_SHARE)} of requests fall within "
            + ("one hour of the day" if hours == 1 else f"{hours} consecutive hours of the day")
        ),
    )


def _burst_signal(
    features: WorkloadFeatures, config: ClassifierConfig, damping: float
) -> SignalContribution:
    share = features.top_hours_share
    points = -config.burst_weight * _ramp(share, config.burst_neutral, config.burst_full) * damping
    bursts = "burst" if features.burst_count == 1 else "bursts"
    sentence = (
        f"{_percent(share)} of requests fall in the busiest {features.top_hours} of "
        f"{features.window_hours} hours ({features.burst_count} {bursts}, the longest "
        f"{features.longest_burst_hours} h); peak hour {features.peak_to_mean:.0f}× the mean"
    )
    return SignalContribution(signal="bursts", points=points, sentence=sentence)


def _cron_signal(
    features: WorkloadFeatures, config: ClassifierConfig, damping: float
) -> SignalContribution:
    share = features.top3_minute_share
    if features.minute_requests < config.cron_min_requests:
        return SignalContribution(signal="cron", points=0.0, sentence="")
    points = -config.cron_weight * _ramp(share, config.cron_neutral, config.cron_full) * damping
    return SignalContribution(
        signal="cron",
        points=points,
        sentence=(
            f"{_percent(share)} of requests arrive in the same 3 minutes of the hour "
            "(5 % if spread evenly)"
        ),
    )


def _flat_signal(
    features: WorkloadFeatures, config: ClassifierConfig, damping: float
) -> SignalContribution:
    if features.active_hour_share < config.flat_active_share:
        return SignalContribution(signal="flat", points=0.0, sentence="")
    flatness = _ramp(features.hourly_cv, config.flat_cv_neutral, config.flat_cv_full)
    return SignalContribution(
        signal="flat",
        points=-config.flat_weight * flatness * damping,
        sentence=(
            f"requests arrive in {_percent(features.active_hour_share)} of hours, day and night, "
            f"with hourly volume varying by {_percent(features.hourly_cv)}"
        ),
    )


def _output_signal(features: WorkloadFeatures, config: ClassifierConfig) -> SignalContribution:
    tokens = features.mean_output_tokens
    if tokens is None:
        return SignalContribution(signal="output_length", points=0.0, sentence="")
    if tokens <= config.neutral_output_tokens:
        points = config.short_output_weight * _ramp(
            tokens, config.neutral_output_tokens, config.short_output_tokens
        )
    else:
        points = -config.long_output_weight * _ramp(
            tokens, config.neutral_output_tokens, config.long_output_tokens
        )
    return SignalContribution(
        signal="output_length",
        points=points,
        sentence=f"mean output is {tokens:,.0f} tokens per request",
    )


def _latency_signal(features: WorkloadFeatures, config: ClassifierConfig) -> SignalContribution:
    p95 = features.p95_latency_ms
    if p95 is None or p95 <= 0:
        return SignalContribution(signal="latency", points=0.0, sentence="")
    log_p95 = math.log10(p95)
    fast = _ramp(
        log_p95, math.log10(config.fast_latency_neutral_ms), math.log10(config.fast_latency_ms)
    )
    slow = _ramp(
        log_p95, math.log10(config.slow_latency_neutral_ms), math.log10(config.slow_latency_ms)
    )
    points = config.fast_latency_weight * fast - config.slow_latency_weight * slow
    return SignalContribution(
        signal="latency",
        points=points,
        sentence=f"p95 end-to-end latency is {_duration(p95)}",
    )


def _embedding_signal(features: WorkloadFeatures, config: ClassifierConfig) -> SignalContribution:
    share = features.embedding_share
    return SignalContribution(
        signal="embeddings",
        points=-config.embedding_weight * share,
        sentence=f"{_percent(share)} of requests are embeddings" if share else "",
    )


def volume_factor(requests: int, config: ClassifierConfig = CLASSIFIER_CONFIG) -> float:
    """0 below `min_requests`, 1 from `full_confidence_requests`, log-linear in between."""
    if requests < config.min_requests:
        return 0.0
    return _ramp(
        math.log10(requests),
        math.log10(config.min_requests),
        math.log10(config.full_confidence_requests),
    )


def signal_contributions(
    features: WorkloadFeatures, config: ClassifierConfig = CLASSIFIER_CONFIG
) -> tuple[SignalContribution, ...]:
    """Every signal's points, strongest first (zero-point signals included)."""
    # Small counts make hourly shapes noisy: their timing signals count less.
    floor = config.low_volume_timing_share
    damping = floor + (1.0 - floor) * volume_factor(features.requests, config)
    contributions = [
        _streaming_signal(features, config),
        _batch_signal(features, config),
        _people_signal(features, config),
        _caller_signal(features, config),
        _rhythm_signal(features, config),
        _schedule_signal(features, config),
        _burst_signal(features, config, damping),
        _cron_signal(features, config, damping),
        _flat_signal(features, config, damping),
        _output_signal(features, config),
        _latency_signal(features, config),
        _embedding_signal(features, config),
    ]
    return tuple(sorted(contributions, key=lambda c: -abs(c.points)))


def classify(
    features: WorkloadFeatures,
    *,
    slo_ms: int | None = None,
    config: ClassifierConfig = CLASSIFIER_CONFIG,
) -> Classification:
    """Real-time, async or unknown, with a confidence and the evidence (see the module doc)."""
    contributions = signal_contributions(features, config)
    score = sum(c.points for c in contributions)

    def evidence_for(direction: float) -> tuple[str, ...]:
        """Sentences for the label first, then the ones against it ("against this: …")."""
        telling = [
            c for c in contributions if c.sentence and abs(c.points) >= config.evidence_min_points
        ]
        if direction == 0:
            return tuple(c.sentence for c in telling)
        supporting = [c.sentence for c in telling if c.points * direction > 0]
        opposing = [f"against this: {c.sentence}" for c in telling if c.points * direction < 0]
        return (*supporting, *opposing)

    if slo_ms is not None:
        if slo_ms >= config.slo_async_ms:
            label = LABEL_ASYNC
            reason = (
                f"latency SLO is {_duration(slo_ms)} (≥ {_duration(config.slo_async_ms)}): "
                "response time does not change the outcome, so this is an async candidate"
            )
        else:
            label = LABEL_REALTIME
            reason = (
                f"latency SLO is {_duration(slo_ms)} (< {_duration(config.slo_async_ms)}): "
                "someone waits on the answer, so this is real-time"
            )
        return Classification(
            label=label,
            confidence=config.slo_confidence,
            evidence=(reason, *evidence_for(1.0 if label == LABEL_REALTIME else -1.0)),
            score=score,
            contributions=contributions,
        )

    volume = volume_factor(features.requests, config)
    days = features.window_hours / HOURS_PER_DAY
    if volume <= 0:
        return Classification(
            label=LABEL_UNKNOWN,
            confidence=0.0,
            evidence=(
                f"only {features.requests:,} requests in {days:.0f} days: too few to tell",
                *evidence_for(0.0),
            ),
            score=score,
            contributions=contributions,
        )
    if abs(score) < config.unknown_margin:
        if score == 0:
            lean = "the signals lean neither way (score 0)"
        else:
            lean = (
                f"the signals lean {'real-time' if score > 0 else 'async'} too weakly to tell "
                f"(score {score:+.1f}, needs ±{config.unknown_margin:.1f})"
            )
        return Classification(
            label=LABEL_UNKNOWN,
            confidence=0.0,
            evidence=(
                lean,
                *evidence_for(0.0),
            ),
            score=score,
            contributions=contributions,
        )
    label = LABEL_REALTIME if score > 0 else LABEL_ASYNC
    confidence = math.tanh(abs(score) / config.confidence_scale) * volume
    evidence = evidence_for(score)
    if volume < 1:
        evidence = (
            *evidence,
            f"only {features.requests:,} requests in {days:.0f} days: confidence reduced",
        )
    return Classification(
        label=label,
        confidence=min(1.0, max(0.0, confidence)),
        evidence=evidence,
        score=score,
        contributions=contributions,
    )


def classify_summary(
    summary: WorkloadSummary, *, config: ClassifierConfig = CLASSIFIER_CONFIG
) -> Classification:
    """Features, then the class, honouring the summary's latency SLO."""
    return classify(compute_features(summary), slo_ms=summary.latency_slo_ms, config=config)
