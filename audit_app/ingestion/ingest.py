"""Ingest an upload: parse its file in chunks, aggregate into rollups, land them atomically.

Exactly once: parsing writes nothing but progress; the rollups, day shapes, totals and the
`succeeded` status are written in ONE transaction at the end. A worker killed mid-way leaves the
upload `running` with no rollups, and the redelivered task starts over; a task delivered again
after success finds `succeeded` and does nothing. Memory grows with the number of distinct
(hour, workload, model, ...) keys, not with the file size. A file whose every row was rejected
lands nothing and fails, naming its first rejects (`nothing_accepted`).
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any, BinaryIO, cast

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import F, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from audit_app.costs.price_cards import long_context_thresholds
from audit_app.ingestion import billing_exports as billing
from audit_app.ingestion import token_logs as importers
from audit_app.ingestion.billing_exports.azure import AMORTIZED_NOTE, CostBasisEvidence
from audit_app.ingestion.billing_exports.base import BillingLine, BillingReject
from audit_app.ingestion.billing_exports.provider_reports import read_document
from audit_app.ingestion.cardinality import (
    TEAM_BUCKET,
    WORKLOAD_BUCKET,
    fold_names,
    team_fold_note,
    workload_fold_note,
)
from audit_app.ingestion.daily import PRICING_SUM_FIELDS, daily_from_hourly
from audit_app.ingestion.provider_usage import (
    aggregate_days,
    report_usage_land,
    report_usage_sync,
    window_days,
)
from audit_app.ingestion.reading import ImportFileError, RowReject, inert_text, quoted, read_head
from audit_app.ingestion.rollups import IngestAggregate, distinct_sketch
from audit_app.ingestion.supersession import charges_supersede
from audit_app.ingestion.token_logs.base import ParsedChunk
from audit_app.ingestion.token_logs.frame import nanos_to_usd, requests_to_frame
from audit_app.lib.bulk import insert_all
from audit_app.lib.formatting import money_json
from audit_app.lib.results_cache import current_version
from audit_app.models import (
    BillingCharge,
    DailyRollup,
    DataVersion,
    HourlyRollup,
    Upload,
    Workload,
    WorkloadDay,
)

logger = logging.getLogger(__name__)

MAX_STORED_REJECTS = 1000
# How many rejects the error of an upload with no accepted row names (all are in `rejects`).
ALL_REJECTED_NAMED = 3
PROGRESS_INTERVAL_SECONDS = 0.5
CHUNK_ROWS = 200_000
BULK_BATCH = 2000


class UploadDeleted(Exception):
    """The upload was deleted before or while it was ingested: the ingest stops, lands
    nothing and is not retried (its task ends as `deleted`)."""


@dataclass(kw_only=True)
class ParseResult:
    format: str
    aggregate: IngestAggregate = field(default_factory=IngestAggregate)
    rejects: list[RowReject] = field(default_factory=list)
    rows_read: int = 0
    rows_rejected: int = 0
    bytes_read: int = 0
    # Names already folded (`NameFolds`), and what the reader said (`ParsedChunk.notes`).
    notes: list[str] = field(default_factory=list)


def upload_ingest(*, upload_id: int) -> Upload:
    """Parse and land one upload in one pass. Safe to call again for the same upload (see module
    doc). The `audit_app.ingest_upload` task first offers a large splittable token log to
    `audit_app.ingestion.fanout.fan_out`, which queues it as parts instead. Landing is a change
    to the data like any other (`results_cache.data_changed`, from the upload's signal): derived
    results follow it by the refresh task, or by the caller's own refresh (`manage.py ingest`).
    """
    if not Upload.objects.filter(pk=upload_id).exists():
        raise UploadDeleted(upload_id)
    return _ingest(upload_id)


def _ingest(upload_id: int) -> Upload:
    upload = Upload.objects.filter(pk=upload_id).first()
    if upload is None:
        raise UploadDeleted(upload_id)
    if upload.status in (Upload.Status.SUCCEEDED, Upload.Status.FAILED):
        return upload
    if not mark_running(upload_id):
        return Upload.objects.get(pk=upload_id)  # it finished (or failed) meanwhile
    try:
        if upload.kind == Upload.Kind.BILLING:
            return _ingest_billing(upload)
        try:
            result = _parse(upload)
        except ImportFileError as exc:
            return fail_upload(upload_id, str(exc))
        return land_result(upload_id, result)
    except (OperationalError, InterfaceError):
        raise  # the database went away: the task retries (see audit_app.tasks)
    except UploadDeleted:
        raise
    except Exception as exc:
        # Importers turn every expected problem into ImportFileError or a row reject; anything
        # else still ends the upload as failed with one sentence, never stuck as running, and
        # the raw file is kept.
        logger.exception("ingest of upload %s failed", upload_id)
        BillingCharge.objects.filter(upload_id=upload_id).delete()
        return fail_upload(upload_id, unexpected_error(exc))


def mark_running(upload_id: int, **fields: Any) -> bool:
    """Start an attempt: `running`, counters back to zero, one more attempt (plus `fields`).

    Only a `queued` or `running` upload is started: a finished one is never revived (False).
    A `failed` upload no longer holds its bytes (`upload_sha256_unique_unless_failed`), so a
    newer upload of the same bytes may exist, and reviving the old one would make two live
    uploads of one file; a redelivered or retried task that finds its upload failed therefore
    leaves it failed.
    """
    started = Upload.objects.filter(
        pk=upload_id, status__in=(Upload.Status.QUEUED, Upload.Status.RUNNING)
    ).update(
        status=Upload.Status.RUNNING,
        started_at=timezone.now(),
        attempts=F("attempts") + 1,
        bytes_read=0,
        rows_read=0,
        error="",
        **fields,
    )
    return started == 1


def unexpected_error(exc: Exception) -> str:
    """The one sentence an upload fails with when something other than its content went wrong."""
    return f"The file could not be ingested ({type(exc).__name__}: {exc})"


def fail_upload(upload_id: int, message: str) -> Upload:
    Upload.objects.filter(pk=upload_id).update(
        status=Upload.Status.FAILED, error=inert_text(message)[:2000], finished_at=timezone.now()
    )
    return Upload.objects.get(pk=upload_id)


def _parse(upload: Upload) -> ParseResult:
    with upload.file.open("rb") as opened:
        stream = cast(BinaryIO, opened)  # the FieldFile proxies the binary file it opened
        requested = upload.requested_format
        detected = importers.detect_format(read_head(stream)) if requested == "auto" else requested
        Upload.objects.filter(pk=upload.pk).update(format=detected)
        stream.seek(0)
        # The LiteLLM CSV reader falls back to row-by-row reading by itself where its columnar
        # path cannot guarantee line numbers, so one pass is enough.
        chunks = importers.read_requests(stream, format=detected, chunk_rows=CHUNK_ROWS)
        return _consume(upload, detected, chunks)


class _Progress:
    """Writes rows read and bytes read to the upload at most every PROGRESS_INTERVAL_SECONDS,
    outside the landing transaction, so the page's progress bar moves during a long ingest.
    Finding the upload gone (deleted meanwhile) stops the ingest there (UploadDeleted)."""

    def __init__(self, upload: Upload) -> None:
        self.upload = upload
        self.last = 0.0

    def report(self, *, bytes_read: int, rows_read: int) -> None:
        now = time.monotonic()
        if now - self.last >= PROGRESS_INTERVAL_SECONDS:
            self.last = now
            if not Upload.objects.filter(pk=self.upload.pk).update(
                bytes_read=min(bytes_read, self.upload.size_bytes), rows_read=rows_read
            ):
                raise UploadDeleted(self.upload.pk)


def _mark_landed(
    upload: Upload,
    *,
    rows_read: int,
    rows_rejected: int,
    rejects: Sequence[RowReject | BillingReject],
) -> None:
    """The counts and first rejects every finished upload carries; the caller saves."""
    upload.status = Upload.Status.SUCCEEDED
    upload.finished_at = timezone.now()
    upload.bytes_read = upload.size_bytes
    upload.rows_read = rows_read
    upload.rows_rejected = rows_rejected
    upload.rows_accepted = rows_read - rows_rejected
    upload.rejects = [r.as_dict() for r in sorted(rejects, key=lambda r: r.line)]
    upload.error = ""


def nothing_accepted(*, rows_read: int, rows_rejected: int) -> bool:
    """The failure rule: rows were read and every one was rejected. A file with no rows at all
    (a header alone) is not this: it lands, empty."""
    return rows_read > 0 and rows_rejected >= rows_read


def all_rejected_message(*, rows_read: int, rejects: Sequence[RowReject]) -> str:
    """The sentence an upload whose every row was rejected fails with, naming the first
    rejects (line, field, value, reason)."""
    first = sorted(rejects, key=lambda r: r.line)[:ALL_REJECTED_NAMED]
    named = "; ".join(
        f"line {r.line}, field `{r.field}`, value {quoted(r.value)}: {r.reason.rstrip('.')}"
        for r in first
    )
    rows = "the one row was" if rows_read == 1 else f"all {rows_read:,} rows were"
    return f"No row was accepted ({rows} rejected), so nothing landed. First rejects: {named}."


def _mark_all_rejected(
    upload: Upload, *, rows_read: int, rejects: Sequence[RowReject | BillingReject]
) -> None:
    """`_mark_landed`'s counts and rejects on an upload that fails by the rule of
    `nothing_accepted`; the caller saves."""
    _mark_landed(upload, rows_read=rows_read, rows_rejected=rows_read, rejects=rejects)
    upload.status = Upload.Status.FAILED
    upload.error = inert_text(all_rejected_message(rows_read=rows_read, rejects=rejects))[:2000]


def _consume(upload: Upload, detected: str, chunks: Iterator[ParsedChunk]) -> ParseResult:
    result = ParseResult(format=detected)
    progress = _Progress(upload)
    thresholds = long_context_thresholds()
    for chunk in chunks:
        if chunk.frame is not None:
            result.aggregate.add_frame(chunk.frame, thresholds)
        if chunk.requests:
            result.aggregate.add_frame(requests_to_frame(chunk.requests), thresholds)
        result.rows_read += chunk.rows_read
        result.rows_rejected += len(chunk.rejects)
        result.notes.extend(chunk.notes)
        room = MAX_STORED_REJECTS - len(result.rejects)
        if room > 0:
            result.rejects.extend(chunk.rejects[:room])
        result.bytes_read = chunk.bytes_read
        progress.report(bytes_read=chunk.bytes_read, rows_read=result.rows_read)
    return result


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: landing builds (and fan-out unpickles) a few
    hundred thousand objects, and each collection they trigger walks every object the worker
    holds, the whole aggregate included; that was most of the time of reading 8 parts back.
    Nothing built inside is cyclic, and collection resumes (if it was on) on the way out."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def land_result(upload_id: int, result: ParseResult) -> Upload:
    with gc_paused():
        return _land_now(upload_id, result)


def _land_now(upload_id: int, result: ParseResult) -> Upload:
    aggregate = result.aggregate
    with transaction.atomic():
        upload = Upload.objects.select_for_update().filter(pk=upload_id).first()
        if upload is None:
            raise UploadDeleted(upload_id)
        if upload.status in (Upload.Status.SUCCEEDED, Upload.Status.FAILED):
            # Done by another delivery of the task; a failed upload is never revived (see
            # `mark_running`).
            return upload
        # Nothing should be here (landing is atomic), but a half-state must never add up twice.
        HourlyRollup.objects.filter(upload=upload).delete()
        DailyRollup.objects.filter(upload=upload).delete()
        WorkloadDay.objects.filter(upload=upload).delete()
        if nothing_accepted(rows_read=result.rows_read, rows_rejected=result.rows_rejected):
            _mark_all_rejected(upload, rows_read=result.rows_read, rejects=result.rejects)
            upload.save()
            return upload
        aggregate, notes = _within_limits(aggregate)
        # COPY on PostgreSQL (`audit_app.lib.bulk`): landing is the one step of a fanned-out
        # ingest that no other worker shares.
        hourly = list(rollup_rows(upload, aggregate))
        insert_all(HourlyRollup, hourly)
        insert_all(
            DailyRollup, ({**row, "upload_id": upload.pk} for row in daily_from_hourly(hourly))
        )
        insert_all(WorkloadDay, day_rows(upload, aggregate))
        names = {key.workload[:200] for key in aggregate.rollups}
        Workload.objects.bulk_create(
            [Workload(name=name) for name in sorted(names)], ignore_conflicts=True
        )
        _mark_landed(
            upload,
            rows_read=result.rows_read,
            rows_rejected=result.rows_rejected,
            rejects=result.rejects,
        )
        upload.notes = result.notes + notes
        upload.requests = aggregate.total("requests")
        upload.input_tokens = aggregate.total("input_tokens")
        upload.output_tokens = aggregate.total("output_tokens")
        upload.cached_input_tokens = aggregate.total("cached_input_tokens")
        upload.logged_cost_usd = nanos_to_usd(aggregate.total("logged_cost_nanos"))
        upload.save()
        # The logs now cover these provider days: a provider report's rollups of them go.
        report_usage_sync(aggregate_days(aggregate))
    return upload


@dataclass(frozen=True, kw_only=True)
class NameFolds:
    """Which workload and team names of one upload fold into their buckets, and the notes
    saying so (none when nothing folds)."""

    workloads: dict[str, str]
    teams: dict[str, str]
    notes: list[str]


def name_folds(
    *, workloads: dict[str, tuple[int, int]], teams: dict[str, tuple[int, int]]
) -> NameFolds:
    """The folds for an upload whose names weigh ``workloads`` and ``teams`` ((tokens,
    requests) per name, `IngestAggregate.token_weights`), under the cardinality limits
    (`audit_app.ingestion.cardinality`). Inside the landing transaction: it takes the data version
    row
    first, so two landings never both fill the last room under MAX_WORKLOADS_TOTAL."""
    current_version()
    DataVersion.objects.select_for_update().filter(pk=1).first()
    per_upload = settings.MAX_WORKLOADS_PER_UPLOAD
    total = settings.MAX_WORKLOADS_TOTAL
    known = set(Workload.objects.values_list("name", flat=True))
    workload_fold = fold_names(
        workloads, bucket=WORKLOAD_BUCKET, per_upload=per_upload, known=known, total=total
    )
    team_fold = fold_names(teams, bucket=TEAM_BUCKET, per_upload=settings.MAX_TEAMS_PER_UPLOAD)
    notes = [
        workload_fold_note(workload_fold, per_upload=per_upload, total=total, known=len(known)),
        team_fold_note(team_fold, per_upload=settings.MAX_TEAMS_PER_UPLOAD),
    ]
    return NameFolds(
        workloads=workload_fold.folded,
        teams=team_fold.folded,
        notes=[note for note in notes if note],
    )


def _within_limits(aggregate: IngestAggregate) -> tuple[IngestAggregate, list[str]]:
    """The aggregate with workloads and teams past the cardinality limits folded into their
    buckets, and the notes saying so. Applied to the whole upload at landing, so a fanned-out
    ingest folds the same names as a single pass (it folds its parts before merging them, and
    then nothing is left to fold here)."""
    folds = name_folds(
        workloads=aggregate.token_weights("workload"), teams=aggregate.token_weights("team")
    )
    if not folds.notes:
        return aggregate, []
    return aggregate.renamed(workloads=folds.workloads, teams=folds.teams), folds.notes


def rollup_rows(upload: Upload, aggregate: IngestAggregate) -> Iterator[dict[str, Any]]:
    """Hourly rollup rows as `audit_app.lib.bulk.insert_all` takes them (names cut to their
    columns). Live landings (`audit_app.ingestion.live.landing`) merge these into a stream
    upload's rows."""
    for key, t in aggregate.rollups.items():
        yield {
            "upload_id": upload.pk,
            "hour": key.hour,
            "workload": key.workload[:200],
            "team": key.team[:200],
            "provider": key.provider[:64],
            "model": key.model[:200],
            "pool": key.pool[:100],
            "operation": key.operation[:64],
            "batch_api": key.batch_api,
            "requests": t.requests,
            "errors": t.errors,
            "streaming_requests": t.streaming_requests,
            "input_tokens": t.input_tokens,
            "output_tokens": t.output_tokens,
            "cached_input_tokens": t.cached_input_tokens,
            "logged_requests": t.logged_requests,
            "logged_cost_usd": t.logged_cost_usd,
            "unlogged_input_tokens": t.unlogged_input_tokens,
            "unlogged_cached_input_tokens": t.unlogged_cached_input_tokens,
            "unlogged_output_tokens": t.unlogged_output_tokens,
            **{name: getattr(t, name) for name in PRICING_SUM_FIELDS},
            "long_context_threshold_tokens": t.long_context_threshold_tokens,
            "distinct_end_users": len(t.end_users),
            "ttft_histogram": t.ttft.to_bytes(),
            "latency_histogram": t.latency.to_bytes(),
            "tpot_histogram": t.tpot.to_bytes(),
        }


def day_rows(upload: Upload, aggregate: IngestAggregate) -> Iterator[dict[str, Any]]:
    """Workload-day rows as `audit_app.lib.bulk.insert_all` takes them."""
    for (day, workload), shape in aggregate.days.items():
        assert isinstance(day, date)
        yield {
            "upload_id": upload.pk,
            "day": day,
            "workload": workload[:200],
            "requests": shape.requests,
            "minute_counts": shape.minute_counts.tolist(),
            "hour_counts": shape.hour_counts.tolist(),
            "end_user_hashes": distinct_sketch(shape.end_users),
            "callers": sorted(shape.callers),
        }


# --- Billing exports ---------------------------------------------------------------------------
# Billing lines can run to millions, so they are written in batches while the file is read
# instead of being held until the end. Readers only see charges of `succeeded` uploads, so an
# ingest still lands whole or not at all; a retry first deletes what an earlier attempt wrote.
# Landing marks the upload succeeded and supersedes the earlier uploads of the same billing
# periods it restates (`audit_app.ingestion.supersession`) in one transaction; a file whose
# every row was rejected fails instead (`nothing_accepted`), its rejects kept. An Azure
# amortized-cost export (told by its commitment rows over the whole file, `CostBasisEvidence`)
# lands its costs as effective cost with billed cost 0, marked `amortized`, and says so in a
# note on the upload.


def _ingest_billing(upload: Upload) -> Upload:
    BillingCharge.objects.filter(upload=upload).delete()
    evidence = CostBasisEvidence()
    rejects: list[BillingReject] = []
    rows_read = rows_rejected = 0
    progress = _Progress(upload)
    try:
        with upload.file.open("rb") as opened:
            stream = cast(BinaryIO, opened)  # the FieldFile proxies the binary file it opened
            requested = upload.requested_format
            detected = billing.detect_billing_stream(stream) if requested == "auto" else requested
            Upload.objects.filter(pk=upload.pk).update(format=detected)
            stream.seek(0)
            for chunk in billing.read_billing(stream, format=detected, chunk_rows=CHUNK_ROWS):
                BillingCharge.objects.bulk_create(
                    (_charge_row(upload, line) for line in chunk.lines), batch_size=BULK_BATCH
                )
                evidence.add(chunk.lines)
                rows_read += chunk.rows_read
                rows_rejected += len(chunk.rejects)
                room = MAX_STORED_REJECTS - len(rejects)
                if room > 0:
                    rejects.extend(chunk.rejects[:room])
                progress.report(bytes_read=chunk.bytes_read, rows_read=rows_read)
    except ImportFileError as exc:
        BillingCharge.objects.filter(upload=upload).delete()
        return fail_upload(upload.pk, str(exc))
    amortized = evidence.amortized
    with transaction.atomic():
        landed = Upload.objects.select_for_update().get(pk=upload.pk)
        if landed.status == Upload.Status.FAILED:
            # Failed meanwhile by another delivery: never revived (see `mark_running`); its
            # charges count nowhere, as only succeeded uploads' charges are read.
            return landed
        if nothing_accepted(rows_read=rows_read, rows_rejected=rows_rejected):
            BillingCharge.objects.filter(upload=landed).delete()
            _mark_all_rejected(landed, rows_read=rows_read, rejects=rejects)
            landed.save()
            return landed
        if amortized:
            BillingCharge.objects.filter(upload=landed).update(
                amortized=True,
                effective_cost=Coalesce(F("effective_cost"), F("billed_cost")),
                billed_cost=Decimal(0),
            )
        charges_supersede(upload=landed)
        report = _report_usage(landed, detected)
        _mark_landed(landed, rows_read=rows_read, rows_rejected=rows_rejected, rejects=rejects)
        billed, effective = _stored_totals(landed)
        landed.billing_totals = {
            "billed": money_json(billed),
            "effective": money_json(effective),
            "cost_basis": "amortized" if amortized else "actual",
            "notes": [AMORTIZED_NOTE] if amortized else [],
            **({"report": report} if report else {}),
        }
        landed.save()
        if report:
            report_usage_sync(window_days(report))
    return landed


def _stored_totals(upload: Upload) -> tuple[dict[str, Decimal], dict[str, Decimal]]:
    """Billed and effective cost per currency of the upload's charges as the database holds
    them, summed per billing period as `costs/bills` sums them: `ingest` and `bills` give one
    figure (the database may keep fewer digits than the file wrote: `docs/formats.md`)."""
    billed: dict[str, Decimal] = {}
    effective: dict[str, Decimal] = {}
    rows = (
        BillingCharge.objects.filter(upload=upload)
        .values("provider", "billing_account", "billing_period_start", "amortized", "currency")
        .annotate(billed=Sum("billed_cost"), effective=Sum("effective_cost"))
        .order_by()
    )
    for row in rows:
        currency = row["currency"]
        billed[currency] = billed.get(currency, Decimal(0)) + row["billed"]
        if row["effective"] is not None:
            effective[currency] = effective.get(currency, Decimal(0)) + row["effective"]
    return billed, effective


def _report_usage(upload: Upload, detected: str) -> dict[str, str] | None:
    """A provider cost report's spend rows (`audit_app.ingestion.provider_usage`), landed
    with its charges; None for any other billing format."""
    if detected not in billing.REPORT_FORMATS:
        return None
    with upload.file.open("rb") as opened:
        document = read_document(cast(BinaryIO, opened), format=detected)
    return report_usage_land(upload, document)


def _charge_row(upload: Upload, line: BillingLine) -> BillingCharge:
    meter = line.meter
    return BillingCharge(
        upload=upload,
        line=line.line,
        provider=line.provider[:32],
        provider_raw=line.provider_raw[:100],
        service=line.service[:200],
        charge_category=line.charge_category[:32],
        charge_class=line.charge_class[:32],
        period_start=line.period_start,
        period_end=line.period_end,
        billed_cost=line.billed_cost,
        effective_cost=line.effective_cost,
        currency=line.currency[:3],
        quantity=line.quantity,
        unit=line.unit[:64],
        resource_id=line.resource_id[:500],
        region=line.region[:64],
        account_id=line.account_id[:128],
        sku=line.sku[:300],
        description=line.description[:300],
        meter_kind=meter.kind[:16],
        meter_model=meter.model[:200],
        token_class=meter.token_class[:16],
        tier=meter.tier[:16],
        cross_region=meter.cross_region,
        block_size=meter.block_size,
        instance_type=meter.instance_type[:64],
        instance_family=meter.instance_family[:16],
        tags=line.tags,
        billing_account=line.billing_account[:500],
        billing_period_start=line.billing_period_start,
        billing_period_end=line.billing_period_end,
    )
