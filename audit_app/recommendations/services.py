"""Recommendations: price each asynchronous workload's last 30 days on cheaper targets.

Targets (`docs/methods.md`, "Recommendations"): the batch tier of the same API model; cheaper
providers of the same open model; dedicated throughput hardware. The option math is
`audit_app.recommendations.options` (pure); `targets` reads what it prices against (price cards,
the catalog's API listings and instances, the throughput assumptions), `candidates` each
workload's and pool's options over the window; this module ranks them and keeps the results.

What a workload costs now comes from the one read model (`reporting.spend`: API spend plus its
share of GPU pool bills), scaled from the window to a month. Options saving less than
`RECOMMENDATION_MIN_SAVINGS_USD` a month are not proposed; of the rest, the best leads
(rank 1) and up to two alternatives are kept under it (ranks 2, 3), never counted again in the
savings total. Throughput figures are assumptions until a benchmark gate confirms them, and
every recommendation says so.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit_app.access.audit import audit_record
from audit_app.access.permissions import Actor, Role, has_role
from audit_app.costs.billing import pool_reports
from audit_app.costs.rollups import daily_rollups
from audit_app.lib.errors import DomainError, ErrorKind
from audit_app.lib.results_cache import current_version
from audit_app.models import (
    AuditEvent,
    Recommendation,
    RecommendationEvent,
    RecommendationMoveRefused,
    Workload,
)
from audit_app.recommendations.candidates import stored_plan_fields, window_options
from audit_app.recommendations.targets import min_savings, option_targets
from audit_app.workloads.services import (
    CHECKPOINT_EVERY,
    analysis_window,
)

MAX_TARGETS = 3
CENT = Decimal("0.01")


class DecisionRefused(DomainError):
    """A decision the service will not record; a missing note is the usual bad input."""

    field = "note"


def _money(amount: Decimal) -> Decimal:
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def _source_uploads(workload: Workload, *, start: date, end: date, gpu: bool) -> list[int]:
    """The succeeded uploads a workload's figures were computed from: its token logs in the
    window, and the bills of the pools it ran on."""
    ids = set(
        daily_rollups(start=start, end=end, workload=workload.name)
        .values_list("upload_id", flat=True)
        .distinct()
        .order_by()
    )
    if gpu:
        for report in pool_reports(start=start, end=end):
            if workload.name in report.by_workload:
                ids.update(report.upload_ids)
    return sorted(ids)


def recommendation_upsert(
    *, lookup: dict[str, Any], values: dict[str, Any], now: datetime, version: int
) -> Recommendation:
    """The recommendation ``lookup`` finds, created with ``values`` (and its first history row)
    or, while still proposed, updated to them when they changed; a decided one keeps its
    figures."""
    recommendation, created = Recommendation.objects.get_or_create(
        **lookup, defaults={**values, "computed_at": now, "data_version": version}
    )
    if created:
        RecommendationEvent.objects.create(
            recommendation=recommendation,
            to_status=recommendation.status,
            note="Proposed by the recommender.",
        )
    elif recommendation.status == Recommendation.Status.PROPOSED and any(
        getattr(recommendation, name) != value for name, value in values.items()
    ):
        for name, value in values.items():
            setattr(recommendation, name, value)
        recommendation.computed_at = now
        recommendation.data_version = version
        recommendation.save()
    elif "plan" not in recommendation.details and "plan" in values.get("details", {}):
        # A decided recommendation keeps its figures; the plan still needs what it changes.
        recommendation.details = {**recommendation.details, "plan": values["details"]["plan"]}
        recommendation.save(update_fields=["details", "updated_at"])
    return recommendation


MAX_NEEDING_EVIDENCE = 2


@transaction.atomic
def recommendations_refresh(
    *,
    today: date | None = None,
    data_version: int | None = None,
    checkpoint: Callable[[], None] | None = None,
) -> list[Recommendation]:
    """Re-price every workload's and serving pool's options; keeps decided recommendations and
    their history.

    Each subject keeps its `MAX_TARGETS` best options that may count in the plan and its
    `MAX_NEEDING_EVIDENCE` best that wait for a benchmark (or are held back by a risk), each
    saving at least the minimum. Writes only what changed, so running it twice on the same data
    changes nothing. ``checkpoint`` is called every CHECKPOINT_EVERY subjects.
    """
    window = analysis_window(today)
    if window is None:
        Recommendation.objects.filter(status=Recommendation.Status.PROPOSED).delete()
        return []
    start, end = window
    version = data_version if data_version is not None else current_version().version
    floor = min_savings()
    read = window_options(start=start, end=end, targets=option_targets())
    by_subject: dict[tuple[str, int], list[Any]] = defaultdict(list)
    for candidate in read.candidates:
        if candidate.savings_monthly < floor:
            continue
        workload = candidate.lookup.get("workload")
        subject = ("w", workload.pk) if workload is not None else ("p", candidate.lookup["pool"].pk)
        by_subject[subject].append(candidate)
    now = timezone.now()
    kept: list[Recommendation] = []
    for index, items in enumerate(by_subject.values()):
        if checkpoint is not None and index % CHECKPOINT_EVERY == 0:
            checkpoint()
        items.sort(key=lambda c: (-c.savings_monthly, c.lookup["target"]))
        counting = [c for c in items if not (c.option.needs_benchmark or c.option.blocked)]
        waiting = [c for c in items if c.option.needs_benchmark or c.option.blocked]
        chosen = counting[:MAX_TARGETS] + waiting[:MAX_NEEDING_EVIDENCE]
        for rank, candidate in enumerate(chosen, start=1):
            workload = candidate.lookup.get("workload")
            sources = list(candidate.source_upload_ids)
            if workload is not None:
                sources = _source_uploads(
                    workload,
                    start=start,
                    end=end,
                    gpu=bool(candidate.option.removes)
                    or any(u.startswith("pool:") for u in candidate.option.units),
                )
            values = {
                "current_monthly_usd": _money(candidate.now_monthly),
                "projected_monthly_usd": _money(candidate.option.after_monthly),
                "savings_monthly_usd": _money(candidate.now_monthly)
                - _money(candidate.option.after_monthly),
                "assumptions": list(candidate.assumptions),
                "confidence": candidate.confidence[:300],
                "period_start": start,
                "period_end": end,
                "rank": rank,
                "source_upload_ids": sources,
                "details": {**candidate.details, "plan": stored_plan_fields(candidate)},
            }
            kept.append(
                recommendation_upsert(
                    lookup=candidate.lookup, values=values, now=now, version=version
                )
            )
    # Undecided proposals that no longer hold (the workload changed class, prices moved) go.
    Recommendation.objects.filter(status=Recommendation.Status.PROPOSED).exclude(
        pk__in=[r.pk for r in kept]
    ).delete()
    return kept


PAST_TENSE = {"approve": "approved a pilot of", "reject": "rejected"}
DECISIONS = {
    "approve": Recommendation.Status.PILOT_APPROVED,
    "reject": Recommendation.Status.REJECTED,
}


@transaction.atomic
def recommendation_decide(
    *, recommendation: Recommendation, user: Actor, decision: str, note: str = ""
) -> Recommendation:
    """A manager approves a pilot or rejects (with a note). Others are refused (forbidden)."""
    if not has_role(user, [Role.MANAGER]):
        raise DecisionRefused(
            "Only managers may approve or reject recommendations.", kind=ErrorKind.FORBIDDEN
        )
    if decision not in DECISIONS:
        raise DecisionRefused(
            f"decision must be approve or reject, not {decision!r}.", field="decision"
        )
    if decision == "reject" and not note.strip():
        raise DecisionRefused("A rejection needs a note saying why.")
    locked = Recommendation.objects.select_for_update().get(pk=recommendation.pk)
    try:
        locked.move_to(DECISIONS[decision], user=user, note=note)
    except RecommendationMoveRefused as exc:
        raise DecisionRefused(str(exc), kind=exc.kind) from None
    audit_record(
        actor=user,
        action=AuditEvent.Action.RECOMMENDATION_DECISION,
        obj=locked,
        summary=f"{PAST_TENSE[decision]} recommendation {locked.pk} ({locked.target})",
        details={"decision": decision, "note": note},
    )
    return locked
