"""One JSON error format for the whole API: ``{"detail": "...", "errors": {field: [...]}}``."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from audit_app.lib.query_params import ParameterError


def _as_messages(value: Any) -> list[str]:
    if isinstance(value, list | tuple):
        messages: list[str] = []
        for item in value:
            messages.extend(_as_messages(item))
        return messages
    if isinstance(value, dict):
        return [f"{key}: {msg}" for key, inner in value.items() for msg in _as_messages(inner)]
    return [str(value)]


def error_body(exc: exceptions.APIException) -> dict[str, Any]:
    detail = exc.detail
    if isinstance(exc, exceptions.ValidationError):
        if isinstance(detail, dict):
            errors = {str(field): _as_messages(msgs) for field, msgs in detail.items()}
        else:
            errors = {"non_field_errors": _as_messages(detail)}
        first_field, first_messages = next(iter(errors.items()), ("", [""]))
        summary = first_messages[0] if first_messages else "Invalid input."
        if first_field and first_field != "non_field_errors":
            summary = f"{first_field}: {summary}"
        return {"detail": summary, "errors": errors}
    return {"detail": " ".join(_as_messages(detail)), "errors": {}}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ParameterError):
        exc = exceptions.ValidationError({exc.field: [str(exc)]})
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None or not isinstance(exc, exceptions.APIException):
        return response
    response.data = error_body(exc)
    return response
