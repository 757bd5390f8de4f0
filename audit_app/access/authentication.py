"""DRF authentication by API token (``Authorization: Token <key>`` or ``Bearer <key>``).

A valid token always authenticates: it is 32 random bytes, so no count of failures makes it
guessable, and refusing it would only let someone else's mistakes lock its owner out. Invalid
tokens are counted per client address and, when the key starts like a live token, per that
token's owner; once either reaches AUTH_FAILURES_PER_MINUTE, further invalid tokens get 429
with Retry-After (`audit_app.access.auth_failures`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from audit_app.access.auth_failures import (
    failure_lock,
    failure_record,
    token_account_key,
    token_address_key,
)
from audit_app.access.client_address import client_address
from audit_app.access.tokens import api_token_owner_id, api_token_verify

if TYPE_CHECKING:
    # Types only: DRF's settings import this module while rest_framework loads.
    from django.contrib.auth.models import User
    from rest_framework.request import Request

    from audit_app.models import ApiToken

_KEYWORDS = (b"token", b"bearer")


class HashedTokenAuthentication(BaseAuthentication):
    keyword = "Token"

    def authenticate(self, request: Request) -> tuple[User, ApiToken] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() not in _KEYWORDS:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed(
                "Invalid token header: expected 'Token <key>' with no spaces in the key."
            )
        try:
            key = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Invalid token: not ASCII.") from None
        token = api_token_verify(key=key)
        if token is not None:
            return token.user, token
        owner_id = api_token_owner_id(key=key)
        account_key = token_account_key(owner_id) if owner_id is not None else None
        address_key = token_address_key(client_address(request))
        lock = failure_lock(account_key=account_key, address_key=address_key)
        if lock is not None:
            where = "for this token" if lock.on_account else "from this address"
            raise exceptions.Throttled(
                wait=lock.retry_after, detail=f"Too many invalid tokens {where}."
            )
        failure_record(account_key=account_key, address_key=address_key)
        raise exceptions.AuthenticationFailed("Invalid or revoked token.")

    def authenticate_header(self, request: Request) -> str:
        return self.keyword
