"""The one mapping of domain errors to API responses: each kind's status code and body."""

from __future__ import annotations

import json
from typing import Any

import pytest

from audit_app.api.errors import exception_handler
from audit_app.lib.errors import DomainError, ErrorKind
from audit_app.lib.query_params import ParameterError


class _Kept(DomainError):
    kind = ErrorKind.CONFLICT

    def facts(self) -> dict[str, Any]:
        return {"gates": [3, 5]}


@pytest.mark.parametrize(
    ("error", "status", "body"),
    [
        (
            DomainError("A rejection needs a note saying why.", field="note"),
            400,
            {
                "detail": "note: A rejection needs a note saying why.",
                "errors": {"note": ["A rejection needs a note saying why."]},
            },
        ),
        (
            DomainError("Unreadable."),
            400,
            {"detail": "Unreadable.", "errors": {"non_field_errors": ["Unreadable."]}},
        ),
        (
            ParameterError("start", "start must be a date, not 'x'."),
            400,
            {
                "detail": "start: start must be a date, not 'x'.",
                "errors": {"start": ["start must be a date, not 'x'."]},
            },
        ),
        (
            DomainError("Only managers may decide.", kind=ErrorKind.FORBIDDEN),
            403,
            {"detail": "Only managers may decide.", "errors": {}},
        ),
        (
            DomainError("No workload 'x'.", kind=ErrorKind.NOT_FOUND, field="workload"),
            404,
            {"detail": "No workload 'x'.", "errors": {}},
        ),
        (
            DomainError("It is rejected already.", kind=ErrorKind.CONFLICT),
            409,
            {"detail": "It is rejected already.", "errors": {}},
        ),
        (
            _Kept("Gates keep it."),
            409,
            {"detail": "Gates keep it.", "errors": {}, "gates": [3, 5]},
        ),
        (
            DomainError("The disk is full.", kind=ErrorKind.NO_SPACE),
            507,
            {"detail": "The disk is full.", "errors": {}},
        ),
    ],
)
def test_each_kind_maps_to_one_status_and_the_house_body(
    error: DomainError, status: int, body: dict[str, Any]
) -> None:
    response = exception_handler(error, {})
    assert response is not None
    assert (response.status_code, response.data) == (status, body)


@pytest.mark.django_db
@pytest.mark.parametrize("auth", ["session", "token"])
@pytest.mark.parametrize("content_type", ["application/json", "application/x-www-form-urlencoded"])
def test_an_oversized_body_gets_the_json_error_naming_the_limit(
    auth: str, content_type: str, engineer_user: Any
) -> None:
    """A 3 MB acknowledge note: 413 in the API's JSON shape, not Django's HTML 400 page."""
    from django.conf import settings
    from django.test import Client

    from audit_app.access.tokens import api_token_issue
    from audit_app.models import Alert

    alert = Alert.objects.create(kind="anomaly", anomaly_key="k", message="m", details={})
    client = Client()
    headers: dict[str, str] = {}
    if auth == "session":
        client.force_login(engineer_user)
    else:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {api_token_issue(user=engineer_user).key}"
    note = "n" * (3 * 1024 * 1024)
    body = json.dumps({"note": note}) if content_type == "application/json" else f"note={note}"
    response = client.post(
        f"/api/v1/alerts/{alert.pk}/acknowledge/",
        data=body,
        content_type=content_type,
        **headers,
    )
    assert response.status_code == 413
    assert response["Content-Type"] == "application/json"
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    assert response.json() == {
        "detail": f"The request body is larger than the limit of {limit:,} bytes "
        "(DATA_UPLOAD_MAX_MEMORY_SIZE).",
        "errors": {},
    }
    alert.refresh_from_db()
    assert alert.acknowledged_at is None
