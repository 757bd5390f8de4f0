"""Uploads: store a file as-is (hashed, size-limited while streaming), refuse duplicates, delete.

Ingestion itself is in `audit_app.ingestion.ingest`; creating an upload enqueues it.
"""

from __future__ import annotations

import errno
import hashlib
import itertools
import logging
import re
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, OuterRef, ProtectedError, QuerySet
from django.utils import timezone

from audit_app.access.audit import audit_record
from audit_app.ingestion import file_kinds
from audit_app.ingestion.formats import (
    AUTO_FORMAT,
    AUTO_KIND,
    FORMATS,
    FORMATS_BY_KIND,
    KIND_LABELS,
)
from audit_app.ingestion.provider_usage import (
    report_usage_release,
    report_usage_sync,
    upload_days,
)
from audit_app.ingestion.reading import ImportFileError
from audit_app.ingestion.selectors import GateUse, upload_gate_uses
from audit_app.ingestion.supersession import charges_release
from audit_app.lib.errors import DomainError, ErrorKind
from audit_app.lib.filenames import NAME_MAX_BYTES, shortened_name
from audit_app.models import (
    AuditEvent,
    DailyRollup,
    HourlyRollup,
    Recommendation,
    Upload,
    Workload,
    WorkloadClassification,
    WorkloadDay,
    WorkloadOverride,
)

if TYPE_CHECKING:
    from audit_app.access.permissions import Actor

COPY_CHUNK_BYTES = 4 * 1024 * 1024
# What the upload page, `POST /api/v1/uploads/` and `manage.py ingest` accept (benchmark
# artifacts are imported on their own page).
UPLOAD_KINDS = (AUTO_KIND, Upload.Kind.TOKEN_LOG.value, Upload.Kind.BILLING.value)
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
# Django's storage makes a taken name free by adding "_" and 7 random characters to its stem.
_COLLISION_SUFFIX_BYTES = 8
# Errors meaning "no room to write": a full volume, or the user's disk quota.
_NO_SPACE_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
STORAGE_FULL_MESSAGE = (
    "The server has no space left to store this file (its upload storage is full), so nothing "
    "was kept. Try again once an operator has freed space."
)

logger = logging.getLogger(__name__)


class UploadRefused(DomainError):
    """The file was not accepted; ``field`` names the input at fault (for form/API errors)."""

    field = "file"


class StorageFull(DomainError):
    """The media storage ran out of space while storing the file; nothing of it was kept."""

    kind = ErrorKind.NO_SPACE

    def __init__(self, message: str = STORAGE_FULL_MESSAGE) -> None:
        super().__init__(message)


class DuplicateUpload(UploadRefused):
    def __init__(self, first: Upload) -> None:
        when = timezone.localtime(first.created_at).strftime("%Y-%m-%d %H:%M UTC")
        super().__init__(
            f"The same file was already uploaded as upload {first.pk} "
            f"({first.original_name}, {when}); it was not ingested again."
        )
        self.first = first


def human_bytes(n: int) -> str:
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def too_large_message(limit: int) -> str:
    return f"The file is larger than the upload limit of {human_bytes(limit)} (UPLOAD_MAX_BYTES)."


def _upload_name(original_name: str) -> str:
    """The name an upload keeps (`Upload.original_name`): the file's own name, shortened past
    255 bytes keeping its extension."""
    return shortened_name(Path(original_name).name) or "upload"


def _storage_name(original_name: str) -> str:
    """`uploads/<date>/<12 hex>-<name>`, the name made of safe ASCII characters and shortened so
    that the last component stays within 255 bytes even with the `_<7 characters>` the storage
    adds to a name that is taken."""
    safe = _UNSAFE_NAME.sub("_", Path(original_name).name).strip(".") or "upload"
    prefix = uuid.uuid4().hex[:12]
    safe = shortened_name(
        safe, max_bytes=NAME_MAX_BYTES - len(prefix) - 1 - _COLLISION_SUFFIX_BYTES
    )
    return f"uploads/{timezone.now():%Y/%m/%d}/{prefix}-{safe}"


def validate_kind_and_format(*, kind: str, requested_format: str) -> None:
    formats = FORMATS_BY_KIND.get(kind)
    if formats is None:
        raise UploadRefused(
            f"Unknown kind {kind!r}; expected one of {', '.join(FORMATS_BY_KIND)}.", field="kind"
        )
    if requested_format not in formats:
        raise UploadRefused(
            f"Unknown format {requested_format!r} for {kind}; "
            f"expected one of {', '.join(formats)}.",
            field="format",
        )


