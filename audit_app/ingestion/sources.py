"""Billing exports pulled on a schedule: poll each billing source and ingest what is new.

Its rules in full: `docs/architecture.md`, section "Billing sources polled on a schedule".
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, BinaryIO, cast

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit_app.access.permissions import Actor
from audit_app.ingestion.formats import BILLING
from audit_app.ingestion.provider_sources import API_KINDS, REFUSED, api_poll, api_seen
from audit_app.ingestion.source_changes import check_writer
from audit_app.ingestion.source_objects import (
    FolderReader,
    HttpReader,
    ObjectRefused,
    S3Reader,
    SourceObject,
    SourceReader,
    SourceUnavailable,
    cause_of,
    fingerprint_unchanged,
    s3_client,
    s3_endpoint_check,
)
from audit_app.ingestion.uploads import (
    DuplicateUpload,
    StorageFull,
    UploadRefused,
    too_large_message,
    upload_create,
)
from audit_app.lib import task_queue
from audit_app.lib.masking import mask_url_credentials
from audit_app.lib.outbound import policy_from_settings
from audit_app.models import BillingSource, Upload

logger = logging.getLogger(__name__)

HASH_CHUNK_BYTES = 1024 * 1024
# A body read from the network is kept in memory up to this size, then in a temporary file.
SPOOL_IN_MEMORY_BYTES = 8 * 1024 * 1024
# Retries after failures wait 2, 4, 8, ... minutes, never longer than the source's interval.
MAX_BACKOFF_EXPONENT = 16
# A store that stops answering mid-poll would cost every remaining object its timeouts; after
# this many objects in a row could not be read the poll stops (the rest wait for the next one).
MAX_READ_ERRORS_IN_A_ROW = 3


@dataclass(frozen=True, kw_only=True)
class ObjectOutcome:
    """What polling one object did. ``remember`` is its new entry in `seen` (None: leave the
    entry as it was; an object that could not be read is tried again)."""

    name: str
    remember: dict[str, Any] | None = None
    upload_id: int | None = None  # the upload created
    duplicate_of: int | None = None  # the live upload that already holds these bytes
    refused: str = ""  # why the pipeline refused it (a new refusal)
    error: str = ""  # why it could not be read


@dataclass(frozen=True, kw_only=True)
class PollResult:
    """One poll of one source: what it listed and what it did with each object."""

    source_id: int
    source_name: str
    polled_at: datetime
    listed: int = 0
    unchanged: int = 0
    uploads: tuple[int, ...] = ()
    duplicates: tuple[int, ...] = ()
    refused: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    provider: str = ""  # a provider cost API source's kind (openai, anthropic), else ""
    window: str = ""  # provider sources: the days read, "2025-01-01..2025-01-31"
    pages_read: int = 0  # provider sources: the API pages read

    @property
    def ok(self) -> bool:
        return not self.errors

    def as_dict(self) -> dict[str, Any]:
        return {
            "source_id": self.source_id,
            "source": self.source_name,
            "polled_at": self.polled_at.isoformat(),
            "listed": self.listed,
            "unchanged": self.unchanged,
            "uploads": list(self.uploads),
            "duplicates": list(self.duplicates),
            "refused": list(self.refused),
            "errors": list(self.errors),
            "window": self.window,
            "pages_read": self.pages_read,
        }


# --- When ----------------------------------------------------------------------------------


def poll_wait(source: BillingSource) -> timedelta:
    """How long after its last poll a source is due: its interval, or after failures
    min(interval, 2^failures minutes); a provider that refused the key waits its interval."""
    interval = max(1, source.poll_every_minutes)
    failures = source.consecutive_failures
    if failures and (source.seen or {}).get(REFUSED) is None:
        return timedelta(minutes=min(interval, 2 ** min(failures, MAX_BACKOFF_EXPONENT)))
    return timedelta(minutes=interval)


def next_poll_at(source: BillingSource) -> datetime | None:
    """When the source is next due (None: disabled, or never polled, so due now)."""
    if not source.enabled or source.last_polled_at is None:
        return None
    return source.last_polled_at + poll_wait(source)


def source_due(source: BillingSource, now: datetime) -> bool:
    due = next_poll_at(source)
    return source.enabled and (due is None or due <= now)


def sources_poll_due(*, now: datetime | None = None) -> list[PollResult]:
    """Poll every enabled source that is due, one after the other, each on its own. A source
    is claimed first (its last_polled_at moved to now only if no other pass moved it), so two
    passes running at once never poll the same source twice."""
    now = now or timezone.now()
    results = []
    for source in BillingSource.objects.filter(enabled=True).select_related("created_by"):
        if not source_due(source, now):
            continue
        claimed = BillingSource.objects.filter(
            pk=source.pk, last_polled_at=source.last_polled_at
        ).update(last_polled_at=now)
        if not claimed:
            continue
        try:
            results.append(source_poll(source, now=now))
        except Exception:  # source_poll records its own failures; this is a bug's backstop
            logger.exception("polling billing source %s (%s) failed", source.pk, source.name)
    return results


def sources_queue_due(*, now: datetime | None = None) -> int:
    """Claim every enabled source that is due (as `sources_poll_due` does) and queue a poll of
    each; how many were queued. A source whose poll could not be queued is released for the
    next pass."""
    now = now or timezone.now()
    queued = 0
    for source in BillingSource.objects.filter(enabled=True):
        if not source_due(source, now):
            continue
        previous = source.last_polled_at
        if not BillingSource.objects.filter(pk=source.pk, last_polled_at=previous).update(
            last_polled_at=now
        ):
            continue
        if source_poll_soon(source):
            queued += 1
        else:
            BillingSource.objects.filter(pk=source.pk, last_polled_at=now).update(
                last_polled_at=previous
            )
    return queued


def source_poll_now(*, source: BillingSource, user: Actor) -> bool:
    """A person asks for a poll now (finops; the command line too): queued for a worker, see
    `source_poll_soon`. Refused (SourceRefused, 403) for other roles."""
    check_writer(user)
    return source_poll_soon(source)


def source_poll_soon(source: BillingSource) -> bool:
    """Queue a poll of the source now (the "Poll now" button, the API); False when the task
    broker could not take it (the schedule still polls it when due)."""
    try:
        task_queue.send(task_queue.POLL_BILLING_SOURCE, args=[source.pk])
    except Exception:
        if task_queue.in_process():
            raise
        logger.warning("could not queue a poll of billing source %s", source.pk, exc_info=True)
        return False
    return True


# --- One poll ------------------------------------------------------------------------------


def reader_for(source: BillingSource) -> SourceReader:
    if source.kind == BillingSource.Kind.FOLDER:
        return FolderReader(
            location=source.location, pattern=source.prefix, roots=settings.BILLING_SOURCE_ROOTS
        )
    if source.kind == BillingSource.Kind.HTTP:
        # The body may be as large as an upload; _hashed refuses what is larger first.
        limit = settings.UPLOAD_MAX_BYTES + HASH_CHUNK_BYTES
        return HttpReader(url=source.location, policy=policy_from_settings(max_bytes=limit))
    if source.endpoint_url:
        s3_endpoint_check(source.endpoint_url, policy_from_settings())
    client = s3_client(
        endpoint_url=source.endpoint_url,
        region=source.region,
        access_key_id=source.access_key_id,
        secret_key=source.secret_access_key,
        ambient_credentials=settings.S3_AMBIENT_CREDENTIALS,
    )
    return S3Reader(bucket=source.location, prefix=source.prefix, client=client)


def where(source: BillingSource, name: str | None = None) -> str:
    """The place, as people write it: a file's path, the URL (its credentials masked),
    s3://bucket/key."""
    if source.kind == BillingSource.Kind.S3:
        return f"s3://{source.location}/{source.prefix if name is None else name}"
    if source.kind == BillingSource.Kind.FOLDER and name is not None:
        return f"{source.location.rstrip('/')}/{name}"
    return mask_url_credentials(source.location)


