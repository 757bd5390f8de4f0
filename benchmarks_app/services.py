"""Benchmark services: import a run (artifact + run fields), evaluate a gate.

Imports run in the request (artifacts are small and a CI pipeline wants its verdict at once);
the raw file is kept as an Upload like every other file.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Mapping
from contextlib import ExitStack
from datetime import timedelta
from decimal import Decimal
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from django.db import transaction
from django.utils import timezone

from audit_app.access.audit import audit_record
from audit_app.ingestion.uploads import DuplicateUpload, UploadRefused, upload_create
from audit_app.lib.errors import DomainError, ErrorKind
from audit_app.lib.filenames import shortened_name
from audit_app.models import AuditEvent, Recommendation, Upload
from benchmarks_app import converters, gating, matching, metrics
from benchmarks_app.artifacts import (
    ArtifactError,
    BenchmarkArtifact,
    PerRequest,
    TelemetrySample,
)
from benchmarks_app.models import BenchmarkRun, Gate
from benchmarks_app.selectors import recommendation_terms

if TYPE_CHECKING:
    from audit_app.access.permissions import Actor

logger = logging.getLogger(__name__)
# A run named after its file keeps the name within its column (`BenchmarkRun.name`).
RUN_NAME_MAX_BYTES = 200


class RunRefused(DomainError):
    """A run the service will not import; ``field`` names the input at fault."""

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
        return [jsonable(v) for v in value]
    return value


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
    """Rebuild a frozen dataclass, turning Decimal-typed fields back into Decimals."""
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        value = data[f.name]
        if isinstance(value, str) and "Decimal" in str(f.type) and value:
            value = Decimal(value)
        kwargs[f.name] = value
    return cls(**kwargs)


def run_fields(run: BenchmarkRun) -> metrics.RunFields:
    return _dataclass_from_json(metrics.RunFields, run.fields)


def run_metrics(run: BenchmarkRun) -> metrics.RunMetrics:
    return _dataclass_from_json(metrics.RunMetrics, run.metrics)


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


@transaction.atomic
def benchmark_run_import(
    *,
    source: BinaryIO,
    filename: str,
    format: str = "auto",
    meta: Mapping[str, str] | None = None,
    name: str = "",
    user: Actor = None,
    telemetry: tuple[BinaryIO, str] | None = None,
) -> BenchmarkRun:
    """Store the file, convert it, compute its metrics. RunRefused says what is wrong."""
    upload = _stored_upload(source, filename, format, user)
    with upload.file.open("rb") as stored:
        data = stored.read()
    try:
        artifact = converters.convert(data, filename=filename, format=format)
    except ArtifactError as exc:
        Upload.objects.filter(pk=upload.pk).update(status=Upload.Status.FAILED, error=str(exc))
        raise RunRefused(f"{filename}: {exc}") from None
    except Exception as exc:  # a converter bug must still end in one sentence, not a 500
        logger.exception("converting %s failed", filename)
        message = f"the file could not be read ({type(exc).__name__}: {exc})"
        Upload.objects.filter(pk=upload.pk).update(status=Upload.Status.FAILED, error=message)
        raise RunRefused(f"{filename}: {message}") from None
    telemetry_upload = None
    if telemetry is not None:
        telemetry_upload = _stored_upload(telemetry[0], telemetry[1], "telemetry", user)
        with telemetry_upload.file.open("rb") as stored:
            try:
                samples = converters.convert(
                    stored.read(), filename=telemetry[1], format="telemetry"
                ).telemetry
            except ArtifactError as exc:
                raise RunRefused(f"{telemetry[1]}: {exc}", field="telemetry") from None
        artifact = dataclasses.replace(artifact, telemetry=tuple(samples))
    try:
        fields = metrics.run_fields_from(artifact, dict(meta or {}))
    except ValueError as exc:
        raise RunRefused(str(exc), field="meta") from None
    computed = metrics.compute_metrics(artifact, fields)
    for stored_upload in filter(None, [upload, telemetry_upload]):
        Upload.objects.filter(pk=stored_upload.pk).update(
            status=Upload.Status.SUCCEEDED,
            format=artifact.tool if stored_upload is upload else "telemetry",
            finished_at=timezone.now(),
            error="",
        )
    return BenchmarkRun.objects.create(
        upload=upload,
        telemetry_upload=telemetry_upload,
        name=name[:200] or shortened_name(filename, max_bytes=RUN_NAME_MAX_BYTES),
        tool=artifact.tool,
        model=(fields.model or artifact.model)[:300],
        fields=jsonable(fields),
        artifact=jsonable(artifact),
        metrics=jsonable(computed),
        assumptions=list(artifact.assumptions),
        created_by=user if user is not None and user.is_authenticated else None,
    )


def benchmark_run_import_path(
    *,
    path: Path,
    format: str = "auto",
    meta: Mapping[str, str] | None = None,
    name: str = "",
    telemetry: Path | None = None,
    user: Actor = None,
) -> BenchmarkRun:
    """`benchmark_run_import` of a file on this machine (the command line's way in)."""
    if not path.is_file():
        raise RunRefused(f"{path}: no such file")
    if telemetry is not None and not telemetry.is_file():
        raise RunRefused(f"{telemetry}: no such file", field="telemetry")
    try:
        with ExitStack() as files:
            source = files.enter_context(path.open("rb"))
            samples = None
            if telemetry is not None:
                samples = (files.enter_context(telemetry.open("rb")), telemetry.name)
            return benchmark_run_import(
                source=source,
                filename=path.name,
                format=format,
                meta=meta,
                name=name,
                user=user,
                telemetry=samples,
            )
    except OSError as exc:
        raise RunRefused(str(exc)) from None


class GateRefused(DomainError):
    """Gate input the service cannot use; ``field`` names it (traffic_csv, traffic_workload,
    tolerances, mode). Nothing was recorded."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class GateTraffic:
    """The traffic both runs are priced on: output tokens per hour (None: always busy), and
    the label the gate records as its `inputs["traffic"]`."""

    demand: tuple[int, ...] | None
    source: str


ALWAYS_BUSY = GateTraffic(demand=None, source="always busy")


def gate_traffic(*, csv_text: str = "", csv_name: str = "", workload: str = "") -> GateTraffic:
    """Resolve a gate's traffic once, for every front end: an hourly CSV (`hour,output_tokens`,
    ``csv_name`` its file when it came as one), a workload's last 30 days, or neither."""
    workload = workload.strip()
    if csv_text.strip() and workload:
        raise GateRefused(
            "Give a traffic CSV or a workload to price the runs on, not both.",
            field="traffic_workload",
        )
    if workload:
        demand, source = workload_traffic(workload)
        return GateTraffic(demand=tuple(demand), source=source)
    if not csv_text.strip():
        return ALWAYS_BUSY
    try:
        demand = gating.parse_traffic_csv(csv_text)
    except ValueError as exc:
        raise GateRefused(str(exc), field="traffic_csv") from None
    if not any(demand):
        raise GateRefused(
            "the traffic CSV demands 0 output tokens in every hour; cost per 1M tokens is "
            "undefined",
            field="traffic_csv",
        )
    return GateTraffic(demand=tuple(demand), source=f"CSV {csv_name}" if csv_name else "CSV")


