"""API tokens: a valid token always authenticates; invalid ones are limited per address and
per the token they aim at, with 429 and Retry-After."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client, override_settings

from audit_app.access.tokens import api_token_issue

pytestmark = pytest.mark.django_db


def _me(client: Client, key: str, **extra: str) -> Any:
    return client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {key}", **extra)


@override_settings(AUTH_FAILURES_PER_MINUTE=10)
def test_a_valid_token_succeeds_after_30_bad_tokens_from_its_address(
    client: Client, finops_user: Any
) -> None:
    key = api_token_issue(user=finops_user).key
    codes = [_me(client, f"isa_guess{i}").status_code for i in range(30)]
    assert codes == [401] * 10 + [429] * 20
    refused = _me(client, "isa_guess30")
    assert refused.json()["detail"].startswith("Too many invalid tokens from this address.")
    assert 1 <= int(refused["Retry-After"]) <= 60
    me = _me(client, key)
    assert me.status_code == 200
    assert me.json()["username"] == "ann-finops"


@override_settings(AUTH_FAILURES_PER_MINUTE=3)
def test_wrong_keys_aimed_at_one_token_are_limited_from_every_address(
    client: Client, finops_user: Any
) -> None:
    key = api_token_issue(user=finops_user).key
    aimed = key[:10] + "x" * 20  # starts like the live token, as a leaked prefix would
    codes = [_me(client, aimed, REMOTE_ADDR=f"198.51.100.{i}").status_code for i in range(1, 6)]
    assert codes == [401, 401, 401, 429, 429]
    refused = _me(client, aimed, REMOTE_ADDR="198.51.100.9")
    assert refused.json()["detail"].startswith("Too many invalid tokens for this token.")
    assert 1 <= int(refused["Retry-After"]) <= 60
    # A guess at no live token from a fresh address is an ordinary 401...
    assert _me(client, "isa_guess", REMOTE_ADDR="198.51.100.9").status_code == 401
    # ...and the token itself still works: it cannot be guessed, so it is never locked.
    assert _me(client, key, REMOTE_ADDR="198.51.100.9").status_code == 200


@override_settings(AUTH_FAILURES_PER_MINUTE=3)
def test_a_spoofed_forwarded_for_is_ignored_without_a_trusted_proxy(client: Client) -> None:
    codes = [
        _me(client, "isa_guess", HTTP_X_FORWARDED_FOR=f"203.0.113.{i}").status_code
        for i in range(1, 6)
    ]
    assert codes == [401, 401, 401, 429, 429]


@override_settings(AUTH_FAILURES_PER_MINUTE=3, TRUSTED_PROXIES=["10.0.0.1"])
def test_clients_behind_a_trusted_proxy_are_counted_apart(client: Client) -> None:
    def guess(client_ip: str) -> int:
        return _me(
            client, "isa_guess", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR=client_ip
        ).status_code

    assert [guess("203.0.113.7") for _ in range(4)] == [401, 401, 401, 429]
    assert guess("203.0.113.8") == 401