def shown_name(source: BillingSource, name: str) -> str:
    """An object's name as pages and answers show it (a URL's credentials masked)."""
    return mask_url_credentials(name) if source.kind == BillingSource.Kind.HTTP else name


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _error(source: BillingSource, name: str | None, exc: BaseException) -> str:
    verb = "list" if name is None else "read"
    cause = cause_of(exc).rstrip(".")
    return f'Billing source "{source.name}" could not {verb} {where(source, name)}: {cause}.'


def _refusal(source: BillingSource, name: str, reason: str) -> str:
    reason = _lower_first(reason.strip().rstrip(".")) + "."
    return f'Billing source "{source.name}" did not ingest {where(source, name)}: {reason}'


def source_poll(
    source: BillingSource, *, now: datetime | None = None, enqueue: bool = True
) -> PollResult:
    """Poll one source now (whether enabled or due or not) and record what happened; never
    raises for what the source holds or how it answers. Without ``enqueue`` the uploads it
    creates are left for the caller to ingest (the command line does so in-process)."""
    now = now or timezone.now()
    if source.kind in API_KINDS:
        return _api_source_poll(source, now=now, enqueue=enqueue)
    outcomes: list[ObjectOutcome] = []
    listed: set[str] = set()
    errors: list[str] = []
    complete = False
    reader: SourceReader | None = None
    try:
        reader = reader_for(source)
        for obj in reader.list_objects(source.seen or {}):
            listed.add(obj.name)
            outcomes.append(_poll_object(source, reader, obj, enqueue=enqueue))
            if _failing_in_a_row(outcomes) >= MAX_READ_ERRORS_IN_A_ROW:
                raise SourceUnavailable(
                    f"the poll stopped after {MAX_READ_ERRORS_IN_A_ROW} objects in a row could "
                    "not be read; the rest wait for the next poll"
                )
        complete = True
    except Exception as exc:
        errors.append(_error(source, None, exc))
        logger.warning("billing source %s: listing failed: %s", source.pk, errors[-1])
    finally:
        if reader is not None:
            reader.close()
    errors += [o.error for o in outcomes if o.error]
    result = PollResult(
        source_id=source.pk,
        source_name=source.name,
        polled_at=now,
        listed=len(listed),
        unchanged=sum(1 for o in outcomes if _unchanged(o)),
        uploads=tuple(o.upload_id for o in outcomes if o.upload_id is not None),
        duplicates=tuple(o.duplicate_of for o in outcomes if o.duplicate_of is not None),
        refused=tuple(o.refused for o in outcomes if o.refused),
        errors=tuple(errors),
    )
    _record(source, result, outcomes, listed=listed if complete else None)
    logger.info(
        "billing source %s (%s) polled: %s listed, %s new uploads, %s errors",
        source.pk,
        source.name,
        result.listed,
        len(result.uploads),
        len(result.errors),
    )
    return result


