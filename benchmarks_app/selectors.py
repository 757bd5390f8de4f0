"""Reads the gate needs from the audit app: which recommendations a gate may verify, and what
one recommendation's workload served (the terms `benchmarks_app.matching` checks runs against)."""

from __future__ import annotations

from django.db.models import QuerySet

from audit_app.models import Recommendation
from audit_app.reporting.selectors import daily_rollups
from benchmarks_app import matching


def gateable_recommendations() -> QuerySet[Recommendation]:
    """The recommendations a gate may verify: approved for a pilot, on dedicated hardware."""
    return Recommendation.objects.filter(
        status=matching.APPROVED, target_kind=matching.GATEABLE_KIND
    ).select_related("workload")


def recommendation_terms(recommendation: Recommendation) -> matching.RecommendationTerms:
    """The recommendation with the models its workload's traffic used in its period."""
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
        workload=recommendation.workload.name,
        period_start=recommendation.period_start,
        period_end=recommendation.period_end,
        workload_models=tuple(sorted(models)),
    )
