"""Real-time or asynchronous: a transparent classifier over workload features (`docs/methods.md`).

Pure module (no Django).

Its rules in full: `docs/methods.md`, section "The classifier".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from audit_app.workloads.features import (
    DAILY_WINDOW_SHARE,
    HOURS_PER_DAY,
    WorkloadFeatures,
    WorkloadSummary,
    compute_features,
)

LABEL_REALTIME = "realtime"
LABEL_ASYNC = "async"
LABEL_UNKNOWN = "unknown"
LABELS = (LABEL_REALTIME, LABEL_ASYNC, LABEL_UNKNOWN)


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


def _evidence(
    contributions: tuple[SignalContribution, ...], direction: float, config: ClassifierConfig
) -> tuple[str, ...]:
    """The telling signals' sentences: for the label first, then the ones against it
    ("against this: …"); in their order when `direction` is 0 (no label)."""
    telling = [
        c for c in contributions if c.sentence and abs(c.points) >= config.evidence_min_points
    ]
    if direction == 0:
        return tuple(c.sentence for c in telling)
    supporting = [c.sentence for c in telling if c.points * direction > 0]
    opposing = [f"against this: {c.sentence}" for c in telling if c.points * direction < 0]
    return (*supporting, *opposing)


def _slo_label(slo_ms: int, config: ClassifierConfig) -> tuple[str, str]:
    """The label a latency SLO decides, and the sentence that says why."""
    if slo_ms >= config.slo_async_ms:
        return LABEL_ASYNC, (
            f"latency SLO is {_duration(slo_ms)} (≥ {_duration(config.slo_async_ms)}): "
            "response time does not change the outcome, so this is an async candidate"
        )
    return LABEL_REALTIME, (
        f"latency SLO is {_duration(slo_ms)} (< {_duration(config.slo_async_ms)}): "
        "someone waits on the answer, so this is real-time"
    )


def _weak_lean(score: float, config: ClassifierConfig) -> str:
    """Why a score inside the unknown margin tells nothing."""
    if score == 0:
        return "the signals lean neither way (score 0)"
    return (
        f"the signals lean {'real-time' if score > 0 else 'async'} too weakly to tell "
        f"(score {score:+.1f}, needs ±{config.unknown_margin:.1f})"
    )


def classify(
    features: WorkloadFeatures,
    *,
    slo_ms: int | None = None,
    config: ClassifierConfig = CLASSIFIER_CONFIG,
) -> Classification:
    """Real-time, async or unknown, with a confidence and the evidence (see the module doc)."""
    contributions = signal_contributions(features, config)
    score = sum(c.points for c in contributions)

    if slo_ms is not None:
        label, reason = _slo_label(slo_ms, config)
        direction = 1.0 if label == LABEL_REALTIME else -1.0
        return Classification(
            label=label,
            confidence=config.slo_confidence,
            evidence=(reason, *_evidence(contributions, direction, config)),
            score=score,
            contributions=contributions,
        )

    volume = volume_factor(features.requests, config)
    days = features.window_hours / HOURS_PER_DAY
    if volume <= 0 or abs(score) < config.unknown_margin:
        reason = (
            f"only {features.requests:,} requests in {days:.0f} days: too few to tell"
            if volume <= 0
            else _weak_lean(score, config)
        )
        return Classification(
            label=LABEL_UNKNOWN,
            confidence=0.0,
            evidence=(reason, *_evidence(contributions, 0.0, config)),
            score=score,
            contributions=contributions,
        )
    label = LABEL_REALTIME if score > 0 else LABEL_ASYNC
    confidence = math.tanh(abs(score) / config.confidence_scale) * volume
    evidence = _evidence(contributions, score, config)
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
