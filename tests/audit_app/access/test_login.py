"""The login page: credentials first; an account's failures from one address lock it from that
address only, and failures of others (or from elsewhere) never refuse a correct password."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client, override_settings

from tests.factories import TEST_PASSWORD, UserFactory

pytestmark = pytest.mark.django_db

PROXY = {"REMOTE_ADDR": "10.0.0.1"}


def _login(client: Client, username: str, password: str, **extra: str) -> Any:
    return client.post("/accounts/login/", {"username": username, "password": password}, **extra)


@pytest.fixture
def alice(db: Any) -> Any:
    return UserFactory(username="alice", roles=["finops"])


@pytest.fixture
def bob(db: Any) -> Any:
    return UserFactory(username="bob", roles=["engineer"])


@override_settings(AUTH_FAILURES_PER_MINUTE=3)
def test_failures_from_many_addresses_never_lock_the_owner_out(alice: Any) -> None:
    """Ten wrong passwords a minute from ten addresses: each address failed once, and the
    owner signs in from hers."""
    codes = [
        _login(Client(), "alice", "wrong", REMOTE_ADDR=f"198.51.100.{i}").status_code
        for i in range(1, 11)
    ]
    assert codes == [200] * 10
    signed_in = _login(Client(), "alice", TEST_PASSWORD, REMOTE_ADDR="203.0.113.50")
    assert (signed_in.status_code, signed_in["Location"]) == (302, "/")


@override_settings(AUTH_FAILURES_PER_MINUTE=3)
def test_an_account_locked_from_one_address_refuses_its_password_there_only(alice: Any) -> None:
    client = Client()
    guesser = {"REMOTE_ADDR": "198.51.100.9"}
    codes = [_login(client, "alice", "wrong", **guesser).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    locked = _login(Client(), "alice", TEST_PASSWORD, **guesser)
    assert locked.status_code == 429
    assert 1 <= int(locked["Retry-After"]) <= 60
    text = locked.content.decode()
    assert "Too many failed logins for this account from this address; try again in " in text
    assert "did not match" not in text
    # The owner, from another address, signs in.
    owner = _login(Client(), "alice", TEST_PASSWORD, REMOTE_ADDR="203.0.113.50")
    assert (owner.status_code, owner["Location"]) == (302, "/")


@override_settings(AUTH_FAILURES_PER_MINUTE=3)
def test_behind_an_untrusted_proxy_one_user_s_failures_never_refuse_another(
    alice: Any, bob: Any
) -> None:
    # Without TRUSTED_PROXIES everyone behind the proxy is one address, 10.0.0.1.
    client = Client()
    attempts = [("alice", "wrong"), ("alice", "wrong"), ("carol", "wrong")]
    assert [_login(client, *attempt, **PROXY).status_code for attempt in attempts] == [200] * 3
    # The address is locked: a wrong password gets 429...
    refused = _login(client, "bob", "wrong", **PROXY)
    assert refused.status_code == 429
    assert "Too many failed logins from this address; try again in " in refused.content.decode()
    assert 1 <= int(refused["Retry-After"]) <= 60
    # ...but bob's correct password signs him in: his account has no failures of its own...
    signed_in = _login(Client(), "bob", TEST_PASSWORD, **PROXY)
    assert (signed_in.status_code, signed_in["Location"]) == (302, "/")
    # ...and so does alice's: her two failures are not yet a lock on her account.
    assert _login(Client(), "alice", TEST_PASSWORD, **PROXY).status_code == 302


@override_settings(AUTH_FAILURES_PER_MINUTE=3, TRUSTED_PROXIES=["10.0.0.1"])
def test_two_accounts_behind_a_trusted_proxy_do_not_lock_each_other(alice: Any, bob: Any) -> None:
    client = Client()
    alice_at = {**PROXY, "HTTP_X_FORWARDED_FOR": "203.0.113.7"}
    bob_at = {**PROXY, "HTTP_X_FORWARDED_FOR": "203.0.113.8"}
    codes = [_login(client, "alice", "wrong", **alice_at).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    # Bob, at another address behind the same proxy, is told his password is wrong, not 429.
    wrong = _login(client, "bob", "wrong", **bob_at)
    assert wrong.status_code == 200
    assert "did not match" in wrong.content.decode()
    assert _login(Client(), "bob", TEST_PASSWORD, **bob_at).status_code == 302


@override_settings(AUTH_FAILURES_PER_MINUTE=3)
def test_a_spoofed_forwarded_for_does_not_dodge_the_address_limit(alice: Any) -> None:
    client = Client()
    codes = [
        _login(
            client,
            f"nobody{i}",
            "wrong",
            REMOTE_ADDR="198.51.100.9",
            HTTP_X_FORWARDED_FOR=f"203.0.113.{i}",
        ).status_code
        for i in range(1, 5)
    ]
    assert codes == [200, 200, 200, 429]
