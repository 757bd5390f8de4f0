"""Ingest fan-out: a large token log is parsed as several parts, in parallel on the workers.

`audit_app.ingest_upload` calls `upload_ingest`, which (inside that task) hands a large file in
a splittable format here: LiteLLM or generic CSV, or their JSONL variants, of at least
`INGEST_FANOUT_MIN_BYTES`. A single JSON document or an OpenTelemetry export is read in one
pass as before. The file is cut into up to `INGEST_FANOUT_PARTS` byte ranges at record
boundaries (`audit_app.importers.split`), the upload is marked `running` and one
`audit_app.ingest_part` task is queued per part as soon as the scan finds its end (so the first
parts are parsed while the rest of the file is scanned); before the last part is queued the
count is written to `ingest-parts/<upload_id>/plan.json`. The ingest task then returns.

Each part parses its range into a partial result (aggregate, first rejects, row counts) with
file-global line numbers, and pickles it to the media storage under
`ingest-parts/<upload_id>/<index>.pkl` (written under a temporary name, then renamed), where
workers on other machines find it the way they find the upload's file. The part that finds
every part present merges them in part order and lands them with the ingest service's own
`_land`, in one transaction, so exactly-once holds as before:
- a killed part is redelivered (acks_late) and overwrites its own pickle;
- parts finishing together serialise on the upload row (select_for_update); the second finds
  the upload no longer `running` and does nothing;
- a part that cannot read its range (ImportFileError, or any unexpected error) stores the error
  instead of a result; when all parts are in, the upload fails with the error of the first
  such part in file order, the one a single pass would have met first.
No result backend or chord is needed, so the embedded broker of `make run` works too.

Exactness: parts report file-global line numbers and the merged result equals a single pass's
(tests/audit_app/test_ingest_fanout.py), except that histogram sums (floats) may differ in the
last bits, as they already do between chunk sizes, and that a day's callers list, capped per
chunk at MAX_CALLERS_PER_DAY in both paths, may keep different names past that cap.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pickle
import re
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from celery import current_task
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import F
from django.db.models.functions import Least

from audit_app import importers
from audit_app.importers import litellm_columnar, split
from audit_app.importers.base import ImportFileError, RowReject, read_head
from audit_app.importers.frame import LINE, requests_to_frame
from audit_app.models import Upload
from audit_app.rollups import IngestAggregate
from audit_app.services.ingest import (
    CHUNK_ROWS,
    MAX_STORED_REJECTS,
    PROGRESS_INTERVAL_SECONDS,
    ParseResult,
    _fail,
    _land,
    after_ingest,
    gc_paused,
    mark_running,
)

logger = logging.getLogger(__name__)

PARTS_DIR = "ingest-parts"
INGEST_TASK = "audit_app.ingest_upload"
SPLITTABLE_FORMATS = ("litellm", "generic")
# Pickle of the part files; bumped when PartResult changes shape (2: histograms pickled in
# their binary form, end users as an array).
PART_VERSION = 2


def in_ingest_task() -> bool:
    """True inside the `audit_app.ingest_upload` task (eager or on a worker): only there does
    `upload_ingest` fan out, so the CLI and other in-process callers keep one pass."""
    task = current_task
    return bool(task) and getattr(task, "name", None) == INGEST_TASK


@dataclass(kw_only=True)
class PartResult:
    """What one part contributes, as pickled to the media storage."""

    version: int = PART_VERSION
    plan: tuple[int, int, int]  # (index, start, end)
    error: str = ""
    aggregate: IngestAggregate = field(default_factory=IngestAggregate)
    rejects: list[RowReject] = field(default_factory=list)
    rows_read: int = 0
    rows_rejected: int = 0


# --- Planning (inside the ingest task) ----------------------------------------------------------


def fan_out(upload_id: int, *, refresh: bool = True) -> Upload | None:
    """Queue the parts of a large splittable token log and return the (running) upload; None
    when the file is to be read in one pass (small, billing, not splittable, unreadable head)."""
    upload = Upload.objects.get(pk=upload_id)
    if upload.kind != Upload.Kind.TOKEN_LOG or upload.status in (
        Upload.Status.SUCCEEDED,
        Upload.Status.FAILED,
    ):
        return None
    wanted = settings.INGEST_FANOUT_PARTS
    if wanted < 1 or upload.size_bytes < settings.INGEST_FANOUT_MIN_BYTES:
        return None
    with upload.file.open("rb") as stream:
        planned = _plan(upload, stream)
        if planned is None:
            return None
        detected, layout = planned
        mark_running(upload_id, format=detected)
        _delete_parts(upload_id)  # what an earlier attempt left
        from audit_app.tasks import ingest_part

        # Each part is queued as soon as its end is found, so workers start on the first parts
        # while this task is still scanning the rest of the file.
        parts = split.iter_parts(stream, size=upload.size_bytes, parts=wanted, layout=layout)
        options = _same_queue()
        for part in parts:
            if part.end == upload.size_bytes:
                # Before the last part is queued: whichever part finishes last sees the count.
                _save_plan(upload_id, parts=part.index + 1)
                logger.info("upload %s: ingesting in %s parts", upload_id, part.index + 1)
            spec = {
                "index": part.index,
                "start": part.start,
                "end": part.end,
                "lines_before": part.lines_before,
                "kind": layout.kind,
                "prefix_end": layout.prefix_end,
                "prefix_lines": layout.prefix_lines,
                "format": detected,
                "refresh": refresh,
            }
            ingest_part.apply_async(args=[upload_id, spec], **options)
    return Upload.objects.get(pk=upload_id)


def _same_queue() -> dict[str, str]:
    """Parts go to the queue the ingest task came from, so workers that serve a dedicated
    queue get them too."""
    request = getattr(current_task, "request", None)
    delivery = getattr(request, "delivery_info", None) or {}
    queue = delivery.get("routing_key")
    return {"queue": queue} if queue else {}


def _plan(upload: Upload, stream: Any) -> tuple[str, split.Layout] | None:
    try:
        head = read_head(stream)
        requested = upload.requested_format
        detected = importers.detect_format(head) if requested == "auto" else requested
    except ImportFileError:
        return None  # the single pass fails the upload with the same message
    if detected not in SPLITTABLE_FORMATS:
        return None
    kind = split.tabular_kind(head)
    if kind is None:
        return None
    layout = split.find_layout(stream, kind=kind)
    if layout is None:
        return None
    return detected, layout


# --- One part (the ingest_part task) -------------------------------------------------------------


def part_ingest(*, upload_id: int, spec: dict[str, Any]) -> str:
    """Parse one part, store its result, and land the upload if it was the last part missing.
    Returns what happened, for the task's log."""
    upload = Upload.objects.filter(pk=upload_id).first()
    if upload is None or upload.status != Upload.Status.RUNNING:
        _delete_parts(upload_id)
        return "skipped"
    part = split.Part(
        index=spec["index"], start=spec["start"], end=spec["end"], lines_before=spec["lines_before"]
    )
    layout = split.Layout(
        kind=spec["kind"], prefix_end=spec["prefix_end"], prefix_lines=spec["prefix_lines"]
    )
    plan = (part.index, part.start, part.end)
    started, cpu_started = time.monotonic(), time.process_time()
    try:
        result = _parse_part(upload, part=part, layout=layout, format=spec["format"], plan=plan)
    except (OperationalError, InterfaceError):
        raise  # the database went away: the task retries
    except ImportFileError as exc:
        result = PartResult(plan=plan, error=_global_message(str(exc), part, layout))
    except Exception as exc:
        logger.exception("ingest of part %s of upload %s failed", part.index, upload_id)
        result = PartResult(
            plan=plan, error=f"The file could not be ingested ({type(exc).__name__}: {exc})"
        )
    try:
        _save_part(upload_id, part.index, result)
        logger.info(
            "upload %s part %s: %s rows in %.2f s (%.2f s CPU)",
            upload_id,
            part.index,
            result.rows_read,
            time.monotonic() - started,
            time.process_time() - cpu_started,
        )
    except Exception as exc:  # the media storage refused the file: nothing can land
        logger.exception("storing part %s of upload %s failed", part.index, upload_id)
        _fail(upload_id, f"The file could not be ingested ({type(exc).__name__}: {exc})")
        _delete_parts(upload_id)
        return "failed"
    return _land_if_complete(upload_id, refresh=spec.get("refresh", True), own=result)


