"""Deleting an upload removes what it alone created, and stops its ingest and any refresh.

Counts are exact: upload A names `shared` and `a-only`, upload B names `shared` and `b-only`.
"""

from __future__ import annotations

import io
from datetime import date
from decimal import Decimal
from typing import Any

import pytest

from audit_app.ingestion import ingest
from audit_app.ingestion.ingest import UploadDeleted, upload_ingest
from audit_app.ingestion.uploads import upload_create, upload_delete, workloads_prune
from audit_app.models import (
    Recommendation,
    Upload,
    Workload,
    WorkloadClass,
    WorkloadClassification,
    WorkloadOverride,
)
from audit_app.tasks import ingest_upload

pytestmark = pytest.mark.django_db

HEADER = "started_at,ended_at,workload,provider,model,input_tokens,output_tokens\n"


def _csv(*workloads: str, day: int = 2) -> bytes:
    rows = "".join(
        f"2026-11-{day:02d}T10:0{i}:00Z,2026-11-{day:02d}T10:0{i}:01Z,{w},openai,gpt-4o,10,1\n"
        for i, w in enumerate(workloads)
    )
    return (HEADER + rows).encode()


def _ingest(content: bytes, name: str) -> Upload:
    upload = upload_create(source=io.BytesIO(content), original_name=name, enqueue=False)
    return upload_ingest(upload_id=upload.pk)


def _names() -> list[str]:
    return sorted(Workload.objects.values_list("name", flat=True))


def test_deleting_a_keeps_the_shared_workload_and_removes_a_only() -> None:
    a = _ingest(_csv("shared", "a-only"), "a.csv")
    _ingest(_csv("shared", "b-only", day=3), "b.csv")
    assert _names() == ["a-only", "b-only", "shared"]
    upload_delete(upload=a)
    assert _names() == ["b-only", "shared"]
    assert Workload.objects.count() == 2


def test_a_workload_with_a_persons_decision_stays(engineer_user: Any) -> None:
    a = _ingest(_csv("overridden", "slo", "approved", "proposed", "plain"), "a.csv")
    workloads = {w.name: w for w in Workload.objects.all()}
    WorkloadOverride.objects.create(
        workload=workloads["overridden"], workload_class="async", reason="r", user=engineer_user
    )
    Workload.objects.filter(name="slo").update(latency_slo_ms=500)
    common = {
        "target": "t",
        "current_monthly_usd": Decimal(10),
        "projected_monthly_usd": Decimal(5),
        "savings_monthly_usd": Decimal(5),
        "confidence": "c",
        "period_start": date(2026, 11, 1),
        "period_end": date(2026, 11, 2),
        "target_kind": Recommendation.TargetKind.BATCH_API,
    }
    Recommendation.objects.create(
        workload=workloads["approved"], status=Recommendation.Status.PILOT_APPROVED, **common
    )
    Recommendation.objects.create(workload=workloads["proposed"], **common)
    WorkloadClassification.objects.create(
        workload=workloads["plain"], workload_class=WorkloadClass.ASYNC, confidence=0.9
    )
    upload_delete(upload=a)
    assert _names() == ["approved", "overridden", "slo"]
    assert Recommendation.objects.count() == 1  # the approved one; the proposal went
    assert WorkloadClassification.objects.count() == 0


def test_pruning_a_hundred_thousand_orphans_is_one_statement_each(
    django_assert_max_num_queries: Any,
) -> None:
    Workload.objects.bulk_create(Workload(name=f"w{i}") for i in range(100_000))
    with django_assert_max_num_queries(6):
        assert workloads_prune() == 100_000
    assert Workload.objects.count() == 0


def test_a_billing_upload_deletion_leaves_workloads_alone() -> None:
    Workload.objects.create(name="made-by-hand")
    _ingest(_csv("kept"), "a.csv")
    bill = Upload.objects.create(
        kind=Upload.Kind.BILLING, original_name="bill.csv", sha256="b" * 64, file="x.csv"
    )
    upload_delete(upload=bill)
    assert _names() == ["kept", "made-by-hand"]


def test_an_upload_deleted_before_its_task_runs_ends_the_task() -> None:
    upload = upload_create(source=io.BytesIO(_csv("x")), original_name="a.csv", enqueue=False)
    upload_delete(upload=upload)
    assert ingest_upload.delay(upload.pk).get() == "deleted"
    assert Workload.objects.count() == 0


def test_an_upload_deleted_while_it_is_read_stops_at_its_next_progress_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    upload = upload_create(source=io.BytesIO(_csv("x")), original_name="a.csv", enqueue=False)
    monkeypatch.setattr(ingest, "PROGRESS_INTERVAL_SECONDS", 0)
    consume = ingest._consume

    def delete_then_consume(*args: Any, **kwargs: Any) -> Any:
        Upload.objects.filter(pk=upload.pk).delete()  # as upload_delete does, from elsewhere
        return consume(*args, **kwargs)

    monkeypatch.setattr(ingest, "_consume", delete_then_consume)
    with pytest.raises(UploadDeleted):
        upload_ingest(upload_id=upload.pk)
    assert Workload.objects.count() == 0