def copy_hashing(source: BinaryIO, out: BinaryIO, digest: Any, *, limit: int) -> int:
    """Copy `source` to `out` and feed the same bytes to `digest`; the number of bytes copied.
    Refuses (UploadRefused) past `limit` bytes.

    Hashing a block runs on a second thread while the block is written and the next one read
    (hashlib and file I/O release the GIL): storing a large file takes the time of the slower
    of the two, not of both (SHA-256 of 520 MiB is about 0.45 s here, reading and writing it 0.3 s).
    The blocks are read into two buffers in turn, one read while the other is hashed: a new
    4 MiB object per block is memory the allocator maps afresh each time, and faulting its
    pages in took a 520 MiB copy from 0.36 s to 0.5-1.6 s on this machine.
    """
    size = 0
    buffers = (memoryview(bytearray(COPY_CHUNK_BYTES)), memoryview(bytearray(COPY_CHUNK_BYTES)))
    hashing: Future[None] | None = None
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="upload-hash") as hasher:
        # Buffer `turn % 2` is free: the block read into it two turns ago has been hashed
        # (waited for below before the last turn's block was handed to the hasher).
        for turn in itertools.count():
            buffer = buffers[turn % 2]
            read = _read_into(source, buffer)
            if not read:
                break
            size += read
            if size > limit:
                raise UploadRefused(too_large_message(limit))
            block = buffer[:read]
            if hashing is not None:
                hashing.result()  # blocks are hashed in order
            hashing = hasher.submit(digest.update, block)
            out.write(block)
        if hashing is not None:
            hashing.result()
    return size


def _read_into(source: BinaryIO, buffer: memoryview) -> int:
    """Up to len(buffer) bytes of `source` into `buffer` (0 at its end); a stream without
    `readinto` is read and copied."""
    readinto = getattr(source, "readinto", None)
    if readinto is not None:
        return int(readinto(buffer) or 0)
    data = source.read(len(buffer))
    buffer[: len(data)] = data
    return len(data)


def upload_create(
    *,
    source: BinaryIO,
    original_name: str,
    kind: str = Upload.Kind.TOKEN_LOG,
    requested_format: str = "auto",
    user: Actor = None,
    enqueue: bool = True,
) -> Upload:
    """Copy ``source`` into storage while hashing it, then record the upload.

    Refuses (UploadRefused) a file over UPLOAD_MAX_BYTES, an empty file, bytes that a queued,
    running or succeeded upload holds (DuplicateUpload, naming it; a failed upload blocks
    nothing), and a file of the wrong kind (`resolve_kind`); raises StorageFull when the media
    storage has no room left. Whatever goes wrong, no row and no partial file remain. With
    ``enqueue`` the ingest task is queued once the upload is committed; if the broker is down
    the upload stays `queued` with a note and a worker queues it later
    (`audit_app.ingestion.requeue`).
    """
    validate_kind_and_format(kind=kind, requested_format=requested_format)
    limit = settings.UPLOAD_MAX_BYTES
    name = _storage_name(original_name)
    path = Path(default_storage.path(name))
    digest = hashlib.sha256()
    size = 0
    try:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with _open_for_write(path) as out:
                size = copy_hashing(source, out, digest, limit=limit)
        except OSError as exc:
            if exc.errno not in _NO_SPACE_ERRNOS:
                raise
            logger.error(
                "upload of %s refused: no space left in the media storage (%s)",
                Path(original_name).name,
                exc,
            )
            raise StorageFull() from exc
        if size == 0:
            raise UploadRefused("The file is empty.")
        with open(path, "rb") as stored:
            kind = resolve_kind(stored, kind=kind, requested_format=requested_format)
        upload = _insert_unless_duplicate(
            Upload(
                kind=kind,
                requested_format=requested_format,
                file=name,
                original_name=_upload_name(original_name),
                size_bytes=size,
                sha256=digest.hexdigest(),
                uploaded_by=user if user is not None and user.is_authenticated else None,
            )
        )
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    audit_record(
        actor=user,
        action=AuditEvent.Action.UPLOAD_CREATED,
        obj=upload,
        summary=f"uploaded {upload.original_name} ({upload.get_kind_display()})",
        details={"sha256": upload.sha256, "size_bytes": size},
    )
    if enqueue:
        from audit_app.ingestion.requeue import ENQUEUE_NOTE, upload_enqueue

        def enqueue_committed() -> None:
            if not upload_enqueue(upload.pk):
                upload.error = ENQUEUE_NOTE  # what the caller shows: queued, and why

        transaction.on_commit(enqueue_committed)
    return upload


