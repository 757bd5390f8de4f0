"""Deleting a benchmark upload whose run a gate compares: refused (409 on the API, the page
says why and offers no button), and nothing is deleted. Written for PostgreSQL as well as
SQLite (run with DATABASE_URL set).
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.files.storage import default_storage
from django.test import Client

from audit_app.ingestion import uploads as uploads_service
from audit_app.ingestion.selectors import GateUse, upload_gate_uses
from audit_app.ingestion.uploads import UploadInUse, upload_delete
from audit_app.models import AuditEvent, Upload
from benchmarks_app.models import BenchmarkRun, Gate
from benchmarks_app.services import benchmark_run_import, gate_evaluate
from tests.support.paths import FIXTURES_DIR

pytestmark = pytest.mark.django_db

FIXTURES = FIXTURES_DIR / "benchmarks"
BASELINE = (FIXTURES / "vllm_baseline.json").read_bytes()
CANDIDATE = (FIXTURES / "vllm_candidate.json").read_bytes()


def _run(data: bytes, name: str, user: Any, **meta: str) -> BenchmarkRun:
    return benchmark_run_import(source=io.BytesIO(data), filename=name, meta=meta, user=user)


@pytest.fixture
def gated(engineer_user: Any) -> dict[str, Any]:
    """The engineer's two runs of the baseline file (one upload) and one of the candidate;
    gate A compares baseline run 1 with the candidate, gate B the candidate with run 2. The
    engineer may delete these uploads (their own), so only the gates stand in the way."""
    first = _run(BASELINE, "baseline.json", engineer_user, gpu_utilization_pct="80")
    second = _run(BASELINE, "baseline.json", engineer_user, gpu_utilization_pct="70")
    candidate = _run(CANDIDATE, "candidate.json", engineer_user, gpu_utilization_pct="85")
    assert first.upload_id == second.upload_id
    gate_a = gate_evaluate(baseline=first, candidate=candidate)
    gate_b = gate_evaluate(baseline=candidate, candidate=second)
    return {
        "upload": first.upload,
        "runs": (first.pk, second.pk, candidate.pk),
        "gates": (gate_a.pk, gate_b.pk),
        "candidate_upload": candidate.upload,
    }


def _message(upload_id: int, compared: str) -> str:
    return (
        f"Upload {upload_id} cannot be deleted: {compared}. A gate is the permanent record of a "
        "comparison and cannot be deleted, so the runs it compares and their files are kept."
    )


def _assert_nothing_deleted(gated: dict[str, Any]) -> None:
    upload = Upload.objects.get(pk=gated["upload"].pk)
    assert default_storage.exists(upload.file.name)
    with upload.file.open("rb") as stored:
        assert stored.read() == BASELINE
    assert sorted(BenchmarkRun.objects.values_list("pk", flat=True)) == sorted(gated["runs"])
    assert sorted(Gate.objects.values_list("pk", flat=True)) == sorted(gated["gates"])
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.UPLOAD_DELETED).exists()


def test_gate_uses_of_an_upload(gated: dict[str, Any]) -> None:
    first, second, candidate = gated["runs"]
    gate_a, gate_b = gated["gates"]
    assert upload_gate_uses(upload=gated["upload"]) == (
        GateUse(gate_id=gate_a, run_id=first, role="baseline"),
        GateUse(gate_id=gate_b, run_id=second, role="candidate"),
    )
    assert upload_gate_uses(upload=gated["candidate_upload"]) == (
        GateUse(gate_id=gate_a, run_id=candidate, role="candidate"),
        GateUse(gate_id=gate_b, run_id=candidate, role="baseline"),
    )


def test_api_answers_409_naming_the_gates(
    client: Client,
    engineer_user: Any,
    gated: dict[str, Any],
    django_capture_on_commit_callbacks: Any,
) -> None:
    client.force_login(engineer_user)
    upload_id = gated["upload"].pk
    first, second, _ = gated["runs"]
    gate_a, gate_b = gated["gates"]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.delete(f"/api/v1/uploads/{upload_id}/")
    assert response.status_code == 409
    assert response.json() == {
        "detail": _message(
            upload_id,
            f"run {first} is the baseline of gate {gate_a}; "
            f"run {second} is the candidate of gate {gate_b}",
        ),
        "errors": {},
        "gates": [gate_a, gate_b],
        "runs": [first, second],
    }
    _assert_nothing_deleted(gated)


def test_page_says_why_and_offers_no_delete_button(
    client: Client, engineer_user: Any, gated: dict[str, Any]
) -> None:
    client.force_login(engineer_user)
    upload_id = gated["upload"].pk
    first, second, _ = gated["runs"]
    gate_a, gate_b = gated["gates"]
    message = _message(
        upload_id,
        f"run {first} is the baseline of gate {gate_a}; "
        f"run {second} is the candidate of gate {gate_b}",
    )
    response = client.get(f"/uploads/{upload_id}/delete/")
    assert response.status_code == 200
    html = response.content.decode()
    assert f"<h1>Upload {upload_id} cannot be deleted</h1>" in html
    assert f'<p class="error" role="alert" data-field="conflict">{message}</p>' in html
    assert f'action="/uploads/{upload_id}/delete/"' not in html
    assert f'<a href="/uploads/{upload_id}/">Back to upload {upload_id}</a>' in html
    _assert_nothing_deleted(gated)


def test_upload_page_says_why_instead_of_offering_delete(
    client: Client, engineer_user: Any, gated: dict[str, Any]
) -> None:
    client.force_login(engineer_user)
    upload_id = gated["upload"].pk
    first, second, _ = gated["runs"]
    gate_a, gate_b = gated["gates"]
    message = _message(
        upload_id,
        f"run {first} is the baseline of gate {gate_a}; "
        f"run {second} is the candidate of gate {gate_b}",
    )
    html = client.get(f"/uploads/{upload_id}/").content.decode()
    assert f'<p class="note" data-field="delete-conflict">{message}</p>' in html
    assert f'href="/uploads/{upload_id}/delete/"' not in html


def test_page_post_answers_409_and_deletes_nothing(
    client: Client,
    engineer_user: Any,
    gated: dict[str, Any],
    django_capture_on_commit_callbacks: Any,
) -> None:
    client.force_login(engineer_user)
    upload_id = gated["upload"].pk
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/uploads/{upload_id}/delete/")
    assert response.status_code == 409
    html = response.content.decode()
    assert f"<h1>Upload {upload_id} cannot be deleted</h1>" in html
    assert 'data-field="conflict"' in html
    assert f'action="/uploads/{upload_id}/delete/"' not in html
    _assert_nothing_deleted(gated)


def test_a_benchmark_upload_no_gate_compares_is_deleted_with_its_run(
    client: Client, engineer_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    run = _run(BASELINE, "baseline.json", engineer_user)
    name = run.upload.file.name
    client.force_login(engineer_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.delete(f"/api/v1/uploads/{run.upload_id}/")
    assert response.status_code == 204
    assert not Upload.objects.exists()
    assert not BenchmarkRun.objects.exists()
    assert not default_storage.exists(name)


def test_a_gate_created_after_the_check_is_caught_too(
    gated: dict[str, Any], monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    """The database's PROTECT is the safety net: a gate that appears between the check and the
    delete still ends in UploadInUse, with the audit record rolled back."""
    real = upload_gate_uses
    calls: list[int] = []

    def first_sees_no_gate(*, upload: Upload) -> tuple[GateUse, ...]:
        calls.append(upload.pk)
        return () if len(calls) == 1 else real(upload=upload)

    monkeypatch.setattr(uploads_service, "upload_gate_uses", first_sees_no_gate)
    first, second, _ = gated["runs"]
    gate_a, gate_b = gated["gates"]
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(UploadInUse) as refused:
        upload_delete(upload=Upload.objects.get(pk=gated["upload"].pk))
    assert len(calls) == 2
    assert refused.value.gate_ids == [gate_a, gate_b]
    assert refused.value.run_ids == [first, second]
    _assert_nothing_deleted(gated)


def test_the_second_file_of_a_gated_sweep_is_in_use_too() -> None:
    # A run of two files: the second is not the run's `upload`, but its point is gated.
    sweep = json.loads(BASELINE)
    second = json.dumps({**sweep, "max_concurrency": 128}).encode()
    run = benchmark_run_import(
        files=[(io.BytesIO(BASELINE), "c64.json"), (io.BytesIO(second), "c128.json")]
    )
    gate = gate_evaluate(baseline=run, candidate=run)
    second_upload = run.points.get(index=1).upload
    assert second_upload.pk != run.upload_id
    assert upload_gate_uses(upload=second_upload) == (
        GateUse(gate_id=gate.pk, run_id=run.pk, role="baseline"),
        GateUse(gate_id=gate.pk, run_id=run.pk, role="candidate"),
    )
