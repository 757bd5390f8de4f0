"""Landing live records: micro-batches that land what the receivers kept, exactly once.

Its rules in full: `docs/architecture.md`, section "Landing live records".
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import IntegrityError, InterfaceError, OperationalError, connection, transaction
from django.utils import timezone

from audit_app.costs.price_cards import long_context_thresholds
from audit_app.ingestion.cardinality import TEAM_BUCKET, WORKLOAD_BUCKET, fold_names
from audit_app.ingestion.ingest import MAX_STORED_REJECTS, gc_paused
from audit_app.ingestion.live.merge import merge_aggregate
from audit_app.ingestion.live.records import decode_rows, row_key, rows_to_frame
from audit_app.ingestion.reading import inert_text
from audit_app.ingestion.rollups import IngestAggregate
from audit_app.ingestion.token_logs.frame import nanos_to_usd
from audit_app.lib.derived_state import refresh_if_due
from audit_app.lib.results_cache import current_version, data_changed
from audit_app.models import (
    DailyRollup,
    DataVersion,
    LiveBatch,
    LiveRecordKey,
    Upload,
    Workload,
)

logger = logging.getLogger(__name__)

# A pass lands the oldest batches up to this many records (at least one batch), and looks at no
# more than MAX_BATCHES_PER_PASS batches; `live_land_due` runs passes back to back while more wait.
MAX_RECORDS_PER_PASS = 200_000
MAX_BATCHES_PER_PASS = 2_000
CLAIM_PAGE = 500
KEYS_PER_STATEMENT = 10_000
# Keys past the window are deleted at most this many per statement and statements per pass.
FORGET_CHUNK = 50_000
FORGET_ROUNDS = 10
# The importer whose records each source carries: a stream upload's `format`.
STREAM_FORMATS = {
    LiveBatch.Source.OTLP.value: "otel",
    LiveBatch.Source.LITELLM.value: "litellm-callback",
}
# Names the stream upload already has keep them: they sort before every new name.
_KEPT = (sys.maxsize, sys.maxsize)


@dataclass(frozen=True, kw_only=True)
class StreamLanding:
    """What one pass landed into one stream upload."""

    upload_id: int
    source: str
    day: date
    batches: int
    records: int  # what the batches held
    landed: int  # new records, counted
    duplicates: int  # re-sent within the window, or twice in the micro-batch
    input_tokens: int
    output_tokens: int
    logged_cost_usd: Decimal


@dataclass(frozen=True, kw_only=True)
class LivePass:
    """One micro-batch: the stream uploads it landed into, the keys it forgot, and whether
    more batches were waiting when it stopped at its bound."""

    streams: tuple[StreamLanding, ...] = ()
    keys_forgotten: int = 0
    more: bool = False

    @property
    def batches(self) -> int:
        return sum(s.batches for s in self.streams)

    @property
    def records(self) -> int:
        return sum(s.records for s in self.streams)

    @property
    def landed(self) -> int:
        return sum(s.landed for s in self.streams)

    @property
    def duplicates(self) -> int:
        return sum(s.duplicates for s in self.streams)


@dataclass(kw_only=True)
class _Group:
    """The batches of one source and day in a micro-batch, their records (raw rows,
    `records.decode_rows`) and keys (None for a record whose key came earlier in the same
    micro-batch)."""

    source: str
    day: date
    batches: list[LiveBatch] = field(default_factory=list)
    records: list[list[list[Any]]] = field(default_factory=list)
    keys: list[list[str | None]] = field(default_factory=list)
    undecodable: list[str] = field(default_factory=list)  # per batch: why, or ""


def live_land_due(*, budget_seconds: float | None = None) -> list[LivePass]:
    """What the land task runs: passes back to back while batches wait, for up to
    ``budget_seconds`` (default LIVE_LAND_EVERY_SECONDS), then a refresh of derived results is
    asked for if one is due: checked after every pass, so the refresh live landings held back
    happens once their throttle has passed even when nothing more lands."""
    budget = settings.LIVE_LAND_EVERY_SECONDS if budget_seconds is None else budget_seconds
    deadline = time.monotonic() + budget
    passes = [live_land()]
    while passes[-1].more and time.monotonic() < deadline:
        passes.append(live_land())
    refresh_if_due()
    return passes


def live_land(*, max_records: int = MAX_RECORDS_PER_PASS, now: datetime | None = None) -> LivePass:
    """Land one micro-batch (see the module doc); an empty pass when nothing waits. A pass that
    fails (other than by a lost connection) runs again batch by batch, setting aside the
    batches that fail alone."""
    now = now or timezone.now()
    forgotten = live_keys_forget(now=now)
    try:
        return _land_pass(max_records=max_records, now=now, forgotten=forgotten, apart=False)
    except (OperationalError, InterfaceError):
        raise  # the database went away: the next pass tries again
    except Exception:
        logger.exception("a live landing pass failed; landing its batches one by one")
    return _land_pass(max_records=max_records, now=now, forgotten=forgotten, apart=True)


def _land_pass(*, max_records: int, now: datetime, forgotten: int, apart: bool) -> LivePass:
    with gc_paused(), transaction.atomic():
        batches, more = _claim(max_records)
        if not batches:
            return LivePass(keys_forgotten=forgotten)
        # One landing at a time (see the module doc); the name folds' totals need it too.
        current_version()
        DataVersion.objects.select_for_update().filter(pk=1).first()
        if apart:
            streams = tuple(landing for batch in batches for landing in _land_alone(batch, now=now))
        else:
            streams = tuple(_land_group(group, now=now) for group in _groups(batches))
        data_changed(live=True)
    return LivePass(streams=streams, keys_forgotten=forgotten, more=more)


def _land_alone(batch: LiveBatch, *, now: datetime) -> list[StreamLanding]:
    """Land one batch in a savepoint; set it aside when that fails (not for a lost
    connection, which fails the pass)."""
    try:
        with transaction.atomic():
            return [_land_group(group, now=now) for group in _groups([batch])]
    except (OperationalError, InterfaceError):
        raise
    except Exception as exc:
        logger.exception("live batch %s could not be landed; set aside", batch.pk)
        reason = f"the database refused its records ({type(exc).__name__}: {exc})"
        return [_set_aside(batch, reason=reason, now=now)]


def _set_aside(batch: LiveBatch, *, reason: str, now: datetime) -> StreamLanding:
    """Count the batch's records as rejected in its stream upload, with `reason`, and mark it
    landed with the reason as its error (its payload kept)."""
    day = batch.received_at.astimezone(UTC).date()
    group = _Group(
        source=batch.source,
        day=day,
        batches=[batch],
        records=[[]],
        keys=[[]],
        undecodable=[reason],
    )
    upload = stream_upload(source=batch.source, day=day, now=now)
    _add_totals(upload, group, IngestAggregate(), landed=0, notes=[], now=now)
    _mark_batches(upload, group, [0], now=now)
    return StreamLanding(
        upload_id=upload.pk,
        source=batch.source,
        day=day,
        batches=1,
        records=batch.record_count,
        landed=0,
        duplicates=0,
        input_tokens=0,
        output_tokens=0,
        logged_cost_usd=Decimal(0),
    )


def live_keys_forget(*, now: datetime) -> int:
    """Delete record keys last seen more than LIVE_DEDUP_WINDOW_DAYS before ``now``, in bounded
    chunks (the window holds without this: an old key still stored is renewed, not refused)."""
    cutoff = now - timedelta(days=settings.LIVE_DEDUP_WINDOW_DAYS)
    forgotten = 0
    for _ in range(FORGET_ROUNDS):
        old = LiveRecordKey.objects.filter(seen_at__lt=cutoff).order_by().values("pk")
        deleted, _ = LiveRecordKey.objects.filter(pk__in=old[:FORGET_CHUNK]).delete()
        forgotten += deleted
        if deleted < FORGET_CHUNK:
            break
    return forgotten


def _claim(max_records: int) -> tuple[list[LiveBatch], bool]:
    """The oldest batches not landed and not being landed by another worker, locked until the
    transaction ends, up to ``max_records`` records (at least one batch); and whether more were
    waiting. Locked a page at a time, each page sized by the largest batch seen so far, so a
    pass locks few batches it does not land and another worker can take those."""
    chosen: list[int] = []
    records = largest = last = 0
    while len(chosen) < MAX_BATCHES_PER_PASS:
        room = max_records - records
        if chosen and room <= 0:
            break
        size = 1 if not chosen else max(1, min(CLAIM_PAGE, room // max(largest, 1)))
        size = min(size, MAX_BATCHES_PER_PASS - len(chosen))
        page = list(
            LiveBatch.objects.select_for_update(skip_locked=True)
            .filter(landed_at__isnull=True, pk__gt=last)
            .order_by("id")
            .values_list("id", "record_count")[:size]
        )
        if not page:
            return _loaded(chosen), False
        for pk, count in page:
            if chosen and records + count > max_records:
                return _loaded(chosen), True
            chosen.append(pk)
            records += count
            largest = max(largest, count)
        last = page[-1][0]
    more = LiveBatch.objects.filter(landed_at__isnull=True, pk__gt=last).exists()
    return _loaded(chosen), more


def _loaded(ids: list[int]) -> list[LiveBatch]:
    return list(LiveBatch.objects.filter(pk__in=ids).order_by("id"))


def _groups(batches: Sequence[LiveBatch]) -> list[_Group]:
    """The batches by (source, UTC day of receipt), sorted so landings lock stream uploads in
    one order, with their records decoded and keyed; a key counts only at its first
    occurrence in the micro-batch (batches in the order they were received)."""
    groups: dict[tuple[str, date], _Group] = {}
    seen: dict[str, set[str]] = {}
    for batch in batches:
        day = batch.received_at.astimezone(UTC).date()
        group = groups.setdefault((batch.source, day), _Group(source=batch.source, day=day))
        try:
            records = decode_rows(batch.records)
            keyed = [row_key(record) for record in records]
            reason = ""
        except Exception as exc:  # a batch that cannot be read must not stop every later pass
            logger.exception("live batch %s could not be decoded", batch.pk)
            records, keyed = [], []
            reason = f"its records could not be decoded ({type(exc).__name__}: {exc})"
        keys: list[str | None] = []
        known = seen.setdefault(batch.source, set())
        for key in keyed:
            keys.append(None if key in known else key)
            known.add(key)
        group.batches.append(batch)
        group.records.append(records)
        group.keys.append(keys)
        group.undecodable.append(reason)
    return [groups[key] for key in sorted(groups)]


def _land_group(group: _Group, *, now: datetime) -> StreamLanding:
    """Land one source and day's batches into its stream upload (inside the pass's
    transaction)."""
    upload = stream_upload(source=group.source, day=group.day, now=now)
    candidates = [key for keys in group.keys for key in keys if key is not None]
    new = _count_keys(source=group.source, keys=candidates, upload_id=upload.pk, now=now)
    landed: list[list[Any]] = []
    counts: list[int] = []
    for records, keys in zip(group.records, group.keys, strict=True):
        mine = [r for r, key in zip(records, keys, strict=True) if key is not None and key in new]
        landed.extend(mine)
        counts.append(len(mine))
    aggregate = IngestAggregate()
    notes: list[str] = []
    if landed:
        aggregate.add_frame(rows_to_frame(landed), long_context_thresholds())
        aggregate, notes = _within_stream_limits(upload, aggregate)
        merge_aggregate(upload, aggregate)
    _add_totals(upload, group, aggregate, landed=len(landed), notes=notes, now=now)
    _mark_batches(upload, group, counts, now=now)
    return StreamLanding(
        upload_id=upload.pk,
        source=group.source,
        day=group.day,
        batches=len(group.batches),
        records=sum(b.record_count for b in group.batches),
        landed=len(landed),
        duplicates=sum(len(r) for r in group.records) - len(landed),
        input_tokens=aggregate.total("input_tokens"),
        output_tokens=aggregate.total("output_tokens"),
        logged_cost_usd=nanos_to_usd(aggregate.total("logged_cost_nanos")),
    )


def stream_upload(*, source: str, day: date, now: datetime) -> Upload:
    """The stream upload of ``source`` and ``day``, locked for this transaction; created when
    missing. Race-safe: the unique (stream_source, stream_day) and sha256 constraints let one
    of two creators win, and the other takes the winner's row."""
    for _ in range(3):
        upload = (
            Upload.objects.select_for_update().filter(stream_source=source, stream_day=day).first()
        )
        if upload is not None:
            return upload
        name = STREAM_FORMATS.get(source, source)
        try:
            with transaction.atomic():
                return Upload.objects.create(
                    kind=Upload.Kind.TOKEN_LOG,
                    status=Upload.Status.SUCCEEDED,
                    format=name,
                    requested_format=name,
                    original_name=f"{source} stream {day:%Y-%m-%d}",
                    sha256=f"stream:{source}:{day:%Y-%m-%d}",
                    stream_source=source,
                    stream_day=day,
                    started_at=now,
                    finished_at=now,
                )
        except IntegrityError:
            continue  # created meanwhile by another landing: take it
    raise RuntimeError(f"the {source} stream upload of {day} could not be created or found")