def resolve_kind(stream: BinaryIO, *, kind: str, requested_format: str) -> str:
    """The kind to store for a file sent as ``kind``, or UploadRefused saying why not.

    - `auto` with a named format: that format's kind; with `auto` format: the kind the file's
      content shows (token logs first), refused when neither token logs nor billing exports
      recognise it, or when it cannot be read at all (binary, compressed, not UTF-8).
    - A token log or billing export sent as the other kind is refused naming the kind it is
      ("This looks like a FOCUS billing export, not a token log: ..."). A file that neither
      family recognises keeps the kind it was sent as; its ingest fails saying what is missing.
    """
    if kind == AUTO_KIND and requested_format != AUTO_FORMAT:
        kind = FORMATS[requested_format].kind
    elif kind == AUTO_KIND:
        try:
            detected = file_kinds.detect_file(stream)
        except ImportFileError as exc:
            raise UploadRefused(_sentence(str(exc))) from None
        if detected is None:
            raise UploadRefused(file_kinds.unrecognised_message())
        return detected.kind
    if kind not in KIND_LABELS:
        return kind  # benchmark artifacts: their importer checks them
    other = file_kinds.other_kind(stream, kind=kind)
    if other is not None:
        raise UploadRefused(
            file_kinds.wrong_kind_message(
                sent_as=kind, detected=other, requested_format=requested_format
            ),
            field="kind",
        )
    return kind


def _sentence(text: str) -> str:
    text = text.strip().rstrip(".")
    return f"{text[:1].upper()}{text[1:]}."


def live_upload_of(sha256: str) -> Upload | None:
    """The queued, running or succeeded upload of these bytes, if any (at most one exists)."""
    return (
        Upload.objects.filter(sha256=sha256)
        .exclude(status=Upload.Status.FAILED)
        .order_by("created_at", "pk")
        .first()
    )


# An insert refused by the constraint whose winner has failed by the time we look for it may
# simply be tried again; more than a few such rounds would need a file that fails in
# milliseconds while being uploaded over and over.
_INSERT_ATTEMPTS = 3


def _insert_unless_duplicate(upload: Upload) -> Upload:
    """Save ``upload`` unless a live upload holds the same bytes (DuplicateUpload names it).

    The check before the insert gives the usual answer; the database's conditional unique
    constraint (`upload_sha256_unique_unless_failed`) decides when two identical uploads race,
    and the loser is told which upload won.
    """
    for _ in range(_INSERT_ATTEMPTS):
        first = live_upload_of(upload.sha256)
        if first is not None:
            raise DuplicateUpload(first)
        try:
            with transaction.atomic():
                upload.save(force_insert=True)
            return upload
        except IntegrityError:
            upload.pk = None  # the other upload won the race; find it (or try again)
    first = live_upload_of(upload.sha256)
    if first is None:
        raise UploadRefused("The file could not be stored: identical uploads kept racing it.")
    raise DuplicateUpload(first)


def _open_for_write(path: Path) -> BinaryIO:
    """The file the upload is copied into (a seam for tests that simulate a full disk)."""
    return open(path, "wb")  # noqa: SIM115 - closed by the caller's `with`


class UploadInUse(DomainError):
    """The upload cannot be deleted: benchmark gates compare runs of it, and gates are kept."""

    kind = ErrorKind.CONFLICT

    def __init__(self, *, upload: Upload, uses: tuple[GateUse, ...]) -> None:
        compared = "; ".join(
            f"run {use.run_id} is the {use.role} of gate {use.gate_id}" for use in uses
        )
        super().__init__(
            f"Upload {upload.pk} cannot be deleted: {compared}. A gate is the permanent record "
            "of a comparison and cannot be deleted, so the runs it compares and their files "
            "are kept."
        )
        self.gate_ids = sorted({use.gate_id for use in uses})
        self.run_ids = sorted({use.run_id for use in uses})

    def facts(self) -> dict[str, Any]:
        return {"gates": self.gate_ids, "runs": self.run_ids}


