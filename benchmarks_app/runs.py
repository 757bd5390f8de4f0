"""Benchmark runs: import one or more artifact files as one run (a curve of load points), and
complete a stored run's fields.

Imports run in the request (artifacts are small and a CI pipeline wants its verdict at once);
every raw file is kept as an Upload like every other file. A run's points are the points of its
files in the order given (`converters.convert_points`): a GuideLLM sweep, AIPerf folders, one
LLMPerf summary per concurrency all make one curve. Files that disagree on the model or the
quantization are refused naming the file, and two points at the same load and lengths naming
both; nothing is kept of a refused run but its raw files.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from contextlib import ExitStack
from decimal import Decimal
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

import numpy as np
from django.db import transaction
from django.utils import timezone

from audit_app.access.audit import audit_record
from audit_app.ingestion.uploads import DuplicateUpload, UploadRefused, upload_create
from audit_app.lib.errors import DomainError
from audit_app.lib.filenames import shortened_name
from audit_app.models import AuditEvent, Upload
from benchmarks_app import converters, curves, metrics
from benchmarks_app.artifacts import (
    ArtifactError,
    BenchmarkArtifact,
    PerRequest,
    TelemetrySample,
)
from benchmarks_app.models import BenchmarkPoint, BenchmarkRun

if TYPE_CHECKING:
    from audit_app.access.permissions import Actor

# A run named after its file keeps the name within its column (`BenchmarkRun.name`).
RUN_NAME_MAX_BYTES = 200
MAX_FILES_PER_RUN = 64


class RunRefused(DomainError):
    """A run the service will not import or edit; ``field`` names the input at fault."""

    field = "file"


def jsonable(value: Any) -> Any:
    """Dataclasses, Decimals, enums and tuples as plain JSON values (Decimals as strings)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN or Infinity; the database refuses them
    if isinstance(value, Decimal):
        return str(value) if value.is_finite() else None
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        plain = _plain_numbers(value)
        return plain if plain is not None else [jsonable(v) for v in value]
    return value


def _plain_numbers(values: list[Any] | tuple[Any, ...]) -> list[Any] | None:
    """A list of ints and floats as JSON at C speed (a point's per-request arrays hold 100k
    numbers each): the numbers as they are, a NaN or infinity as None. None when the list holds
    anything else."""
    kinds = set(map(type, values))
    if not values or not kinds <= {int, float}:
        return None
    if kinds == {int}:
        return list(values)
    finite = np.isfinite(np.asarray(values, dtype=float))
    if finite.all():
        return list(values)
    return [v if ok else None for v, ok in zip(values, finite.tolist(), strict=True)]


def artifact_from_json(data: Mapping[str, Any]) -> BenchmarkArtifact:
    values = dict(data)
    per_request = values.get("per_request")
    values["per_request"] = (
        PerRequest(**{k: tuple(v) for k, v in per_request.items()}) if per_request else None
    )
    values["telemetry"] = tuple(TelemetrySample(**s) for s in values.get("telemetry") or ())
    values["assumptions"] = tuple(values.get("assumptions") or ())
    return BenchmarkArtifact(**values)


def _dataclass_from_json(cls: type, data: Mapping[str, Any]) -> Any:
    """Rebuild a frozen dataclass, turning Decimal-typed fields back into Decimals and lists
    back into tuples."""
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        value = data[f.name]
        if isinstance(value, str) and "Decimal" in str(f.type) and value:
            value = Decimal(value)
        elif isinstance(value, list) and "tuple" in str(f.type):
            value = tuple(value)
        kwargs[f.name] = value
    return cls(**kwargs)


def run_fields(run: BenchmarkRun) -> metrics.RunFields:
    return _dataclass_from_json(metrics.RunFields, run.fields)


def metrics_from_json(data: Mapping[str, Any]) -> metrics.RunMetrics:
    return _dataclass_from_json(metrics.RunMetrics, data)


def run_points(run: BenchmarkRun) -> list[BenchmarkPoint]:
    """The run's points without their artifacts (which can hold 100k per-request records)."""
    return list(run.points.defer("artifact").select_related("upload").order_by("index"))


def curve_points(run: BenchmarkRun, fields: metrics.RunFields) -> tuple[curves.CurvePoint, ...]:
    """The run's points as the gate compares them."""
    stored = run_points(run)
    return tuple(
        curves.CurvePoint(
            index=point.index,
            label=point.label,
            load=curves.load_from_json(point.load),
            input_len=point.input_len,
            output_len=point.output_len,
            dataset=point.dataset,
            source=point.upload.original_name if point.upload_id else "",
            metrics=metrics_from_json(point.metrics),
        )
        for point in stored
    )


# --- import ---------------------------------------------------------------------------------


