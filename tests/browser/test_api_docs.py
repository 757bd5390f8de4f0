"""Chromium: the Swagger UI works under the strict content security policy (no inline code)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import TEST_PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_swagger_ui_renders_with_the_csp(
    browser_page: Any, live_server: Any, engineer_user: Any
) -> None:
    page = browser_page
    violations: list[str] = []
    page.on(
        "console",
        lambda msg: violations.append(msg.text) if "Content Security Policy" in msg.text else None,
    )
    page.goto(f"{live_server.url}/accounts/login/?next=/api/docs/")
    page.get_by_label("Username").fill(engineer_user.username)
    page.get_by_label("Password").fill(TEST_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_selector(".swagger-ui .information-container", timeout=20_000)
    assert "Inference Spend Audit API" in page.locator(".swagger-ui .title").inner_text()
    assert violations == []
