"""Tests for audit_app.workloads.features: feature values worked out by hand from tiny summaries."""

from __future__ import annotations

import math
from datetime import date, timedelta

import pytest

from audit_app.workloads.classifier import LABEL_UNKNOWN, classify
from audit_app.workloads.features import DayProfile, HourStats, WorkloadSummary, compute_features
from tests.support.workload_summaries import MONDAY, hourly_summary, office_counts

# --- Features, computed by hand ----------------------------------------------------------------


def test_features_of_a_tiny_summary() -> None:
    # One Monday: 6 chat requests at 10:00 (3 streamed, 600 output tokens), 2 embedding
    # requests at 11:00 (both through the batch API); minutes 0 (4), 1 (2), 30 (1), 45 (1).
    minute_counts = [0] * 60
    minute_counts[0], minute_counts[1], minute_counts[30], minute_counts[45] = 4, 2, 1, 1
    hour_counts = [0] * 24
    hour_counts[10], hour_counts[11] = 6, 2
    summary = WorkloadSummary(
        hours=(
            HourStats(
                hour=MONDAY + timedelta(hours=10),
                requests=6,
                streaming_requests=3,
                output_tokens=600,
                operations={"chat": 6},
                p95_latency_ms=900.0,
            ),
            HourStats(
                hour=MONDAY + timedelta(hours=11),
                requests=2,
                batch_api_requests=2,
                operations={"embedding": 2},
                p95_latency_ms=300.0,
            ),
        ),
        days=(
            DayProfile(
                day=date(2025, 3, 3),
                minute_counts=minute_counts,
                hour_counts=hour_counts,
                end_users=3,
            ),
        ),
        end_users=3,
        callers=frozenset({"a", "b"}),
        window_start=MONDAY,
        window_end=MONDAY + timedelta(days=1),
    )
    features = compute_features(summary)

    assert features.requests == 8
    assert features.window_hours == 24
    assert features.requests_per_day == 8.0
    assert features.streaming_share == 3 / 6  # over the 6 non-embedding requests
    assert features.batch_api_share == 2 / 8
    assert features.embedding_share == 2 / 8
    assert features.mean_output_tokens == 600 / 6
    assert features.top3_minute_share == (4 + 2 + 1) / 8
    assert features.minute_requests == 8
    assert features.peak_to_mean == 6 / (8 / 24)  # 18
    # 5 % of 24 hours, rounded up: the 2 busiest hours hold everything, as one 2-hour burst.
    assert (features.top_hours, features.top_hours_share) == (2, 1.0)
    assert (features.burst_count, features.longest_burst_hours) == (1, 2)
    assert features.active_hour_share == 2 / 24
    # Hourly counts 6, 2 and 22 zeros: mean 1/3, variance 40/24 − 1/9 = 14/9.
    assert features.hourly_cv == pytest.approx(math.sqrt(14 / 9) / (1 / 3))
    assert features.daily_window_hours == 2  # 90 % of 8 needs both hours
    assert features.quiet_hour_ratio == 0.0
    assert (features.end_users, features.end_users_per_day, features.callers) == (3, 3.0, 2)
    # No window-wide percentile: the request-weighted median of the hourly p95s.
    assert features.p95_latency_ms == 900.0
    assert features.hour_of_week[0][10] == 6.0 and features.hour_of_week[0][11] == 2.0


def test_hour_of_week_is_mean_per_occurrence_and_window_defaults_to_whole_days() -> None:
    # Monday 10:00 in two weeks (4 then 2 requests) and nothing else; no window given.
    summary = WorkloadSummary(
        hours=(
            HourStats(hour=MONDAY + timedelta(hours=10), requests=4),
            HourStats(hour=MONDAY + timedelta(days=7, hours=10), requests=2),
        ),
    )
    features = compute_features(summary)
    # From Monday 00:00 to the end of the second Monday: 8 days.
    assert features.window_hours == 8 * 24
    assert features.hour_of_week[0][10] == (4 + 2) / 2
    assert features.peak_to_mean == 4 / (6 / (8 * 24))
    assert features.weekend_weekday_ratio == 0.0


@pytest.mark.parametrize("offset", [-12, -8, -5, 0, 1, 5, 9, 14])
def test_office_hours_correlation_picks_the_offset(offset: int) -> None:
    features = compute_features(hourly_summary(office_counts(offset)))
    assert features.office_hours_offset == offset
    assert features.office_hours_correlation == pytest.approx(1.0)
    assert features.office_hours_share == pytest.approx(1.0)
    assert features.weekend_weekday_ratio < 0.5


def test_daily_rhythm_finds_weekend_daytime_traffic() -> None:
    # 08:00–23:00 at UTC+2 on Saturdays and Sundays only: 06:00–21:00 UTC.
    counts = {
        week * 168 + weekday * 24 + hour: 10
        for week in range(2)
        for weekday in (5, 6)
        for hour in range(6, 21)
    }
    features = compute_features(hourly_summary(counts))
    assert features.daily_rhythm_offset == 2
    assert features.daily_rhythm_correlation == pytest.approx(1.0)
    assert features.weekend_weekday_ratio is None  # no weekday traffic
    result = classify(features)
    assert result.label == LABEL_UNKNOWN  # a shape alone decides nothing
    assert (
        "requests follow a waking day 06:00–21:00 UTC (08:00–23:00 at UTC+2), correlation 1.00; "
        "only on weekends"
    ) in result.evidence
    assert features.daily_window_hours == 14  # 90 % of 15 equal hours: 13.5 → 14


def test_flat_and_cron_traffic() -> None:
    # 30 requests every hour, all within minutes 0–2: a cron job.
    features = compute_features(hourly_summary(dict.fromkeys(range(336), 30), minutes=(0, 1, 2)))
    assert features.top3_minute_share == 1.0
    assert features.active_hour_share == 1.0
    assert features.hourly_cv == 0.0
    assert features.peak_to_mean == 1.0
    assert features.top_hours_share == pytest.approx(17 / 336)
    assert features.quiet_hour_ratio == 1.0
    assert features.office_hours_correlation == 0.0  # a constant profile correlates with nothing