class _PartProgress:
    """Adds a part's bytes and rows to the upload's counters (F() increments, so parts on
    several workers add up) at most every PROGRESS_INTERVAL_SECONDS."""

    def __init__(self, upload: Upload) -> None:
        self.upload = upload
        self.last = time.monotonic()
        self.bytes = 0
        self.rows = 0

    def add(self, *, bytes_read: int, rows_read: int) -> None:
        self.bytes += bytes_read
        self.rows += rows_read
        if time.monotonic() - self.last >= PROGRESS_INTERVAL_SECONDS:
            self.flush()

    def flush(self) -> None:
        self.last = time.monotonic()
        if not (self.bytes or self.rows):
            return
        Upload.objects.filter(pk=self.upload.pk).update(
            bytes_read=Least(F("bytes_read") + self.bytes, self.upload.size_bytes),
            rows_read=F("rows_read") + self.rows,
        )
        self.bytes = self.rows = 0


def _parse_part(
    upload: Upload,
    *,
    part: split.Part,
    layout: split.Layout,
    format: str,
    plan: tuple[int, int, int],
) -> PartResult:
    result = PartResult(plan=plan)
    skip = split.part_prefix_lines(part, layout)  # lines whose rows belong to part 0
    shift = split.line_shift(part, layout)
    progress = _PartProgress(upload)
    with (
        upload.file.open("rb") as source,
        litellm_columnar.memos_shared_under(("upload", upload.pk)),
    ):
        stream = split.part_stream(source, part=part, layout=layout)
        position = layout.prefix_end if part.start > 0 else 0
        for chunk in importers.read_requests(stream, format=format, chunk_rows=CHUNK_ROWS):
            frame, requests, rejects = chunk.frame, chunk.requests, chunk.rejects
            rows = chunk.rows_read
            if skip:
                if frame is not None and len(frame) and int(frame[LINE].min()) <= skip:
                    keep = (frame[LINE] > skip).to_numpy()
                    rows -= int((~keep).sum())
                    frame = frame[keep].reset_index(drop=True)
                kept = [r for r in requests if r.line > skip]
                kept_rejects = [r for r in rejects if r.line > skip]
                rows -= len(requests) - len(kept) + len(rejects) - len(kept_rejects)
                requests, rejects = kept, kept_rejects
            if frame is not None:
                result.aggregate.add_frame(frame)
            if requests:
                result.aggregate.add_frame(requests_to_frame(requests))
            result.rows_read += rows
            result.rows_rejected += len(rejects)
            room = MAX_STORED_REJECTS - len(result.rejects)
            if room > 0:
                result.rejects.extend(replace(r, line=r.line + shift) for r in rejects[:room])
            progress.add(bytes_read=max(chunk.bytes_read - position, 0), rows_read=rows)
            position = max(position, chunk.bytes_read)
    progress.flush()
    return result