def _count_keys(*, source: str, keys: Sequence[str], upload_id: int, now: datetime) -> set[str]:
    """Which of ``keys`` (distinct) count now: those `LiveRecordKey` did not hold, inserted
    here, and those it held from before the window, renewed here. Both statements lock the key
    rows they write, so a concurrent landing of the same key waits and then finds it held.
    The keys go to the database as one array (PostgreSQL) or JSON list (SQLite) parameter per
    statement, not one placeholder each: far less to send and parse."""
    table = _quoted(LiveRecordKey._meta.db_table)
    columns = {f.name: f.column for f in LiveRecordKey._meta.concrete_fields}
    source_col, key_col, seen_col, upload_col = (
        _quoted(columns[name]) for name in ("source", "key", "seen_at", "upload")
    )
    seen_at = connection.ops.adapt_datetimefield_value(now)
    cutoff = connection.ops.adapt_datetimefield_value(
        now - timedelta(days=settings.LIVE_DEDUP_WINDOW_DAYS)
    )
    listed = "unnest(%s::text[]) AS k(value)" if _postgres() else "json_each(%s) AS k"
    counted: set[str] = set()
    with connection.cursor() as cursor:
        for start in range(0, len(keys), KEYS_PER_STATEMENT):
            chunk = list(keys[start : start + KEYS_PER_STATEMENT])
            # "WHERE true": SQLite's grammar needs it between a SELECT and ON CONFLICT.
            cursor.execute(
                f"INSERT INTO {table} ({source_col}, {key_col}, {seen_col}, {upload_col}) "  # noqa: S608
                f"SELECT %s, k.value, %s, %s FROM {listed} WHERE true "
                f"ON CONFLICT ({source_col}, {key_col}) DO NOTHING RETURNING {key_col}",
                [source, seen_at, upload_id, _key_list(chunk)],
            )
            inserted = {row[0] for row in cursor.fetchall()}
            held = [key for key in chunk if key not in inserted]
            counted |= inserted
            if not held:
                continue
            cursor.execute(
                f"UPDATE {table} SET {seen_col} = %s, {upload_col} = %s "  # noqa: S608
                f"WHERE {source_col} = %s AND {seen_col} < %s "
                f"AND {key_col} IN (SELECT k.value FROM {listed}) RETURNING {key_col}",
                [seen_at, upload_id, source, cutoff, _key_list(held)],
            )
            counted |= {row[0] for row in cursor.fetchall()}
    return counted