def _failing_in_a_row(outcomes: list[ObjectOutcome]) -> int:
    count = 0
    for outcome in reversed(outcomes):
        if not outcome.error:
            break
        count += 1
    return count


def _unchanged(outcome: ObjectOutcome) -> bool:
    return not (outcome.upload_id or outcome.duplicate_of or outcome.refused or outcome.error)


def _poll_object(
    source: BillingSource, reader: SourceReader, obj: SourceObject, *, enqueue: bool
) -> ObjectOutcome:
    """Read and ingest one object if it changed; its failure is its own, never the poll's."""
    known = (source.seen or {}).get(obj.name)
    if fingerprint_unchanged(obj.fingerprint, known):
        return ObjectOutcome(name=obj.name)
    limit = settings.UPLOAD_MAX_BYTES
    try:
        if obj.size is not None and obj.size > limit:
            raise ObjectRefused(too_large_message(limit))
        with reader.open_object(obj) as raw, _hashed(raw, limit) as (stream, sha256):
            remember = {**dict(obj.fingerprint), "sha256": sha256}
            if known and known.get("sha256") == sha256:
                # The same bytes as last time (a file touched, a new ETag): nothing to ingest.
                kept = {k: known[k] for k in ("upload", "refused") if k in known}
                return ObjectOutcome(name=obj.name, remember={**remember, **kept})
            return _ingest(source, obj, stream, remember, enqueue=enqueue)
    except ObjectRefused as exc:
        reason = str(exc)
        return ObjectOutcome(
            name=obj.name,
            remember={**dict(obj.fingerprint), "refused": reason},
            refused=_refusal(source, obj.name, reason),
        )
    except StorageFull as exc:
        message = _lower_first(str(exc).rstrip("."))
        return ObjectOutcome(
            name=obj.name,
            error=f'Billing source "{source.name}" could not store {where(source, obj.name)}: '
            f"{message}.",
        )
    except Exception as exc:
        logger.warning(
            "billing source %s: reading %s failed",
            source.pk,
            shown_name(source, obj.name),
            exc_info=True,
        )
        return ObjectOutcome(name=obj.name, error=_error(source, obj.name, exc))


