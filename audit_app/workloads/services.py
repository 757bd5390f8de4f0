"""Classify workloads from their rollups and day shapes; keep people's overrides.

Runs after each token-log ingest and on demand (`manage.py classify`). Features come only from
hourly rollups and per-workload-day summaries, never from request rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Case, IntegerField, Sum, When

from audit_app.access.audit import audit_record
from audit_app.access.permissions import Actor, Role, has_role
from audit_app.costs.rollups import daily_rollups, rollups_in_range
from audit_app.ingestion.rollups import distinct_estimate, distinct_sketch
from audit_app.lib.errors import DomainError, ErrorKind
from audit_app.models import (
    AuditEvent,
    Workload,
    WorkloadClass,
    WorkloadClassification,
    WorkloadDay,
    WorkloadOverride,
)
from audit_app.reporting.selectors import (
    WorkloadUsage,
    data_date_range,
    workload_usage,
)
from audit_app.workloads.classifier import classify
from audit_app.workloads.features import (
    DayProfile,
    HourStats,
    WorkloadSummary,
    compute_features,
)

WINDOW_DAYS = 30
# Classification and recommendations handle this many workloads between checkpoints.
CHECKPOINT_EVERY = 500


class OverrideRefused(DomainError):
    """A class override the service will not make; ``field`` names the input at fault."""


def analysis_window(today: date | None = None) -> tuple[date, date] | None:
    """The last 30 days that have data."""
    bounds = data_date_range()
    if bounds is None:
        return None
    end = min(bounds[1], today) if today else bounds[1]
    return max(bounds[0], end - timedelta(days=WINDOW_DAYS - 1)), end


def workload_summaries(
    workloads: Sequence[Workload], *, start: date, end: date
) -> list[WorkloadSummary]:
    """What the classifier reads about each of ``workloads`` over days start..end, in their
    order, from four queries for the whole batch (not four per workload)."""
    names = [w.name for w in workloads]
    hourly = rollups_in_range(start=start, end=end).filter(workload__in=names)
    operations: dict[tuple[str, datetime], dict[str, int]] = defaultdict(dict)
    for op in hourly.values("workload", "hour", "operation").annotate(n=Sum("requests")).order_by():
        operations[(op["workload"], op["hour"])][op["operation"] or "chat"] = op["n"]
    hours: dict[str, list[HourStats]] = defaultdict(list)
    for row in (
        hourly.values("workload", "hour")
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
    ):
        hours[row["workload"]].append(
            HourStats(
                hour=row["hour"],
                requests=row["n"],
                errors=row["e"],
                streaming_requests=row["s"],
                batch_api_requests=row["b"],
                input_tokens=row["i"],
                output_tokens=row["o"],
                operations=operations[(row["workload"], row["hour"])],
            )
        )
    shapes: dict[str, list[WorkloadDay]] = defaultdict(list)
    for day in WorkloadDay.objects.filter(
        workload__in=names, day__gte=start, day__lte=end, upload__status="succeeded"
    ).only("workload", "day", "minute_counts", "hour_counts", "end_user_hashes", "callers"):
        shapes[day.workload].append(day)
    stats = {
        usage.name: usage
        for usage in workload_usage(
            queryset=daily_rollups(start=start, end=end).filter(workload__in=names)
        )
    }
    return [
        _summary(
            w,
            hours=hours[w.name],
            shapes=shapes[w.name],
            usage=stats.get(w.name),
            start=start,
            end=end,
        )
        for w in workloads
    ]


def _summary(
    workload: Workload,
    *,
    hours: list[HourStats],
    shapes: list[WorkloadDay],
    usage: WorkloadUsage | None,
    start: date,
    end: date,
) -> WorkloadSummary:
    minute: dict[date, list[int]] = defaultdict(lambda: [0] * 60)
    hour_of_day: dict[date, list[int]] = defaultdict(lambda: [0] * 24)
    users_by_day: dict[date, set[int]] = defaultdict(set)
    callers: set[str] = set()
    for day in shapes:
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
    return WorkloadSummary(
        workload=workload.name,
        hours=hours,
        days=days,
        end_users=distinct_estimate(distinct_sketch(set().union(*users_by_day.values()))),
        callers=frozenset(callers),
        p95_latency_ms=usage.latency.p95_ms if usage else None,
        p95_ttft_ms=usage.ttft.p95_ms if usage else None,
        window_start=datetime.combine(start, time.min, tzinfo=UTC),
        window_end=datetime.combine(end + timedelta(days=1), time.min, tzinfo=UTC),
        latency_slo_ms=workload.latency_slo_ms,
    )


@transaction.atomic
def workloads_classify(
    *, today: date | None = None, checkpoint: Callable[[], None] | None = None
) -> list[WorkloadClassification]:
    """(Re)classify every workload with traffic in the window. Overrides are left alone.

    Workloads are read and written CHECKPOINT_EVERY at a time (a few queries per batch), and
    ``checkpoint`` is called before each batch (a refresh stops there when the data changed
    under it, `audit_app.derived`)."""
    window = analysis_window(today)
    if window is None:
        return []
    start, end = window
    names = daily_rollups(start=start, end=end).values("workload")
    workloads = list(Workload.objects.filter(name__in=names).order_by("pk"))
    results: list[WorkloadClassification] = []
    for first in range(0, len(workloads), CHECKPOINT_EVERY):
        if checkpoint is not None:
            checkpoint()
        batch = workloads[first : first + CHECKPOINT_EVERY]
        results += _classified(batch, workload_summaries(batch, start=start, end=end))
    return results


def _classified(
    workloads: list[Workload], summaries: list[WorkloadSummary]
) -> list[WorkloadClassification]:
    """Each workload's new classification row, replacing its old one: one DELETE and one
    INSERT for the batch (nothing refers to a classification row but its workload)."""
    rows = []
    for workload, summary in zip(workloads, summaries, strict=True):
        features = compute_features(summary)
        result = classify(features, slo_ms=workload.latency_slo_ms)
        rows.append(
            WorkloadClassification(
                workload=workload,
                workload_class=result.label,
                confidence=round(result.confidence, 3),
                evidence=list(result.evidence),
                features=_plain(features.__dict__),
            )
        )
    WorkloadClassification.objects.filter(workload__in=workloads).delete()
    return WorkloadClassification.objects.bulk_create(rows, batch_size=CHECKPOINT_EVERY)


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


def effective_classes() -> dict[str, str]:
    """Every classified or overridden workload's class by name, by `effective_class`'s rule
    (the newest override's class, unless empty; else the classifier's), in two queries that
    load no model rows: for pages that split spend over thousands of workloads. A workload
    missing from it is unknown."""
    classes = dict(WorkloadClassification.objects.values_list("workload__name", "workload_class"))
    seen: set[str] = set()
    for name, workload_class in WorkloadOverride.objects.order_by(
        "workload_id", "-created_at", "-id"
    ).values_list("workload__name", "workload_class"):
        if name not in seen:
            seen.add(name)
            if workload_class:
                classes[name] = workload_class
    return classes


@transaction.atomic
def workload_override(
    *, workload: Workload, user: Actor, workload_class: str, reason: str
) -> WorkloadOverride:
    """Set (or, with an empty class, clear) a workload's class by hand. Engineers and managers."""
    if not has_role(user, [Role.ENGINEER, Role.MANAGER]):
        raise OverrideRefused(
            "Only engineers and managers may override a workload's class.",
            kind=ErrorKind.FORBIDDEN,
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
        summary=(
            f"set {workload.name} to "
            f"{WorkloadClass(workload_class).label if workload_class else 'the classifier'}"
        ),
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
