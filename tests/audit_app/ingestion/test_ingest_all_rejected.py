"""An upload whose every row is rejected fails, naming its first rejects (line, field, value),
whatever its kind and however it was sent: the service, the upload page, the API and
`manage.py ingest` (whose CommandError exits 1: tests/test_manage.py). A file with no row at
all (a header alone) still lands, empty; one good row among bad ones lands that row.

The billing file is the FOCUS 1.2 specification's SaaS example, which writes its dates M/D/YY
(`4/1/25`), a spelling no importer reads: provenance in tests/fixtures/real/README.md.
"""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client

from audit_app.costs.bills import bills_summary
from audit_app.ingestion.ingest import ParseResult, land_result, mark_running, upload_ingest
from audit_app.ingestion.reading import RowReject
from audit_app.ingestion.uploads import upload_create
from audit_app.models import BillingCharge, HourlyRollup, Upload
from tests.support.paths import FIXTURES_DIR

pytestmark = pytest.mark.django_db

FOCUS_12_MDYY = (
    FIXTURES_DIR / "real" / "billing" / ("focus-1.2-spec_simple-saas-agreements-c_mdyy-dates.csv")
)
# Two requests whose start times are not timestamps, and nothing else.
BAD_LOG = (
    b"started_at,ended_at,model,input_tokens,output_tokens\n"
    b"yesterday,2026-11-02T00:00:01Z,gpt-4o,10,5\n"
    b"13/45/2026,2026-11-02T00:00:02Z,gpt-4o,20,6\n"
)


def _charge_period_starts() -> list[str]:
    """The file's ChargePeriodStart values, read with the csv module alone."""
    rows = csv.DictReader(io.StringIO(FOCUS_12_MDYY.read_text()))
    return [row["ChargePeriodStart"] for row in rows]


def _ingest(content: bytes, name: str, kind: str = "auto") -> Upload:
    upload = upload_create(source=io.BytesIO(content), original_name=name, kind=kind, enqueue=False)
    return upload_ingest(upload_id=upload.pk)


# --- The service ---------------------------------------------------------------------------------


def test_the_focus_12_example_with_m_d_yy_dates_fails_naming_its_first_rejects() -> None:
    starts = _charge_period_starts()
    assert starts == ["4/1/25", "5/1/25", "6/1/25"]
    upload = _ingest(FOCUS_12_MDYY.read_bytes(), "saas.csv")

    assert (upload.kind, upload.format, upload.status) == ("billing", "focus", "failed")
    assert (upload.rows_read, upload.rows_accepted, upload.rows_rejected) == (3, 0, 3)
    assert upload.error.startswith(
        "No row was accepted (all 3 rows were rejected), so nothing landed. First rejects: "
        "line 2, field `ChargePeriodStart`, value '4/1/25': "
    )
    assert "; line 3, field `ChargePeriodStart`, value '5/1/25': " in upload.error
    assert "; line 4, field `ChargePeriodStart`, value '6/1/25': " in upload.error
    assert [(r["line"], r["field"], r["value"]) for r in upload.rejects] == [
        (2, "ChargePeriodStart", "4/1/25"),
        (3, "ChargePeriodStart", "5/1/25"),
        (4, "ChargePeriodStart", "6/1/25"),
    ]
    assert not BillingCharge.objects.exists()
    assert bills_summary().billed_cost == {}


def test_a_token_log_with_every_row_rejected_fails() -> None:
    upload = _ingest(BAD_LOG, "bad.csv", kind="token_log")
    assert (upload.status, upload.rows_read, upload.rows_accepted) == ("failed", 2, 0)
    assert upload.error.startswith(
        "No row was accepted (all 2 rows were rejected), so nothing landed. First rejects: "
        "line 2, field `started_at`, value 'yesterday': "
    )
    assert [r["line"] for r in upload.rejects] == [2, 3]
    assert not HourlyRollup.objects.exists()


def test_one_good_row_lands_and_a_header_alone_lands_empty() -> None:
    good = b"2026-11-02T00:00:00Z,2026-11-02T00:00:03Z,gpt-4o,7,3\n"
    mixed = _ingest(BAD_LOG + good, "mixed.csv", kind="token_log")
    assert (mixed.status, mixed.rows_accepted, mixed.rows_rejected, mixed.requests) == (
        "succeeded",
        1,
        2,
        1,
    )
    empty = _ingest(BAD_LOG.split(b"\n", 1)[0] + b"\n", "header.csv", kind="token_log")
    assert (empty.status, empty.rows_read, empty.error) == ("succeeded", 0, "")


def test_a_fanned_out_landing_follows_the_same_rule() -> None:
    # Parts merged by `fanout` land through `land_result`: two rows read, two rejected.
    upload = Upload.objects.create(kind=Upload.Kind.TOKEN_LOG, original_name="big.csv", sha256="b")
    assert mark_running(upload.pk)
    rejects = [
        RowReject(line=line, field="model", value="", reason="`model` is missing.")
        for line in (2, 3)
    ]
    result = ParseResult(format="litellm", rows_read=2, rows_rejected=2, rejects=rejects)
    landed = land_result(upload.pk, result)
    assert (landed.status, landed.rows_accepted) == ("failed", 0)
    assert "line 2, field `model`, value '': `model` is missing; line 3" in landed.error


# --- Page, API and command line ------------------------------------------------------------------


def test_the_page_shows_the_failure_and_its_rejects(
    client: Client, finops_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client.force_login(finops_user)
    form = {"file": SimpleUploadedFile("saas.csv", FOCUS_12_MDYY.read_bytes()), "kind": "auto"}
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/uploads/new/", {**form, "format": "auto"})
    upload = Upload.objects.get()
    assert response["Location"] == f"/uploads/{upload.pk}/"
    html = client.get(f"/uploads/{upload.pk}/").content.decode()
    assert "Failed" in html
    assert "No row was accepted (all 3 rows were rejected), so nothing landed." in html
    assert "3 rows rejected. No row was accepted, so nothing landed." in html
    assert "<code>4/1/25</code>" in html


def test_the_api_answers_failed_with_the_reasons(
    client: Client, engineer_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client.force_login(engineer_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/v1/uploads/", {"file": SimpleUploadedFile("b.csv", BAD_LOG)})
    assert response.status_code == 202
    detail = client.get(f"/api/v1/uploads/{response.json()['id']}/").json()
    assert (detail["status"], detail["rows_accepted"], detail["rows_rejected"]) == ("failed", 0, 2)
    assert detail["error"].startswith("No row was accepted (all 2 rows were rejected)")
    assert [(r["line"], r["field"], r["value"]) for r in detail["rejects"]] == [
        (2, "started_at", "yesterday"),
        (3, "started_at", "13/45/2026"),
    ]


def test_manage_py_ingest_stops_with_the_reasons(tmp_path: Any) -> None:
    path = tmp_path / "saas.csv"
    path.write_bytes(FOCUS_12_MDYY.read_bytes())
    with pytest.raises(CommandError) as caught:
        call_command("ingest", str(path), "--json")
    message = str(caught.value)
    upload = Upload.objects.get()
    assert message.startswith(f"{path}: No row was accepted (all 3 rows were rejected)")
    assert "line 2, field `ChargePeriodStart`, value '4/1/25'" in message
    assert message.endswith(f"(upload {upload.pk})")

    log = tmp_path / "bad.csv"
    log.write_bytes(BAD_LOG)
    with pytest.raises(CommandError, match="line 2, field `started_at`, value 'yesterday'"):
        call_command("ingest", str(log), "--kind", "token_log")
