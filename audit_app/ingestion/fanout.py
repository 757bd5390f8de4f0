"""Ingest fan-out: a large token log is parsed as several parts, in parallel on the workers.

Its rules in full: `docs/architecture.md`, section "Ingest fan-out".
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Iterable
from dataclasses import replace
from typing import BinaryIO, NotRequired, TypedDict, cast

from celery import current_task
from django.conf import settings
from django.core.files.storage import default_storage
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import F
from django.db.models.functions import Least

from audit_app.costs.price_cards import long_context_thresholds
from audit_app.ingestion import fanout_parts as part_files
from audit_app.ingestion import split
from audit_app.ingestion import token_logs as importers
from audit_app.ingestion.ingest import (
    CHUNK_ROWS,
    MAX_STORED_REJECTS,
    PROGRESS_INTERVAL_SECONDS,
    NameFolds,
    ParseResult,
    UploadDeleted,
    fail_upload,
    gc_paused,
    land_result,
    mark_running,
    name_folds,
    unexpected_error,
)
from audit_app.ingestion.reading import ImportFileError, read_head
from audit_app.ingestion.rollups import IngestAggregate
from audit_app.ingestion.token_logs import litellm_columnar
from audit_app.ingestion.token_logs.frame import LINE, requests_to_frame
from audit_app.lib import task_queue
from audit_app.models import Upload

logger = logging.getLogger(__name__)

SPLITTABLE_FORMATS = ("litellm", "generic")
# --- Planning (inside the ingest task) ----------------------------------------------------------


def fan_out(upload_id: int) -> Upload | None:
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
    with upload.file.open("rb") as opened:
        stream = cast(BinaryIO, opened)  # the FieldFile proxies the binary file it opened
        planned = _plan(upload, stream)
        if planned is None:
            return None
        detected, layout = planned
        mark_running(upload_id, format=detected)
        part_files.delete_parts(upload_id)  # what an earlier attempt left
        size = upload.size_bytes
        if split.quoted_newline_near_start(stream, layout=layout):
            _queue_scanned(upload_id, stream, size=size, layout=layout, format=detected)
        else:
            targets = split.part_targets(size=size, parts=wanted, layout=layout)
            cuts = zip([0, *targets], [*targets, size], strict=True)
            _queue_parts(
                upload_id,
                cuts,
                size=size,
                layout=layout,
                format=detected,
                scanned=False,
            )
    return Upload.objects.get(pk=upload_id)


class PartSpec(TypedDict):
    """One part's task message: its byte range, the plan it belongs to and how to read it."""

    index: int
    start: int  # target byte offsets; the part begins and ends at the next record start
    end: int
    plan: NotRequired[str]  # optional in a message, so read with .get
    kind: str  # split.Layout
    prefix_end: int
    prefix_lines: int
    format: str


def _queue_scanned(
    upload_id: int, stream: BinaryIO, *, size: int, layout: split.Layout, format: str
) -> None:
    """Cut by a scan of the whole file; each part is queued as soon as its end is found, so
    workers start on the first parts while the rest of the file is scanned."""
    parts = split.iter_parts(stream, size=size, parts=settings.INGEST_FANOUT_PARTS, layout=layout)
    cuts = ((part.start, part.end) for part in parts)
    _queue_parts(upload_id, cuts, size=size, layout=layout, format=format, scanned=True)


def _queue_parts(
    upload_id: int,
    cuts: Iterable[tuple[int, int]],
    *,
    size: int,
    layout: split.Layout,
    format: str,
    scanned: bool,
) -> None:
    """One `ingest_part` task per (start, end) target pair, under a new plan id."""
    plan_id = uuid.uuid4().hex
    part_files.save_plan(upload_id, plan_id=plan_id, parts=None, scanned=scanned)
    queue = _same_queue()
    for index, (start, end) in enumerate(cuts):
        if end >= size:
            # Before the last part is queued: whichever part finishes last sees the count.
            part_files.save_plan(upload_id, plan_id=plan_id, parts=index + 1, scanned=scanned)
            logger.info(
                "upload %s: ingesting in %s parts%s",
                upload_id,
                index + 1,
                " (cut by a scan)" if scanned else "",
            )
        spec: PartSpec = {
            "index": index,
            "start": start,
            "end": end,
            "plan": plan_id,
            "kind": layout.kind,
            "prefix_end": layout.prefix_end,
            "prefix_lines": layout.prefix_lines,
            "format": format,
        }
        task_queue.send(task_queue.INGEST_PART, args=[upload_id, spec], queue=queue)


