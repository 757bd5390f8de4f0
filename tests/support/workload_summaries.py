"""Tiny workload summaries built from requests per hour, for the features and classifier tests."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from audit_app.workloads.features import DayProfile, HourStats, WorkloadSummary

MONDAY = datetime(2025, 3, 3, tzinfo=UTC)  # a Monday


def hourly_summary(
    counts: Mapping[int, int],
    *,
    days: int = 14,
    streaming_share: float = 0.0,
    batch_share: float = 0.0,
    output_per_request: int = 200,
    end_users_per_day: int = 0,
    end_users: int = 0,
    callers: frozenset[str] = frozenset({"svc"}),
    p95_latency_ms: float | None = 5_000.0,
    minutes: tuple[int, ...] = tuple(range(60)),
    latency_slo_ms: int | None = None,
) -> WorkloadSummary:
    """A summary from requests per hour (hours counted from MONDAY 00:00 UTC).

    Each hour's requests are spread round-robin over `minutes` of the hour.
    """
    hours = []
    hour_counts: dict[int, list[int]] = {}
    minute_counts: dict[int, list[int]] = {}
    for hour, requests in sorted(counts.items()):
        if requests <= 0:
            continue
        hours.append(
            HourStats(
                hour=MONDAY + timedelta(hours=hour),
                requests=requests,
                streaming_requests=round(requests * streaming_share),
                batch_api_requests=round(requests * batch_share),
                output_tokens=requests * output_per_request,
                operations={"chat": requests},
            )
        )
        day = hour // 24
        hour_counts.setdefault(day, [0] * 24)[hour % 24] += requests
        per_minute = minute_counts.setdefault(day, [0] * 60)
        for index in range(requests):
            per_minute[minutes[index % len(minutes)]] += 1
    profiles = tuple(
        DayProfile(
            day=(MONDAY + timedelta(days=day)).date(),
            minute_counts=tuple(minute_counts[day]),
            hour_counts=tuple(hour_counts[day]),
            end_users=min(end_users_per_day, sum(hour_counts[day])),
        )
        for day in sorted(hour_counts)
    )
    return WorkloadSummary(
        workload="test",
        hours=tuple(hours),
        days=profiles,
        end_users=end_users,
        callers=callers,
        p95_latency_ms=p95_latency_ms,
        window_start=MONDAY,
        window_end=MONDAY + timedelta(days=days),
        latency_slo_ms=latency_slo_ms,
    )


def office_counts(offset: int, *, per_hour: int = 40, days: int = 14) -> dict[int, int]:
    """`per_hour` requests on weekdays 09:00–18:00 at UTC+`offset`, nothing else."""
    counts = {}
    for hour in range(days * 24):
        local = hour + offset
        if (local // 24) % 7 < 5 and 9 <= local % 24 < 18:
            counts[hour] = per_hour
    return counts