def _stored_upload(source: BinaryIO, filename: str, fmt: str, user: Actor) -> Upload:
    try:
        return upload_create(
            source=source,
            original_name=filename,
            kind=Upload.Kind.BENCHMARK,
            requested_format=fmt,
            user=user,
            enqueue=False,
        )
    except DuplicateUpload as exc:
        # The same result file again: a new run over the kept file (its fields may differ).
        if exc.first.kind != Upload.Kind.BENCHMARK:
            raise RunRefused(str(exc)) from None
        return exc.first
    except UploadRefused as exc:
        raise RunRefused(str(exc), field=exc.field) from None


def _converted(upload: Upload, filename: str, fmt: str) -> tuple[BenchmarkArtifact, ...]:
    with upload.file.open("rb") as stored:
        data = stored.read()
    try:
        return converters.convert_points(data, filename=filename, format=fmt)
    except ArtifactError as exc:
        message = str(exc)
    except Exception as exc:  # a converter bug must still end in one sentence, not a 500
        message = f"the file could not be read ({type(exc).__name__}: {exc})"
    Upload.objects.filter(pk=upload.pk).update(status=Upload.Status.FAILED, error=message)
    raise RunRefused(f"{filename}: {message}")


def _check_sweep(files: Sequence[tuple[str, tuple[BenchmarkArtifact, ...]]]) -> None:
    """Files of one run must serve one model at one quantization."""
    first_name, first_points = files[0]
    for key, label in (("model", "model"), ("quantization", "quantization")):
        expected = _stated(first_points[0], key)
        for name, points in files:
            for point in points:
                value = _stated(point, key)
                if value and expected and value.casefold() != expected.casefold():
                    raise RunRefused(
                        f"{name}: {label} {value!r} differs from {expected!r} in {first_name}; "
                        "a run's files must measure one model at one quantization"
                    )
                expected = expected or value


def _stated(artifact: BenchmarkArtifact, key: str) -> str:
    if key == "model":
        return artifact.model.strip()
    return str(artifact.metadata.get(key) or "").strip()


def benchmark_run_import(
    *,
    source: BinaryIO | None = None,
    filename: str = "",
    files: Sequence[tuple[BinaryIO, str]] = (),
    format: str = "auto",
    meta: Mapping[str, str] | None = None,
    name: str = "",
    user: Actor = None,
    telemetry: tuple[BinaryIO, str] | None = None,
) -> BenchmarkRun:
    """Store the files (`source`/`filename`, or several `files` as one curve), convert them and
    compute each point's metrics. RunRefused says what is wrong.

    Every file is kept as its upload whatever happens next (a refused file is marked failed
    with the sentence, so the uploads page says why); the run and its points are written in
    one transaction, all or nothing."""
    sources = [*([(source, filename)] if source is not None else []), *files]
    if not sources:
        raise RunRefused("no result file given")
    if len(sources) > MAX_FILES_PER_RUN:
        raise RunRefused(f"{len(sources)} files; a run takes at most {MAX_FILES_PER_RUN}")
    uploads = [_stored_upload(stream, name, format, user) for stream, name in sources]
    try:
        converted = [
            (file_name, _converted(upload, file_name, format))
            for upload, (_, file_name) in zip(uploads, sources, strict=True)
        ]
        _check_sweep(converted)
        telemetry_upload, samples, notes = _telemetry(telemetry, user)
        return _create_run(
            uploads=uploads,
            converted=converted,
            meta=meta,
            name=name[:200] or shortened_name(sources[0][1], max_bytes=RUN_NAME_MAX_BYTES),
            user=user,
            telemetry=(telemetry_upload, samples, notes),
        )
    except RunRefused as exc:
        _mark_refused(uploads, str(exc))
        raise


def _telemetry(
    telemetry: tuple[BinaryIO, str] | None, user: Actor
) -> tuple[Upload | None, tuple[TelemetrySample, ...] | None, tuple[str, ...]]:
    """The telemetry file kept as its upload, its samples and its assumption sentences."""
    if telemetry is None:
        return None, None, ()
    upload = _stored_upload(telemetry[0], telemetry[1], "telemetry", user)
    with upload.file.open("rb") as stored:
        try:
            read = converters.convert(stored.read(), filename=telemetry[1], format="telemetry")
        except ArtifactError as exc:
            message = f"{telemetry[1]}: {exc}"
            Upload.objects.filter(pk=upload.pk).update(status=Upload.Status.FAILED, error=message)
            raise RunRefused(message, field="telemetry") from None
    notes = tuple(f"telemetry {telemetry[1]}: {a}" for a in read.assumptions)
    return upload, read.telemetry, notes


