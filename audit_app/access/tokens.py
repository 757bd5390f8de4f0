"""API tokens: issue, verify and revoke. Only a SHA-256 of each token is stored."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from django.db import transaction
from django.utils import timezone

from audit_app.models import ApiToken

if TYPE_CHECKING:
    from django.contrib.auth.models import User

TOKEN_PREFIX = "isa_"
# Characters of a key kept in clear (ApiToken.prefix) to tell tokens apart.
_SHOWN_LENGTH = len(TOKEN_PREFIX) + 6
# Writing last_used_at on every request would turn each API read into a write.
_LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True, kw_only=True)
class IssuedToken:
    token: ApiToken
    key: str  # shown once; never stored


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@transaction.atomic
def api_token_issue(*, user: User, name: str = "") -> IssuedToken:
    key = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, name=name, prefix=key[:_SHOWN_LENGTH], key_hash=hash_key(key)
    )
    return IssuedToken(token=token, key=key)


def api_token_verify(*, key: str) -> ApiToken | None:
    """The live token for ``key``, or None when it is unknown, revoked or its user inactive."""
    token = (
        ApiToken.objects.select_related("user")
        .filter(key_hash=hash_key(key), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > _LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


def api_token_owner_id(*, key: str) -> int | None:
    """The user whose live token starts like ``key`` (a wrong key aimed at their token), if any."""
    if len(key) <= _SHOWN_LENGTH or not key.startswith(TOKEN_PREFIX):
        return None
    return (
        ApiToken.objects.filter(prefix=key[:_SHOWN_LENGTH], revoked_at__isnull=True)
        .values_list("user_id", flat=True)
        .first()
    )


def api_token_revoke(*, token: ApiToken) -> None:
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
