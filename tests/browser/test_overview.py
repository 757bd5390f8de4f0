"""Chromium: a demo user logs in and sees the overview chart drawn by plotly.js."""

from __future__ import annotations

from typing import Any

import pytest

from audit_app.demo.seed import demo_users_ensure
from tests.factories import UploadFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_demo_user_logs_in_and_sees_the_chart(browser_page: Any, live_server: Any) -> None:
    accounts = {a.username: a for a in demo_users_ensure()}
    UploadFactory()
    page = browser_page
    page.goto(live_server.url + "/")
    assert "/accounts/login/" in page.url

    page.get_by_label("Username").fill("finops")
    page.get_by_label("Password").fill(accounts["finops"].password)
    page.get_by_role("button", name="Log in").click()

    page.wait_for_selector("#uploads-per-day .main-svg")
    assert page.locator("h1").inner_text() == "Overview"
    assert page.locator("#uploads-per-day[data-drawn='true']").count() == 1
    # One bar trace drawn for the one upload.
    assert page.locator("#uploads-per-day .barlayer .trace").count() == 1


def test_keyboard_user_can_skip_to_content(
    browser_page: Any, live_server: Any, finops_user: Any
) -> None:
    from tests.factories import TEST_PASSWORD

    page = browser_page
    page.goto(live_server.url + "/accounts/login/")
    page.get_by_label("Username").fill(finops_user.username)
    page.get_by_label("Password").fill(TEST_PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url(live_server.url + "/")
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.textContent")
    assert focused == "Skip to content"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