def _mark_refused(uploads: Sequence[Upload], message: str) -> None:
    """A run refused as a whole (files that disagree, duplicate points, another file or the
    telemetry unreadable): its files not yet used by another run, and not already failed with
    their own sentence, are marked failed with the reason."""
    for upload in uploads:
        if not upload.benchmark_points.exists():
            Upload.objects.filter(pk=upload.pk).exclude(status=Upload.Status.FAILED).update(
                status=Upload.Status.FAILED, error=message[:2000]
            )


@transaction.atomic
def _create_run(
    *,
    uploads: Sequence[Upload],
    converted: Sequence[tuple[str, tuple[BenchmarkArtifact, ...]]],
    meta: Mapping[str, str] | None,
    name: str,
    user: Actor,
    telemetry: tuple[Upload | None, tuple[TelemetrySample, ...] | None, tuple[str, ...]],
) -> BenchmarkRun:
    telemetry_upload, samples, telemetry_notes = telemetry
    artifacts = [
        (upload, file_name, a if samples is None else dataclasses.replace(a, telemetry=samples))
        for upload, (file_name, points) in zip(uploads, converted, strict=True)
        for a in points
    ]
    fields = _fields_for(artifacts[0][2], meta, single=len(artifacts) == 1)
    _mark_succeeded(uploads, telemetry_upload)
    first = artifacts[0][2]
    run = BenchmarkRun.objects.create(
        upload=uploads[0],
        telemetry_upload=telemetry_upload,
        name=name,
        tool=first.tool,
        model=(fields.model or first.model)[:300],
        fields=jsonable(fields),
        assumptions=[*_assumptions(artifacts), *telemetry_notes],
        created_by=user if user is not None and user.is_authenticated else None,
    )
    _store_points(run, fields, [(u, f, a) for u, f, a in artifacts])
    return run


def _fields_for(
    first: BenchmarkArtifact, meta: Mapping[str, str] | None, *, single: bool
) -> metrics.RunFields:
    """The run fields: a curve's load is per point, so only a single point's load is a field."""
    if not single:
        first = dataclasses.replace(first, request_rate=None, max_concurrency=None)
    try:
        return metrics.run_fields_from(first, dict(meta or {}))
    except ValueError as exc:
        raise RunRefused(str(exc), field="meta") from None


def _mark_succeeded(uploads: Iterable[Upload], telemetry_upload: Upload | None) -> None:
    for upload in uploads:
        Upload.objects.filter(pk=upload.pk).update(
            status=Upload.Status.SUCCEEDED,
            format=upload.requested_format if upload.requested_format != "auto" else "",
            finished_at=timezone.now(),
            error="",
        )
    if telemetry_upload is not None:
        Upload.objects.filter(pk=telemetry_upload.pk).update(
            status=Upload.Status.SUCCEEDED, format="telemetry", finished_at=timezone.now(), error=""
        )


def _assumptions(artifacts: Sequence[tuple[Upload, str, BenchmarkArtifact]]) -> list[str]:
    """Each point's assumption sentences once, prefixed with the point when a run has several."""
    out: list[str] = []
    many = len(artifacts) > 1
    for index, (_, _, artifact) in enumerate(artifacts):
        where = f"point {index + 1} ({artifact.label or artifact.tool}): " if many else ""
        for sentence in artifact.assumptions:
            text = f"{where}{sentence}"
            if text not in out:
                out.append(text)
    return out


def stored_artifact(artifact: BenchmarkArtifact) -> dict[str, Any]:
    """The artifact as a point stores it, with what its metrics read and its page draws:
    - the pooled inter-token gaps as their percentiles, not the array (a point of 100k requests
      pools millions of gaps, and the pages draw none of them; a recompute reads the same p95);
    - of a telemetry file shared by a sweep, only the samples in the point's own window (the
      ones `compute_metrics` keeps), not a copy of the whole file in every point."""
    slim = artifact
    start, end = artifact.started_at_s, artifact.ended_at_s
    if artifact.telemetry and start is not None and end is not None:
        slim = dataclasses.replace(
            slim, telemetry=tuple(t for t in artifact.telemetry if start <= t.timestamp_s <= end)
        )
    per_request = artifact.per_request
    if per_request is not None and per_request.itl_ms:
        gaps = np.asarray(per_request.itl_ms, dtype=float)
        p50, p95, p99 = (float(v) for v in np.percentile(gaps, [50, 95, 99]))
        slim = dataclasses.replace(
            slim,
            per_request=dataclasses.replace(per_request, itl_ms=()),
            reported={
                **artifact.reported,
                "itl_mean_ms": float(gaps.mean()),
                "itl_p50_ms": p50,
                "itl_p95_ms": p95,
                "itl_p99_ms": p99,
            },
        )
    return cast(dict[str, Any], jsonable(slim))


