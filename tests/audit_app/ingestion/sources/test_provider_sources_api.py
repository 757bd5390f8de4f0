"""`openai` and `anthropic` sources through the API, the Sources page and the admin: the admin
key written, never answered, shown or audited; the base URL and start date defaults; refusals
naming the field; pointing a source elsewhere forgets its key."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from audit_app.ingestion.provider_sources import default_start, poll_window
from audit_app.models import AuditEvent, BillingSource

pytestmark = pytest.mark.django_db
KEY = "sk-admin-very-secret-0123456789abcdef"


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _post(client: Client, body: dict[str, Any]) -> Any:
    return client.post("/api/v1/sources/", body, content_type="application/json")


def test_default_start_is_the_first_day_of_the_previous_month() -> None:
    assert default_start(date(2026, 3, 15)) == date(2026, 2, 1)
    assert default_start(date(2026, 1, 1)) == date(2025, 12, 1)


def test_an_openai_source_by_api_never_answers_its_key(finops_user: Any) -> None:
    response = _post(
        _client(finops_user), {"name": "openai-prod", "kind": "openai", "api_key": KEY}
    )

    assert response.status_code == 201, response.content
    body = response.json()
    source = BillingSource.objects.get()
    today = timezone.now().date()
    assert source.api_key == KEY
    assert KEY not in response.content.decode()
    assert (body["location"], body["format"], body["has_api_key"], body["start_date"]) == (
        "https://api.openai.com/v1",
        "openai-costs-api",
        True,
        default_start(today).isoformat(),
    )
    listed = _client(finops_user).get("/api/v1/sources/").content.decode()
    page = _client(finops_user).get("/sources/").content.decode()
    audit = str(list(AuditEvent.objects.values_list("summary", "details")))
    assert KEY not in listed and KEY not in page and KEY not in audit
    assert "has_api_key" in audit
    # The first poll reads from the start date up to yesterday.
    assert poll_window(source, today) == (default_start(today), today)


def test_an_anthropic_source_with_its_own_base_url_and_start(finops_user: Any) -> None:
    start = timezone.now().date() - timedelta(days=10)
    response = _post(
        _client(finops_user),
        {
            "name": "claude",
            "kind": "anthropic",
            "location": "https://anthropic-proxy.example.com/v1",
            "api_key": KEY,
            "start_date": start.isoformat(),
        },
    )

    assert response.status_code == 201, response.content
    source = BillingSource.objects.get()
    assert (source.location, source.format, source.start_date) == (
        "https://anthropic-proxy.example.com/v1",
        "anthropic-costs-api",
        start,
    )


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"api_key": ""}, "api_key", "api_key is required"),
        ({"prefix": "x/"}, "prefix", "leave it empty for openai"),
        ({"location": "ftp://api.openai.com"}, "location", "must be an http:// or https:// URL"),
        ({"start_date": "last week"}, "start_date", "start_date must be a date"),
        ({"format": "focus"}, "format", "format of an openai source is openai-costs-api"),
        ({"secret_access_key": "x"}, "secret_access_key", "applies to S3 sources only"),
    ],
)
def test_refusals_name_the_field(
    finops_user: Any, change: dict[str, Any], field: str, message: str
) -> None:
    body = {"name": "openai-prod", "kind": "openai", "api_key": KEY, **change}

    response = _post(_client(finops_user), body)

    assert response.status_code == 400
    errors = response.json()["errors"]
    assert field in errors and message in " ".join(errors[field]), errors
    assert KEY not in response.content.decode()
    assert not BillingSource.objects.exists()


def test_a_folder_source_takes_no_api_key(finops_user: Any, tmp_path: Any, settings: Any) -> None:
    settings.BILLING_SOURCE_ROOTS = [tmp_path]
    body = {"name": "f", "kind": "folder", "location": str(tmp_path), "api_key": KEY}

    response = _post(_client(finops_user), body)

    assert response.status_code == 400
    assert "api_key applies to openai and anthropic sources only" in str(response.json())


def test_pointing_the_source_elsewhere_forgets_its_key(finops_user: Any) -> None:
    client = _client(finops_user)
    source_id = _post(client, {"name": "o", "kind": "openai", "api_key": KEY}).json()["id"]

    moved = client.patch(
        f"/api/v1/sources/{source_id}/",
        {"location": "https://elsewhere.example.com/v1"},
        content_type="application/json",
    )

    assert moved.status_code == 400  # the key is forgotten, and an openai source needs one
    assert "api_key is required" in str(moved.json())
    kept = client.patch(
        f"/api/v1/sources/{source_id}/", {"poll_every_minutes": 30}, content_type="application/json"
    )
    assert kept.status_code == 200 and kept.json()["has_api_key"] is True
    assert BillingSource.objects.get().api_key == KEY


def test_the_sources_page_adds_an_openai_source(finops_user: Any) -> None:
    client = _client(finops_user)

    response = client.post(
        "/sources/",
        {
            "name": "openai-prod",
            "kind": "openai",
            "location": "",
            "api_key": KEY,
            "format": "auto",
            "poll_every_minutes": 60,
            "enabled": "on",
        },
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    source = BillingSource.objects.get()
    assert (source.kind, source.api_key, source.location) == (
        "openai",
        KEY,
        "https://api.openai.com/v1",
    )
    page = client.get("/sources/").content.decode()
    assert KEY not in page and "OpenAI costs and usage API" in page
    assert f"days from {source.start_date:%Y-%m-%d}" in page


def test_other_roles_may_not_add_one(engineer_user: Any) -> None:
    response = _post(_client(engineer_user), {"name": "o", "kind": "openai", "api_key": KEY})
    assert response.status_code == 403
