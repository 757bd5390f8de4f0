"""The token service: issue, verify and revoke API tokens; only a SHA-256 of the key is stored.

Hashes are computed here with hashlib, independently of `tokens.hash_key`. The service has no
rotation of its own: a rotation is a new token issued and the old one revoked (the last test).
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from audit_app.access.tokens import (
    api_token_issue,
    api_token_owner_id,
    api_token_revoke,
    api_token_verify,
)
from audit_app.models import ApiToken
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_issue_stores_the_hash_and_a_ten_character_prefix_never_the_key(
    engineer_user: Any,
) -> None:
    issued = api_token_issue(user=engineer_user, name="ci")

    stored = ApiToken.objects.get()
    assert issued.key.startswith("isa_")
    assert len(issued.key) == 4 + 43  # "isa_" and 32 random bytes in URL-safe base64
    assert stored.pk == issued.token.pk
    assert stored.key_hash == _sha256(issued.key)
    assert stored.prefix == issued.key[:10]
    assert (stored.user, stored.name) == (engineer_user, "ci")
    assert (stored.last_used_at, stored.revoked_at) == (None, None)
    stored_text = [str(value) for value in ApiToken.objects.values().get().values()]
    assert issued.key not in stored_text


def test_two_issues_give_two_different_keys(engineer_user: Any) -> None:
    first = api_token_issue(user=engineer_user)
    second = api_token_issue(user=engineer_user)

    assert first.key != second.key
    assert ApiToken.objects.filter(user=engineer_user).count() == 2


def test_verify_returns_the_live_token_and_notes_its_first_use(engineer_user: Any) -> None:
    issued = api_token_issue(user=engineer_user)

    token = api_token_verify(key=issued.key)

    assert token is not None
    assert token.pk == issued.token.pk
    assert token.user == engineer_user
    assert ApiToken.objects.get().last_used_at is not None


def test_verify_writes_last_used_at_at_most_once_a_minute(engineer_user: Any) -> None:
    issued = api_token_issue(user=engineer_user)
    half_a_minute_ago = timezone.now() - timedelta(seconds=30)
    ApiToken.objects.update(last_used_at=half_a_minute_ago)

    api_token_verify(key=issued.key)
    assert ApiToken.objects.get().last_used_at == half_a_minute_ago

    two_minutes_ago = timezone.now() - timedelta(minutes=2)
    ApiToken.objects.update(last_used_at=two_minutes_ago)
    api_token_verify(key=issued.key)
    assert ApiToken.objects.get().last_used_at > two_minutes_ago


def test_verify_refuses_an_unknown_key(engineer_user: Any) -> None:
    issued = api_token_issue(user=engineer_user)

    assert api_token_verify(key=issued.key + "x") is None
    assert api_token_verify(key="") is None
    assert ApiToken.objects.get().last_used_at is None


def test_verify_refuses_a_revoked_token(engineer_user: Any) -> None:
    issued = api_token_issue(user=engineer_user)

    api_token_revoke(token=issued.token)

    assert api_token_verify(key=issued.key) is None


def test_verify_refuses_the_token_of_a_deactivated_user() -> None:
    user = UserFactory(username="dan-deactivated", roles=["engineer"])
    issued = api_token_issue(user=user)
    user.is_active = False
    user.save()

    assert api_token_verify(key=issued.key) is None


def test_revoke_keeps_the_first_revocation_time(engineer_user: Any) -> None:
    issued = api_token_issue(user=engineer_user)
    api_token_revoke(token=issued.token)
    first = ApiToken.objects.get().revoked_at

    api_token_revoke(token=issued.token)

    assert first is not None
    assert ApiToken.objects.get().revoked_at == first


def test_owner_of_a_wrong_key_aimed_at_a_live_token(engineer_user: Any) -> None:
    issued = api_token_issue(user=engineer_user)
    same_prefix = issued.key[:10] + "wrong-rest"

    assert api_token_owner_id(key=same_prefix) == engineer_user.pk
    # Only the prefix: too short to aim at anyone; another prefix: nobody's.
    assert api_token_owner_id(key=issued.key[:10]) is None
    assert api_token_owner_id(key="isa_zzzzzz-wrong-rest") is None
    assert api_token_owner_id(key="abc_" + issued.key[4:]) is None


def test_a_revoked_token_has_no_owner_for_wrong_keys(engineer_user: Any) -> None:
    issued = api_token_issue(user=engineer_user)
    api_token_revoke(token=issued.token)

    assert api_token_owner_id(key=issued.key[:10] + "wrong-rest") is None


def test_rotation_is_a_new_token_then_the_old_one_revoked(engineer_user: Any) -> None:
    old = api_token_issue(user=engineer_user, name="ci")
    new = api_token_issue(user=engineer_user, name="ci")
    api_token_revoke(token=old.token)

    assert api_token_verify(key=old.key) is None
    verified = api_token_verify(key=new.key)
    assert verified is not None
    assert verified.pk == new.token.pk
    assert ApiToken.objects.filter(revoked_at__isnull=True).get().key_hash == _sha256(new.key)
