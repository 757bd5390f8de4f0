"""The one mapping of domain errors to API responses: each kind's status code and body."""

from __future__ import annotations

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
