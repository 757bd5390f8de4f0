"""Reads the gate needs from the audit app: which recommendations a gate may verify, and what
one recommendation's workload served (the terms `benchmarks_app.matching` checks runs against);
and what the audit app's pool recommendations read from the runs: the throughput measured for
a model on an accelerator (`measured_throughput`, registered with
`audit_app.recommendations.pool_replicas` when this app loads)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import QuerySet

from audit_app.costs.rollups import daily_rollups
from audit_app.lib.results_cache import cached
from audit_app.models import Recommendation
from audit_app.recommendations.evidence import MeasuredPoint
from audit_app.recommendations.pool_replicas import MeasuredThroughput
from benchmarks_app import matching
from benchmarks_app.models import BenchmarkRun
from benchmarks_app.runs import run_fields


def gateable_recommendations() -> QuerySet[Recommendation]:
    """The recommendations a gate may verify: approved for a pilot, on dedicated hardware (or a
    pool consolidation)."""
    return Recommendation.objects.filter(
        status=matching.APPROVED, target_kind__in=matching.GATEABLE_KINDS
    ).select_related("workload", "pool")


def recommendation_terms(recommendation: Recommendation) -> matching.RecommendationTerms:
    """The recommendation with the models its workload's traffic used in its period (for a
    pool recommendation, the models the pool served, as the recommender recorded them)."""
    if recommendation.workload is None:
        models: Iterable[str] = recommendation.details.get("models", [])
    else:
        models = (
            daily_rollups(
                start=recommendation.period_start,
                end=recommendation.period_end,
                workload=recommendation.workload.name,
            )
            .values_list("model", flat=True)
            .distinct()
            .order_by()
        )
    return matching.RecommendationTerms(
        id=recommendation.pk,
        status=recommendation.status,
        target_kind=recommendation.target_kind,
        target=recommendation.target,
        workload=recommendation.subject,
        period_start=recommendation.period_start,
        period_end=recommendation.period_end,
        workload_models=tuple(sorted(models)),
    )


def measured_throughput(*, model: str, hardware: str) -> MeasuredThroughput | None:
    """The newest completed run of ``model`` on ``hardware`` (its accelerator count and type
    stated, a point with output tok/s): its best point's output tokens/s on its accelerators.
    Models and accelerators match as a gate matches them (`benchmarks_app.matching`)."""
    key = matching.model_key(model)
    for run in BenchmarkRun.objects.prefetch_related("points"):
        fields = run_fields(run)
        if (
            matching.model_key(fields.compared_model or run.model) != key
            or not fields.num_gpus
            or not matching.accelerator_matches(gpu_type=fields.gpu_type, hardware=hardware)
        ):
            continue
        rates = [
            (float(point.metrics["decode_tokens_per_s"]), point.index)
            for point in run.points.all()
            if point.metrics.get("decode_tokens_per_s")
        ]
        if not rates:
            continue
        best, index = max(rates)
        return MeasuredThroughput(
            tokens_per_second=best,
            accelerators=fields.num_gpus,
            source=f"benchmark run {run.pk} ({run.name}, {run.tool}; {fields.num_gpus} × "
            f"{fields.gpu_type}), the best of its {len(rates)} point(s) (point {index + 1})",
        )
    return None


@dataclass(frozen=True, kw_only=True)
class _RunPoints:
    """What `measured_points` matches on, read once per data version."""

    model_key: str
    gpu_type: str
    num_gpus: int | None
    hosted_provider: str
    points: tuple[MeasuredPoint, ...]


def _runs_with_points() -> list[_RunPoints]:
    out = []
    for run in BenchmarkRun.objects.prefetch_related("points").order_by("-created_at", "-pk"):
        fields = run_fields(run)
        points = []
        for point in run.points.all():
            metrics = point.metrics
            if not metrics.get("decode_tokens_per_s"):
                continue
            load = point.load or {}
            points.append(
                MeasuredPoint(
                    run_id=run.pk,
                    run_name=run.name,
                    point=point.index + 1,
                    load=", ".join(f"{k} {v}" for k, v in sorted(load.items())),
                    tokens_per_second=float(metrics["decode_tokens_per_s"]),
                    accelerators=fields.num_gpus or 1,
                    p95_ttft_ms=metrics.get("ttft_p95_ms"),
                    p95_tpot_ms=metrics.get("tpot_p95_ms"),
                )
            )
        out.append(
            _RunPoints(
                model_key=matching.model_key(fields.compared_model or run.model),
                gpu_type=fields.gpu_type,
                num_gpus=fields.num_gpus,
                hosted_provider=fields.provider.lower() if fields.serving == "hosted" else "",
                points=tuple(points),
            )
        )
    return out


def measured_points(*, model: str, hardware: str) -> list[MeasuredPoint]:
    """Every point with output tok/s of the runs of ``model`` on ``hardware``: an accelerator
    (the run's accelerator type and count stated) or, for a hosted run, its provider's name.
    Newest run first; models and accelerators match as a gate matches them."""
    key = matching.model_key(model)
    out: list[MeasuredPoint] = []
    for run in cached("measured_runs", "", _runs_with_points):
        if run.model_key != key:
            continue
        if run.hosted_provider:
            if run.hosted_provider not in hardware.lower():
                continue
        elif not (
            run.num_gpus and matching.accelerator_matches(gpu_type=run.gpu_type, hardware=hardware)
        ):
            continue
        out.extend(run.points)
    return out