def _postgres() -> bool:
    return connection.vendor == "postgresql"


def _key_list(keys: list[str]) -> list[str] | str:
    return keys if _postgres() else json.dumps(keys)


def _quoted(name: str | None) -> str:
    assert name is not None
    return str(connection.ops.quote_name(name))


# --- Names past the cardinality limits ----------------------------------------------------------


def _within_stream_limits(
    upload: Upload, aggregate: IngestAggregate
) -> tuple[IngestAggregate, list[str]]:
    """The aggregate with names past the limits folded into their buckets, and the notes saying
    so. A stream upload counts as one upload for MAX_WORKLOADS_PER_UPLOAD and
    MAX_TEAMS_PER_UPLOAD: the names it already has keep them (their rows exist), and new
    names take what room is left, heaviest first, as a file's names do."""
    had = set(DailyRollup.objects.filter(upload=upload).values_list("workload", "team").distinct())
    workloads_had = {workload for workload, _ in had}
    teams_had = {team for _, team in had}
    workload_fold = fold_names(
        _keeping(aggregate.token_weights("workload"), workloads_had),
        bucket=WORKLOAD_BUCKET,
        per_upload=settings.MAX_WORKLOADS_PER_UPLOAD,
        known=set(Workload.objects.values_list("name", flat=True)),
        total=settings.MAX_WORKLOADS_TOTAL,
    )
    team_fold = fold_names(
        _keeping(aggregate.token_weights("team"), teams_had),
        bucket=TEAM_BUCKET,
        per_upload=settings.MAX_TEAMS_PER_UPLOAD,
    )
    workloads = {n: b for n, b in workload_fold.folded.items() if n not in workloads_had}
    teams = {n: b for n, b in team_fold.folded.items() if n not in teams_had}
    if not workloads and not teams:
        return aggregate, []
    notes = [
        _fold_note(
            "workload",
            WORKLOAD_BUCKET,
            f"at most {settings.MAX_WORKLOADS_PER_UPLOAD:,} workloads "
            f"(MAX_WORKLOADS_PER_UPLOAD) and the database at most "
            f"{settings.MAX_WORKLOADS_TOTAL:,} (MAX_WORKLOADS_TOTAL)",
        )
        if workloads
        else "",
        _fold_note(
            "team",
            TEAM_BUCKET,
            f"at most {settings.MAX_TEAMS_PER_UPLOAD:,} teams (MAX_TEAMS_PER_UPLOAD)",
        )
        if teams
        else "",
    ]
    return aggregate.renamed(workloads=workloads, teams=teams), [n for n in notes if n]