def _same_queue() -> str | None:
    """Parts go to the queue the ingest task came from, so workers that serve a dedicated
    queue get them too."""
    request = getattr(current_task, "request", None)
    delivery = getattr(request, "delivery_info", None) or {}
    queue: str | None = delivery.get("routing_key") or None
    return queue


def _plan(upload: Upload, stream: BinaryIO) -> tuple[str, split.Layout] | None:
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


def part_ingest(*, upload_id: int, spec: PartSpec) -> str:
    """Parse one part, store its result, and land the upload if it was the last part missing.
    Returns what happened, for the task's log."""
    upload = Upload.objects.filter(pk=upload_id).first()
    if upload is None or upload.status != Upload.Status.RUNNING:
        part_files.delete_parts(upload_id)
        return "skipped"
    layout = _layout(spec)
    index = spec["index"]
    result = part_files.PartResult(
        plan=(index, spec["start"], spec["end"]), plan_id=spec.get("plan")
    )
    started, cpu_started = time.monotonic(), time.process_time()
    try:
        with upload.file.open("rb") as opened:
            source = cast(BinaryIO, opened)  # the FieldFile proxies the binary file it opened
            part = _locate(source, spec, size=upload.size_bytes, layout=layout)
            result.plan = (part.index, part.start, part.end)
            counted = split.CountedPart(source, part=part, layout=layout)
            try:
                _parse_part(upload, counted, layout=layout, format=spec["format"], result=result)
            except ImportFileError as exc:
                result.file_error = str(exc)  # in the part stream's numbers, until the merge
            except (OperationalError, InterfaceError, UploadDeleted):
                raise
            except Exception as exc:
                logger.exception("ingest of part %s of upload %s failed", index, upload_id)
                result.error = unexpected_error(exc)
            result.counts = counted.counts()
    except (OperationalError, InterfaceError):
        raise  # the database went away: the task retries
    except UploadDeleted:
        part_files.delete_parts(upload_id)
        return "skipped"
    except Exception as exc:
        logger.exception("reading part %s of upload %s failed", index, upload_id)
        result.error = unexpected_error(exc)
    if part_files.current_plan(upload_id).get("plan") != result.plan_id:
        return "skipped"  # the file was cut again meanwhile; this part is of the old cut
    try:
        part_files.save_part(upload_id, index, result)
        logger.info(
            "upload %s part %s: %s rows in %.2f s (%.2f s CPU)",
            upload_id,
            index,
            result.rows_read,
            time.monotonic() - started,
            time.process_time() - cpu_started,
        )
    except Exception as exc:  # the media storage refused the file: nothing can land
        logger.exception("storing part %s of upload %s failed", index, upload_id)
        fail_upload(upload_id, unexpected_error(exc))
        part_files.delete_parts(upload_id)
        return "failed"
    return _land_if_complete(upload_id, spec=spec, own=result)


def _layout(spec: PartSpec) -> split.Layout:
    return split.Layout(
        kind=spec["kind"], prefix_end=spec["prefix_end"], prefix_lines=spec["prefix_lines"]
    )


def _locate(source: BinaryIO, spec: PartSpec, *, size: int, layout: split.Layout) -> split.Part:
    """The part's own bytes: from the record boundary at its start target to the one at its
    end target (the next part starts there, found the same way). Line numbers are counted
    from the part's start (`lines_before` 0) until the merge knows the newlines before it."""
    start = split.record_start(source, spec["start"], size=size, layout=layout)
    end = split.record_start(source, spec["end"], size=size, layout=layout)  # size for the last
    return split.Part(index=spec["index"], start=start, end=max(start, end), lines_before=0)


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
        if not Upload.objects.filter(pk=self.upload.pk).update(
            bytes_read=Least(F("bytes_read") + self.bytes, self.upload.size_bytes),
            rows_read=F("rows_read") + self.rows,
        ):
            raise UploadDeleted(self.upload.pk)  # the part stops (`part_ingest`)
        self.bytes = self.rows = 0


