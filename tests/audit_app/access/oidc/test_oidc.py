"""Single sign-on against a real OpenID provider: users created and updated from the claims,
roles following the groups claim at every sign-in, each step in the audit trail, and sign-out
that ends the provider's session too."""

from __future__ import annotations

import io
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from audit_app.models import ApiToken, AuditEvent, SsoIdentity
from tests.factories import TEST_PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


def _roles(user: User) -> set[str]:
    return set(user.groups.values_list("name", flat=True))


def _events(action: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=action).order_by("id"))


def test_first_sign_in_creates_the_user_with_the_mapped_roles(sso: Any) -> None:
    sso.provider.put_user(
        "ann-sub",
        {
            "preferred_username": "ann",
            "email": "ann@example.com",
            "given_name": "Ann",
            "groups": ["finops-team", "unmapped"],
        },
    )
    client = Client()
    answer = sso.sign_in(client, "ann-sub")
    assert (answer.status_code, answer["Location"]) == (302, "/")
    user = User.objects.get(username="ann")
    assert _roles(user) == {"finops"}
    assert not user.is_staff and not user.has_usable_password()
    assert (user.email, user.first_name) == ("ann@example.com", "Ann")
    identity = SsoIdentity.objects.get(user=user)
    assert (identity.issuer, identity.subject) == (sso.provider.issuer, "ann-sub")
    assert client.get("/api/v1/me/").json()["roles"] == ["finops"]
    assert client.get("/").status_code == 200
    [sign_in] = _events(AuditEvent.Action.SSO_SIGN_IN)
    assert (sign_in.actor, sign_in.object_id) == (user, str(user.pk))
    assert sign_in.details["groups"] == ["finops-team", "unmapped"]
    [granted] = _events(AuditEvent.Action.SSO_ROLE_GRANTED)
    assert granted.details["role"] == "finops"


def test_a_changed_groups_claim_changes_the_roles_at_the_next_sign_in(sso: Any) -> None:
    sso.provider.put_user("eli-sub", {"preferred_username": "eli", "groups": ["finops-team"]})
    sso.sign_in(Client(), "eli-sub")
    user = User.objects.get(username="eli")
    assert _roles(user) == {"finops"}

    sso.provider.put_user("eli-sub", {"preferred_username": "eli", "groups": ["ml-platform"]})
    client = Client()
    sso.sign_in(client, "eli-sub")
    assert _roles(user) == {"engineer"}
    assert client.get("/api/v1/me/").json()["roles"] == ["engineer"]
    assert User.objects.filter(username="eli").count() == 1
    granted = [e.details["role"] for e in _events(AuditEvent.Action.SSO_ROLE_GRANTED)]
    removed = [e.details["role"] for e in _events(AuditEvent.Action.SSO_ROLE_REMOVED)]
    assert (granted, removed) == (["finops", "engineer"], ["finops"])


def test_the_admin_group_gives_staff_and_losing_it_takes_staff_away(sso: Any) -> None:
    sso.provider.put_user("ada-sub", {"preferred_username": "ada", "groups": ["it-admins"]})
    client = Client()
    # Staff alone is no role: she lands on the page that says so, and reaches the audit trail.
    assert sso.sign_in(client, "ada-sub")["Location"] == "/oidc/no-role/"
    assert client.get("/audit/").status_code == 200
    user = User.objects.get(username="ada")
    assert user.is_staff and not user.is_superuser and _roles(user) == set()
    sso.provider.put_user("ada-sub", {"preferred_username": "ada", "groups": ["eng-managers"]})
    sso.sign_in(Client(), "ada-sub")
    user.refresh_from_db()
    assert not user.is_staff and _roles(user) == {"manager"}


def test_a_user_whose_groups_map_to_no_role_lands_on_a_page_saying_whom_to_ask(sso: Any) -> None:
    sso.provider.put_user("nora-sub", {"preferred_username": "nora", "groups": ["sales"]})
    client = Client()
    answer = sso.sign_in(client, "nora-sub")
    assert (answer.status_code, answer["Location"]) == (302, "/oidc/no-role/")
    page = client.get("/oidc/no-role/")
    text = page.content.decode()
    assert page.status_code == 200
    assert "holds no role here" in text and "sales" in text
    assert "<code>finops-team</code></td><td>finops</td>" in text
    # Every other page says no role opens it: a 403 page, never a loop back to sign-in.
    assert client.get("/").status_code == 403
    assert client.get("/api/v1/me/").status_code == 403