def _keeping(weights: Mapping[str, tuple[int, int]], had: set[str]) -> dict[str, tuple[int, int]]:
    """The names' weights, those the stream upload already has made heavier than any other so
    they keep their names."""
    return {**dict.fromkeys(had, _KEPT), **{n: w for n, w in weights.items() if n not in had}}


def _fold_note(noun: str, bucket: str, limits: str) -> str:
    return (
        f"New {noun}s this stream received past its limits were counted together as the "
        f"{noun} “{bucket}”: a stream upload (one source and day) may name {limits}; names it "
        f"already had keep theirs. Requests, tokens and cost are all counted; only those names "
        f"are lost."
    )


# --- Totals ---------------------------------------------------------------------------------------


def _add_totals(
    upload: Upload,
    group: _Group,
    aggregate: IngestAggregate,
    *,
    landed: int,
    notes: list[str],
    now: datetime,
) -> None:
    """Add what the group's batches brought to the stream upload's counts and totals: rows read
    and rejected as the receivers counted them (a batch that could not be decoded: all its
    records rejected), records counted, requests, tokens, logged cost, first rejects."""
    rejects = [r for b in group.batches for r in b.rejects]
    undecodable = 0
    for batch, reason in zip(group.batches, group.undecodable, strict=True):
        if reason:
            undecodable += batch.record_count
            rejects.append(
                {
                    "line": 0,
                    "field": "records",
                    "value": f"batch {batch.pk}",
                    "reason": f"set aside: {inert_text(reason)}",
                }
            )
    upload.rows_read += sum(b.rows_read for b in group.batches)
    upload.rows_rejected += sum(b.rows_rejected for b in group.batches) + undecodable
    upload.rows_accepted += landed
    upload.requests += aggregate.total("requests")
    upload.input_tokens += aggregate.total("input_tokens")
    upload.output_tokens += aggregate.total("output_tokens")
    upload.cached_input_tokens += aggregate.total("cached_input_tokens")
    upload.logged_cost_usd += nanos_to_usd(aggregate.total("logged_cost_nanos"))
    room = max(MAX_STORED_REJECTS - len(upload.rejects), 0)
    upload.rejects = [*upload.rejects, *rejects[:room]]
    upload.notes = [*upload.notes, *(note for note in notes if note not in upload.notes)]
    received = max(b.received_at for b in group.batches)
    if upload.last_received_at is None or received > upload.last_received_at:
        upload.last_received_at = received
    upload.finished_at = now
    upload.save()


def _mark_batches(upload: Upload, group: _Group, counts: list[int], *, now: datetime) -> None:
    """Each batch landed into ``upload``, with its new and re-sent records counted; its
    payload dropped, unless it was set aside (kept for whoever looks into it, with the reason
    as the batch's error)."""
    ids = [batch.pk for batch in group.batches]
    read = [
        batch.pk
        for batch, reason in zip(group.batches, group.undecodable, strict=True)
        if not reason
    ]
    LiveBatch.objects.filter(pk__in=ids).update(landed_at=now, upload=upload)
    LiveBatch.objects.filter(pk__in=read).update(records=b"")
    for batch, reason in zip(group.batches, group.undecodable, strict=True):
        if reason:
            batch.error = inert_text(reason)[:2000]
            LiveBatch.objects.filter(pk=batch.pk).update(error=batch.error)
    for batch, landed, records in zip(group.batches, counts, group.records, strict=True):
        batch.records_landed = landed
        batch.records_duplicate = len(records) - landed
    LiveBatch.objects.bulk_update(
        group.batches, ["records_landed", "records_duplicate"], batch_size=500
    )
