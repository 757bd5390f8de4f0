"""Uploads through the API: roles, 202 and ingestion, errors, delete."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, override_settings

from audit_app.models import HourlyRollup, Upload
from tests.audit_app.ingestion.ingest_samples import EXPECTED_INPUT_TOKENS, SAMPLE_CSV
from tests.support.paths import FIXTURES_DIR

pytestmark = pytest.mark.django_db


FIXTURES = FIXTURES_DIR
FOCUS_CSV = (FIXTURES / "billing" / "focus-1.3_providers.csv").read_bytes()
LITELLM_JSON = (FIXTURES / "litellm" / "spend_logs.json").read_bytes()


def _post(
    client: Client, content: bytes = SAMPLE_CSV, name: str = "requests.csv", **extra: str
) -> Any:
    data = {"file": SimpleUploadedFile(name, content, content_type="text/csv"), **extra}
    return client.post("/api/v1/uploads/", data)


def test_engineer_uploads_and_the_task_ingests(
    client: Client, engineer_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client.force_login(engineer_user)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = _post(client)
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "queued"
    assert body["uploaded_by"] == "eli-engineer"
    assert len(callbacks) == 1  # the ingest task, enqueued after commit (eager in unit tests)

    detail = client.get(f"/api/v1/uploads/{body['id']}/").json()
    assert detail["status"] == "succeeded"
    assert detail["format"] == "generic"
    assert detail["input_tokens"] == EXPECTED_INPUT_TOKENS
    assert [r["line"] for r in detail["rejects"]] == [6, 7]
    assert detail["progress_percent"] == 100
    assert detail["raw_file_url"].endswith(f"/uploads/{body['id']}/raw/")
    listing = client.get("/api/v1/uploads/").json()
    assert listing["count"] == 1
    assert [u["id"] for u in listing["results"]] == [body["id"]]


def test_token_auth_upload(client: Client, finops_user: Any) -> None:
    from audit_app.access.tokens import api_token_issue

    key = api_token_issue(user=finops_user).key
    data = {"file": SimpleUploadedFile("requests.csv", SAMPLE_CSV)}
    response = client.post("/api/v1/uploads/", data, HTTP_AUTHORIZATION=f"Token {key}")
    assert response.status_code == 202


def test_manager_may_read_but_not_upload_or_delete(
    client: Client, manager_user: Any, engineer_user: Any
) -> None:
    client.force_login(engineer_user)
    upload_id = _post(client).json()["id"]
    client.force_login(manager_user)
    assert client.get("/api/v1/uploads/").status_code == 200
    assert client.get(f"/api/v1/uploads/{upload_id}/").status_code == 200
    refused = _post(client, SAMPLE_CSV + b"\n")
    assert refused.status_code == 403
    assert refused.json()["detail"] == "Your account has no role that may use this endpoint."
    assert client.delete(f"/api/v1/uploads/{upload_id}/").status_code == 403
    assert Upload.objects.count() == 1


def test_anonymous_gets_401(client: Client) -> None:
    assert _post(client).status_code == 401
    assert client.delete("/api/v1/uploads/1/").status_code == 401


def test_duplicate_is_a_400_naming_the_first(client: Client, engineer_user: Any) -> None:
    client.force_login(engineer_user)
    first = _post(client).json()["id"]
    response = _post(client)
    assert response.status_code == 400
    body = response.json()
    assert f"already uploaded as upload {first} " in body["errors"]["file"][0]
    assert body["detail"].startswith("file: The same file was already uploaded")


@pytest.mark.parametrize("status", ["queued", "running", "succeeded"])
def test_a_live_upload_still_refuses_its_bytes(
    client: Client, engineer_user: Any, status: str
) -> None:
    client.force_login(engineer_user)
    first = _post(client).json()["id"]
    Upload.objects.filter(pk=first).update(status=status)
    response = _post(client)
    assert response.status_code == 400
    assert f"already uploaded as upload {first} " in response.json()["errors"]["file"][0]
    assert Upload.objects.count() == 1


def test_same_bytes_after_a_failed_upload_are_a_new_upload(
    client: Client, engineer_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client.force_login(engineer_user)
    failed = _post(client).json()["id"]
    Upload.objects.filter(pk=failed).update(status="failed", error="worker lost")
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(client)
    assert response.status_code == 202
    body = response.json()
    assert body["id"] != failed
    detail = client.get(f"/api/v1/uploads/{body['id']}/").json()
    assert (detail["status"], detail["rows_accepted"]) == ("succeeded", 4)
    assert detail["input_tokens"] == EXPECTED_INPUT_TOKENS
    assert client.get(f"/api/v1/uploads/{failed}/").json()["status"] == "failed"


def test_without_a_kind_a_billing_export_is_filed_as_one(
    client: Client, finops_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client.force_login(finops_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(client, FOCUS_CSV, name="focus.csv")
    assert response.status_code == 202
    body = response.json()
    assert (body["kind"], body["requested_format"]) == ("billing", "auto")
    detail = client.get(f"/api/v1/uploads/{body['id']}/").json()
    assert (detail["status"], detail["format"], detail["rows_accepted"]) == (
        "succeeded",
        "focus",
        9,
    )
    # tests/audit_app/ingestion/billing_exports/test_focus.py: 3.60 + 4.50 + 500 - 25 - 1.10 + 1000
    # + 98.32 + 8
    billed = Upload.objects.get(pk=body["id"]).billing_totals["billed"]
    assert Decimal(billed["USD"]) == Decimal("1588.32")


def test_without_a_kind_a_token_log_is_filed_as_one(
    client: Client, engineer_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client.force_login(engineer_user)
    with django_capture_on_commit_callbacks(execute=True):
        body = _post(client, LITELLM_JSON, name="spend_logs.json", kind="auto").json()
    assert body["kind"] == "token_log"
    detail = client.get(f"/api/v1/uploads/{body['id']}/").json()
    # tests/audit_app/ingestion/token_logs/test_detect.py: 2 good records and 1 bad one
    assert (detail["status"], detail["format"], detail["rows_accepted"]) == (
        "succeeded",
        "litellm",
        2,
    )
    assert detail["rows_rejected"] == 1


@pytest.mark.parametrize(
    ("content", "kind", "message"),
    [
        (
            FOCUS_CSV,
            "token_log",
            "This looks like a FOCUS billing export, not a token log: upload it as a Billing "
            "export (kind=billing).",
        ),
        (
            LITELLM_JSON,
            "billing",
            "This looks like a LiteLLM spend log, not a billing export: upload it as a Token / "
            "request log (kind=token_log).",
        ),
    ],
)
def test_an_explicit_wrong_kind_is_a_400_naming_the_right_one(
    client: Client, engineer_user: Any, content: bytes, kind: str, message: str
) -> None:
    client.force_login(engineer_user)
    response = _post(client, content, kind=kind)
    assert response.status_code == 400
    assert response.json() == {"detail": f"kind: {message}", "errors": {"kind": [message]}}
    assert Upload.objects.count() == 0


def test_a_file_of_neither_kind_is_a_400(client: Client, engineer_user: Any) -> None:
    client.force_login(engineer_user)
    response = _post(client, b"hello,world\n1,2\n")
    assert response.status_code == 400
    assert response.json()["errors"]["file"][0].startswith(
        "The file is neither a token log nor a billing export this app can read"
    )


def test_benchmark_kind_points_at_the_benchmark_runs_endpoint(
    client: Client, engineer_user: Any
) -> None:
    client.force_login(engineer_user)
    response = _post(client, kind="benchmark")
    assert response.status_code == 400
    assert response.json()["errors"]["kind"] == [
        "'benchmark' is not an upload kind: use auto, token_log or billing (benchmark "
        "artifacts go to POST /api/v1/benchmark-runs/)."
    ]


def test_missing_file_and_bad_format(client: Client, engineer_user: Any) -> None:
    client.force_login(engineer_user)
    missing = client.post("/api/v1/uploads/", {"format": "auto"})
    assert missing.status_code == 400
    assert missing.json()["errors"] == {"file": ["No file was submitted."]}
    bad = _post(client, format="xls")
    assert bad.status_code == 400
    assert "Unknown format 'xls'" in bad.json()["errors"]["format"][0]


@override_settings(UPLOAD_MAX_BYTES=64)
def test_too_large_is_refused_while_streaming(client: Client, engineer_user: Any) -> None:
    client.force_login(engineer_user)
    response = _post(client)
    assert response.status_code == 400
    assert response.json()["errors"]["file"] == [
        "The file is larger than the upload limit of 64 bytes (UPLOAD_MAX_BYTES)."
    ]
    assert Upload.objects.count() == 0


def test_delete_removes_the_upload_and_its_rollups(
    client: Client, finops_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client.force_login(finops_user)
    with django_capture_on_commit_callbacks(execute=True):
        upload_id = _post(client).json()["id"]
    assert HourlyRollup.objects.filter(upload_id=upload_id).count() == 3
    with django_capture_on_commit_callbacks(execute=True):
        assert client.delete(f"/api/v1/uploads/{upload_id}/").status_code == 204
    assert HourlyRollup.objects.count() == 0
    assert client.get(f"/api/v1/uploads/{upload_id}/").status_code == 404
