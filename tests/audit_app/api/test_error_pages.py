"""Django's own 404 / 400 under the API's paths answer in the API's JSON shape; pages keep
theirs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.exceptions import RequestDataTooBig
from django.test import Client, RequestFactory

from audit_app.api.error_pages import bad_request

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/api/v1/no-such-thing/", "/api/nope", "/v1/logs"])
def test_an_unknown_api_path_is_a_json_404(path: str, engineer_user: Any) -> None:
    client = Client()
    client.force_login(engineer_user)
    response = client.get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "Not found.", "errors": {}}


def test_an_unknown_page_is_still_the_html_404(engineer_user: Any) -> None:
    client = Client()
    client.force_login(engineer_user)
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_a_body_refused_before_any_api_view_is_a_json_413_naming_the_limit(
    settings: Any,
) -> None:
    request = RequestFactory().post("/api/v1/uploads/")
    response = bad_request(request, RequestDataTooBig("too big"))
    assert response.status_code == 413
    assert json.loads(response.content)["detail"] == (
        f"The request body is larger than the limit of {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} "
        "bytes (DATA_UPLOAD_MAX_MEMORY_SIZE)."
    )
    page = bad_request(RequestFactory().post("/uploads/"), RequestDataTooBig("too big"))
    assert page.status_code == 400 and page["Content-Type"].startswith("text/html")
