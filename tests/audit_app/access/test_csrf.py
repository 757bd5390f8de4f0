"""Every HTML form refuses a POST without its CSRF token; the page renders the token."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

FORM_POSTS = [
    "/uploads/new/",
    "/uploads/1/delete/",
    "/recommendations/1/decision/",
    "/workloads/1/class/",
    "/benchmarks/",
    "/accounts/logout/",
]


@pytest.mark.parametrize("path", FORM_POSTS)
def test_post_without_token_is_refused(path: str, admin_user: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    response = client.post(path, {})
    assert response.status_code == 403
    assert b"CSRF" in response.content


def test_login_form_needs_its_token() -> None:
    client = Client(enforce_csrf_checks=True)
    refused = client.post("/accounts/login/", {"username": "x", "password": "y"})
    assert refused.status_code == 403


@pytest.mark.parametrize("path", ["/uploads/new/", "/benchmarks/", "/accounts/login/"])
def test_forms_carry_a_token(path: str, engineer_user: Any) -> None:
    client = Client()
    if path != "/accounts/login/":
        client.force_login(engineer_user)
    assert 'name="csrfmiddlewaretoken"' in client.get(path).content.decode()
