"""DRF authentication by API token (``Authorization: Token <key>`` or ``Bearer <key>``)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.cache import cache
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from audit_app.services.tokens import api_token_verify

_KEYWORDS = (b"token", b"bearer")
FAILURE_WINDOW_SECONDS = 60


def _client_address(request: Any) -> str:
    return str(request.META.get("REMOTE_ADDR", "unknown"))


def failures_over_limit(key: str) -> bool:
    """True once `key` has failed AUTH_FAILURES_PER_MINUTE times in the current window."""
    return int(cache.get(f"auth-failures:{key}", 0)) >= settings.AUTH_FAILURES_PER_MINUTE


def record_failure(key: str) -> None:
    cache_key = f"auth-failures:{key}"
    if not cache.add(cache_key, 1, FAILURE_WINDOW_SECONDS):
        try:
            cache.incr(cache_key)
        except ValueError:  # expired between add and incr
            cache.add(cache_key, 1, FAILURE_WINDOW_SECONDS)


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
        client = _client_address(request)
        if failures_over_limit(f"api-token:{client}"):
            raise exceptions.Throttled(
                wait=FAILURE_WINDOW_SECONDS,
                detail=("Too many invalid tokens from this address; try again in a minute."),
            )
        token = api_token_verify(key=key)
        if token is None:
            record_failure(f"api-token:{client}")
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        return token.user, token

    def authenticate_header(self, request: Any) -> str:
        return self.keyword
