"""One JSON error format for the whole API: ``{"detail": "...", "errors": {field: [...]}}``.

Domain errors (`audit_app.lib.errors.DomainError`) are mapped here and only here: each kind
to its status code, the field at fault to the error's key, and the error's facts added to the
body. API views let them through; they catch nothing a service raises."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig, TooManyFieldsSent
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from audit_app.lib.errors import DomainError, ErrorKind


class Conflict(exceptions.APIException):
    status_code = 409
    default_detail = "Conflict."
    default_code = "conflict"


class BodyTooLarge(exceptions.APIException):
    """413: the request body is over the size the server reads (DATA_UPLOAD_MAX_MEMORY_SIZE)."""

    status_code = 413
    default_detail = "The request body is too large."
    default_code = "body_too_large"


def body_too_large() -> BodyTooLarge:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return BodyTooLarge(
        f"The request body is larger than the limit of {limit:,} bytes "
        "(DATA_UPLOAD_MAX_MEMORY_SIZE)."
    )


class InsufficientStorage(exceptions.APIException):
    """507: the server has no room left to keep what was sent."""

    status_code = 507
    default_detail = "Insufficient storage."
    default_code = "insufficient_storage"


def _api_exception(exc: DomainError) -> exceptions.APIException:
    message = str(exc)
    if exc.kind is ErrorKind.INVALID:
        return exceptions.ValidationError({exc.field or "non_field_errors": [message]})
    if exc.kind is ErrorKind.FORBIDDEN:
        return exceptions.PermissionDenied(message)
    if exc.kind is ErrorKind.NOT_FOUND:
        return exceptions.NotFound(message)
    if exc.kind is ErrorKind.CONFLICT:
        return Conflict(message)
    if exc.kind is ErrorKind.BUSY:
        return exceptions.Throttled(wait=getattr(exc, "retry_after", None), detail=message)
    return InsufficientStorage(message)


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
    facts: dict[str, Any] = {}
    if isinstance(exc, DomainError):
        facts = exc.facts()
        exc = _api_exception(exc)
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, RequestDataTooBig):
        exc = body_too_large()
    elif isinstance(exc, TooManyFieldsSent):
        exc = exceptions.ValidationError(
            f"The request has more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,} fields "
            "(DATA_UPLOAD_MAX_NUMBER_FIELDS)."
        )
    response = drf_exception_handler(exc, context)
    if response is None or not isinstance(exc, exceptions.APIException):
        return response
    response.data = {**error_body(exc), **facts}
    return response