def upload_delete_conflict(*, upload: Upload) -> UploadInUse | None:
    """Why the upload cannot be deleted, or None: the one rule the delete service, its page and
    API go by. A gate comparing a benchmark run of it keeps it."""
    uses = upload_gate_uses(upload=upload)
    return UploadInUse(upload=upload, uses=uses) if uses else None


@transaction.atomic
def upload_delete(*, upload: Upload, user: Actor = None) -> None:
    """Remove the upload, everything it contributed (rollups, day shapes, charges), the
    workloads only it named (`workloads_prune`) and its raw file. Charges of a billing upload
    it had superseded count again, unless a newer upload superseded it too
    (`audit_app.ingestion.supersession`). A queued or running ingest of it stops at its next
    progress write (`services.ingest.UploadDeleted`); a running refresh of derived results
    stops at its next checkpoint, as the data version moves (`audit_app.derived`).

    Refused (UploadInUse, nothing deleted) while a gate compares a benchmark run of it.
    """
    conflict = upload_delete_conflict(upload=upload)
    if conflict is not None:
        raise conflict
    audit_record(
        actor=user,
        action=AuditEvent.Action.UPLOAD_DELETED,
        obj=upload,
        summary=f"deleted upload {upload.pk} ({upload.original_name})",
        details={"sha256": upload.sha256, "rows_accepted": upload.rows_accepted},
    )
    name = upload.file.name
    # The provider days whose coverage this deletion changes (`provider_usage`).
    provider_days = upload_days(upload)
    if upload.kind == Upload.Kind.BILLING:
        charges_release(upload=upload)
        provider_days.update(report_usage_release(upload))
    try:
        upload.delete()  # rollups, workload days, charges and benchmark runs cascade
    except ProtectedError:
        # A gate created since the check above: this transaction (its audit record too) rolls
        # back, and the caller hears which gate.
        conflict = upload_delete_conflict(upload=upload)
        if conflict is None:
            raise
        raise conflict from None
    report_usage_sync(provider_days)
    if upload.kind == Upload.Kind.TOKEN_LOG:
        removed = workloads_prune()
        logger.info("deleting upload %s removed %s workloads", upload.pk, removed)
    if name:
        transaction.on_commit(lambda: default_storage.delete(name))


def workloads_prune() -> int:
    """Delete the workloads nothing references any more; returns how many.

    A workload stays while any upload's rollups or day shapes name it, while a person decided
    something about it (a class override, an SLO, a recommendation approved, rejected or
    gated): those decisions are kept for when its data comes back. Its classification
    and undecided (proposed) recommendations go with it. Done in a few set-based statements
    (no rows loaded, no per-row signals), so a million leftover names go in seconds; the
    caller's change of data version (deleting an upload) covers them.
    """
    decided = Recommendation.objects.exclude(status=Recommendation.Status.PROPOSED)
    orphans = Workload.objects.filter(
        ~Exists(HourlyRollup.objects.filter(workload=OuterRef("name"))),
        ~Exists(DailyRollup.objects.filter(workload=OuterRef("name"))),
        ~Exists(WorkloadDay.objects.filter(workload=OuterRef("name"))),
        ~Exists(WorkloadOverride.objects.filter(workload=OuterRef("pk"))),
        ~Exists(decided.filter(workload=OuterRef("pk"))),
        latency_slo_ms__isnull=True,
    )
    ids = orphans.values("pk")
    Recommendation.objects.filter(workload__in=ids).delete()  # proposed only, with events
    WorkloadClassification.objects.filter(workload__in=ids).delete()
    return _delete_in_one_statement(orphans)


def _delete_in_one_statement(queryset: QuerySet[Any]) -> int:
    """DELETE the queryset's rows by one statement: `QuerySet.delete()` would load every row
    and send a post_delete signal for each (models with receivers, like Workload)."""
    model = queryset.model
    sql, params = queryset.values("pk").query.sql_with_params()
    table = connection.ops.quote_name(model._meta.db_table)
    column = connection.ops.quote_name(model._meta.pk.column)
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE {column} IN ({sql})", params)  # noqa: S608
        return cursor.rowcount
