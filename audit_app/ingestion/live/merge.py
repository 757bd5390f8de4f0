"""Merging what a micro-batch of live records adds into its stream upload's rows
(`audit_app.ingestion.live.landing` calls it inside the landing transaction).

A stream upload keeps one row per key however many micro-batches it took: the rows the new
records make (`ingest.rollup_rows`, `daily.daily_from_hourly`, `ingest.day_rows`, as a file's
landing writes them) are added to the upload's rows of the same key, and the sum replaces the
old row; rows of new keys are inserted. Sums add, long-context thresholds stay when equal
(else `pricing.MIXED_THRESHOLDS`: a card changed between micro-batches), latency histograms merge
(`LatencyHistogram.merge_bytes`), minute and hour counts add, end-user sketches unite (KMV
union, `rollups.distinct_sketch`) and callers unite up to MAX_CALLERS_PER_DAY, those already
kept first. So merging micro-batches gives the rows one file of the same records gives
(histogram sums up to float rounding, as merging a fanned-out file's parts does).

An hourly row's `distinct_end_users` is written and never read (pages count end users from
the workload days' sketches); two rows merge to the larger of their counts, the union's lower
bound (exact when one side's users are among the other's).

Only the upload's rows at the hours and days the new rows cover are read and rewritten.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.db import models

from audit_app.costs.pricing import merged_threshold
from audit_app.ingestion.daily import (
    HISTOGRAM_FIELDS,
    KEY_FIELDS,
    SUM_FIELDS,
    THRESHOLD_FIELD,
    daily_from_hourly,
)
from audit_app.ingestion.histograms import LatencyHistogram
from audit_app.ingestion.ingest import day_rows, rollup_rows
from audit_app.ingestion.provider_usage import aggregate_days, report_usage_sync
from audit_app.ingestion.rollups import MAX_CALLERS_PER_DAY, IngestAggregate, distinct_sketch
from audit_app.lib.bulk import insert_all
from audit_app.models import DailyRollup, HourlyRollup, Upload, Workload, WorkloadDay

ROWS_PER_DELETE = 1_000


def merge_aggregate(upload: Upload, aggregate: IngestAggregate) -> None:
    """Add the aggregate to the upload's hourly and daily rollups and workload days, one row
    per key, and create the workloads it names."""
    hourly = list(rollup_rows(upload, aggregate))
    _merge_rows(HourlyRollup, upload, hourly, time_field="hour", add=_add_rollup)
    daily = [{**row, "upload_id": upload.pk} for row in daily_from_hourly(hourly)]
    _merge_rows(DailyRollup, upload, daily, time_field="day", add=_add_rollup)
    _merge_rows(
        WorkloadDay, upload, list(day_rows(upload, aggregate)), time_field="day", add=_add_day
    )
    names = {key.workload[:200] for key in aggregate.rollups}
    Workload.objects.bulk_create(
        [Workload(name=name) for name in sorted(names)], ignore_conflicts=True
    )
    # The stream now covers these provider days: a provider report's rollups of them go.
    report_usage_sync(aggregate_days(aggregate))


def _merge_rows(
    model: type[models.Model],
    upload: Upload,
    rows: list[dict[str, Any]],
    *,
    time_field: str,
    add: Callable[[dict[str, Any], Mapping[str, Any]], None],
) -> None:
    """Write ``rows`` into the upload's rows of ``model``: a row whose key (time and key
    fields) the upload already has is added to it, and the sum replaces the old row; the
    others are inserted. Only the upload's rows at the times ``rows`` cover are read."""
    fields = (time_field, *_key_fields(model))
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        key = tuple(row[f] for f in fields)
        if key in merged:
            add(merged[key], row)
        else:
            merged[key] = dict(row)
    times = {key[0] for key in merged}
    replaced: list[int] = []
    for old in _manager(model).filter(upload=upload, **{f"{time_field}__in": times}).values():
        key = tuple(old[f] for f in fields)
        if key in merged:
            replaced.append(old.pop("id"))
            add(old, merged[key])
            merged[key] = old
    for start in range(0, len(replaced), ROWS_PER_DELETE):
        _manager(model).filter(pk__in=replaced[start : start + ROWS_PER_DELETE]).delete()
    insert_all(model, merged.values())


def _manager(model: type[models.Model]) -> models.Manager[Any]:
    return model._default_manager


def _key_fields(model: type[models.Model]) -> tuple[str, ...]:
    return ("workload",) if model is WorkloadDay else KEY_FIELDS


def _add_rollup(into: dict[str, Any], row: Mapping[str, Any]) -> None:
    """Add one rollup row to another of the same key: sums add, histograms merge."""
    for name in SUM_FIELDS:
        into[name] = into[name] + row[name]
    into[THRESHOLD_FIELD] = merged_threshold(into[THRESHOLD_FIELD], row[THRESHOLD_FIELD])
    for name in HISTOGRAM_FIELDS:
        into[name] = _merged_histogram(into[name], row[name])
    if "distinct_end_users" in into:
        # Written, never read; the union has at least as many users as either side.
        into["distinct_end_users"] = max(into["distinct_end_users"], row["distinct_end_users"])


def _merged_histogram(mine: Any, theirs: Any) -> bytes:
    if not mine or not theirs:
        return bytes(mine or theirs or b"")
    return LatencyHistogram.merge_bytes([mine, theirs]).to_bytes()


def _add_day(into: dict[str, Any], row: Mapping[str, Any]) -> None:
    """Add one workload day to another: counts add, end-user sketches and callers unite (the
    callers capped at MAX_CALLERS_PER_DAY, those already kept first)."""
    into["requests"] += row["requests"]
    for name in ("minute_counts", "hour_counts"):
        into[name] = [a + b for a, b in zip(into[name], row[name], strict=True)]
    into["end_user_hashes"] = distinct_sketch([*into["end_user_hashes"], *row["end_user_hashes"]])
    callers = list(into["callers"])
    room = MAX_CALLERS_PER_DAY - len(callers)
    if room > 0:
        callers += sorted(set(row["callers"]) - set(callers))[:room]
    into["callers"] = sorted(callers)