class GateLinkRefused(DomainError):
    """The gate was recorded, but not linked to the recommendation it was run for: the
    mismatches say why (`benchmarks_app.matching`), and the message is the sentence every
    front end shows. A conflict when the recommendation's status refuses the link, invalid
    input when the runs do not match it."""

    field = "recommendation"

    def __init__(
        self,
        *,
        gate: Gate,
        recommendation: Recommendation,
        mismatches: tuple[matching.Mismatch, ...],
    ) -> None:
        reasons = " ".join(m.sentence for m in mismatches)
        conflict = any(m.field == "status" for m in mismatches)
        super().__init__(
            f"{reasons} Gate {gate.pk} was recorded without the link.",
            kind=ErrorKind.CONFLICT if conflict else ErrorKind.INVALID,
        )
        self.gate = gate
        self.recommendation = recommendation
        self.mismatches = mismatches

    @property
    def conflict(self) -> bool:
        """True when the recommendation's status refuses the link, not the runs."""
        return self.kind is ErrorKind.CONFLICT

    def facts(self) -> dict[str, Any]:
        """The recommendation, each mismatch and the gate recorded; the message is the detail
        and each mismatch's sentence an error of the `recommendation` field."""
        recommendation = self.recommendation
        return {
            "detail": str(self),
            "errors": {"recommendation": [m.sentence for m in self.mismatches]},
            "recommendation": {
                "id": recommendation.pk,
                "status": recommendation.status,
                "target_kind": recommendation.target_kind,
                "target": recommendation.target,
            },
            "mismatches": [
                {"field": m.field, "expected": list(m.expected), "actual": m.actual}
                for m in self.mismatches
            ],
            "gate": self.gate.pk,
        }


