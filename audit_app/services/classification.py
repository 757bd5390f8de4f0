"""Classify workloads from their rollups and day shapes; keep people's overrides.

Runs after each token-log ingest and on demand (`manage.py classify`). Features come only from
hourly rollups and per-workload-day summaries, never from request rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Case, IntegerField, Sum, When

from audit_app.classification import (
    DayProfile,
    HourStats,
    WorkloadSummary,
    classify,
    compute_features,
)
from audit_app.models import (
    AuditEvent,
    Workload,
    WorkloadClass,
    WorkloadClassification,
    WorkloadDay,
    WorkloadOverride,
)
from audit_app.permissions import Actor, Role, has_role
from audit_app.rollups import distinct_estimate, distinct_sketch
from audit_app.selectors import (
    daily_rollups,
    data_date_range,
    rollups_in_range,
    workload_usage,
)
from audit_app.services.audit import audit_record

WINDOW_DAYS = 30
CHECKPOINT_EVERY = 200


class OverrideRefused(Exception):
    def __init__(self, message: str, *, field: str = "", status: int = 400) -> None:
        super().__init__(message)
        self.field = field
        self.status = status


def analysis_window(today: date | None = None) -> tuple[date, date] | None:
    """The last 30 days that have data."""
    bounds = data_date_range()
    if bounds is None:
        return None
    end = min(bounds[1], today) if today else bounds[1]
    return max(bounds[0], end - timedelta(days=WINDOW_DAYS - 1)), end


def workload_summary(workload: Workload, *, start: date, end: date) -> WorkloadSummary:
    queryset = rollups_in_range(start=start, end=end, workload=workload.name)
    operations: dict[datetime, dict[str, int]] = defaultdict(dict)
    for row in queryset.values("hour", "operation").annotate(n=Sum("requests")).order_by():
        operations[row["hour"]][row["operation"] or "chat"] = row["n"]
    hours = [
        HourStats(
            hour=row["hour"],
            requests=row["n"],
            errors=row["e"],
            streaming_requests=row["s"],
            batch_api_requests=row["b"],
            input_tokens=row["i"],
            output_tokens=row["o"],
            operations=operations[row["hour"]],
        )
        for row in queryset.values("hour")
        .annotate(
            n=Sum("requests"),
            e=Sum("errors"),
            s=Sum("streaming_requests"),
            b=Sum(
                Case(When(batch_api=True, then="requests"), default=0, output_field=IntegerField())
            ),
            i=Sum("input_tokens"),
            o=Sum("output_tokens"),
        )
        .order_by()
    ]
    minute: dict[date, list[int]] = defaultdict(lambda: [0] * 60)
    hour_of_day: dict[date, list[int]] = defaultdict(lambda: [0] * 24)
    users_by_day: dict[date, set[int]] = defaultdict(set)
    callers: set[str] = set()
    for day in WorkloadDay.objects.filter(
        workload=workload.name, day__gte=start, day__lte=end, upload__status="succeeded"
    ).only("day", "minute_counts", "hour_counts", "end_user_hashes", "callers"):
        minute[day.day] = [a + b for a, b in zip(minute[day.day], day.minute_counts, strict=True)]
        hour_of_day[day.day] = [
            a + b for a, b in zip(hour_of_day[day.day], day.hour_counts, strict=True)
        ]
        users_by_day[day.day].update(day.end_user_hashes)
        callers.update(day.callers)
    days = [
        DayProfile(
            day=d,
            minute_counts=minute[d],
            hour_counts=hour_of_day[d],
            end_users=distinct_estimate(distinct_sketch(users_by_day[d])),
        )
        for d in sorted(minute)
    ]
    stats = workload_usage(queryset=daily_rollups(start=start, end=end, workload=workload.name))
    latency = stats[0] if stats else None
    return WorkloadSummary(
        workload=workload.name,
        hours=hours,
        days=days,
        end_users=distinct_estimate(distinct_sketch(set().union(*users_by_day.values()))),
        callers=frozenset(callers),
        p95_latency_ms=latency.latency.p95_ms if latency else None,
        p95_ttft_ms=latency.ttft.p95_ms if latency else None,
        window_start=datetime.combine(start, time.min, tzinfo=UTC),
        window_end=datetime.combine(end + timedelta(days=1), time.min, tzinfo=UTC),
        latency_slo_ms=workload.latency_slo_ms,
    )


@transaction.atomic
def workloads_classify(
    *, today: date | None = None, checkpoint: Callable[[], None] | None = None
) -> list[WorkloadClassification]:
    """(Re)classify every workload with traffic in the window. Overrides are left alone.
    ``checkpoint`` is called every CHECKPOINT_EVERY workloads (a refresh stops there when the
    data changed under it, `services.derived`)."""
    window = analysis_window(today)
    if window is None:
        return []
    start, end = window
    names = daily_rollups(start=start, end=end).values("workload")
    results = []
    for index, workload in enumerate(Workload.objects.filter(name__in=names)):
        if checkpoint is not None and index % CHECKPOINT_EVERY == 0:
            checkpoint()
        summary = workload_summary(workload, start=start, end=end)
        features = compute_features(summary)
        result = classify(features, slo_ms=workload.latency_slo_ms)
        classification, _ = WorkloadClassification.objects.update_or_create(
            workload=workload,
            defaults={
                "workload_class": result.label,
                "confidence": round(result.confidence, 3),
                "evidence": list(result.evidence),
                "features": _plain(features.__dict__),
            },
        )
        results.append(classification)
    return results


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    """JSON-safe feature values (numbers, strings, lists)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if hasattr(value, "tolist"):
            value = value.tolist()
        elif isinstance(value, frozenset | set | tuple):
            value = sorted(value) if isinstance(value, frozenset | set) else list(value)
        if isinstance(value, float | int | str | bool | list | dict) or value is None:
            out[key] = value
    return out


