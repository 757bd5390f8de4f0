"""Upload pages: the form, detail with rejects, raw download, delete, and the ingest CLI."""

from __future__ import annotations

import json
from decimal import Decimal
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client, override_settings

from audit_app.models import HourlyRollup, Upload
from tests.audit_app.ingestion.ingest_samples import (
    EXPECTED_INPUT_TOKENS,
    EXPECTED_OUTPUT_TOKENS,
    EXPECTED_TOTAL_COST,
    SAMPLE_CSV,
)
from tests.support.paths import FIXTURES_DIR

pytestmark = pytest.mark.django_db

FIXTURES = FIXTURES_DIR
FOCUS_CSV = FIXTURES / "billing" / "focus-1.3_providers.csv"
CUR_CSV = FIXTURES / "billing" / "cur2_bedrock-gpu.csv"
LITELLM_CSV = FIXTURES / "litellm" / "spend_logs.csv"


def _form(content: bytes = SAMPLE_CSV) -> dict[str, Any]:
    return {
        "file": SimpleUploadedFile("requests.csv", content),
        "kind": "token_log",
        "format": "auto",
    }


def test_upload_form_ingests_and_shows_the_result(
    client: Client, engineer_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client.force_login(engineer_user)
    assert client.get("/uploads/new/").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/uploads/new/", _form())
    upload = Upload.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/uploads/{upload.pk}/"
    html = client.get(f"/uploads/{upload.pk}/").content.decode()
    assert "succeeded" in html
    assert "Rejected rows" in html
    assert '<td class="num">6</td>' in html and '<td class="num">7</td>' in html
    raw = client.get(f"/uploads/{upload.pk}/raw/")
    assert b"".join(raw.streaming_content) == SAMPLE_CSV


def test_the_form_detects_the_kind_by_default(
    client: Client, finops_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client.force_login(finops_user)
    html = client.get("/uploads/new/").content.decode()
    assert '<option value="auto" selected>Detect from the file' in html
    form = {"file": SimpleUploadedFile("cur.csv", CUR_CSV.read_bytes()), "format": "auto"}
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/uploads/new/", {**form, "kind": "auto"})
    upload = Upload.objects.get()
    assert response.status_code == 302
    assert (upload.kind, upload.format, upload.status) == ("billing", "aws-cur", "succeeded")
    assert "Billing export" in client.get(f"/uploads/{upload.pk}/").content.decode()


def test_the_form_refuses_a_wrong_kind_naming_the_right_one(
    client: Client, engineer_user: Any
) -> None:
    client.force_login(engineer_user)
    form = {"file": SimpleUploadedFile("focus.csv", FOCUS_CSV.read_bytes()), "format": "auto"}
    response = client.post("/uploads/new/", {**form, "kind": "token_log"})
    assert response.status_code == 400
    assert response.context["form"].errors == {
        "kind": [
            "This looks like a FOCUS billing export, not a token log: upload it as a Billing "
            "export (kind=billing)."
        ]
    }
    assert "This looks like a FOCUS billing export" in response.content.decode()
    assert Upload.objects.count() == 0


def test_duplicate_through_the_form_links_the_first(client: Client, engineer_user: Any) -> None:
    client.force_login(engineer_user)
    client.post("/uploads/new/", _form())
    first = Upload.objects.get()
    response = client.post("/uploads/new/", _form())
    assert response.status_code == 409
    assert f'href="/uploads/{first.pk}/"' in response.content.decode()
    assert Upload.objects.count() == 1


def test_same_bytes_after_a_failed_upload_through_the_form(
    client: Client, engineer_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client.force_login(engineer_user)
    client.post("/uploads/new/", _form())
    failed = Upload.objects.get()
    Upload.objects.filter(pk=failed.pk).update(status=Upload.Status.FAILED, error="worker lost")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/uploads/new/", _form())
    again = Upload.objects.exclude(pk=failed.pk).get()
    assert response.status_code == 302
    assert response["Location"] == f"/uploads/{again.pk}/"
    assert (again.status, again.rows_accepted) == (Upload.Status.SUCCEEDED, 4)


@override_settings(UPLOAD_MAX_BYTES=10)
def test_too_large_through_the_form(client: Client, engineer_user: Any) -> None:
    client.force_login(engineer_user)
    response = client.post("/uploads/new/", _form())
    assert response.status_code == 413
    assert "larger than the upload limit of 10 bytes" in response.content.decode()


def test_manager_cannot_open_the_upload_form(client: Client, manager_user: Any) -> None:
    client.force_login(manager_user)
    assert client.get("/uploads/new/").status_code == 403
    assert client.post("/uploads/new/", _form()).status_code == 403
    assert "New upload" not in client.get("/uploads/").content.decode()


def test_delete_through_the_page(client: Client, finops_user: Any) -> None:
    client.force_login(finops_user)
    client.post("/uploads/new/", _form())
    upload = Upload.objects.get()
    response = client.post(f"/uploads/{upload.pk}/delete/")
    assert response.status_code == 302
    assert response["Location"] == "/uploads/"
    assert Upload.objects.count() == 0


def test_delete_asks_first_showing_the_workloads_a_token_log_touched(
    client: Client, engineer_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client.force_login(engineer_user)
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/uploads/new/", _form())
    upload = Upload.objects.get()
    detail = client.get(f"/uploads/{upload.pk}/").content.decode()
    # The detail page links to the confirmation; it no longer deletes in one click.
    assert f'<a class="button danger" href="/uploads/{upload.pk}/delete/">' in detail
    assert f'action="/uploads/{upload.pk}/delete/"' not in detail

    response = client.get(f"/uploads/{upload.pk}/delete/")
    assert response.status_code == 200
    html = response.content.decode()
    assert f"<h1>Delete upload {upload.pk}?</h1>" in html
    assert '<tr><th scope="row">File</th><td>requests.csv</td></tr>' in html
    assert "Token / request log (generic)" in html
    assert '<th scope="row">Rows accepted</th><td class="num">4</td>' in html
    # SAMPLE_CSV's accepted rows (tests/audit_app/ingestion/ingest_samples.py): chat on lines 2 and
    # 3,
    # evals on line 4, tool on line 5 (tool's lines 6 and 7 are rejected).
    contribution = response.context["contribution"]
    assert [(w.name, w.requests) for w in contribution.workloads] == [
        ("chat", 2),
        ("evals", 1),
        ("tool", 1),
    ]
    assert all(w.workload_id is not None for w in contribution.workloads)
    assert '<td class="num">2</td>' in html
    assert f'<a href="/uploads/{upload.pk}/">Cancel</a>' in html
    assert f'<form method="post" action="/uploads/{upload.pk}/delete/"' in html
    assert "<script>" not in html and "onclick" not in html  # the CSP forbids inline code
    assert "Billed total" not in html
    # Looking deletes nothing.
    assert Upload.objects.filter(pk=upload.pk).exists()
    assert HourlyRollup.objects.filter(upload=upload).count() == 3

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/uploads/{upload.pk}/delete/")
    assert response.status_code == 302
    assert not Upload.objects.filter(pk=upload.pk).exists()
    assert HourlyRollup.objects.count() == 0
    assert client.get(f"/uploads/{upload.pk}/delete/").status_code == 404


def test_delete_confirmation_of_a_billing_export_shows_its_billed_total(
    client: Client, finops_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client.force_login(finops_user)
    form = {"file": SimpleUploadedFile("focus.csv", FOCUS_CSV.read_bytes()), "format": "auto"}
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/uploads/new/", {**form, "kind": "billing"})
    upload = Upload.objects.get()
    response = client.get(f"/uploads/{upload.pk}/delete/")
    html = response.content.decode()
    assert "Billing export (focus)" in html
    assert '<th scope="row">Rows accepted</th><td class="num">9</td>' in html
    # tests/audit_app/ingestion/billing_exports/test_focus.py: 3.60 + 4.50 + 500 - 25 - 1.10 + 1000
    # + 98.32 + 8
    # = 1,588.32 USD; the Azure row is 1.20 EUR.
    assert '<th scope="row">Billed total</th><td class="num">1.20 EUR · $1,588.32</td>' in html
    assert "Workloads it touched" not in html
    assert Upload.objects.filter(pk=upload.pk).exists()


def test_delete_confirmation_of_a_failed_token_log(client: Client, engineer_user: Any) -> None:
    client.force_login(engineer_user)
    client.post("/uploads/new/", _form())
    upload = Upload.objects.get()
    Upload.objects.filter(pk=upload.pk).update(status=Upload.Status.FAILED, error="broken")
    html = client.get(f"/uploads/{upload.pk}/delete/").content.decode()
    assert "None: this upload added no requests." in html
    assert '<span class="status status-failed">failed</span>' in html


def test_roles_that_may_not_delete_get_403_on_the_confirmation_too(
    client: Client, engineer_user: Any, manager_user: Any, no_role_user: Any
) -> None:
    client.force_login(engineer_user)
    client.post("/uploads/new/", _form())
    upload = Upload.objects.get()
    for user in (manager_user, no_role_user):
        client.force_login(user)
        assert client.get(f"/uploads/{upload.pk}/delete/").status_code == 403
        assert client.post(f"/uploads/{upload.pk}/delete/").status_code == 403
    # Managers see the upload but not the way to delete it.
    client.force_login(manager_user)
    assert "/delete/" not in client.get(f"/uploads/{upload.pk}/").content.decode()
    assert Upload.objects.filter(pk=upload.pk).exists()
    client.logout()
    response = client.get(f"/uploads/{upload.pk}/delete/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_ingest_cli_json(tmp_path: Path) -> None:
    path = tmp_path / "requests.csv"
    path.write_bytes(SAMPLE_CSV)
    out = StringIO()
    call_command("ingest", str(path), "--json", stdout=out)
    report = json.loads(out.getvalue())
    upload = Upload.objects.get()
    assert report == {
        "upload_id": upload.pk,
        "format": "generic",
        "rows_read": 6,
        "rows_accepted": 4,
        "rows_rejected": 2,
        "requests": 4,
        "input_tokens": EXPECTED_INPUT_TOKENS,
        "output_tokens": EXPECTED_OUTPUT_TOKENS,
        "cost_usd": str(EXPECTED_TOTAL_COST.quantize(EXPECTED_TOTAL_COST.__class__("0.000001"))),
        "unpriced_models": [
            {
                "provider": "openai",
                "model": "my-finetune",
                "requests": 1,
                "input_tokens": 100,
                "output_tokens": 10,
            }
        ],
        "rejects": [
            {"line": 6, "reason": report["rejects"][0]["reason"]},
            {"line": 7, "reason": report["rejects"][1]["reason"]},
        ],
    }
    assert "-3" in report["rejects"][0]["reason"]


def test_ingest_cli_fails_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(b"\x00\x00binary")
    with pytest.raises(CommandError) as caught:
        call_command("ingest", str(path), "--json")
    assert "looks binary" in str(caught.value)
    assert "\n" not in str(caught.value)
    with pytest.raises(CommandError, match="no such file"):
        call_command("ingest", str(tmp_path / "missing.csv"))


def test_ingest_cli_refuses_a_duplicate(tmp_path: Path) -> None:
    path = tmp_path / "requests.csv"
    path.write_bytes(SAMPLE_CSV)
    call_command("ingest", str(path), stdout=StringIO())
    with pytest.raises(CommandError, match="already uploaded as upload"):
        call_command("ingest", str(path))


def test_ingest_cli_takes_the_same_bytes_again_after_a_failure(tmp_path: Path) -> None:
    path = tmp_path / "requests.csv"
    path.write_bytes(SAMPLE_CSV)
    call_command("ingest", str(path), stdout=StringIO())
    failed = Upload.objects.get()
    Upload.objects.filter(pk=failed.pk).update(status=Upload.Status.FAILED, error="worker lost")
    out = StringIO()
    call_command("ingest", str(path), "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["upload_id"] != failed.pk
    assert (report["rows_read"], report["rows_accepted"], report["rows_rejected"]) == (6, 4, 2)


def test_ingest_cli_detects_a_billing_export() -> None:
    out = StringIO()
    call_command("ingest", str(FOCUS_CSV), "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert Upload.objects.get(pk=report["upload_id"]).kind == Upload.Kind.BILLING
    assert (report["format"], report["rows_accepted"], report["rows_rejected"]) == ("focus", 9, 0)
    # tests/audit_app/ingestion/billing_exports/test_focus.py: 3.60 + 4.50 + 500 - 25 - 1.10 + 1000
    # + 98.32 + 8
    assert {c: Decimal(v) for c, v in report["billed_cost"].items()} == {
        "USD": Decimal("1588.32"),
        "EUR": Decimal("1.20"),
    }


def test_ingest_cli_detects_a_token_log() -> None:
    out = StringIO()
    call_command("ingest", str(LITELLM_CSV), "--kind", "auto", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert Upload.objects.get(pk=report["upload_id"]).kind == Upload.Kind.TOKEN_LOG
    assert (report["format"], report["rows_accepted"], report["rows_rejected"]) == (
        "litellm",
        6,
        7,
    )


def test_ingest_cli_refuses_a_wrong_kind_naming_the_right_one() -> None:
    with pytest.raises(CommandError) as caught:
        call_command("ingest", str(LITELLM_CSV), "--kind", "billing")
    assert str(caught.value) == (
        f"{LITELLM_CSV}: This looks like a LiteLLM spend log, not a billing export: upload it "
        "as a Token / request log (kind=token_log)."
    )
    assert Upload.objects.count() == 0
