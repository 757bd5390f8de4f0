"""The audit trail: `audit_record` itself, then the services that record uploads, deletions,
overrides, decisions and gates through it; admins see it."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.test import Client

from audit_app.access.audit import audit_record
from audit_app.ingestion.uploads import upload_create, upload_delete
from audit_app.models import AuditEvent, Recommendation, Workload
from tests.audit_app.ingestion.ingest_samples import SAMPLE_CSV
from tests.support.paths import FIXTURES_DIR

pytestmark = pytest.mark.django_db
BENCH = FIXTURES_DIR / "benchmarks"


def test_record_names_the_user_the_object_and_keeps_the_details(engineer_user: Any) -> None:
    workload = Workload.objects.create(name="evals")

    event = audit_record(
        actor=engineer_user,
        action=AuditEvent.Action.WORKLOAD_OVERRIDE,
        obj=workload,
        summary="evals set to batch",
        details={"class": "batch"},
    )

    stored = AuditEvent.objects.get()
    assert stored.pk == event.pk
    assert (stored.actor, stored.actor_name) == (engineer_user, "eli-engineer")
    assert (stored.action, stored.object_type, stored.object_id) == (
        "workload_override",
        "Workload",
        str(workload.pk),
    )
    assert (stored.summary, stored.details) == ("evals set to batch", {"class": "batch"})


@pytest.mark.parametrize("actor", [None, AnonymousUser()])
def test_record_without_a_user_is_the_command_line(actor: Any) -> None:
    workload = Workload.objects.create(name="evals")

    audit_record(actor=actor, action=AuditEvent.Action.WORKLOAD_OVERRIDE, obj=workload, summary="")

    stored = AuditEvent.objects.get()
    assert (stored.actor, stored.actor_name, stored.details) == (None, "command line", {})


def test_record_cuts_a_long_summary_to_500_characters() -> None:
    workload = Workload.objects.create(name="evals")

    audit_record(
        actor=None, action=AuditEvent.Action.WORKLOAD_OVERRIDE, obj=workload, summary="x" * 600
    )

    assert AuditEvent.objects.get().summary == "x" * 500


def test_each_kind_of_change_is_recorded(
    client: Client, engineer_user: Any, manager_user: Any, admin_user: Any
) -> None:
    upload = upload_create(
        source=io.BytesIO(SAMPLE_CSV), original_name="s.csv", user=engineer_user, enqueue=False
    )
    workload = Workload.objects.create(name="evals")
    client.force_login(engineer_user)
    client.patch(
        f"/api/v1/workloads/{workload.pk}/",
        data=json.dumps({"workload_class": "async", "reason": "nightly"}),
        content_type="application/json",
    )
    recommendation = Recommendation.objects.create(
        workload=workload,
        target_kind="batch_api",
        target="batch",
        current_monthly_usd=2,
        projected_monthly_usd=1,
        savings_monthly_usd=1,
        confidence="high",
        period_start="2026-11-01",
        period_end="2026-11-02",
    )
    client.force_login(manager_user)
    client.post(
        f"/api/v1/recommendations/{recommendation.pk}/decision/",
        {"decision": "reject", "note": "not now"},
    )
    upload_delete(upload=upload, user=admin_user)

    events = list(AuditEvent.objects.order_by("id"))
    assert [(e.action, e.actor_name) for e in events] == [
        ("upload_created", "eli-engineer"),
        ("workload_override", "eli-engineer"),
        ("recommendation_decision", "mia-manager"),
        ("upload_deleted", "ada-admin"),
    ]
    assert events[1].details == {"workload_class": "async", "reason": "nightly"}
    assert events[2].summary.startswith("rejected recommendation")


def test_gates_are_recorded(engineer_user: Any) -> None:
    from django.core.management import call_command

    with pytest.raises(SystemExit):
        call_command(
            "gate",
            "--baseline",
            str(BENCH / "vllm_baseline.json"),
            "--candidate",
            str(BENCH / "vllm_candidate.json"),
            stdout=io.StringIO(),
        )
    gate_event = AuditEvent.objects.get(action="gate_created")
    assert gate_event.actor_name == "command line"
    assert gate_event.summary.startswith("gate ") and "incomplete" in gate_event.summary


def test_only_admins_see_the_trail(client: Client, finops_user: Any, admin_user: Any) -> None:
    upload_create(source=io.BytesIO(SAMPLE_CSV), original_name="s.csv", enqueue=False)
    client.force_login(finops_user)
    assert client.get("/audit/").status_code == 403
    assert client.get("/api/v1/audit-events/").status_code == 403
    client.force_login(admin_user)
    page = client.get("/audit/?action=upload_created")
    assert page.status_code == 200 and "uploaded s.csv" in page.content.decode()
    body = client.get("/api/v1/audit-events/").json()
    assert body["count"] == 1
    assert [e["action"] for e in body["results"]] == ["upload_created"]
    assert body["results"][0]["actor_name"] == "command line"
