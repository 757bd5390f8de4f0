"""Chromium: single sign-on through a real OpenID provider's authorization form; the roles
follow the provider's groups claim from one sign-in to the next."""

from __future__ import annotations

from typing import Any

import pytest

from audit_app.access.oidc_discovery import issuer_forget
from config.settings.base import csp_allowing_issuer
from tests.support.oidc_provider import MockProvider, oidc_provider  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def sso_browser(settings: Any, oidc_provider: MockProvider) -> Any:  # noqa: F811
    settings.OIDC_ISSUER = oidc_provider.issuer
    settings.OIDC_CLIENT_ID = "spend-audit"
    settings.OIDC_CLIENT_SECRET = "spend-audit-secret"
    settings.OIDC_ROLE_MAP = "finops-team:finops,ml-platform:engineer,eng-managers:manager"
    settings.CONTENT_SECURITY_POLICY = csp_allowing_issuer(
        settings.CONTENT_SECURITY_POLICY, oidc_provider.issuer
    )
    issuer_forget()
    yield oidc_provider
    issuer_forget()


def _me(page: Any, base: str) -> Any:
    return page.request.get(base + "/api/v1/me/", headers={"Accept": "application/json"}).json()


def test_a_finops_user_signs_in_through_the_provider_and_the_next_sign_in_follows_the_claim(
    browser_page: Any, live_server: Any, sso_browser: MockProvider
) -> None:
    provider, page, base = sso_browser, browser_page, live_server.url
    provider.put_user(
        "fiona-sub",
        {"preferred_username": "fiona", "email": "fiona@example.com", "groups": ["finops-team"]},
    )
    page.goto(base + "/")
    page.get_by_role("link", name="Sign in with SSO").click()
    page.wait_for_url(provider.issuer + "/oauth2/authorize*")
    page.get_by_label("Subject").fill("fiona-sub")
    page.get_by_role("button", name="Authorize", exact=True).click()
    page.wait_for_url(base + "/")
    assert page.locator("h1").inner_text() == "Overview"
    assert page.locator(".account .roles").inner_text() == "(finops)"
    assert _me(page, base)["roles"] == ["finops"]

    # The provider moves her to ml-platform; signing out ends its session too.
    provider.put_user(
        "fiona-sub",
        {"preferred_username": "fiona", "email": "fiona@example.com", "groups": ["ml-platform"]},
    )
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(provider.issuer + "/oauth2/end_session*")
    page.get_by_role("button", name="End session").click()
    page.wait_for_url(base + "/accounts/login/")

    page.get_by_role("link", name="Sign in with SSO").click()
    page.get_by_role("button", name="Authorize as fiona-sub").click()
    page.wait_for_url(base + "/")
    assert page.locator(".account .roles").inner_text() == "(engineer)"
    assert _me(page, base)["roles"] == ["engineer"]
