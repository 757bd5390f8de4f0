"""The part files of a fanned-out ingest (`audit_app.ingestion.fanout`) on the media storage:
each part's pickled result under `ingest-parts/<upload_id>/<index>.pkl` and the plan in
`ingest-parts/<upload_id>/plan.json`, each written whole (a reader never sees half a file).
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from audit_app.ingestion import split
from audit_app.ingestion.reading import RowReject
from audit_app.ingestion.rollups import IngestAggregate

PARTS_DIR = "ingest-parts"
# Pickle of the part files; bumped when PartResult changes shape (2: histograms pickled in
# their binary form, end users as an array; 3: parts locate themselves and count their lines).
PART_VERSION = 3


@dataclass(kw_only=True)
class PartResult:
    """What one part contributes, as pickled to the media storage."""

    version: int = PART_VERSION
    plan: tuple[int, int, int]  # (index, start, end)
    plan_id: str | None = None
    error: str = ""  # an unexpected error, in final words
    file_error: str = ""  # an ImportFileError about the part stream (its line numbers)
    counts: split.Counts | None = None  # newlines and quotes in [start, end)
    aggregate: IngestAggregate = field(default_factory=IngestAggregate)
    rejects: list[RowReject] = field(default_factory=list)  # lines counted from the part's start
    rows_read: int = 0
    rows_rejected: int = 0


def part_dir(upload_id: int) -> str:
    return f"{PARTS_DIR}/{upload_id}"


def part_name(upload_id: int, index: int) -> str:
    return f"{part_dir(upload_id)}/{index}.pkl"


def _local_path(name: str) -> str | None:
    try:
        return default_storage.path(name)
    except NotImplementedError:
        return None


def save_part(upload_id: int, index: int, result: PartResult) -> None:
    data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    _write_atomically(part_name(upload_id, index), data)


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
    return f"{part_dir(upload_id)}/plan.json"


def save_plan(upload_id: int, *, plan_id: str, parts: int | None, scanned: bool) -> None:
    plan = {"plan": plan_id, "parts": parts, "scanned": scanned}
    _write_atomically(_plan_name(upload_id), json.dumps(plan).encode())


def current_plan(upload_id: int) -> dict[str, Any]:
    """The plan being ingested: its id, its count of parts (None until the last part is
    queued) and whether a scan cut it; {} if there is none."""
    try:
        with default_storage.open(_plan_name(upload_id), "rb") as stream:
            plan = json.loads(stream.read())
    except (FileNotFoundError, ValueError):
        return {}
    return plan if isinstance(plan, dict) else {}


def load_part(upload_id: int, index: int) -> PartResult | None:
    try:
        with default_storage.open(part_name(upload_id, index), "rb") as stream:
            # Written by this application's own workers to its own media storage.
            result = pickle.loads(stream.read())  # noqa: S301
    except FileNotFoundError:
        return None
    return result if getattr(result, "version", None) == PART_VERSION else None


def delete_parts(upload_id: int) -> None:
    directory = part_dir(upload_id)
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