def gate_evaluate(
    *,
    baseline: BenchmarkRun,
    candidate: BenchmarkRun,
    mode: gating.ScalingMode | str = gating.ScalingMode.ALWAYS_ON,
    cold_start_seconds: float = 0.0,
    traffic_csv: str = "",
    traffic_csv_name: str = "",
    traffic_workload: str = "",
    tolerances: Mapping[str, float] | None = None,
    recommendation: Recommendation | None = None,
    user: Actor = None,
) -> Gate:
    """Compare two runs and record the verdict for good: the one way the page, the API and the
    command line create a gate.

    The traffic is resolved here (`gate_traffic`); bad input raises GateRefused before
    anything is written. With a recommendation, the gate is linked to it only when
    `matching.link_mismatches` finds nothing; then a pass moves it to verified and a fail to
    gate_failed. Otherwise the gate is still recorded (the comparison stands on its own),
    unlinked, and GateLinkRefused, carrying it, is raised once it is saved.
    """
    traffic = gate_traffic(
        csv_text=traffic_csv, csv_name=traffic_csv_name, workload=traffic_workload
    )
    verdict = _verdict(
        baseline=baseline,
        candidate=candidate,
        mode=mode,
        cold_start_seconds=cold_start_seconds,
        traffic=traffic,
        tolerances=tolerances,
    )
    runs = matching.GateRuns(
        baseline_model=baseline.model,
        candidate_model=candidate.model,
        candidate_gpu_type=run_fields(candidate).gpu_type,
    )
    with transaction.atomic():
        locked = None
        mismatches: tuple[matching.Mismatch, ...] = ()
        if recommendation is not None:
            # Locked so that of two gates for it, the second sees the status the first set.
            locked = Recommendation.objects.select_for_update().get(pk=recommendation.pk)
            mismatches = matching.link_mismatches(
                recommendation=recommendation_terms(locked), runs=runs
            )
        gate = Gate.objects.create(
            baseline=baseline,
            candidate=candidate,
            baseline_sha256=baseline.upload.sha256,
            candidate_sha256=candidate.upload.sha256,
            inputs={
                "mode": str(mode),
                "cold_start_seconds": cold_start_seconds,
                "traffic": traffic.source,
                "traffic_hours": len(traffic.demand or ()),
                "tolerances": dict(tolerances or {}),
            },
            verdict=verdict.verdict,
            result=jsonable(verdict),
            recommendation=None if mismatches else locked,
            created_by=user if user is not None and user.is_authenticated else None,
        )
        _gate_audit(gate=gate, user=user, recommendation=locked, mismatches=mismatches)
        if locked is not None and not mismatches:
            _recommendation_move(recommendation=locked, gate=gate, verdict=verdict)
    if locked is not None and mismatches:
        raise GateLinkRefused(gate=gate, recommendation=locked, mismatches=mismatches)
    return gate


def _verdict(
    *,
    baseline: BenchmarkRun,
    candidate: BenchmarkRun,
    mode: gating.ScalingMode | str,
    cold_start_seconds: float,
    traffic: GateTraffic,
    tolerances: Mapping[str, float] | None,
) -> gating.GateVerdict:
    try:
        scaling = gating.ScalingMode(mode)
    except ValueError:
        choices = ", ".join(m.value for m in gating.ScalingMode)
        raise GateRefused(f"mode must be one of {choices}, not {mode!r}", field="mode") from None
    kwargs: dict[str, Any] = {}
    if tolerances:
        try:
            kwargs["tolerances"] = gating.tolerances_with(dict(tolerances))
        except ValueError as exc:
            raise GateRefused(str(exc), field="tolerances") from None
    return gating.evaluate_gate(
        baseline=(run_fields(baseline), run_metrics(baseline)),
        candidate=(run_fields(candidate), run_metrics(candidate)),
        demand_per_hour=list(traffic.demand) if traffic.demand else None,
        mode=scaling,
        cold_start_seconds=cold_start_seconds,
        **kwargs,
    )


def _gate_audit(
    *,
    gate: Gate,
    user: Actor,
    recommendation: Recommendation | None,
    mismatches: tuple[matching.Mismatch, ...],
) -> None:
    summary = f"gate {gate.pk}: {gate.verdict} (run {gate.baseline_id} vs {gate.candidate_id})"
    details: dict[str, Any] = {
        "verdict": gate.verdict,
        "baseline_sha256": gate.baseline_sha256,
        "candidate_sha256": gate.candidate_sha256,
    }
    if recommendation is not None:
        refused = [m.field for m in mismatches]
        details.update(recommendation=recommendation.pk, link_refused=refused)
        summary += (
            f"; link to recommendation {recommendation.pk} refused ({', '.join(refused)})"
            if refused
            else f"; for recommendation {recommendation.pk}"
        )
    audit_record(
        actor=user,
        action=AuditEvent.Action.GATE_CREATED,
        obj=gate,
        summary=summary,
        details=details,
    )


def _recommendation_move(
    *, recommendation: Recommendation, gate: Gate, verdict: gating.GateVerdict
) -> None:
    """A pass verifies the recommendation, a fail fails it; invalid or incomplete gates leave
    it approved, for a better gate."""
    moves = {
        Gate.Verdict.PASS: Recommendation.Status.VERIFIED,
        Gate.Verdict.FAIL: Recommendation.Status.GATE_FAILED,
    }
    if verdict.verdict not in moves:
        return
    recommendation.move_to(
        moves[Gate.Verdict(verdict.verdict)],
        user=gate.created_by,
        note=f"Gate {gate.pk}: {verdict.summary}",
    )


def workload_traffic(name: str) -> tuple[list[int], str]:
    """A workload's output tokens per hour over its last 30 days with data, and a label."""
    from audit_app.reporting.selectors import (
        data_date_range,
        hourly_output_tokens,
        rollups_in_range,
    )

    bounds = data_date_range()
    if bounds is None or not name:
        raise GateRefused(f"no traffic for workload {name!r}", field="traffic_workload")
    end = bounds[1]
    start = max(bounds[0], end - timedelta(days=29))
    demand = hourly_output_tokens(
        queryset=rollups_in_range(start=start, end=end, workload=name), start=start, end=end
    )
    if not any(demand):
        raise GateRefused(
            f"workload {name!r} has no traffic from {start} to {end}", field="traffic_workload"
        )
    return demand, f"workload {name}, {start} to {end}"