def _store_points(
    run: BenchmarkRun,
    fields: metrics.RunFields,
    artifacts: Sequence[tuple[Upload, str, BenchmarkArtifact]],
) -> None:
    single = len(artifacts) == 1
    built = []
    for index, (upload, file_name, artifact) in enumerate(artifacts):
        computed = metrics.compute_metrics(artifact, fields)
        point = curves.point_from(
            artifact, fields, computed, index=index, single=single, source=file_name
        )
        built.append((upload, artifact, point))
    try:
        curves.check_duplicates([point for _, _, point in built])
    except curves.CurveError as exc:
        raise RunRefused(str(exc)) from None
    BenchmarkPoint.objects.bulk_create(
        [
            BenchmarkPoint(
                run=run,
                index=point.index,
                upload=upload,
                label=point.label[:200],
                load=None if point.load is None else point.load.as_json(),
                input_len=point.input_len,
                output_len=point.output_len,
                dataset=point.dataset[:200],
                artifact=stored_artifact(artifact),
                metrics=jsonable(point.metrics),
            )
            for upload, artifact, point in built
        ]
    )
    Upload.objects.filter(pk__in={u.pk for u, _, _ in built}).update(format=run.tool)


def benchmark_run_import_path(
    *,
    path: Path | None = None,
    paths: Sequence[Path] = (),
    format: str = "auto",
    meta: Mapping[str, str] | None = None,
    name: str = "",
    telemetry: Path | None = None,
    user: Actor = None,
) -> BenchmarkRun:
    """`benchmark_run_import` of files on this machine (the command line's way in)."""
    every = [*([path] if path is not None else []), *paths]
    for each in every:
        if not each.is_file():
            raise RunRefused(f"{each}: no such file")
    if telemetry is not None and not telemetry.is_file():
        raise RunRefused(f"{telemetry}: no such file", field="telemetry")
    try:
        with ExitStack() as opened:
            streams = [(opened.enter_context(p.open("rb")), p.name) for p in every]
            samples = None
            if telemetry is not None:
                samples = (opened.enter_context(telemetry.open("rb")), telemetry.name)
            return benchmark_run_import(
                files=streams, format=format, meta=meta, name=name, user=user, telemetry=samples
            )
    except OSError as exc:
        raise RunRefused(str(exc)) from None


# --- completing a stored run ----------------------------------------------------------------


@transaction.atomic
def benchmark_run_update(
    *,
    run: BenchmarkRun,
    changes: Mapping[str, str],
    name: str | None = None,
    user: Actor = None,
) -> BenchmarkRun:
    """Set run fields (an empty value clears one) and the name; the points' metrics are
    recomputed and the edit is recorded in the audit trail. Gates recorded before keep the
    values they used."""
    locked = BenchmarkRun.objects.select_for_update().get(pk=run.pk)
    before = run_fields(locked)
    try:
        after = metrics.run_fields_with(before, changes)
    except ValueError as exc:
        key = str(exc).split(" ", 1)[0]
        raise RunRefused(str(exc), field=key if key in changes else "meta") from None
    old, new = jsonable(before), jsonable(after)
    changed = {k: [old.get(k), new.get(k)] for k in new if old.get(k) != new.get(k)}
    if name is not None and name.strip() and name.strip()[:200] != locked.name:
        changed["name"] = [locked.name, name.strip()[:200]]
        locked.name = name.strip()[:200]
    if not changed:
        return locked
    locked.fields = new
    locked.model = (after.model or locked.model)[:300]
    locked.save(update_fields=["fields", "model", "name"])
    _recompute_points(locked, after)
    audit_record(
        actor=user,
        action=AuditEvent.Action.RUN_EDITED,
        obj=locked,
        summary=f"run {locked.pk}: "
        + ", ".join(f"{key} {_shown(a)} → {_shown(b)}" for key, (a, b) in changed.items()),
        details={"changes": changed},
    )
    return locked


def _shown(value: Any) -> str:
    return "(not stated)" if value in (None, "") else repr(value)


def _recompute_points(run: BenchmarkRun, fields: metrics.RunFields) -> None:
    points = list(run.points.order_by("index"))
    single = len(points) == 1
    for stored in points:
        artifact = artifact_from_json(stored.artifact)
        computed = metrics.compute_metrics(artifact, fields)
        point = curves.point_from(artifact, fields, computed, index=stored.index, single=single)
        stored.metrics = jsonable(computed)
        stored.load = None if point.load is None else point.load.as_json()
        stored.input_len, stored.output_len = point.input_len, point.output_len
        stored.dataset = point.dataset[:200]
    BenchmarkPoint.objects.bulk_update(
        points, ["metrics", "load", "input_len", "output_len", "dataset"]
    )
