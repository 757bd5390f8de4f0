"""Bad answers to a single sign-on, against a real OpenID provider: each is refused with a page
saying what failed and an audit event, never a traceback, and counts towards the client
address's lock like a wrong password."""

from __future__ import annotations

import html
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from django.test import Client

from audit_app.access.oidc_discovery import issuer_forget
from audit_app.models import AuditEvent
from tests.support.oidc_provider import authorize
from tests.support.oidc_tampering import OTHER_CLIENT, tampering_issuer

pytestmark = pytest.mark.django_db


def _refusals() -> list[str]:
    events = AuditEvent.objects.filter(action=AuditEvent.Action.SSO_REFUSED).order_by("id")
    return [event.details["reason"] for event in events]


def _callback(client: Client, sub: str = "ann-sub") -> tuple[str, dict[str, str]]:
    """Start a sign-in and pass the provider's form: the callback path and its parameters."""
    start = client.get("/oidc/authenticate/")
    parts = urlsplit(authorize(start["Location"], sub))
    return parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()}


def _refused(answer: Any, status: int, text: str) -> None:
    body = html.unescape(answer.content.decode())
    assert answer.status_code == status, body[:2000]
    assert text in body, body[:2000]
    assert "Traceback" not in body


@pytest.fixture
def ann(sso: Any) -> Any:
    sso.provider.put_user("ann-sub", {"preferred_username": "ann", "groups": ["finops-team"]})
    return sso


def test_a_wrong_state_is_refused(ann: Any) -> None:
    client = Client()
    path, params = _callback(client)
    answer = client.get(path, {**params, "state": "forged-state"})
    _refused(answer, 403, "matches no sign-in this browser started")
    assert _refusals() == ["wrong_state"]
    assert not User.objects.filter(username="ann").exists()


def test_a_replayed_answer_is_refused_and_so_is_a_used_code_with_a_fresh_state(ann: Any) -> None:
    client = Client()
    path, first = _callback(client)
    assert client.get(path, first).status_code == 302  # signed in
    _refused(client.get(path, first), 403, "matches no sign-in this browser started")
    # The used code under the state of a new sign-in reaches the provider, which refuses it.
    _, second = _callback(client)
    answer = client.get(path, {"code": first["code"], "state": second["state"]})
    _refused(answer, 403, "refused the sign-in code (invalid_grant)")
    assert _refusals() == ["wrong_state", "code_refused"]


def test_an_answer_without_a_code_and_a_denied_sign_in_are_refused(ann: Any) -> None:
    client = Client()
    _refused(client.get("/oidc/callback/"), 403, "opened without one")
    start = client.get("/oidc/authenticate/")
    parts = urlsplit(authorize(start["Location"], "ann-sub", deny=True))
    _refused(client.get(parts.path + "?" + parts.query), 403, "did not sign you in")
    assert _refusals() == ["not_an_answer", "provider_error"]


def test_a_sign_in_answered_after_fifteen_minutes_is_refused(ann: Any) -> None:
    client = Client()
    path, params = _callback(client)
    session = client.session
    session["oidc_states"][params["state"]]["added_on"] -= 16 * 60
    session.save()
    _refused(client.get(path, params), 403, "took longer than 15 minutes")


@pytest.mark.parametrize(
    ("mode", "text", "reason"),
    [
        ("audience", f"meant for another application (audience {OTHER_CLIENT},", "wrong_audience"),
        ("issuer", "not by the configured issuer", "wrong_issuer"),
        ("key", "signature does not verify with the issuer's key", "bad_signature"),
        ("unknown_key", "signed by a key the issuer does not publish", "unknown_signing_key"),
    ],
)
def test_a_token_that_fails_a_check_is_refused(ann: Any, mode: str, text: str, reason: str) -> None:
    with tampering_issuer(ann.provider.issuer, mode) as issuer:
        ann.settings.OIDC_ISSUER = issuer
        issuer_forget()
        client = Client()
        path, params = _callback(client)
        _refused(client.get(path, params), 403, text)
    assert _refusals() == [reason]
    assert not User.objects.filter(username="ann").exists()


def test_the_proxy_telling_no_lie_signs_in(ann: Any) -> None:
    """The refusals above come from the lies alone: through the same proxy telling none, the
    sign-in passes every check."""
    with tampering_issuer(ann.provider.issuer, "none") as issuer:
        ann.settings.OIDC_ISSUER = issuer
        issuer_forget()
        client = Client()
        path, params = _callback(client)
        assert client.get(path, params)["Location"] == "/"
    assert User.objects.get(username="ann").groups.get().name == "finops"
    assert _refusals() == []


def test_an_unreachable_or_private_issuer_is_a_page_not_a_traceback(ann: Any) -> None:
    ann.settings.OIDC_ISSUER = "http://127.0.0.1:9"
    _refused(Client().get("/oidc/authenticate/"), 503, "The identity provider is unavailable")
    ann.settings.OIDC_ISSUER = ann.provider.issuer
    ann.settings.OUTBOUND_ALLOW_PRIVATE = []
    issuer_forget()
    _refused(Client().get("/oidc/authenticate/"), 503, "OUTBOUND_ALLOW_PRIVATE")
    assert _refusals() == ["issuer_unavailable", "issuer_unavailable"]


def test_refusals_count_towards_the_address_lock_shared_with_the_password_form(
    ann: Any, finops_user: Any
) -> None:
    ann.settings.AUTH_FAILURES_PER_MINUTE = 2
    client = Client()
    path, params = _callback(client)
    forged = {**params, "state": "forged"}
    assert [client.get(path, forged).status_code for _ in range(3)] == [403, 403, 429]
    locked = client.get(path, forged)
    _refused(locked, 429, "Too many failed sign-ins from this address; try again in ")
    assert 1 <= int(locked["Retry-After"]) <= 60
    # One count per address: a wrong password from it is refused as well...
    wrong = Client().post("/accounts/login/", {"username": finops_user.username, "password": "x"})
    assert wrong.status_code == 429
    # ...while a sign-in that passes every check still signs in, as a right password does.
    assert client.get(path, params)["Location"] == "/"
    assert _refusals() == ["wrong_state", "wrong_state"]  # a locked address adds no events
