"""A gate run for a recommendation: the service, the API's refusal body, the page and the CLI.

Every role x status x match/mismatch through the API is in
tests/audit_app/access/test_authorization_matrix.py (GATE_LINK)."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from audit_app.models import AuditEvent, Recommendation
from benchmarks_app.models import BenchmarkRun, Gate
from benchmarks_app.selectors import gateable_recommendations, recommendation_terms
from benchmarks_app.services import GateLinkRefused, gate_evaluate
from tests.benchmarks_app.gate_samples import (
    BASELINE,
    CANDIDATE,
    OTHER_MODEL,
    RUNS_MODEL,
    events,
    import_runs,
    recommendation,
    workload_traffic,
)

pytestmark = pytest.mark.django_db
APPROVED = "pilot_approved"
PROPOSED_SENTENCE = (
    "Recommendation {rec} is proposed, not pilot_approved: a gate verifies only a "
    "recommendation a manager approved for a pilot. Gate {gate} was recorded without the link."
)


def test_terms_read_the_workloads_models_in_the_period_only() -> None:
    workload_traffic(workload="evals", model="openai/gpt-4o-mini", day="2026-10-31")
    workload_traffic(workload="evals", model="gpt-4o", day="2026-11-30")
    workload_traffic(workload="other", model="claude-sonnet-4", day="2026-11-15")
    rec = recommendation(workload_model=RUNS_MODEL)
    assert recommendation_terms(rec).workload_models == ("gpt-4o", RUNS_MODEL)


def test_a_pass_verifies_an_approved_matching_recommendation(engineer_user: Any) -> None:
    baseline, candidate = import_runs()
    rec = recommendation()
    gate = gate_evaluate(
        baseline=baseline, candidate=candidate, recommendation=rec, user=engineer_user
    )
    rec.refresh_from_db()
    assert (gate.verdict, gate.recommendation_id, rec.status) == ("pass", rec.pk, "verified")
    event = rec.events.get()
    assert (event.from_status, event.to_status, event.user) == (
        "pilot_approved",
        "verified",
        engineer_user,
    )
    assert event.note == f"Gate {gate.pk}: {gate.result['summary']}"
    audit = AuditEvent.objects.get(action="gate_created")
    assert audit.summary == (
        f"gate {gate.pk}: pass (run {baseline.pk} vs {candidate.pk}); for recommendation {rec.pk}"
    )
    assert (audit.details["recommendation"], audit.details["link_refused"]) == (rec.pk, [])


def test_a_fail_fails_it() -> None:
    # The runs swapped: the "candidate" is the slower one.
    slower, faster = import_runs()
    rec = recommendation()
    gate = gate_evaluate(baseline=faster, candidate=slower, recommendation=rec)
    rec.refresh_from_db()
    assert (gate.verdict, gate.recommendation_id, rec.status) == ("fail", rec.pk, "gate_failed")
    assert events(rec) == [("pilot_approved", "gate_failed")]


def test_an_incomplete_gate_is_linked_and_leaves_it_approved() -> None:
    baseline, candidate = import_runs(candidate_meta={"gpu_utilization_pct": ""})
    rec = recommendation()
    gate = gate_evaluate(baseline=baseline, candidate=candidate, recommendation=rec)
    rec.refresh_from_db()
    assert (gate.verdict, gate.recommendation_id, rec.status) == ("incomplete", rec.pk, APPROVED)
    assert events(rec) == []
    # A better gate may still verify it.
    complete = import_runs()[1]
    gate_evaluate(baseline=baseline, candidate=complete, recommendation=rec)
    rec.refresh_from_db()
    assert rec.status == "verified"


@pytest.mark.parametrize("status", ["proposed", "rejected", "verified", "gate_failed"])
def test_a_recommendation_not_approved_is_refused_and_the_gate_kept(status: str) -> None:
    baseline, candidate = import_runs()
    rec = recommendation(status=status)
    with pytest.raises(GateLinkRefused) as refused:
        gate_evaluate(baseline=baseline, candidate=candidate, recommendation=rec)
    gate = Gate.objects.get()
    assert refused.value.gate == gate and refused.value.conflict
    assert (gate.verdict, gate.recommendation_id) == ("pass", None)
    assert str(refused.value) == (
        f"Recommendation {rec.pk} is {status}, not pilot_approved: a gate verifies only a "
        f"recommendation a manager approved for a pilot. Gate {gate.pk} was recorded without "
        "the link."
    )
    rec.refresh_from_db()
    assert rec.status == status and events(rec) == []
    audit = AuditEvent.objects.get(action="gate_created")
    assert audit.summary.endswith(f"; link to recommendation {rec.pk} refused (status)")


def test_runs_of_another_model_are_refused_and_the_gate_kept() -> None:
    baseline, candidate = import_runs()
    rec = recommendation(workload_model=OTHER_MODEL)
    with pytest.raises(GateLinkRefused) as refused:
        gate_evaluate(baseline=baseline, candidate=candidate, recommendation=rec)
    assert not refused.value.conflict
    assert [m.field for m in refused.value.mismatches] == ["candidate.model"]
    assert Gate.objects.get().recommendation_id is None
    rec.refresh_from_db()
    assert rec.status == APPROVED


def test_a_candidate_on_other_hardware_is_refused() -> None:
    baseline, candidate = import_runs(candidate_meta={"gpu_type": "A100"})
    rec = recommendation()
    with pytest.raises(GateLinkRefused) as refused:
        gate_evaluate(baseline=baseline, candidate=candidate, recommendation=rec)
    assert [(m.field, m.expected, m.actual) for m in refused.value.mismatches] == [
        ("candidate.gpu_type", ("NVIDIA H100 80GB",), "A100")
    ]


@pytest.mark.parametrize("kind", ["batch_api", "cheaper_provider"])
def test_api_targets_are_refused(kind: str) -> None:
    baseline, candidate = import_runs()
    rec = recommendation(target_kind=kind, target="together Llama 3.1 70B")
    with pytest.raises(GateLinkRefused) as refused:
        gate_evaluate(baseline=baseline, candidate=candidate, recommendation=rec)
    assert [m.field for m in refused.value.mismatches] == ["target_kind"]
    assert not refused.value.conflict


def test_the_second_of_two_gates_sees_the_first_ones_status() -> None:
    baseline, candidate = import_runs()
    rec = recommendation()
    gate_evaluate(baseline=baseline, candidate=candidate, recommendation=rec)
    # The caller's object still says pilot_approved; the service reads the row it locks.
    assert rec.status == APPROVED
    with pytest.raises(GateLinkRefused) as refused:
        gate_evaluate(baseline=baseline, candidate=candidate, recommendation=rec)
    assert refused.value.mismatches[0].actual == "verified"
    assert events(rec) == [("pilot_approved", "verified")]


def test_the_api_body_names_the_recommendation_the_mismatch_and_the_gate(
    client: Client, engineer_user: Any
) -> None:
    baseline, candidate = import_runs()
    rec = recommendation(workload_model=OTHER_MODEL)
    client.force_login(engineer_user)
    response = client.post(
        "/api/v1/gates/",
        {"baseline": baseline.pk, "candidate": candidate.pk, "recommendation": rec.pk},
        content_type="application/json",
    )
    gate = Gate.objects.get()
    sentence = (
        f"The candidate run's model '{RUNS_MODEL}' is not the workload's: workload 'evals' used "
        f"'{OTHER_MODEL}' from 2026-11-01 to 2026-11-30."
    )
    assert response.status_code == 400
    assert response.json() == {
        "detail": f"{sentence} Gate {gate.pk} was recorded without the link.",
        "errors": {"recommendation": [sentence]},
        "recommendation": {
            "id": rec.pk,
            "status": "pilot_approved",
            "target_kind": "dedicated_hardware",
            "target": "p5.48xlarge (NVIDIA H100 80GB), scale to zero",
        },
        "mismatches": [
            {"field": "candidate.model", "expected": [OTHER_MODEL], "actual": RUNS_MODEL}
        ],
        "gate": gate.pk,
    }
    assert client.get(f"/api/v1/gates/{gate.pk}/").json()["recommendation"] is None


def test_the_api_conflict_body(client: Client, engineer_user: Any) -> None:
    baseline, candidate = import_runs()
    rec = recommendation(status="rejected")
    client.force_login(engineer_user)
    response = client.post(
        "/api/v1/gates/",
        {"baseline": baseline.pk, "candidate": candidate.pk, "recommendation": rec.pk},
        content_type="application/json",
    )
    body = response.json()
    assert response.status_code == 409
    assert body["recommendation"]["status"] == "rejected"
    assert body["mismatches"] == [
        {"field": "status", "expected": ["pilot_approved"], "actual": "rejected"}
    ]
    assert body["gate"] == Gate.objects.get().pk


def test_the_api_names_an_unknown_recommendation(client: Client, engineer_user: Any) -> None:
    baseline, candidate = import_runs()
    client.force_login(engineer_user)
    response = client.post(
        "/api/v1/gates/",
        {"baseline": baseline.pk, "candidate": candidate.pk, "recommendation": 999},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json()["errors"] == {"recommendation": ["no recommendation with id 999"]}
    assert not Gate.objects.exists()


def test_the_api_labels_a_workloads_traffic(client: Client, engineer_user: Any) -> None:
    baseline, candidate = import_runs()
    workload_traffic(workload="evals", model=RUNS_MODEL, day="2026-11-10")
    client.force_login(engineer_user)
    response = client.post(
        "/api/v1/gates/",
        {"baseline": baseline.pk, "candidate": candidate.pk, "traffic_workload": "evals"},
        content_type="application/json",
    )
    assert response.status_code == 201
    assert response.json()["inputs"]["traffic"] == "workload evals, 2026-11-10 to 2026-11-10"


# --- page -----------------------------------------------------------------------------------


def _gate_form(baseline: BenchmarkRun, candidate: BenchmarkRun, rec: Recommendation) -> dict:
    return {
        "baseline": baseline.pk,
        "candidate": candidate.pk,
        "mode": "always_on",
        "cold_start_seconds": "0",
        "traffic_csv": "",
        "recommendation": rec.pk,
    }


def test_the_page_offers_only_gateable_recommendations(client: Client, engineer_user: Any) -> None:
    import_runs()
    approved = recommendation()
    for status in ("proposed", "rejected", "verified", "gate_failed"):
        recommendation(status=status, workload_model=None, target=f"p5.48xlarge (H100) {status}")
    batch = recommendation(
        target_kind="batch_api", target="openai batch API, gpt-4o", workload_model=None
    )
    assert list(gateable_recommendations()) == [approved]
    client.force_login(engineer_user)
    form = client.get("/benchmarks/").context["gate_form"]
    offered = [value for value, _ in form.fields["recommendation"].widget.choices]
    assert offered == ["", approved.pk]
    assert batch.pk not in offered


def test_the_page_verifies_a_matching_recommendation(client: Client, engineer_user: Any) -> None:
    baseline, candidate = import_runs()
    rec = recommendation()
    client.force_login(engineer_user)
    response = client.post("/benchmarks/", _gate_form(baseline, candidate, rec))
    gate = Gate.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/benchmarks/gates/{gate.pk}/"
    rec.refresh_from_db()
    assert (gate.recommendation_id, rec.status) == (rec.pk, "verified")


def test_the_page_shows_a_stale_recommendations_refusal_on_the_form(
    client: Client, engineer_user: Any
) -> None:
    baseline, candidate = import_runs()
    rec = recommendation()
    client.force_login(engineer_user)
    client.get("/benchmarks/")  # offered while approved ...
    Recommendation.objects.filter(pk=rec.pk).update(status="proposed")  # ... then not
    response = client.post("/benchmarks/", _gate_form(baseline, candidate, rec))
    gate = Gate.objects.get()
    sentence = PROPOSED_SENTENCE.format(rec=rec.pk, gate=gate.pk)
    assert response.status_code == 409
    assert response.context["gate_form"].errors == {"recommendation": [sentence]}
    assert sentence.replace("'", "&#x27;") in response.content.decode()
    assert gate.recommendation_id is None


def test_the_page_refuses_runs_that_do_not_match(client: Client, engineer_user: Any) -> None:
    baseline, candidate = import_runs(candidate_meta={"gpu_type": "L4"})
    rec = recommendation()
    client.force_login(engineer_user)
    response = client.post("/benchmarks/", _gate_form(baseline, candidate, rec))
    assert response.status_code == 400
    assert response.context["gate_form"].errors["recommendation"] == [
        "The candidate run's gpu_type 'L4' is not the recommendation's hardware "
        f"'NVIDIA H100 80GB'. Gate {Gate.objects.get().pk} was recorded without the link."
    ]
    rec.refresh_from_db()
    assert rec.status == APPROVED


@pytest.mark.parametrize("role", ["finops_user", "manager_user", "no_role_user"])
def test_only_engineers_gate_from_the_page(client: Client, request: Any, role: str) -> None:
    baseline, candidate = import_runs()
    rec = recommendation()
    client.force_login(request.getfixturevalue(role))
    response = client.post("/benchmarks/", _gate_form(baseline, candidate, rec))
    assert response.status_code == 403
    rec.refresh_from_db()
    assert (Gate.objects.count(), rec.status) == (0, APPROVED)


# --- command line ---------------------------------------------------------------------------


def _gate_command(*args: str) -> tuple[int, dict[str, Any]]:
    out = StringIO()
    code = 0
    try:
        call_command(
            "gate",
            "--baseline",
            str(BASELINE),
            "--candidate",
            str(CANDIDATE),
            "--meta-baseline",
            "gpu_utilization_pct=80",
            "--meta-candidate",
            "gpu_utilization_pct=80",
            "--json",
            *args,
            stdout=out,
        )
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, json.loads(out.getvalue())


def test_the_command_verifies_a_matching_recommendation() -> None:
    rec = recommendation()
    code, body = _gate_command("--recommendation", str(rec.pk))
    rec.refresh_from_db()
    assert (code, body["verdict"], rec.status) == (0, "pass", "verified")
    assert Gate.objects.get(pk=body["gate_id"]).recommendation_id == rec.pk


def test_the_command_refuses_with_the_same_sentence_after_printing_the_gate() -> None:
    rec = recommendation(status="proposed")
    out = StringIO()
    with pytest.raises(CommandError) as refused:
        call_command(
            "gate",
            "--baseline",
            str(BASELINE),
            "--candidate",
            str(CANDIDATE),
            "--json",
            "--recommendation",
            str(rec.pk),
            stdout=out,
        )
    gate = Gate.objects.get()
    assert str(refused.value) == PROPOSED_SENTENCE.format(rec=rec.pk, gate=gate.pk)
    assert json.loads(out.getvalue())["gate_id"] == gate.pk
    rec.refresh_from_db()
    assert (gate.recommendation_id, rec.status) == (None, "proposed")


def test_the_command_names_an_unknown_recommendation_before_importing() -> None:
    with pytest.raises(CommandError, match="^no recommendation with id 999$"):
        _gate_command("--recommendation", "999")
    assert not BenchmarkRun.objects.exists() and not Gate.objects.exists()
