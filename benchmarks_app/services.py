"""Benchmark gate services: evaluate a gate over two runs' curves and record it for good.

Runs are imported and completed in `benchmarks_app.runs` (re-exported here for the front ends).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from audit_app.access.audit import audit_record
from audit_app.lib.errors import DomainError, ErrorKind
from audit_app.lib.formatting import money_unit
from audit_app.models import AuditEvent, Recommendation
from benchmarks_app import curves, gating, matching, metrics
from benchmarks_app.models import BenchmarkRun, Gate
from benchmarks_app.runs import (
    RunRefused,
    benchmark_run_import,
    benchmark_run_import_path,
    benchmark_run_update,
    curve_points,
    jsonable,
    run_fields,
)
from benchmarks_app.selectors import recommendation_terms

if TYPE_CHECKING:
    from audit_app.access.permissions import Actor

__all__ = [
    "GateLinkRefused",
    "GateRefused",
    "RunRefused",
    "benchmark_run_import",
    "benchmark_run_import_path",
    "benchmark_run_update",
    "gate_evaluate",
    "gate_side",
    "hosted_prices",
    "jsonable",
    "run_fields",
]


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


@dataclasses.dataclass(frozen=True, kw_only=True)
class GateSide:
    """One run as the gate compares it, with where a hosted side's prices came from."""

    side: gating.Side
    prices: str  # "" for a self-hosted run


def gate_side(run: BenchmarkRun) -> GateSide:
    """The run's fields and points; a hosted run without stated token prices is priced from the
    provider's price card for the model, valid today (`audit_app` price cards)."""
    fields = run_fields(run)
    prices = ""
    if fields.hosted:
        fields, prices = hosted_prices(fields)
    return GateSide(
        side=gating.Side(fields=fields, points=curve_points(run, fields)), prices=prices
    )


def hosted_prices(fields: metrics.RunFields) -> tuple[metrics.RunFields, str]:
    """A hosted run's fields with token prices (stated, else the provider's price card for the
    model valid today), and a sentence saying where they came from."""
    if fields.usd_per_million_input is not None and fields.usd_per_million_output is not None:
        return fields, (
            f"stated: {money_unit(fields.usd_per_million_input)} input, "
            f"{money_unit(fields.usd_per_million_output)} output per 1M tokens"
        )
    from audit_app.costs.price_cards import price_book

    price = price_book().find(
        provider=fields.provider, model=fields.model, day=timezone.localdate()
    )
    if price is None:
        return fields, (
            f"no price card for {fields.provider or 'an unnamed provider'} / {fields.model}"
        )
    priced = dataclasses.replace(
        fields,
        usd_per_million_input=fields.usd_per_million_input
        if fields.usd_per_million_input is not None
        else price.input,
        usd_per_million_output=fields.usd_per_million_output
        if fields.usd_per_million_output is not None
        else price.output,
    )
    return priced, (
        f"price card {price.provider} / {price.model} from {price.valid_from}: "
        f"{money_unit(priced.usd_per_million_input)} input, "
        f"{money_unit(priced.usd_per_million_output)} output "
        "per 1M tokens"
    )


def gate_slo(*, ttft_ms: float | None = None, tpot_ms: float | None = None) -> curves.Slo:
    try:
        return curves.Slo(ttft_ms=ttft_ms, tpot_ms=tpot_ms)
    except ValueError as exc:
        field = "slo_ttft_ms" if "ttft" in str(exc) else "slo_tpot_ms"
        raise GateRefused(str(exc), field=field) from None


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
    slo_ttft_ms: float | None = None,
    slo_tpot_ms: float | None = None,
    recommendation: Recommendation | None = None,
    user: Actor = None,
) -> Gate:
    """Compare two runs' curves and record the verdict for good: the one way the page, the
    API and the command line create a gate.

    The traffic and the SLO are resolved here; bad input raises GateRefused before anything is
    written. The gate records the run fields it used (and a hosted side's prices), so a later
    edit of a run never changes it. With a recommendation, the gate is linked to it only when
    `matching.link_mismatches` finds nothing; then a pass moves it to verified and a fail to
    gate_failed. Otherwise the gate is still recorded (the comparison stands on its own),
    unlinked, and GateLinkRefused, carrying it, is raised once it is saved.
    """
    traffic = gate_traffic(
        csv_text=traffic_csv, csv_name=traffic_csv_name, workload=traffic_workload
    )
    slo = gate_slo(ttft_ms=slo_ttft_ms, tpot_ms=slo_tpot_ms)
    sides = {"baseline": gate_side(baseline), "candidate": gate_side(candidate)}
    verdict = _verdict(
        sides=sides,
        mode=mode,
        cold_start_seconds=cold_start_seconds,
        traffic=traffic,
        tolerances=tolerances,
        slo=slo,
    )
    runs = matching.GateRuns(
        baseline_model=baseline.model,
        candidate_model=candidate.model,
        candidate_gpu_type=sides["candidate"].side.fields.gpu_type,
    )
    inputs = {
        "mode": str(mode),
        "cold_start_seconds": cold_start_seconds,
        "traffic": traffic.source,
        "traffic_hours": len(traffic.demand or ()),
        "tolerances": dict(tolerances or {}),
        "slo": {"ttft_ms": slo.ttft_ms, "tpot_ms": slo.tpot_ms},
        "fields": {name: jsonable(side.side.fields) for name, side in sides.items()},
        "prices": {name: side.prices for name, side in sides.items() if side.prices},
        "points": {name: len(side.side.points) for name, side in sides.items()},
    }
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
            inputs=inputs,
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
    sides: Mapping[str, GateSide],
    mode: gating.ScalingMode | str,
    cold_start_seconds: float,
    traffic: GateTraffic,
    tolerances: Mapping[str, float] | None,
    slo: curves.Slo,
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
        baseline=sides["baseline"].side,
        candidate=sides["candidate"].side,
        demand_per_hour=list(traffic.demand) if traffic.demand else None,
        mode=scaling,
        cold_start_seconds=cold_start_seconds,
        slo=slo,
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
    from audit_app.costs.rollups import rollups_in_range
    from audit_app.reporting.selectors import data_date_range, hourly_output_tokens

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