def test_an_existing_account_is_matched_by_a_verified_email_only(sso: Any) -> None:
    local = UserFactory(username="mia.local", email="mia@example.com", roles=["manager"])
    sso.provider.put_user(
        "mia-sub",
        {
            "preferred_username": "mia",
            "email": "MIA@example.com",
            "email_verified": True,
            "groups": ["finops-team"],
        },
    )
    sso.sign_in(Client(), "mia-sub")
    assert not User.objects.filter(username="mia").exists()
    assert _roles(local) == {"finops"}  # the claim decides: manager removed, finops granted
    assert SsoIdentity.objects.get(subject="mia-sub").user == local

    # Unverified, the same email is not enough, and the username is taken: refused, not merged.
    UserFactory(username="bob", email="bob@example.com")
    sso.provider.put_user(
        "bob-sub", {"preferred_username": "bob", "email": "bob@example.com", "groups": []}
    )
    answer = sso.sign_in(Client(), "bob-sub")
    assert answer.status_code == 403
    assert "An account named bob already exists here" in answer.content.decode()
    assert not SsoIdentity.objects.filter(subject="bob-sub").exists()


def test_an_sso_user_uses_the_api_with_a_token_from_the_tokens_page(sso: Any) -> None:
    sso.provider.put_user("tom-sub", {"preferred_username": "tom", "groups": ["ml-platform"]})
    client = Client()
    sso.sign_in(client, "tom-sub")
    page = client.post("/tokens/", {"name": "laptop"})
    key = page.context["issued"].key
    assert key in page.content.decode()
    assert page["Cache-Control"] == "no-store"
    me = Client().get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {key}").json()
    assert (me["username"], me["roles"], me["auth"]) == ("tom", ["engineer"], "token")
    out = io.StringIO()
    call_command("issue_token", "tom", stdout=out)
    printed = out.getvalue().strip()
    me = Client().get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {printed}").json()
    assert (me["username"], me["roles"]) == ("tom", ["engineer"])


def test_sign_out_ends_the_provider_session_too(sso: Any) -> None:
    sso.provider.put_user("sam-sub", {"preferred_username": "sam", "groups": ["finops-team"]})
    client = Client()
    sso.sign_in(client, "sam-sub")
    answer = client.post("/accounts/logout/")
    location = urlsplit(answer["Location"])
    query = parse_qs(location.query)
    assert f"{location.scheme}://{location.netloc}{location.path}" == (
        f"{sso.provider.issuer}/oauth2/end_session"
    )
    assert query["post_logout_redirect_uri"] == ["http://testserver/accounts/login/"]
    assert query["id_token_hint"][0].count(".") == 2
    assert client.get("/api/v1/me/").status_code in (401, 403)


def test_a_password_session_signs_out_locally(sso: Any, finops_user: Any) -> None:
    client = Client()
    client.post("/accounts/login/", {"username": finops_user.username, "password": TEST_PASSWORD})
    answer = client.post("/accounts/logout/")
    assert (answer.status_code, answer["Location"]) == (302, "http://testserver/accounts/login/")


def test_the_sign_in_page_offers_sso_and_oidc_only_hides_the_password_form(sso: Any) -> None:
    page = Client().get("/accounts/login/?next=/workloads/").content.decode()
    assert 'href="/oidc/authenticate/?next=/workloads/"' in page
    assert 'name="password"' in page
    sso.settings.OIDC_ONLY = True
    page = Client().get("/accounts/login/").content.decode()
    assert "Sign in with SSO" in page and 'name="password"' not in page
    # Break-glass administrators still have the form, at its own address.
    glass = Client().get("/accounts/login/?password=1").content.decode()
    assert 'name="password"' in glass and 'action="/accounts/login/?password=1"' in glass


def test_the_next_page_is_kept_through_the_sign_in(sso: Any) -> None:
    sso.provider.put_user("kim-sub", {"preferred_username": "kim", "groups": ["finops-team"]})
    client = Client()
    start = client.get("/oidc/authenticate/?next=/workloads/")
    from tests.support.oidc_provider import authorize

    answer = client.get(authorize(start["Location"], "kim-sub"))
    assert answer["Location"] == "/workloads/"
    assert ApiToken.objects.count() == 0


def test_without_an_issuer_nothing_changes(db: Any, settings: Any) -> None:
    settings.OIDC_ISSUER = ""
    assert Client().get("/oidc/authenticate/").status_code == 404
    assert Client().get("/oidc/callback/?code=x&state=y").status_code == 404
    page = Client().get("/accounts/login/").content.decode()
    assert "Sign in with SSO" not in page and 'name="password"' in page


def test_a_deactivated_user_s_session_ends(sso: Any) -> None:
    sso.provider.put_user("dan-sub", {"preferred_username": "dan", "groups": ["finops-team"]})
    client = Client()
    sso.sign_in(client, "dan-sub")
    assert client.get("/").status_code == 200
    User.objects.filter(username="dan").update(is_active=False)
    assert client.get("/")["Location"] == "/accounts/login/?next=/"
    answer = sso.sign_in(Client(), "dan-sub")
    assert answer.status_code == 403
    assert "The account dan is disabled here" in answer.content.decode()