_LINE_NUMBER = re.compile(r"\b(line )(\d+)")
_BYTE_NUMBER = re.compile(r"\b(byte )(\d+)")


def _global_message(message: str, part: split.Part, layout: split.Layout) -> str:
    """An importer's one-sentence error about the part stream, in the file's line and byte
    numbers (the prefix keeps its own, which are the file's)."""
    prefix_lines = split.part_prefix_lines(part, layout)
    prefix_bytes = layout.prefix_end if part.start > 0 else 0
    shift = split.line_shift(part, layout)

    def line(match: re.Match[str]) -> str:
        number = int(match[2])
        return match[1] + str(number + shift if number > prefix_lines else number)

    def byte(match: re.Match[str]) -> str:
        number = int(match[2])
        if number >= prefix_bytes:
            number = number - prefix_bytes + part.start
        return match[1] + str(number)

    return _BYTE_NUMBER.sub(byte, _LINE_NUMBER.sub(line, message))


# --- Part files -------------------------------------------------------------------------------


def _part_dir(upload_id: int) -> str:
    return f"{PARTS_DIR}/{upload_id}"


def _part_name(upload_id: int, index: int) -> str:
    return f"{_part_dir(upload_id)}/{index}.pkl"


def _local_path(name: str) -> str | None:
    try:
        return default_storage.path(name)
    except NotImplementedError:
        return None


def _save_part(upload_id: int, index: int, result: PartResult) -> None:
    data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    _write_atomically(_part_name(upload_id, index), data)


def _write_atomically(final: str, data: bytes) -> None:
    """A reader sees the previous file or the whole new one, never half of it."""
    temporary = default_storage.save(f"{final}.{uuid.uuid4().hex}.tmp", ContentFile(data))
    source, target = _local_path(temporary), _local_path(final)
    if source is not None and target is not None:
        os.replace(source, target)
        return
    # Object stores write an object whole; replace it by name.
    default_storage.delete(final)
    default_storage.save(final, ContentFile(data))
    default_storage.delete(temporary)


