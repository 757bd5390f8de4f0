"""Reads the gate needs from the audit app: which recommendations a gate may verify, and what
one recommendation's workload served (the terms `benchmarks_app.matching` checks runs against)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import QuerySet

from audit_app.models import Recommendation
from audit_app.reporting.selectors import daily_rollups
from benchmarks_app import matching


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