def _parse_part(
    upload: Upload,
    counted: split.CountedPart,
    *,
    layout: split.Layout,
    format: str,
    result: part_files.PartResult,
) -> None:
    part = counted.part
    skip = split.part_prefix_lines(part, layout)  # lines whose rows belong to part 0
    shift = split.line_shift(part, layout)
    progress = _PartProgress(upload)
    thresholds = long_context_thresholds()
    with litellm_columnar.memos_shared_under(("upload", upload.pk)):
        stream = counted.stream
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
                result.aggregate.add_frame(frame, thresholds)
            if requests:
                result.aggregate.add_frame(requests_to_frame(requests), thresholds)
            result.rows_read += rows
            result.rows_rejected += len(rejects)
            room = MAX_STORED_REJECTS - len(result.rejects)
            if room > 0:
                result.rejects.extend(replace(r, line=r.line + shift) for r in rejects[:room])
            progress.add(bytes_read=max(chunk.bytes_read - position, 0), rows_read=rows)
            position = max(position, chunk.bytes_read)
    progress.flush()


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


# --- Landing (by the part that completes the set) -----------------------------------------------


def _land_if_complete(upload_id: int, *, spec: PartSpec, own: part_files.PartResult) -> str:
    """Land the upload if every part of the current plan is stored; `own` is the caller's part
    result, already in memory, used instead of reading its file back."""
    plan = part_files.current_plan(upload_id)
    parts = plan.get("parts")
    if not isinstance(parts, int) or not all(
        default_storage.exists(part_files.part_name(upload_id, i)) for i in range(parts)
    ):
        return "stored"
    try:
        with gc_paused(), transaction.atomic():
            upload = Upload.objects.select_for_update().filter(pk=upload_id).first()
            if upload is None:
                outcome = "skipped"  # the upload was deleted meanwhile
            elif upload.status != Upload.Status.RUNNING:
                outcome = "already " + upload.status
            else:
                started = time.monotonic()
                weights: list[Weights] = []
                results = [_weighed(upload_id, i, own=own, into=weights) for i in range(parts)]
                if not _complete(results, size=upload.size_bytes, plan_id=plan.get("plan")):
                    return "stored"  # a part file of another plan: the newer parts will land
                done = cast(list[part_files.PartResult], results)
                layout = _layout(spec)
                lines_before = _lines_before(done, layout=layout)
                if lines_before is None and not plan.get("scanned"):
                    _cut_again(upload, layout=layout, format=spec["format"])
                    return "cut again"  # the new parts land; this cut's files are gone
                _to_file_lines(done, lines_before)
                errors = [_error(r, layout, lines_before) for r in done if r.error or r.file_error]
                if errors:
                    fail_upload(upload_id, errors[0])
                    outcome = "failed"
                else:
                    folds = name_folds(
                        workloads=_summed(w for w, _ in weights),
                        teams=_summed(t for _, t in weights),
                    )
                    merged = _merge(upload, done, own=own, folds=folds)
                    merged_at = time.monotonic()
                    land_result(upload_id, merged)
                    logger.info(
                        "upload %s: %s parts read back and merged in %.2f s, landed in %.2f s",
                        upload_id,
                        parts,
                        merged_at - started,
                        time.monotonic() - merged_at,
                    )
                    outcome = "landed"
    except (OperationalError, InterfaceError):
        raise
    except Exception as exc:
        logger.exception("landing upload %s failed", upload_id)
        fail_upload(upload_id, unexpected_error(exc))
        outcome = "failed"
    part_files.delete_parts(upload_id)
    return outcome