@contextmanager
def _hashed(raw: BinaryIO, limit: int) -> Iterator[tuple[BinaryIO, str]]:
    """The object's bytes as a seekable stream at its start, and their sha256. A local file is
    hashed where it is; a network body is copied into a spooled temporary file on the way.
    More than ``limit`` bytes is ObjectRefused (the upload limit)."""
    digest = hashlib.sha256()
    seekable = getattr(raw, "seekable", None)
    if seekable is not None and seekable():
        while chunk := raw.read(HASH_CHUNK_BYTES):
            digest.update(chunk)
        raw.seek(0)
        yield raw, digest.hexdigest()
        return
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY_BYTES) as spool:
        size = 0
        while chunk := raw.read(HASH_CHUNK_BYTES):
            size += len(chunk)
            if size > limit:
                raise ObjectRefused(too_large_message(limit))
            digest.update(chunk)
            spool.write(chunk)
        spool.seek(0)
        yield cast(BinaryIO, spool), digest.hexdigest()


def _ingest(
    source: BillingSource,
    obj: SourceObject,
    stream: BinaryIO,
    remember: dict[str, Any],
    *,
    enqueue: bool,
) -> ObjectOutcome:
    """Create the billing upload (its ingest queued once it is committed), linked to the
    source and the object."""
    try:
        with transaction.atomic():
            upload = upload_create(
                source=stream,
                original_name=obj.file_name,
                kind=BILLING,
                requested_format=source.format,
                user=source.created_by,
                enqueue=enqueue,
            )
            Upload.objects.filter(pk=upload.pk).update(
                billing_source=source, source_object=shown_name(source, obj.name)[:1000]
            )
    except DuplicateUpload as exc:
        first = exc.first.pk
        return ObjectOutcome(
            name=obj.name, remember={**remember, "upload": first}, duplicate_of=first
        )
    except UploadRefused as exc:
        return ObjectOutcome(
            name=obj.name,
            remember={**remember, "refused": str(exc)},
            refused=_refusal(source, obj.name, str(exc)),
        )
    shown = shown_name(source, obj.name)
    logger.info("billing source %s: %s became upload %s", source.pk, shown, upload.pk)
    return ObjectOutcome(
        name=obj.name, remember={**remember, "upload": upload.pk}, upload_id=upload.pk
    )


def _summary(messages: tuple[str, ...]) -> str:
    if len(messages) == 1:
        return messages[0]
    return f"{messages[0]} ({len(messages) - 1} more in the same poll.)"


# What a poll records on its source: saved on the locked row, then copied to the caller's.
POLL_STATE = (
    "seen",
    "last_polled_at",
    "last_changed_at",
    "last_error",
    "last_error_at",
    "consecutive_failures",
)


