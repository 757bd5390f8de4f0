"""Billing sources API: create, list, read, change, delete and poll by role; refusals naming
the field; the secret key written, never answered; the schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from audit_app.models import BillingSource, Upload
from tests.audit_app.ingestion.sources.source_samples import FOCUS_SAMPLE, make_source, write

pytestmark = pytest.mark.django_db
S3 = {
    "name": "cur",
    "kind": "s3",
    "location": "acme-billing",
    "prefix": "cur/",
    "endpoint_url": "https://s3.eu.example.net",
    "region": "eu-west-3",
    "access_key_id": "AKIAEXAMPLE",
    "secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "format": "aws-cur",
    "poll_every_minutes": 30,
}


@pytest.fixture
def root(tmp_path: Path, settings: Any) -> Path:
    settings.BILLING_SOURCE_ROOTS = [tmp_path]
    return tmp_path


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _post(client: Client, body: Any) -> Any:
    return client.post("/api/v1/sources/", body, content_type="application/json")


def test_finops_creates_an_s3_source_and_its_secret_is_never_answered(finops_user: Any) -> None:
    response = _post(_client(finops_user), S3)
    assert response.status_code == 201
    body = response.json()
    source = BillingSource.objects.get()
    assert source.secret_access_key == S3["secret_access_key"]
    assert "secret_access_key" not in body
    assert S3["secret_access_key"] not in response.content.decode()
    assert body == {
        "id": source.pk,
        "url": f"http://testserver/api/v1/sources/{source.pk}/",
        "poll_url": f"http://testserver/api/v1/sources/{source.pk}/poll/",
        "name": "cur",
        "kind": "s3",
        "location": "acme-billing",
        "prefix": "cur/",
        "endpoint_url": "https://s3.eu.example.net",
        "region": "eu-west-3",
        "access_key_id": "AKIAEXAMPLE",
        "has_secret_access_key": True,
        "has_api_key": False,
        "start_date": None,
        "format": "aws-cur",
        "poll_every_minutes": 30,
        "enabled": True,
        "created_by": finops_user.username,
        "created_at": body["created_at"],
        "last_polled_at": None,
        "next_poll_at": None,
        "last_changed_at": None,
        "last_error": "",
        "last_error_at": None,
        "consecutive_failures": 0,
        "objects_seen": 0,
        "refused_objects": [],
        "upload_count": 0,
        "recent_uploads": [],
    }


@pytest.mark.parametrize("role", ["engineer_user", "manager_user"])
def test_other_roles_read_but_may_not_write(role: str, request: Any, finops_user: Any) -> None:
    source = make_source(kind="http", location="https://billing.example.com/f.csv")
    client = _client(request.getfixturevalue(role))
    listed = client.get("/api/v1/sources/").json()
    assert [s["name"] for s in listed["results"]] == ["exports"]
    assert client.get(f"/api/v1/sources/{source.pk}/").status_code == 200
    refused = {
        "create": _post(client, {**S3, "name": "other"}),
        "patch": client.patch(
            f"/api/v1/sources/{source.pk}/", {"enabled": False}, content_type="application/json"
        ),
        "delete": client.delete(f"/api/v1/sources/{source.pk}/"),
        "poll": client.post(f"/api/v1/sources/{source.pk}/poll/"),
    }
    assert {name: r.status_code for name, r in refused.items()} == dict.fromkeys(refused, 403)
    assert BillingSource.objects.get().enabled


def test_an_admin_writes_too(admin_user: Any) -> None:
    assert _post(_client(admin_user), S3).status_code == 201


def test_patch_changes_the_fields_given_and_keeps_the_secret(finops_user: Any) -> None:
    client = _client(finops_user)
    source_id = _post(client, S3).json()["id"]
    BillingSource.objects.filter(pk=source_id).update(seen={"cur/a.csv": {"etag": "x"}})

    response = client.patch(
        f"/api/v1/sources/{source_id}/",
        {"poll_every_minutes": 15, "enabled": False},
        content_type="application/json",
    )

    assert response.status_code == 200
    body = response.json()
    assert (body["poll_every_minutes"], body["enabled"], body["has_secret_access_key"]) == (
        15,
        False,
        True,
    )
    source = BillingSource.objects.get()
    assert source.secret_access_key == S3["secret_access_key"]
    assert source.seen == {"cur/a.csv": {"etag": "x"}}  # still reading the same place

    moved = client.patch(
        f"/api/v1/sources/{source_id}/", {"prefix": "cur2/"}, content_type="application/json"
    )
    assert moved.json()["objects_seen"] == 0  # a new place is read in full

    cleared = client.patch(
        f"/api/v1/sources/{source_id}/",
        {"access_key_id": "", "secret_access_key": ""},
        content_type="application/json",
    )
    assert cleared.json()["has_secret_access_key"] is False


def test_delete_keeps_the_uploads_it_created(finops_user: Any) -> None:
    source = make_source(kind="http", location="https://billing.example.com/f.csv")
    upload = Upload.objects.create(kind="billing", billing_source=source, source_object="x")
    response = _client(finops_user).delete(f"/api/v1/sources/{source.pk}/")
    assert response.status_code == 204
    assert not BillingSource.objects.exists()
    upload.refresh_from_db()
    assert (upload.billing_source_id, upload.source_object) == (None, "x")


def test_poll_now_polls_and_answers_the_source(
    root: Path, finops_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    write(root / "focus.csv", FOCUS_SAMPLE.read_bytes())
    source = make_source(location=str(root))
    with django_capture_on_commit_callbacks(execute=True):
        response = _client(finops_user).post(f"/api/v1/sources/{source.pk}/poll/")
    assert response.status_code == 202
    body = response.json()
    upload = Upload.objects.get()
    assert (body["queued"], body["upload_count"], body["objects_seen"]) == (True, 1, 1)
    assert body["poll"].startswith("The poll is queued")
    assert body["last_polled_at"] is not None and body["last_changed_at"] is not None
    # Answered before the commit that queues its ingest; read again, it has landed.
    assert body["recent_uploads"] == [
        {
            "id": upload.pk,
            "url": f"http://testserver/api/v1/uploads/{upload.pk}/",
            "original_name": "focus.csv",
            "source_object": "focus.csv",
            "status": "queued",
            "created_at": body["recent_uploads"][0]["created_at"],
        }
    ]
    again = _client(finops_user).get(f"/api/v1/sources/{source.pk}/").json()
    assert again["recent_uploads"][0]["status"] == "succeeded"
    detail = _client(finops_user).get(f"/api/v1/uploads/{upload.pk}/").json()
    assert (detail["billing_source"], detail["source_object"]) == ("exports", "focus.csv")


REFUSALS = [
    (
        {"kind": "ftp"},
        "kind",
        "kind must be one of folder, http, s3, openai, anthropic, not 'ftp'.",
    ),
    ({"name": ""}, "name", "name is required."),
    ({"name": "x" * 101}, "name", "name is 101 characters long; at most 100 are kept."),
    ({"location": "s3://acme-billing/cur/"}, "location", None),
    ({"location": "Not_A_Bucket"}, "location", None),
    ({"endpoint_url": "ftp://minio"}, "endpoint_url", None),
    (
        {"secret_access_key": ""},
        "secret_access_key",
        "Give both access_key_id and secret_access_key, or neither (boto3's own credential "
        "chain is then used); secret_access_key is missing.",
    ),
    (
        {"format": "litellm"},
        "format",
        "format must be a billing format, one of auto, focus, aws-cur, azure, not 'litellm'.",
    ),
    ({"poll_every_minutes": 0}, "poll_every_minutes", None),
    ({"poll_every_minutes": "hourly"}, "poll_every_minutes", None),
    ({"enabled": "yes"}, "enabled", "enabled must be true or false, not 'yes'."),
    ({"colour": "red"}, "colour", None),
    ({"kind": "http", "location": "file:///etc/passwd", "prefix": ""}, "location", None),
    (
        {"kind": "http", "location": "https://x.example/f.csv", "prefix": ""},
        "endpoint_url",
        "endpoint_url applies to S3 sources only; leave it empty for a http source.",
    ),
    (
        {
            "kind": "http",
            "location": "https://x.example/f.csv",
            "endpoint_url": "",
            "region": "",
            "access_key_id": "",
            "secret_access_key": "",
        },
        "prefix",
        "prefix applies to folder and S3 sources; leave it empty for a URL.",
    ),
    ({"name": "a\x00b"}, "name", None),
]


@pytest.mark.parametrize(("change", "field", "message"), REFUSALS)
def test_refusals_name_the_field(
    finops_user: Any, change: dict[str, Any], field: str, message: str | None
) -> None:
    response = _post(_client(finops_user), {**S3, **change})
    assert response.status_code == 400
    body = response.json()
    assert list(body["errors"]) == [field]
    if message is not None:
        assert body["errors"][field] == [message]
    assert body["detail"].startswith(f"{field}: ")
    assert not BillingSource.objects.exists()


def test_a_folder_outside_the_roots_is_refused_naming_them(finops_user: Any, root: Path) -> None:
    body = _post(_client(finops_user), {"name": "etc", "kind": "folder", "location": "/etc"}).json()
    assert body["errors"] == {
        "location": [
            f"The folder /etc is not under a folder billing sources may read ({root}); an "
            "operator allows others with BILLING_SOURCE_ROOTS."
        ]
    }
    ok = _post(_client(finops_user), {"name": "ok", "kind": "folder", "location": str(root)})
    assert ok.status_code == 201 and ok.json()["prefix"] == ""


def test_a_duplicate_name_and_a_non_object_body_are_refused(finops_user: Any) -> None:
    client = _client(finops_user)
    _post(client, S3)
    assert _post(client, S3).json()["errors"] == {
        "name": ["A billing source named 'cur' already exists."]
    }
    listed = _post(client, [S3])
    assert (listed.status_code, listed.json()["errors"]) == (
        400,
        {"non_field_errors": ["Send the source as a JSON object."]},
    )


def test_unknown_source_is_404(finops_user: Any) -> None:
    client = _client(finops_user)
    assert client.get("/api/v1/sources/999/").status_code == 404
    assert client.post("/api/v1/sources/999/poll/").status_code == 404


def test_the_schema_documents_the_secret_as_write_only(finops_user: Any) -> None:
    schema = _client(finops_user).get("/api/schema/?format=json").json()
    assert "/api/v1/sources/{source_id}/poll/" in schema["paths"]
    components = schema["components"]["schemas"]
    secret = components["SourceInput"]["properties"]["secret_access_key"]
    assert secret["writeOnly"] is True
    assert "secret_access_key" not in components["SourceOutput"]["properties"]
    assert "has_secret_access_key" in components["SourceOutput"]["properties"]


def _patch(client: Client, source_id: int, body: Any) -> Any:
    return client.patch(f"/api/v1/sources/{source_id}/", body, content_type="application/json")


@pytest.mark.parametrize(
    "change",
    [
        {"endpoint_url": "http://attacker.example.net"},
        {"location": "other-bucket"},
        {"endpoint_url": ""},  # back to AWS itself
    ],
)
def test_pointing_a_source_elsewhere_forgets_its_keys(
    finops_user: Any, change: dict[str, str]
) -> None:
    client = _client(finops_user)
    source_id = _post(client, S3).json()["id"]
    response = _patch(client, source_id, change)
    assert response.status_code == 200
    assert (response.json()["has_secret_access_key"], response.json()["access_key_id"]) == (
        False,
        "",
    )
    source = BillingSource.objects.get()
    assert (source.access_key_id, source.secret_access_key) == ("", "")


def test_pointing_it_elsewhere_with_the_secret_sent_again_keeps_the_keys_sent(
    finops_user: Any,
) -> None:
    client = _client(finops_user)
    source_id = _post(client, S3).json()["id"]
    response = _patch(
        client,
        source_id,
        {"endpoint_url": "https://minio.example.net", "secret_access_key": "new-secret"},
    )
    assert response.status_code == 200
    source = BillingSource.objects.get()
    assert (source.endpoint_url, source.access_key_id, source.secret_access_key) == (
        "https://minio.example.net",
        "AKIAEXAMPLE",
        "new-secret",
    )
    # A new key id without its secret is refused, naming the missing field.
    refused = _patch(client, source_id, {"location": "b2-bucket", "access_key_id": "AKIA2"})
    assert (refused.status_code, list(refused.json()["errors"])) == (400, ["secret_access_key"])
    assert BillingSource.objects.get().secret_access_key == "new-secret"


def test_the_service_and_the_admin_forget_the_keys_the_same_way(admin_user: Any) -> None:
    from audit_app.admin import BillingSourceAdminForm
    from audit_app.ingestion.source_changes import FIELDS, source_update

    source = make_source(**{k: v for k, v in S3.items() if k != "format"})
    source_update(source=source, user=None, data={"region": "eu-west-1"})
    assert BillingSource.objects.get().secret_access_key == S3["secret_access_key"]
    source_update(source=source, user=None, data={"endpoint_url": "https://r2.example.net"})
    assert BillingSource.objects.get().secret_access_key == ""

    source = make_source(**{**S3, "name": "admin-edited", "format": "auto"})
    data = {field: getattr(source, field) for field in FIELDS if field != "secret_access_key"}
    form = BillingSourceAdminForm(
        data={**data, "endpoint_url": "https://evil.example.net", "enabled": "on"},
        instance=source,
    )
    assert form.is_valid(), form.errors
    assert (form.cleaned_data["access_key_id"], form.cleaned_data["secret_access_key"]) == ("", "")
    source = BillingSource.objects.get(pk=source.pk)  # the form above changed it in memory
    same_place = BillingSourceAdminForm(
        data={**data, "region": "us-east-2", "enabled": "on"}, instance=source
    )
    assert same_place.is_valid(), same_place.errors
    assert same_place.cleaned_data["secret_access_key"] == S3["secret_access_key"]


URL_WITH_CREDENTIALS = "https://ann:s3cret@billing.example.com/exports/f.csv?token=abc123"
URL_SHOWN = "https://***:***@billing.example.com/exports/f.csv?token=***"


@pytest.mark.parametrize("role", ["engineer_user", "manager_user", "finops_user", "admin_user"])
def test_url_credentials_are_masked_for_every_role(role: str, request: Any) -> None:
    source = make_source(name="creds", kind="http", location=URL_WITH_CREDENTIALS)
    client = _client(request.getfixturevalue(role))
    for path in ("/api/v1/sources/", f"/api/v1/sources/{source.pk}/", "/sources/"):
        text = client.get(path).content.decode()
        assert "s3cret" not in text and "abc123" not in text, path
        assert URL_SHOWN in text, path
    if role == "admin_user":  # the admin's list too
        listing = client.get("/admin/audit_app/billingsource/").content.decode()
        assert "s3cret" not in listing and URL_SHOWN in listing


def test_a_masked_location_sent_back_keeps_the_real_one(finops_user: Any) -> None:
    source = make_source(name="creds", kind="http", location=URL_WITH_CREDENTIALS)
    client = _client(finops_user)
    shown = client.get(f"/api/v1/sources/{source.pk}/").json()
    response = _patch(client, source.pk, {"location": shown["location"], "poll_every_minutes": 5})
    assert response.status_code == 200
    assert BillingSource.objects.get().location == URL_WITH_CREDENTIALS
    assert _patch(client, source.pk, {"enabled": False}).status_code == 200
    assert BillingSource.objects.get().location == URL_WITH_CREDENTIALS
    changed = "https://billing.example.com/exports/g.csv"
    assert _patch(client, source.pk, {"location": changed}).status_code == 200
    assert BillingSource.objects.get().location == changed