def _plan_name(upload_id: int) -> str:
    return f"{_part_dir(upload_id)}/plan.json"


def _save_plan(upload_id: int, *, parts: int) -> None:
    _write_atomically(_plan_name(upload_id), json.dumps({"parts": parts}).encode())


def _planned_parts(upload_id: int) -> int | None:
    try:
        with default_storage.open(_plan_name(upload_id), "rb") as stream:
            return int(json.loads(stream.read())["parts"])
    except (FileNotFoundError, ValueError, KeyError):
        return None


def _load_part(upload_id: int, index: int) -> PartResult | None:
    try:
        with default_storage.open(_part_name(upload_id, index), "rb") as stream:
            # Written by this application's own workers to its own media storage.
            result = pickle.loads(stream.read())  # noqa: S301
    except FileNotFoundError:
        return None
    return result if getattr(result, "version", None) == PART_VERSION else None


def _delete_parts(upload_id: int) -> None:
    directory = _part_dir(upload_id)
    try:
        _, files = default_storage.listdir(directory)
    except FileNotFoundError:
        return
    for name in files:
        default_storage.delete(f"{directory}/{name}")
    path = _local_path(directory)
    if path is not None:
        # Not empty when a part wrote meanwhile; that part cleans up after itself.
        with contextlib.suppress(OSError):
            os.rmdir(path)


# --- Landing (by the part that completes the set) -----------------------------------------------


def _land_if_complete(upload_id: int, *, refresh: bool, own: PartResult | None = None) -> str:
    """Land the upload if every part is stored; `own` is the caller's part result, already in
    memory, used instead of reading its file back."""
    parts = _planned_parts(upload_id)
    if parts is None or not all(
        default_storage.exists(_part_name(upload_id, i)) for i in range(parts)
    ):
        return "stored"
    landed = False
    try:
        with gc_paused(), transaction.atomic():
            upload = Upload.objects.select_for_update().filter(pk=upload_id).first()
            if upload is None:
                outcome = "skipped"  # the upload was deleted meanwhile
            elif upload.status != Upload.Status.RUNNING:
                outcome = "already " + upload.status
            else:
                started = time.monotonic()
                results = [
                    own if own is not None and own.plan[0] == i else _load_part(upload_id, i)
                    for i in range(parts)
                ]
                if not _complete(results, size=upload.size_bytes):
                    return "stored"  # a part file of another plan: the newer parts will land
                errors = [r.error for r in results if r and r.error]
                if errors:
                    _fail(upload_id, errors[0])
                    outcome = "failed"
                else:
                    merged = _merge(upload, results)  # type: ignore[arg-type]
                    merged_at = time.monotonic()
                    _land(upload_id, merged)
                    logger.info(
                        "upload %s: %s parts read back and merged in %.2f s, landed in %.2f s",
                        upload_id,
                        parts,
                        merged_at - started,
                        time.monotonic() - merged_at,
                    )
                    landed = True
                    outcome = "landed"
    except (OperationalError, InterfaceError):
        raise
    except Exception as exc:
        logger.exception("landing upload %s failed", upload_id)
        _fail(upload_id, f"The file could not be ingested ({type(exc).__name__}: {exc})")
        outcome = "failed"
    _delete_parts(upload_id)
    if landed and refresh:
        after_ingest()
    return outcome


def _complete(results: list[PartResult | None], *, size: int) -> bool:
    """Every part present, all of one plan, covering the file end to end."""
    if any(r is None for r in results):
        return False
    ranges = [(r.plan[1], r.plan[2]) for r in results if r]
    return (
        ranges[0][0] == 0
        and ranges[-1][1] == size
        and all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    )


def _merge(upload: Upload, results: list[PartResult]) -> ParseResult:
    merged = ParseResult(
        format=upload.format, bytes_read=upload.size_bytes, aggregate=results[0].aggregate
    )
    for index, result in enumerate(results):
        if index:
            merged.aggregate.merge(result.aggregate)
        merged.rows_read += result.rows_read
        merged.rows_rejected += result.rows_rejected
        room = MAX_STORED_REJECTS - len(merged.rejects)
        if room > 0:
            merged.rejects.extend(result.rejects[:room])
    return merged
