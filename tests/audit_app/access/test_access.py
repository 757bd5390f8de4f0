"""Who may open what: anonymous visitors, users without a role, each role, and admins."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from audit_app.api.otlp import NO_CREDENTIALS
from tests.support.urls import PUBLIC_URL_NAMES, project_urls

ALL_URLS = project_urls()
PROTECTED = [u for u in ALL_URLS if u.name not in PUBLIC_URL_NAMES and not u.is_admin]
PAGES = [u for u in PROTECTED if not u.is_api]
API = [u for u in PROTECTED if u.is_api]
ADMIN = [u for u in ALL_URLS if u.is_admin and "login" not in u.name and "logout" not in u.name]
# The OTLP receiver answers a google.rpc.Status, not the API's error JSON.
OTLP_ROUTES = {"otlp-traces", "api-otlp-traces"}

# Pages without path parameters render for any user holding a role.
SIMPLE_PAGES = [
    "overview",
    "workloads",
    "uploads",
    "recommendations",
    "reconciliation",
    "benchmarks",
    "api-docs",
]


def test_walk_finds_the_known_pages_and_endpoints() -> None:
    names = {u.name for u in ALL_URLS}
    assert {
        "overview",
        "uploads",
        "api-root",
        "api-me",
        "api-schema",
        "api-docs",
        "healthz",
        "login",
    } <= names
    assert len(API) >= 3
    assert len(ADMIN) > 10


@pytest.mark.django_db
@pytest.mark.parametrize("url", PAGES, ids=lambda u: u.name)
def test_anonymous_page_redirects_to_login(client: Client, url: Any) -> None:
    response = client.get(url.path)
    assert response.status_code == 302, url.path
    assert response["Location"].startswith(reverse("login") + "?next=")


@pytest.mark.django_db
@pytest.mark.parametrize("url", API, ids=lambda u: u.name)
def test_anonymous_api_gets_401_json(client: Client, url: Any) -> None:
    response = client.get(url.path, HTTP_ACCEPT="application/json")
    assert response.status_code == 401, url.path
    assert response["WWW-Authenticate"] == "Token"
    body = response.json()
    if url.name in OTLP_ROUTES:  # OTLP's own error body: tests/audit_app/ingestion/live
        assert body == {"code": 16, "message": NO_CREDENTIALS}
        return
    assert body == {"detail": "Authentication credentials were not provided.", "errors": {}}


@pytest.mark.django_db
@pytest.mark.parametrize("url", ADMIN, ids=lambda u: u.name)
def test_anonymous_admin_redirects_to_a_login_page(client: Client, url: Any) -> None:
    response = client.get(url.path)
    assert response.status_code == 302, url.path
    assert "login" in response["Location"]


@pytest.mark.django_db
def test_login_and_healthz_are_public(client: Client) -> None:
    assert client.get(reverse("login")).status_code == 200
    assert client.get(reverse("healthz")).status_code in (200, 503)


@pytest.mark.django_db
@pytest.mark.parametrize("name", SIMPLE_PAGES)
@pytest.mark.parametrize(
    "role_user", ["finops_user", "engineer_user", "manager_user", "admin_user"]
)
def test_every_role_opens_every_page(
    client: Client, request: Any, role_user: str, name: str
) -> None:
    client.force_login(request.getfixturevalue(role_user))
    response = client.get(reverse(name))
    assert response.status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("name", SIMPLE_PAGES)
def test_user_without_a_role_is_refused_pages(client: Client, no_role_user: Any, name: str) -> None:
    client.force_login(no_role_user)
    response = client.get(reverse(name))
    assert response.status_code == 403
    assert b"Ask an administrator for one of: engineer, finops, manager" in response.content


@pytest.mark.django_db
def test_user_without_a_role_is_refused_the_api(client: Client, no_role_user: Any) -> None:
    client.force_login(no_role_user)
    for name in ("api-me", "api-schema"):
        response = client.get(reverse(name), HTTP_ACCEPT="application/json")
        assert response.status_code == 403
        assert response.json() == {
            "detail": "Your account has no role that may use this endpoint.",
            "errors": {},
        }


@pytest.mark.django_db
def test_admin_site_is_for_staff_only(client: Client, finops_user: Any, admin_user: Any) -> None:
    client.force_login(finops_user)
    assert client.get("/admin/").status_code == 302
    client.force_login(admin_user)
    assert client.get("/admin/").status_code == 200


@pytest.mark.django_db
def test_login_form_signs_in_and_lands_on_overview(client: Client, finops_user: Any) -> None:
    from tests.factories import TEST_PASSWORD

    response = client.post(reverse("login"), {"username": "ann-finops", "password": TEST_PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == reverse("overview")
    assert client.get(reverse("overview")).status_code == 200


@pytest.mark.django_db
def test_wrong_password_is_refused(client: Client, finops_user: Any) -> None:
    response = client.post(reverse("login"), {"username": "ann-finops", "password": "nope"})
    assert response.status_code == 200
    assert b"Your username and password did not match" in response.content


@pytest.mark.django_db
def test_logout_needs_post_and_signs_out(client: Client, finops_user: Any) -> None:
    client.force_login(finops_user)
    assert client.get(reverse("logout")).status_code == 405
    assert client.post(reverse("logout")).status_code == 302
    assert client.get(reverse("overview")).status_code == 302


@pytest.mark.django_db
def test_admin_edits_price_cards_and_lists_derived_data(client: Client, admin_user: Any) -> None:
    from audit_app.models import PriceCard

    client.force_login(admin_user)
    card = PriceCard.objects.get(provider="openai", model="gpt-4o")
    assert client.get(f"/admin/audit_app/pricecard/{card.pk}/change/").status_code == 200
    assert client.get("/admin/audit_app/pricecard/").status_code == 200
    assert client.get("/admin/audit_app/hourlyrollup/").status_code == 200
    assert client.get("/admin/audit_app/hourlyrollup/add/").status_code == 403
    assert client.get("/admin/audit_app/workload/").status_code == 200


@pytest.mark.django_db
def test_hardware_catalog_admin_warns_about_old_prices(client: Client, admin_user: Any) -> None:
    from datetime import date

    from audit_app.costs.catalog import source_age_days

    client.force_login(admin_user)
    response = client.get("/admin/audit_app/hardwaretarget/")
    assert response.status_code == 200
    assert "older than 180 days or undated" in response.content.decode()
    assert source_age_days("2026-07-24", date(2026, 11, 29)) == 128
    # 2025-06-01 to 2026-11-29: 213 days left in 2025 + 333 in 2026 = 546.
    assert source_age_days("undated snapshot (pre-2025-06 AWS list)", date(2026, 11, 29)) == 546
    assert source_age_days("stored copy", date(2026, 11, 29)) is None
    assert client.get("/admin/audit_app/recommendation/").status_code == 200
    assert client.get("/admin/audit_app/throughputassumption/").status_code == 200
