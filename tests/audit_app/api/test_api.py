"""API skeleton: token and session auth, the error format, the OpenAPI schema and docs."""

from __future__ import annotations

import hashlib
import re
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework import exceptions

from audit_app.access.tokens import api_token_issue, api_token_revoke
from audit_app.api.errors import error_body
from audit_app.models import ApiToken


def _issue_token_via_cli(username: str) -> str:
    out = StringIO()
    call_command("issue_token", username, stdout=out)
    return out.getvalue().strip()


@pytest.mark.django_db
def test_issue_token_prints_a_token_that_authenticates(client: Client, engineer_user: Any) -> None:
    key = _issue_token_via_cli("eli-engineer")
    assert key.startswith("isa_") and len(key) > 40
    response = client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {key}")
    assert response.status_code == 200
    assert response.json() == {
        "username": "eli-engineer",
        "roles": ["engineer"],
        "is_staff": False,
        "auth": "token",
    }
    bearer = client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert bearer.status_code == 200


@pytest.mark.django_db
def test_token_is_stored_only_as_its_sha256(engineer_user: Any) -> None:
    key = _issue_token_via_cli("eli-engineer")
    token = ApiToken.objects.get(user=engineer_user)
    assert token.key_hash == hashlib.sha256(key.encode()).hexdigest()
    assert key not in {token.key_hash, token.prefix, token.name}
    assert key.startswith(token.prefix)


@pytest.mark.django_db
def test_issue_token_for_unknown_user_fails_clearly() -> None:
    with pytest.raises(CommandError, match="no user named 'ghost'"):
        call_command("issue_token", "ghost")


@pytest.mark.django_db
def test_bad_and_revoked_tokens_get_401(client: Client, finops_user: Any) -> None:
    wrong = client.get("/api/v1/me/", HTTP_AUTHORIZATION="Token isa_not-a-real-token")
    assert wrong.status_code == 401
    assert wrong.json() == {"detail": "Invalid or revoked token.", "errors": {}}

    issued = api_token_issue(user=finops_user)
    api_token_revoke(token=issued.token)
    revoked = client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {issued.key}")
    assert revoked.status_code == 401

    malformed = client.get("/api/v1/me/", HTTP_AUTHORIZATION="Token two parts")
    assert malformed.status_code == 401
    assert "no spaces" in malformed.json()["detail"]


@pytest.mark.django_db
def test_token_of_an_inactive_user_is_refused(client: Client, finops_user: Any) -> None:
    issued = api_token_issue(user=finops_user)
    finops_user.is_active = False
    finops_user.save()
    response = client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {issued.key}")
    assert response.status_code == 401


@pytest.mark.django_db
def test_session_auth_works_for_the_api(client: Client, manager_user: Any) -> None:
    client.force_login(manager_user)
    body = client.get("/api/v1/me/").json()
    assert body["auth"] == "session"
    assert body["roles"] == ["manager"]


@pytest.mark.django_db
def test_api_root_links(client: Client, finops_user: Any) -> None:
    client.force_login(finops_user)
    body = client.get("/api/v1/").json()
    assert body == {
        "me": "http://testserver/api/v1/me/",
        "uploads": "http://testserver/api/v1/uploads/",
        "spend": "http://testserver/api/v1/spend/",
        "workloads": "http://testserver/api/v1/workloads/",
        "schema": "http://testserver/api/schema/",
        "docs": "http://testserver/api/docs/",
    }


@pytest.mark.django_db
def test_openapi_schema_is_generated(client: Client, finops_user: Any) -> None:
    client.force_login(finops_user)
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert "/api/v1/me/" in schema["paths"]
    assert "/api/v1/" in schema["paths"]
    assert schema["components"]["securitySchemes"]["tokenAuth"]["in"] == "header"


@pytest.mark.django_db
def test_swagger_ui_uses_local_assets_only(client: Client, finops_user: Any) -> None:
    client.force_login(finops_user)
    response = client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    # Every script, stylesheet and image comes from this server (the CSRF token is random
    # text, so look only at the addresses, not the whole page).
    addresses = re.findall(r'(?:src|href)\s*=\s*["\']([^"\']+)', html)
    assert addresses
    assert [a for a in addresses if a.startswith(("http:", "https:", "//"))] == []


def test_error_body_for_field_errors() -> None:
    exc = exceptions.ValidationError(
        {"file": ["This field is required."], "format": ["Unknown format 'xls'."]}
    )
    assert error_body(exc) == {
        "detail": "file: This field is required.",
        "errors": {"file": ["This field is required."], "format": ["Unknown format 'xls'."]},
    }


def test_error_body_for_non_field_errors() -> None:
    exc = exceptions.ValidationError(["The same file was already uploaded as upload 7."])
    assert error_body(exc) == {
        "detail": "The same file was already uploaded as upload 7.",
        "errors": {"non_field_errors": ["The same file was already uploaded as upload 7."]},
    }


def test_error_body_for_nested_errors() -> None:
    exc = exceptions.ValidationError({"meta": {"model": ["Required."]}})
    assert error_body(exc)["errors"] == {"meta": ["model: Required."]}


def test_error_body_for_plain_errors() -> None:
    assert error_body(exceptions.NotFound()) == {"detail": "Not found.", "errors": {}}


@pytest.mark.django_db
def test_unknown_api_url_is_json_404(client: Client, finops_user: Any) -> None:
    client.force_login(finops_user)
    response = client.get("/api/v1/no-such-thing/")
    assert response.status_code == 404


@pytest.mark.django_db
def test_pages_and_api_send_a_strict_content_security_policy(
    client: Client, finops_user: Any
) -> None:
    client.force_login(finops_user)
    for path in ("/", "/api/v1/me/", "/accounts/login/"):
        policy = client.get(path)["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "unsafe-eval" not in policy
        assert "frame-ancestors 'none'" in policy


@pytest.mark.django_db
def test_api_is_throttled(client: Client, finops_user: Any, monkeypatch: Any) -> None:
    from django.core.cache import cache
    from rest_framework.throttling import SimpleRateThrottle

    # DRF reads the rates into the class when it is imported; set them there.
    monkeypatch.setattr(
        SimpleRateThrottle, "THROTTLE_RATES", {"anon": "3/minute", "user": "5/minute"}
    )
    cache.clear()
    client.force_login(finops_user)
    signed_in = [client.get("/api/v1/me/").status_code for _ in range(6)]
    assert signed_in == [200] * 5 + [429]
    body = client.get("/api/v1/me/").json()
    assert body["detail"].startswith("Request was throttled.") and body["errors"] == {}
    cache.clear()


@pytest.mark.django_db
def test_guessing_tokens_or_passwords_is_throttled(client: Client, finops_user: Any) -> None:
    from django.test import override_settings

    with override_settings(AUTH_FAILURES_PER_MINUTE=3):
        codes = [
            client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token isa_guess{i}").status_code
            for i in range(5)
        ]
        assert codes == [401, 401, 401, 429, 429]
        logins = [
            client.post(
                "/accounts/login/", {"username": "ann-finops", "password": f"wrong{i}"}
            ).status_code
            for i in range(4)
        ]
        assert logins == [200, 200, 200, 429]
        blocked = client.post(
            "/accounts/login/",
            {"username": "ann-finops", "password": "correct horse battery staple"},
        )
        assert blocked.status_code == 429
        assert b"Too many failed logins" in blocked.content
