"""DRF authentication by API token (``Authorization: Token <key>`` or ``Bearer <key>``)."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from audit_app.services.tokens import api_token_verify

_KEYWORDS = (b"token", b"bearer")


class HashedTokenAuthentication(BaseAuthentication):
    keyword = "Token"

    def authenticate(self, request: Any) -> tuple[Any, Any] | None:
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
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        return token.user, token

    def authenticate_header(self, request: Any) -> str:
        return self.keyword
