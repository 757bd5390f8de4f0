"""The API tokens page: a user creates tokens (each key shown once) and revokes only their own."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from audit_app.access.tokens import api_token_issue, hash_key
from audit_app.models import ApiToken

pytestmark = pytest.mark.django_db


def test_a_created_token_is_shown_once_and_works(finops_user: Any) -> None:
    client = Client()
    client.force_login(finops_user)
    created = client.post("/tokens/", {"name": "nightly export"})
    key = created.context["issued"].key
    token = ApiToken.objects.get(user=finops_user)
    assert (token.name, token.key_hash) == ("nightly export", hash_key(key))
    assert key in created.content.decode() and created["Cache-Control"] == "no-store"
    listed = client.get("/tokens/").content.decode()
    assert key not in listed and f"{token.prefix}…" in listed
    me = Client().get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {key}").json()
    assert (me["username"], me["auth"]) == (finops_user.username, "token")


def test_a_user_revokes_their_own_token_and_not_another_s(
    finops_user: Any, engineer_user: Any
) -> None:
    own = api_token_issue(user=finops_user, name="mine")
    theirs = api_token_issue(user=engineer_user, name="theirs")
    client = Client()
    client.force_login(finops_user)
    assert client.post(f"/tokens/{theirs.token.pk}/revoke/").status_code == 404
    answer = client.post(f"/tokens/{own.token.pk}/revoke/")
    assert (answer.status_code, answer["Location"]) == (302, "/tokens/")
    own.token.refresh_from_db()
    theirs.token.refresh_from_db()
    assert own.token.revoked_at is not None and theirs.token.revoked_at is None
    refused = Client().get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {own.key}")
    assert refused.status_code == 401
    assert engineer_user.username not in client.get("/tokens/").content.decode()


def test_a_name_too_long_is_refused_naming_its_length(finops_user: Any) -> None:
    client = Client()
    client.force_login(finops_user)
    answer = client.post("/tokens/", {"name": "x" * 101})
    assert answer.status_code == 400
    assert "The name is 101 characters long; at most 100." in answer.content.decode()
    assert not ApiToken.objects.exists()


def test_signed_out_visitors_are_sent_to_sign_in(db: Any) -> None:
    answer = Client().get("/tokens/")
    assert (answer.status_code, answer["Location"]) == (302, "/accounts/login/?next=/tokens/")
