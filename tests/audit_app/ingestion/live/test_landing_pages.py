"""A stream upload on the Uploads page, its own page, the API and `manage.py land_live`: shown as
a stream with its source, counts, rejects, last received time and micro-batch totals, records
waiting to land in the page's header; no file to download; deleted like any upload."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from audit_app.ingestion.live.landing import live_land
from audit_app.ingestion.reading import RowReject
from audit_app.models import HourlyRollup, LiveBatch, Upload
from tests.audit_app.ingestion.live.live_samples import BATCH_A, BATCH_B, receive

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 12, 1, 10, 0, 5, tzinfo=UTC)
BAD = RowReject(line=3, field="gen_ai.usage.output_tokens", value="x", reason="not a number")


@pytest.fixture
def stream() -> Upload:
    """Batch A and batch B landed (5 records, 2 sent again; 1 rejected at receipt, 2 spans
    ignored); one more request of the same day (t/4 again) and one of LiteLLM wait."""
    receive(BATCH_A, at=T0, rejects=[BAD], ignored=2)
    receive(BATCH_B, at=T0 + timedelta(seconds=10))
    live_land(now=T0 + timedelta(seconds=11))
    receive(("t/4",), at=T0 + timedelta(seconds=20))
    receive(("t/1", "t/2"), at=T0 + timedelta(seconds=21), source="litellm")
    return Upload.objects.get(stream_source="otlp")


def test_the_uploads_page_shows_a_stream_and_what_waits(
    client: Client, finops_user: Any, stream: Upload
) -> None:
    client.force_login(finops_user)
    html = client.get("/uploads/").content.decode()
    assert "otlp stream 2026-12-01" in html
    assert '<span class="status status-stream" data-field="stream">stream</span>' in html
    assert "last received 2026-12-01 10:00:15" in html
    assert "<td>OpenTelemetry (OTLP/HTTP)</td>" in html
    row = html[html.index("otlp stream 2026-12-01") :]
    assert '<td class="num">5</td>' in row[:800] and '<td class="num">1</td>' in row[:800]
    header = html[html.index('data-live="pending"') :].split("</p>")[0]
    assert "<strong>LiteLLM callback</strong> 2 records in 1 request" in header
    assert "<strong>OpenTelemetry (OTLP/HTTP)</strong> 1 record in 1 request" in header
    assert "the oldest received 2026-12-01 10:00:25 UTC" in header


def test_the_stream_page_shows_its_micro_batches(
    client: Client, finops_user: Any, stream: Upload
) -> None:
    client.force_login(finops_user)
    html = client.get(f"/uploads/{stream.pk}/").content.decode()
    facts = {
        name: html.split(f'data-field="{name}">')[1].split("<")[0]
        for name in ("received", "landed", "duplicates", "pending", "rejected", "ignored")
    }
    # Received: 3 + 4 landed + 1 waiting; the waiting t/4 is not counted yet.
    assert facts == {
        "received": "8",
        "landed": "5",
        "duplicates": "2",
        "pending": "1 in 1 request",
        "rejected": "1",
        "ignored": "2",
    }
    assert 'Last received <strong data-field="last-received">2026-12-01 10:00:15</strong>' in html
    assert "Download the raw file" not in html
    assert "gen_ai.usage.output_tokens" in html  # its first rejects, as a file's
    assert client.get(f"/uploads/{stream.pk}/raw/").status_code == 404
    delete_page = client.get(f"/uploads/{stream.pk}/delete/").content.decode()
    assert "a record sent again afterwards counts again" in delete_page


def test_the_api_shows_the_stream_fields(client: Client, finops_user: Any, stream: Upload) -> None:
    client.force_login(finops_user)
    listed = client.get("/api/v1/uploads/").json()["results"]
    [row] = [u for u in listed if u["id"] == stream.pk]
    assert row["stream_source"] == "otlp"
    assert row["stream_day"] == "2026-12-01"
    assert row["last_received_at"] == "2026-12-01T10:00:15Z"
    assert row["raw_file_url"] is None
    assert (row["rows_accepted"], row["rows_rejected"], row["requests"]) == (5, 1, 5)
    assert row["logged_cost_usd"] == "0.000777"
    detail = client.get(f"/api/v1/uploads/{stream.pk}/").json()
    assert detail["stream"] == {
        "batches": 3,
        "received": 8,
        "landed": 5,
        "duplicates": 2,
        "pending": 1,
        "pending_batches": 1,
        "rejected": 1,
        "ignored": 2,
        "set_aside": 0,
        "set_aside_batches": [],
    }
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    fields = schema["components"]["schemas"]["UploadOutput"]["properties"]
    assert {"stream_source", "stream_day", "last_received_at"} <= set(fields)
    assert fields["raw_file_url"].get("nullable") is True


def test_a_file_upload_keeps_its_file_fields(client: Client, engineer_user: Any) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.audit_app.ingestion.ingest_samples import SAMPLE_CSV

    client.force_login(engineer_user)
    body = client.post(
        "/api/v1/uploads/", {"file": SimpleUploadedFile("requests.csv", SAMPLE_CSV)}
    ).json()
    detail = client.get(f"/api/v1/uploads/{body['id']}/").json()
    assert detail["raw_file_url"].endswith(f"/uploads/{body['id']}/raw/")
    assert (detail["stream_source"], detail["stream_day"], detail["stream"]) == ("", None, None)


def test_deleting_a_stream_through_the_api(
    client: Client, finops_user: Any, stream: Upload, engineer_user: Any
) -> None:
    client.force_login(engineer_user)
    assert client.delete(f"/api/v1/uploads/{stream.pk}/").status_code == 403  # not theirs
    client.force_login(finops_user)
    assert client.delete(f"/api/v1/uploads/{stream.pk}/").status_code == 204
    assert not HourlyRollup.objects.filter(upload_id=stream.pk).exists()
    assert not LiveBatch.objects.filter(upload_id=stream.pk).exists()
    assert LiveBatch.objects.filter(landed_at__isnull=True).count() == 2  # still waiting


def test_land_live_lands_and_prints_what_landed(stream: Upload) -> None:
    out = StringIO()
    call_command("land_live", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert (report["batches"], report["records"], report["landed"], report["duplicates"]) == (
        2,
        3,
        2,
        1,
    )
    assert report["pending"] == 0
    by_source = {s["source"]: s for s in report["streams"]}
    assert by_source["otlp"]["upload_id"] == stream.pk
    assert by_source["otlp"]["duplicates"] == 1  # t/4 had landed already
    assert by_source["litellm"]["landed"] == 2
    assert by_source["litellm"]["input_tokens"] == 3000
    assert by_source["litellm"]["logged_cost_usd"] == "0.00063"
    out = StringIO()
    call_command("land_live", stdout=out)
    assert out.getvalue().startswith("Nothing was waiting to land.")


def test_the_admin_shows_a_stream_upload(client: Client, admin_user: Any, stream: Upload) -> None:
    client.force_login(admin_user)
    assert client.get("/admin/audit_app/upload/").status_code == 200
    assert client.get(f"/admin/audit_app/upload/{stream.pk}/change/").status_code == 200


def test_a_litellm_callback_posted_twice_lands_once(client: Client, engineer_user: Any) -> None:
    """What LiteLLM's generic API callback posts, sent again by a retrying proxy, is counted
    once in the day's LiteLLM stream upload (the real payload: 9 input and 12 output tokens,
    $0.0000375 stated)."""
    from audit_app.access.tokens import api_token_issue
    from tests.support.litellm_payloads import real_payload

    auth = {"HTTP_AUTHORIZATION": f"Bearer {api_token_issue(user=engineer_user).key}"}
    body = json.dumps([real_payload()])
    for _ in range(2):
        response = client.post(
            "/api/v1/ingest/litellm/", data=body, content_type="application/json", **auth
        )
        assert response.status_code == 200, response.content
    landed = live_land()
    assert (landed.batches, landed.landed, landed.duplicates) == (2, 1, 1)
    upload = Upload.objects.get(stream_source="litellm")
    assert (upload.format, upload.requests) == ("litellm-callback", 1)
    assert (upload.input_tokens, upload.output_tokens) == (9, 12)
    assert str(upload.logged_cost_usd.normalize()) == "0.0000375"
    assert upload.original_name == f"litellm stream {upload.stream_day:%Y-%m-%d}"