def _complete(
    results: list[part_files.PartResult | None], *, size: int, plan_id: str | None
) -> bool:
    """Every part present, all of the current plan, covering the file end to end."""
    if any(r is None or r.plan_id != plan_id for r in results):
        return False
    ranges = [(r.plan[1], r.plan[2]) for r in results if r]
    return (
        ranges[0][0] == 0
        and ranges[-1][1] == size
        and all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    )


def _lines_before(
    results: list[part_files.PartResult], *, layout: split.Layout
) -> list[int] | None:
    """Newlines before each part; None if a part could not count its bytes or a CSV cut fell
    inside a quoted value."""
    counts = [r.counts for r in results]
    if any(c is None for c in counts):
        return None
    return split.lines_before_parts(cast(list[split.Counts], counts), kind=layout.kind)


def _cut_again(upload: Upload, *, layout: split.Layout, format: str) -> None:
    """A cut fell inside a quoted value spanning lines: drop this cut's results and cut the
    file by a scan, which counts quote parity up to every cut."""
    logger.info("upload %s: a cut fell inside a quoted value; cutting again by a scan", upload.pk)
    part_files.delete_parts(upload.pk)
    Upload.objects.filter(pk=upload.pk).update(bytes_read=0, rows_read=0)
    with upload.file.open("rb") as opened:
        _queue_scanned(
            upload.pk,
            cast(BinaryIO, opened),  # the FieldFile proxies the binary file it opened
            size=upload.size_bytes,
            layout=layout,
            format=format,
        )


def _to_file_lines(results: list[part_files.PartResult], lines_before: list[int] | None) -> None:
    """Rejects' line numbers from each part's start to the file's."""
    if lines_before is None:
        return
    for result, before in zip(results, lines_before, strict=True):
        if before:
            result.rejects = [replace(r, line=r.line + before) for r in result.rejects]


def _error(
    result: part_files.PartResult, layout: split.Layout, lines_before: list[int] | None
) -> str:
    if result.error:
        return result.error
    index, start, end = result.plan
    before = lines_before[index] if lines_before is not None else 0
    part = split.Part(index=index, start=start, end=end, lines_before=before)
    return _global_message(result.file_error, part, layout)


Weights = tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]


def _weighed(
    upload_id: int, index: int, *, own: part_files.PartResult, into: list[Weights]
) -> part_files.PartResult | None:
    """Part ``index`` without its aggregate (`_merge` reads it back), so that the landing part
    never holds every part's rollups at once: with a million distinct names those took
    gigabytes. Its names' weights (workloads, teams) are appended to ``into`` for the fold."""
    result = own if own.plan[0] == index else part_files.load_part(upload_id, index)
    if result is None:
        return None
    into.append(
        (result.aggregate.token_weights("workload"), result.aggregate.token_weights("team"))
    )
    return result if result is own else replace(result, aggregate=IngestAggregate())


def _summed(parts: Iterable[dict[str, tuple[int, int]]]) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for weights in parts:
        for name, (tokens, requests) in weights.items():
            total_tokens, total_requests = out.get(name, (0, 0))
            out[name] = (total_tokens + tokens, total_requests + requests)
    return out


def _merge(
    upload: Upload,
    results: list[part_files.PartResult],
    *,
    own: part_files.PartResult,
    folds: NameFolds,
) -> ParseResult:
    """The parts added up in file order, each read back and folded (`name_folds`) before it is
    merged, so memory holds one part's rollups and the folded sum."""
    merged = ParseResult(format=upload.format, bytes_read=upload.size_bytes, notes=folds.notes)
    for index, result in enumerate(results):
        part = own if result is own else part_files.load_part(upload.pk, index)
        if part is None:
            raise RuntimeError(f"part {index} of upload {upload.pk} vanished while landing")
        aggregate = part.aggregate
        if folds.notes:
            aggregate = aggregate.renamed(workloads=folds.workloads, teams=folds.teams)
        merged.aggregate.merge(aggregate)
        merged.rows_read += result.rows_read
        merged.rows_rejected += result.rows_rejected
        room = MAX_STORED_REJECTS - len(merged.rejects)
        if room > 0:
            merged.rejects.extend(result.rejects[:room])
    return merged
