"""Single sign-on tests run against a real OpenID provider process (tests/support/oidc_provider),
one per pytest process; `sso` configures the app for it, as the four variables would."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

from audit_app.access.oidc_discovery import issuer_forget
from tests.support.oidc_provider import MockProvider, authorize, oidc_provider  # noqa: F401

CLIENT_ID = "spend-audit"
ROLE_MAP = "finops-team:finops,ml-platform:engineer,eng-managers:manager,it-admins:admin"


@dataclass
class Sso:
    """The app configured for one issuer, and a way to sign in through it."""

    provider: MockProvider
    settings: Any

    def sign_in(self, client: Client, sub: str, **extra: Any) -> Any:
        """The whole flow as a browser makes it: start, the provider's form as ``sub``, the
        callback; the callback's answer."""
        start = client.get("/oidc/authenticate/", **extra)
        assert start.status_code == 302, start.content[:500]
        return client.get(authorize(start["Location"], sub), **extra)


@pytest.fixture
def sso(settings: Any, oidc_provider: MockProvider, db: Any) -> Iterator[Sso]:  # noqa: F811
    settings.OIDC_ISSUER = oidc_provider.issuer
    settings.OIDC_CLIENT_ID = CLIENT_ID
    settings.OIDC_CLIENT_SECRET = "spend-audit-secret"
    settings.OIDC_ROLE_MAP = ROLE_MAP
    settings.OIDC_ROLES_CLAIM = "groups"
    issuer_forget()
    yield Sso(provider=oidc_provider, settings=settings)
    issuer_forget()