def _record(
    source: BillingSource,
    result: PollResult,
    outcomes: list[ObjectOutcome],
    *,
    listed: set[str] | None,
) -> None:
    """Store the poll's outcome on the source. `seen` is merged under a row lock (a poll run
    from the page at the same time keeps its own entries); a complete listing also forgets
    objects no longer there."""
    with transaction.atomic():
        locked = BillingSource.objects.select_for_update().filter(pk=source.pk).first()
        if locked is None:
            return  # deleted while it was polled
        seen = dict(locked.seen or {})
        for outcome in outcomes:
            if outcome.remember is not None:
                seen[outcome.name] = outcome.remember
        if listed is not None:
            seen = {name: entry for name, entry in seen.items() if name in listed}
        locked.seen = seen
        locked.last_polled_at = result.polled_at
        if result.uploads:
            locked.last_changed_at = result.polled_at
        if result.errors:
            locked.consecutive_failures += 1
        else:
            locked.consecutive_failures = 0
        problems = result.errors + result.refused
        locked.last_error = _summary(problems) if problems else ""
        locked.last_error_at = result.polled_at if problems else None
        locked.save(update_fields=list(POLL_STATE))
    for name in POLL_STATE:
        setattr(source, name, getattr(locked, name))


def _api_source_poll(source: BillingSource, *, now: datetime, enqueue: bool) -> PollResult:
    """One poll of a provider cost API source (`audit_app.ingestion.provider_sources`)."""
    poll = api_poll(source, now=now, enqueue=enqueue)
    window = ""
    if poll.window is not None:
        window = f"{poll.window[0].isoformat()}..{(poll.window[1] - timedelta(days=1)).isoformat()}"
    result = PollResult(
        source_id=source.pk,
        source_name=source.name,
        polled_at=now,
        listed=0 if poll.window is None else 1,
        unchanged=1 if poll.unchanged else 0,
        uploads=() if poll.upload_id is None else (poll.upload_id,),
        duplicates=() if poll.duplicate_of is None else (poll.duplicate_of,),
        errors=(poll.error,) if poll.error else (),
        provider=source.kind,
        window=window,
        pages_read=poll.pages,
    )
    with transaction.atomic():
        locked = BillingSource.objects.select_for_update().filter(pk=source.pk).first()
        if locked is None:
            return result  # deleted while it was polled
        locked.seen = api_seen(locked, poll)
        locked.last_polled_at = now
        if result.uploads:
            locked.last_changed_at = now
        locked.consecutive_failures = locked.consecutive_failures + 1 if poll.error else 0
        locked.last_error = poll.error
        locked.last_error_at = now if poll.error else None
        locked.save(update_fields=list(POLL_STATE))
    for name in POLL_STATE:
        setattr(source, name, getattr(locked, name))
    logger.info(
        "billing source %s (%s) polled: days %s, %s pages, %s new uploads, %s errors",
        source.pk,
        source.name,
        window or "none",
        poll.pages,
        len(result.uploads),
        len(result.errors),
    )
    return result


# --- What the pages show -------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RefusedObject:
    name: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class SourceUploads:
    """The uploads a source created, newest first (up to a page's worth), and how many."""

    count: int
    recent: tuple[Upload, ...] = field(default_factory=tuple)


def refused_objects(source: BillingSource) -> tuple[RefusedObject, ...]:
    """Objects the source holds that the pipeline refused as they stand, by name."""
    seen: Mapping[str, Mapping[str, Any]] = source.seen or {}
    return tuple(
        RefusedObject(name=shown_name(source, name), reason=str(entry["refused"]))
        for name, entry in sorted(seen.items())
        if isinstance(entry, Mapping) and entry.get("refused")
    )


def source_uploads(source: BillingSource, *, limit: int = 5) -> SourceUploads:
    uploads = Upload.objects.filter(billing_source=source).order_by("-created_at", "-pk")
    return SourceUploads(count=uploads.count(), recent=tuple(uploads[:limit]))