def current_override(workload: Workload) -> WorkloadOverride | None:
    """The newest override (uses prefetched overrides when the caller loaded them)."""
    if "overrides" in getattr(workload, "_prefetched_objects_cache", {}):
        overrides = workload.overrides.all()
        return overrides[0] if overrides else None
    return workload.overrides.select_related("user").first()


def effective_class(workload: Workload) -> str:
    """The override's class when one is in force, else the classifier's, else unknown."""
    override = current_override(workload)
    if override is not None and override.workload_class:
        return override.workload_class
    if Workload.classification.is_cached(workload):  # loaded with select_related
        classification = getattr(workload, "classification", None)
    else:
        classification = WorkloadClassification.objects.filter(workload=workload).first()
    return classification.workload_class if classification else WorkloadClass.UNKNOWN


@transaction.atomic
def workload_override(
    *, workload: Workload, user: Actor, workload_class: str, reason: str
) -> WorkloadOverride:
    """Set (or, with an empty class, clear) a workload's class by hand. Engineers and managers."""
    if not has_role(user, [Role.ENGINEER, Role.MANAGER]):
        raise OverrideRefused(
            "Only engineers and managers may override a workload's class.", status=403
        )
    if workload_class not in ("", *WorkloadClass.values):
        raise OverrideRefused(
            f"workload_class must be realtime, async, unknown or empty, not {workload_class!r}.",
            field="workload_class",
        )
    if not reason.strip():
        raise OverrideRefused("Say why: an override needs a reason.", field="reason")
    override = WorkloadOverride.objects.create(
        workload=workload, workload_class=workload_class, reason=reason.strip(), user=user
    )
    audit_record(
        actor=user,
        action=AuditEvent.Action.WORKLOAD_OVERRIDE,
        obj=workload,
        summary=f"set {workload.name} to {workload_class or 'the classifier'}",
        details={"workload_class": workload_class, "reason": reason.strip()},
    )
    return override


def class_summary(workload: Workload | None) -> dict[str, Any]:
    """The class a workload has, the classifier's own verdict and the override in force, as
    plain values (the API, `workloads --json` and pages show the same fields)."""
    classification = getattr(workload, "classification", None) if workload else None
    override = current_override(workload) if workload else None
    return {
        "workload_class": effective_class(workload) if workload else WorkloadClass.UNKNOWN.value,
        "computed_class": classification.workload_class if classification else "unknown",
        "confidence": classification.confidence if classification else 0.0,
        "evidence": classification.evidence if classification else [],
        "override": (
            {
                "workload_class": override.workload_class,
                "reason": override.reason,
                "by": override.user.get_username() if override.user else None,
                "at": override.created_at.isoformat(),
            }
            if override and override.workload_class
            else None
        ),
    }
