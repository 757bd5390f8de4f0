"""The Sources page for each role, its form and "Poll now" for finops, the uploads page naming
the source of a pulled export, and the admin (the secret key typed, never shown)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from audit_app.models import BillingSource, Upload
from tests.audit_app.ingestion.sources.source_samples import FOCUS_SAMPLE, make_source, write

pytestmark = pytest.mark.django_db
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.fixture
def root(tmp_path: Path, settings: Any) -> Path:
    settings.BILLING_SOURCE_ROOTS = [tmp_path]
    return tmp_path


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _failing_source() -> BillingSource:
    source = make_source(
        name="cur",
        kind="s3",
        location="acme-billing",
        prefix="cur/",
        access_key_id="AKIA",
        secret_access_key=SECRET,
        last_polled_at=datetime(2026, 12, 1, 9, 0, tzinfo=UTC),
        last_error='Billing source "cur" could not list s3://acme-billing/cur/: access refused.',
        consecutive_failures=2,
        seen={"cur/manifest.json": {"etag": "x", "refused": "This is not a billing export."}},
    )
    Upload.objects.create(
        kind="billing", original_name="cur-00001.csv", billing_source=source, source_object="x"
    )
    return source


@pytest.mark.parametrize(
    ("role", "writes"),
    [
        ("finops_user", True),
        ("engineer_user", False),
        ("manager_user", False),
        ("admin_user", True),
    ],
)
def test_every_role_sees_the_sources_finops_adds_and_polls(
    role: str, writes: bool, request: Any
) -> None:
    source = _failing_source()
    html = _client(request.getfixturevalue(role)).get("/sources/").content.decode()
    assert 'data-testid="source-row"' in html
    assert "<code>s3://acme-billing/cur/</code>" in html
    assert "2026-12-01 09:00" in html and "next 2026-12-01 09:04" in html  # 2 failures: 4 min
    error = re.search(r'data-testid="source-error">([^<]*)<', html)
    assert error and error.group(1) == (
        "Billing source &quot;cur&quot; could not list s3://acme-billing/cur/: access refused."
    )
    assert "(2 failed polls in a row)" in html
    assert "Not ingested: <code>cur/manifest.json</code>: This is not a billing export." in html
    upload = Upload.objects.get()
    assert f'<a href="/uploads/{upload.pk}/">cur-00001.csv</a>' in html
    assert SECRET not in html
    assert ('data-testid="source-form"' in html) is writes
    assert (f'action="/sources/{source.pk}/poll/"' in html) is writes
    assert '<a href="/sources/" aria-current="page">Sources</a>' in html


def test_finops_adds_a_source_from_the_form(root: Path, finops_user: Any) -> None:
    response = _client(finops_user).post(
        "/sources/",
        {
            "name": "mounted",
            "kind": "folder",
            "location": str(root),
            "pattern": "**/*.csv",
            "format": "focus",
            "poll_every_minutes": "30",
            "enabled": "on",
        },
    )
    assert (response.status_code, response["Location"]) == (302, "/sources/")
    source = BillingSource.objects.get()
    assert (source.name, source.prefix, source.format, source.poll_every_minutes) == (
        "mounted",
        "**/*.csv",
        "focus",
        30,
    )
    assert source.enabled and source.created_by == finops_user


def test_a_refused_form_shows_the_reason_beside_the_field(root: Path, finops_user: Any) -> None:
    response = _client(finops_user).post(
        "/sources/",
        {
            "name": "escape",
            "kind": "folder",
            "location": str(root),
            "pattern": "../*.csv",
            "format": "auto",
            "poll_every_minutes": "60",
        },
    )
    assert response.status_code == 400
    html = response.content.decode()
    pattern_field = html.index('id="id_pattern"')
    error = html.index("prefix &#x27;../*.csv&#x27; must name files inside the folder")
    assert error > pattern_field
    assert not BillingSource.objects.exists()


def test_others_may_not_add_or_poll(engineer_user: Any, manager_user: Any) -> None:
    source = make_source(kind="http", location="https://billing.example.com/f.csv")
    for user in (engineer_user, manager_user):
        client = _client(user)
        added = client.post("/sources/", {"name": "x", "kind": "http", "location": "https://a.b/"})
        assert added.status_code == 403
        assert client.post(f"/sources/{source.pk}/poll/").status_code == 403
    assert BillingSource.objects.count() == 1 and source.last_polled_at is None


def test_poll_now_polls_and_the_uploads_page_names_the_source(
    root: Path, finops_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    write(root / "focus.csv", FOCUS_SAMPLE.read_bytes())
    source = make_source(name="mounted", location=str(root))
    client = _client(finops_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/sources/{source.pk}/poll/", follow=True)
    html = response.content.decode()
    assert "Poll of mounted queued" in html
    upload = Upload.objects.get()
    assert upload.status == "succeeded"

    uploads = client.get("/uploads/").content.decode()
    cell = re.search(r'data-testid="upload-source">([^<]*)<', uploads)
    assert cell and cell.group(1) == "source mounted"
    detail = client.get(f"/uploads/{upload.pk}/").content.decode()
    assert "billing source mounted</a> from <code>focus.csv</code>" in detail


def test_the_admin_types_the_secret_and_never_shows_it(admin_user: Any) -> None:
    client = _client(admin_user)
    source = _failing_source()
    page = client.get(f"/admin/audit_app/billingsource/{source.pk}/change/").content.decode()
    assert 'type="password" name="secret_access_key"' in page
    assert SECRET not in page

    form = {
        "name": "cur",
        "kind": "s3",
        "location": "acme-billing",
        "prefix": "cur/",
        "endpoint_url": "",
        "region": "",
        "access_key_id": "AKIA",
        "secret_access_key": "",  # left empty: the stored key is kept
        "format": "auto",
        "poll_every_minutes": "15",
        "enabled": "on",
    }
    saved = client.post(f"/admin/audit_app/billingsource/{source.pk}/change/", form)
    assert saved.status_code == 302
    source.refresh_from_db()
    assert (source.poll_every_minutes, source.secret_access_key) == (15, SECRET)

    refused = client.post(
        f"/admin/audit_app/billingsource/{source.pk}/change/",
        {**form, "location": "s3://acme-billing"},
    )
    assert refused.status_code == 200
    assert "location is the bucket&#x27;s name alone" in refused.content.decode()

    added = client.post(
        "/admin/audit_app/billingsource/add/",
        {**form, "name": "url", "kind": "http", "location": "https://x.example/f.csv"}
        | {"prefix": "", "access_key_id": ""},
    )
    assert added.status_code == 302
    assert BillingSource.objects.get(name="url").created_by == admin_user
