"""Tests for audit_app.workloads.classifier: the SLO rule, evidence, confidence, config.

Summaries are tiny and built by hand (tests.support.workload_summaries); the labeled evaluation
runs the classifier over the simulated workloads of bench.labeled_workloads.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from audit_app.workloads.classifier import (
    CLASSIFIER_CONFIG,
    LABEL_ASYNC,
    LABEL_REALTIME,
    LABEL_UNKNOWN,
    LABELS,
    classify,
    classify_summary,
    signal_contributions,
)
from audit_app.workloads.features import (
    WorkloadFeatures,
    WorkloadSummary,
    compute_features,
)
from bench.labeled_workloads import SHAPES, LabeledWorkload, labeled_workloads
from tests.support.workload_summaries import hourly_summary, office_counts


def _voice_line() -> WorkloadSummary:
    """Never streams, but many callers phone in office hours and get short, fast answers."""
    return hourly_summary(
        office_counts(-5),
        streaming_share=0.0,
        output_per_request=40,
        end_users_per_day=300,
        end_users=3_000,
        callers=frozenset({"voice-line"}),
        p95_latency_ms=1_200.0,
    )


# Bursts of one hour at scattered times of day, never in adjacent hours.
AGENT_BURST_HOURS = (2, 31, 83, 150, 206, 283)


def _background_agent() -> WorkloadSummary:
    """Streams every answer, but one service identity runs it in bursts and nobody waits."""
    return hourly_summary(
        dict.fromkeys(AGENT_BURST_HOURS, 300),
        streaming_share=1.0,
        output_per_request=900,
        callers=frozenset({"research-agent"}),
        p95_latency_ms=55_000.0,
    )


# A features record on which every signal scores 0 points: tests change one field at a time.
NEUTRAL = WorkloadFeatures(
    requests=5_000,
    window_hours=336,
    requests_per_day=5_000 / 14,
    error_share=0.0,
    streaming_share=0.5,
    batch_api_share=0.0,
    embedding_share=0.0,
    end_users=1,
    end_users_per_day=0.0,
    callers=2,
    hour_of_week=tuple((0.0,) * 24 for _ in range(7)),
    office_hours_correlation=0.35,
    office_hours_offset=0,
    office_hours_share=0.3,
    daily_rhythm_correlation=0.3,
    daily_rhythm_offset=0,
    weekend_weekday_ratio=1.0,
    quiet_hour_ratio=0.0,
    daily_window_hours=20,
    peak_to_mean=3.0,
    top_hours=17,
    top_hours_share=0.1,
    burst_count=5,
    longest_burst_hours=2,
    top3_minute_share=0.05,
    minute_requests=5_000,
    active_hour_share=0.5,
    hourly_cv=1.0,
    mean_output_tokens=300.0,
    p95_latency_ms=10_000.0,
    p95_ttft_ms=None,
)


# --- The SLO rule --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("slo_ms", "label"),
    [(500, LABEL_REALTIME), (1_999, LABEL_REALTIME), (2_000, LABEL_ASYNC), (60_000, LABEL_ASYNC)],
)
def test_a_set_slo_decides(slo_ms: int, label: str) -> None:
    # Against the traffic: a clearly real-time voice line and a clearly async agent.
    for summary in (_voice_line(), _background_agent()):
        result = classify(compute_features(summary), slo_ms=slo_ms)
        assert result.label == label
        assert "latency SLO" in result.evidence[0]


def test_slo_evidence_and_the_summary_slo() -> None:
    result = classify_summary(replace(_voice_line(), latency_slo_ms=5_000))
    assert result.label == LABEL_ASYNC
    assert result.evidence[0] == (
        "latency SLO is 5.0 s (≥ 2.0 s): response time does not change the outcome, "
        "so this is an async candidate"
    )
    result = classify_summary(replace(_background_agent(), latency_slo_ms=800))
    assert result.label == LABEL_REALTIME
    assert result.evidence[0].startswith("latency SLO is 800 ms (< 2.0 s)")


# --- The named hard cases ----------------------------------------------------------------------


def test_non_streaming_voice_line_is_realtime() -> None:
    result = classify_summary(_voice_line())
    assert result.label == LABEL_REALTIME
    assert "against this: no request streamed" in result.evidence


def test_streaming_background_agent_is_async() -> None:
    result = classify_summary(_background_agent())
    assert result.label == LABEL_ASYNC
    assert "against this: every request streamed" in result.evidence


@pytest.mark.parametrize(
    ("shape", "label"), [("voice-line", LABEL_REALTIME), ("research-agent", LABEL_ASYNC)]
)
def test_simulated_hard_cases(labeled: list[LabeledWorkload], shape: str, label: str) -> None:
    cases = [case for case in labeled if case.shape == shape]
    assert len(cases) >= 3
    assert [classify_summary(case.summary).label for case in cases] == [label] * len(cases)


# --- Evidence ----------------------------------------------------------------------------------


def test_evidence_carries_the_numbers() -> None:
    voice = classify_summary(_voice_line()).evidence
    assert (
        "100 % of requests arrive on weekdays 14:00–23:00 UTC (office hours at UTC−5); "
        "correlation with a working week 1.00"
    ) in voice
    assert "3,000 distinct end users (300 a day on average)" in voice
    assert "p95 end-to-end latency is 1.2 s" in voice
    assert "mean output is 40 tokens per request" in voice

    agent = classify_summary(_background_agent()).evidence
    # 6 one-hour bursts of 300 requests: all 1,800 in the busiest 17 of 336 hours; the peak
    # hour is 300 against a mean of 1,800 / 336.
    assert (
        "100 % of requests fall in the busiest 17 of 336 hours (6 bursts, the longest 1 h); "
        "peak hour 56× the mean"
    ) in agent
    assert "one caller identity for 100 % of traffic" in agent
    assert "no request carries an end-user id" in agent
    assert "p95 end-to-end latency is 55 s" in agent
    assert "mean output is 900 tokens per request" in agent

    cron = classify_summary(hourly_summary(dict.fromkeys(range(336), 30), minutes=(0, 1, 2)))
    assert cron.label == LABEL_ASYNC
    assert "100 % of requests arrive in the same 3 minutes of the hour (5 % if spread evenly)" in (
        cron.evidence
    )
    assert "no request streamed" in cron.evidence


def test_evidence_for_low_and_no_volume() -> None:
    few = classify_summary(hourly_summary({10: 5, 34: 5}))
    assert few.label == LABEL_UNKNOWN and few.confidence == 0.0
    assert few.evidence[0] == "only 10 requests in 14 days: too few to tell"

    # A small internal tool: 3 requests an office hour, 8 people; leans real-time, unsure.
    tool = classify_summary(
        hourly_summary(office_counts(1, per_hour=3), end_users=8, end_users_per_day=6)
    )
    assert tool.label == LABEL_REALTIME
    assert 0 < tool.confidence < 0.7
    assert tool.evidence[-1] == "only 270 requests in 14 days: confidence reduced"


# --- Confidence --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"requests": 0, "minute_requests": 0},
        {"batch_api_share": 1.0, "top_hours_share": 1.0, "p95_latency_ms": 1e9},
        {"streaming_share": 1.0, "office_hours_correlation": 1.0, "end_users_per_day": 1e6},
        {"requests": 10**9, "daily_window_hours": 1, "top3_minute_share": 1.0},
    ],
)
def test_confidence_is_between_zero_and_one(changes: dict[str, float]) -> None:
    for slo_ms in (None, 100, 10_000):
        result = classify(replace(NEUTRAL, **changes), slo_ms=slo_ms)
        assert 0.0 <= result.confidence <= 1.0
        assert result.label in LABELS


def test_confidence_of_every_labeled_case(labeled: list[LabeledWorkload]) -> None:
    confidences = [classify_summary(case.summary).confidence for case in labeled]
    assert all(0.0 <= value <= 1.0 for value in confidences)


# --- Transparent score and config --------------------------------------------------------------


def test_neutral_features_score_zero_and_are_unknown() -> None:
    assert all(c.points == 0 for c in signal_contributions(NEUTRAL))
    result = classify(NEUTRAL)
    assert (result.label, result.confidence, result.score) == (LABEL_UNKNOWN, 0.0, 0.0)


@pytest.mark.parametrize(
    ("changes", "signal", "sign"),
    [
        ({"streaming_share": 1.0}, "streaming", +1),
        ({"streaming_share": 0.0}, "streaming", -1),
        ({"batch_api_share": 0.1}, "batch_api", -1),
        ({"end_users": 500, "end_users_per_day": 200.0}, "end_users", +1),
        ({"end_users": 0}, "end_users", -1),
        ({"callers": 1}, "callers", -1),
        ({"callers": 12}, "callers", +1),
        ({"office_hours_correlation": 0.9}, "rhythm", +1),
        ({"office_hours_correlation": 0.0}, "rhythm", -1),
        ({"daily_window_hours": 2}, "schedule", -1),
        ({"top_hours_share": 0.8}, "bursts", -1),
        ({"top3_minute_share": 0.6}, "cron", -1),
        ({"active_hour_share": 1.0, "hourly_cv": 0.1}, "flat", -1),
        ({"mean_output_tokens": 40.0}, "output_length", +1),
        ({"mean_output_tokens": 2_000.0}, "output_length", -1),
        ({"p95_latency_ms": 800.0}, "latency", +1),
        ({"p95_latency_ms": 300_000.0}, "latency", -1),
        ({"embedding_share": 1.0}, "embeddings", -1),
    ],
)
def test_each_signal_leans_its_way(changes: dict[str, float], signal: str, sign: int) -> None:
    points = {c.signal: c.points for c in signal_contributions(replace(NEUTRAL, **changes))}
    assert points[signal] * sign > 0
    assert all(value == 0 for name, value in points.items() if name != signal)


def test_a_deep_rhythm_counts_more_than_a_shallow_one() -> None:
    shallow = replace(NEUTRAL, office_hours_correlation=0.9, quiet_hour_ratio=0.8)
    points = {c.signal: c.points for c in signal_contributions(shallow)}
    # A queue that follows the day over a steady floor is not people waiting.
    assert points["rhythm"] == 0


def test_config_thresholds_flip_a_borderline_case() -> None:
    # Half the requests in the busiest 5 % of hours and nothing else telling.
    bursty = replace(NEUTRAL, top_hours_share=0.5)
    # Default: −2.5 × (0.5 − 0.25) / (0.6 − 0.25) = −1.79 points, past the ±1 margin.
    result = classify(bursty)
    assert result.label == LABEL_ASYNC
    assert result.score == pytest.approx(-2.5 * 0.25 / 0.35)
    # Starting the burst ramp at 45 %: −2.5 × 0.05 / 0.15 = −0.83 points, too weak to tell.
    assert classify(bursty, config=replace(CLASSIFIER_CONFIG, burst_neutral=0.45)).label == (
        LABEL_UNKNOWN
    )
    # The SLO threshold itself: 1.5 s is real-time by default, async if the bar is 1 s.
    assert classify(bursty, slo_ms=1_500).label == LABEL_REALTIME
    assert (
        classify(bursty, slo_ms=1_500, config=replace(CLASSIFIER_CONFIG, slo_async_ms=1_000)).label
        == LABEL_ASYNC
    )


# --- Labeled evaluation ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def labeled() -> list[LabeledWorkload]:
    return labeled_workloads(seed=0)


def test_labeled_set_covers_the_shapes(labeled: list[LabeledWorkload]) -> None:
    assert len(SHAPES) >= 20
    assert len(labeled) >= 80
    per_shape = Counter(case.shape for case in labeled)
    assert min(per_shape.values()) >= 3
    labels = Counter(case.label for case in labeled)
    assert labels[LABEL_REALTIME] >= 30 and labels[LABEL_ASYNC] >= 30
    assert {case.clear for case in labeled} == {True, False}
    required = {
        "voice-line",
        "research-agent",
        "internal-tool",
        "apac-chat",
        "hourly-cron",
        "weekly-batch",
        "embeddings-backfill",
        "follow-the-sun-support",
        "nightly-evals",
        "doc-ingestion",
        "ide-assistant",
        "customer-chat-us",
        "batch-api-jobs",
        "data-labeling-pipeline",
        "weekend-consumer-app",
    }
    assert required <= set(per_shape)


def test_accuracy_on_the_labeled_set(labeled: list[LabeledWorkload]) -> None:
    predicted = [(case, classify_summary(case.summary)) for case in labeled]
    correct = sum(result.label == case.label for case, result in predicted)
    assert correct / len(labeled) >= 0.95
    wrong_clear = [
        (case.name, result.label)
        for case, result in predicted
        if case.clear
        if result.label != case.label
    ]
    assert wrong_clear == []
