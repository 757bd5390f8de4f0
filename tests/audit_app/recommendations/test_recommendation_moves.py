"""`Recommendation.move_to`: every status x every target, against the table written out by hand
(a manager decides on a proposal; a gate verifies or fails an approved pilot; nothing else)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from audit_app.models import Recommendation, RecommendationEvent, RecommendationMoveRefused
from tests.benchmarks_app.gate_samples import STATUSES, recommendation

pytestmark = pytest.mark.django_db
ALLOWED = {
    ("proposed", "pilot_approved"),
    ("proposed", "rejected"),
    ("pilot_approved", "verified"),
    ("pilot_approved", "gate_failed"),
}


@pytest.mark.parametrize("target", STATUSES)
@pytest.mark.parametrize("current", STATUSES)
def test_every_move(current: str, target: str, manager_user: Any) -> None:
    rec = recommendation(status=current, workload_model=None)
    if (current, target) in ALLOWED:
        event = rec.move_to(target, user=manager_user, note="why")
        assert (event.from_status, event.to_status, event.user, event.note) == (
            current,
            target,
            manager_user,
            "why",
        )
        rec.refresh_from_db()
        assert rec.status == target
        return
    with pytest.raises(RecommendationMoveRefused):
        rec.move_to(target, user=manager_user, note="why")
    rec.refresh_from_db()
    assert rec.status == current
    assert not RecommendationEvent.objects.exists()


def test_the_refusal_says_which_status_may_move_there() -> None:
    rec = recommendation(status="verified", workload_model=None)
    with pytest.raises(RecommendationMoveRefused) as refused:
        rec.move_to(Recommendation.Status.REJECTED, user=None)
    assert str(refused.value) == (
        "This recommendation is verified by a gate: only a proposed recommendation can become "
        "rejected."
    )


def test_a_move_by_nobody_signed_in_records_no_user() -> None:
    rec = recommendation(status="pilot_approved", workload_model=None)
    assert rec.move_to("gate_failed", user=None).user is None


def test_a_manager_deciding_a_decided_recommendation_gets_409_with_that_sentence(
    client: Client, manager_user: Any
) -> None:
    rec = recommendation(status="pilot_approved", workload_model=None)
    client.force_login(manager_user)
    response = client.post(
        f"/api/v1/recommendations/{rec.pk}/decision/", {"decision": "reject", "note": "no"}
    )
    assert response.status_code == 409
    assert response.json()["detail"] == (
        "This recommendation is pilot approved: only a proposed recommendation can become rejected."
    )
