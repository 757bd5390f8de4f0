"""Reads the gate needs from the audit app: which recommendations a gate may verify, and what
one recommendation's workload served (the terms `benchmarks_app.matching` checks runs against);
and what the audit app's pool recommendations read from the runs: the throughput measured for
a model on an accelerator (`measured_throughput`, registered with
`audit_app.recommendations.pool_replicas` when this app loads)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import QuerySet

from audit_app.models import Recommendation
from audit_app.recommendations.pool_replicas import MeasuredThroughput
from audit_app.reporting.selectors import daily_rollups
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
