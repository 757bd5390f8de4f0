"""The OTLP/HTTP traces receiver: `POST /v1/traces`, and the same at `/api/v1/otlp/v1/traces`
(for a client given `/api/v1/otlp` as its base endpoint). An OpenTelemetry Collector's
`otlphttp` exporter or an SDK's OTLP/HTTP span exporter posts here unchanged.

Authentication is an API token only (`Authorization: Bearer <token>` or `Token <token>`):
exporters keep no session, and without session authentication no CSRF check applies. Only the
roles that may upload (and administrators) may send. DRF's request-rate throttles do not apply:
an exporter sends many small requests a minute, and the receiver's own limit is the backlog of
records waiting to land (`live.receive.LiveOverloaded`, 429 with Retry-After).

Every answer follows the OTLP specification: the ExportTraceServiceResponse on success (200,
partial success included), else a google.rpc.Status (`live.otlp_wire.status_body`) with 400
(malformed body), 401, 403, 405, 411 (a chunked body without Content-Length), 413 (body over
LIVE_MAX_REQUEST_BYTES, as sent or inflated), 415 (another content type or coding), 429
(backlog full) or 503 (database unreachable), the last two with Retry-After. The body is read
by the live receivers' `push_body.read_push_body`, from the request stream within the limit.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from audit_app.access.authentication import HashedTokenAuthentication
from audit_app.access.permissions import UPLOADER_ROLES, HasAnyRole
from audit_app.api.push_body import read_push_body
from audit_app.ingestion.live.otlp import otlp_receive
from audit_app.ingestion.live.otlp_wire import (
    JSON,
    PROTOBUF,
    MalformedExport,
    media_type,
    status_body,
)
from audit_app.ingestion.live.receive import LiveOverloaded

logger = logging.getLogger(__name__)

# Seconds a client waits before retrying when the database cannot be reached.
DATABASE_RETRY_AFTER_SECONDS = 30
NO_CREDENTIALS = (
    "No API token: send `Authorization: Bearer <token>` (or `Token <token>`) with a token of a "
    "user who may upload."
)


class MayUpload(HasAnyRole):
    message = (
        "Your account has no role that may send traces: ask an administrator for the finops or "
        "engineer role."
    )


class RequestEncoding(BaseContentNegotiation):
    """The answer's encoding is the request's (OTLP says so); Accept does not choose it."""

    def select_parser(self, request: Request, parsers: Any) -> None:
        return None

    def select_renderer(
        self, request: Request, renderers: Any, format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer: BaseRenderer = renderers[0]
        return renderer, renderer.media_type


def _refusal(exc: Exception, response: Any) -> tuple[str, str]:
    """(message, field at fault) of a refusal DRF answered (401, 403, 405, 411, 413, 415)."""
    if isinstance(exc, exceptions.NotAuthenticated):
        return NO_CREDENTIALS, ""
    detail = exc.detail if isinstance(exc, exceptions.APIException) else response.data["detail"]
    if isinstance(detail, dict):
        field, messages = next(iter(detail.items()))
        return str(messages[0] if isinstance(messages, list) else messages), str(field)
    if isinstance(detail, list):
        return str(detail[0]), ""
    return str(detail), ""


def _status_response(
    status: int,
    message: str,
    *,
    content_type: str | None,
    field: str = "",
    retry_after: int | None = None,
) -> HttpResponse:
    response = HttpResponse(
        status_body(status=status, message=message, content_type=content_type, field=field),
        status=status,
        content_type=content_type or JSON,
    )
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response


class OtlpTracesApi(APIView):
    """Receive an OTLP/HTTP trace export (protobuf or JSON, optionally gzip)."""

    authentication_classes = [HashedTokenAuthentication]
    permission_classes = [MayUpload]
    roles_by_method = {"*": UPLOADER_ROLES}
    throttle_classes: list[Any] = []
    parser_classes: list[Any] = []
    content_negotiation_class = RequestEncoding

    @extend_schema(
        request={PROTOBUF: OpenApiTypes.BINARY, JSON: OpenApiTypes.OBJECT},
        responses={
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="ExportTraceServiceResponse"),
            400: OpenApiResponse(OpenApiTypes.OBJECT, description="google.rpc.Status"),
            413: OpenApiResponse(OpenApiTypes.OBJECT, description="google.rpc.Status"),
            415: OpenApiResponse(OpenApiTypes.OBJECT, description="google.rpc.Status"),
            429: OpenApiResponse(OpenApiTypes.OBJECT, description="google.rpc.Status"),
            503: OpenApiResponse(OpenApiTypes.OBJECT, description="google.rpc.Status"),
        },
        description=(
            "An OTLP/HTTP ExportTraceServiceRequest. Spans with gen_ai.* attributes are kept "
            "and land within a landing interval; the answer's partial_success counts refused "
            "spans (and says which) and spans ignored for carrying no gen_ai.* attribute."
        ),
    )
    def post(self, request: Request) -> HttpResponse:
        content_type = media_type(request.content_type)
        if content_type is None:
            raise exceptions.UnsupportedMediaType(
                request.content_type,
                detail=(
                    f"Content-Type {request.content_type!r} is not supported: send {PROTOBUF} "
                    f"or {JSON}."
                ),
            )
        answer = otlp_receive(
            payload=read_push_body(request, limit=settings.LIVE_MAX_REQUEST_BYTES),
            content_type=content_type,
            user=request.user,
        )
        return HttpResponse(answer.body, content_type=content_type)

    # An OTLP answer is protobuf or JSON bytes, not a DRF Response; dispatch takes either.
    def handle_exception(self, exc: Exception) -> HttpResponse:  # type: ignore[override]
        """Every refusal as a google.rpc.Status in the request's encoding."""
        content_type = media_type(self.request.META.get("CONTENT_TYPE", ""))
        if isinstance(exc, MalformedExport):
            return _status_response(400, str(exc), content_type=content_type, field=exc.field)
        if isinstance(exc, LiveOverloaded):
            return _status_response(
                429, str(exc), content_type=content_type, retry_after=exc.retry_after
            )
        if isinstance(exc, OperationalError | InterfaceError):
            logger.warning("OTLP receiver: the database cannot be reached: %s", exc)
            return _status_response(
                503,
                "The database cannot be reached; nothing was kept. Retry after "
                f"{DATABASE_RETRY_AFTER_SECONDS} s.",
                content_type=content_type,
                retry_after=DATABASE_RETRY_AFTER_SECONDS,
            )
        response = super().handle_exception(exc)  # DRF's status and headers (401, 403, 405...)
        message, field = _refusal(exc, response)
        answer = _status_response(
            response.status_code, message, content_type=content_type, field=field
        )
        for header in ("WWW-Authenticate", "Retry-After"):
            if header in response:
                answer[header] = response[header]
        return answer
