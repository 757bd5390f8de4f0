"""Reads about live ingestion for the pages and the API: records received and not landed yet
per source (the Uploads page's header), and a stream upload's micro-batches."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

from django.db.models import Count, Min, Sum

from audit_app.models import LiveBatch, Upload


@dataclass(frozen=True, kw_only=True)
class PendingSource:
    """Records of one source received and waiting for the next landing."""

    source: str
    label: str
    batches: int
    records: int
    oldest_received_at: datetime


@dataclass(frozen=True, kw_only=True)
class SetAsideBatch:
    """A batch a landing set aside instead of landing, and why."""

    batch: int
    records: int
    error: str


@dataclass(frozen=True, kw_only=True)
class StreamBatches:
    """A stream upload's micro-batches: the records its source sent that day (as the receivers
    accepted them), how many counted, how many were sent again, how many still wait to land,
    what the receivers refused or ignored (spans that were not LLM calls), and the batches a
    landing set aside (the first MAX_SET_ASIDE_LISTED of them listed with their errors)."""

    batches: int
    received: int
    landed: int
    duplicates: int
    pending: int
    pending_batches: int
    rejected: int
    ignored: int
    set_aside: int = 0
    set_aside_batches: tuple[SetAsideBatch, ...] = ()


MAX_SET_ASIDE_LISTED = 20


def source_label(source: str) -> str:
    """A live source as the pages name it ("OpenTelemetry (OTLP/HTTP)"); unknown ones as is."""
    return str(dict(LiveBatch.Source.choices).get(source, source))


def live_pending() -> tuple[PendingSource, ...]:
    """Per source, the batches not landed yet (none listed when nothing waits)."""
    rows = (
        LiveBatch.objects.filter(landed_at__isnull=True)
        .values("source")
        .annotate(batches=Count("id"), records=Sum("record_count"), oldest=Min("received_at"))
        .order_by("source")
    )
    return tuple(
        PendingSource(
            source=row["source"],
            label=source_label(row["source"]),
            batches=row["batches"],
            records=row["records"] or 0,
            oldest_received_at=row["oldest"],
        )
        for row in rows
    )


def stream_batches(*, upload: Upload) -> StreamBatches | None:
    """The micro-batch totals of a stream upload (None for a file upload): those landed into
    it, and those of its source received on its day that wait to land."""
    if not upload.stream_source or upload.stream_day is None:
        return None
    sums = {
        "batches": Count("id"),
        "received": Sum("record_count"),
        "landed": Sum("records_landed"),
        "duplicates": Sum("records_duplicate"),
        "rejected": Sum("rows_rejected"),
        "ignored": Sum("rows_ignored"),
    }
    landed = LiveBatch.objects.filter(upload=upload).aggregate(**sums)
    start = datetime.combine(upload.stream_day, time.min, tzinfo=UTC)
    waiting = LiveBatch.objects.filter(
        source=upload.stream_source,
        landed_at__isnull=True,
        received_at__gte=start,
        received_at__lt=start + timedelta(days=1),
    ).aggregate(**sums)
    both = {name: (landed[name] or 0) + (waiting[name] or 0) for name in sums}
    return StreamBatches(
        batches=both["batches"],
        received=both["received"],
        landed=landed["landed"] or 0,
        duplicates=landed["duplicates"] or 0,
        pending=waiting["received"] or 0,
        pending_batches=waiting["batches"] or 0,
        rejected=both["rejected"],
        ignored=both["ignored"],
        set_aside=LiveBatch.objects.filter(upload=upload)
        .exclude(error="")
        .aggregate(records=Sum("record_count"))["records"]
        or 0,
        set_aside_batches=tuple(
            SetAsideBatch(batch=pk, records=records, error=error)
            for pk, records, error in LiveBatch.objects.filter(upload=upload)
            .exclude(error="")
            .order_by("id")
            .values_list("id", "record_count", "error")[:MAX_SET_ASIDE_LISTED]
        ),
    )
