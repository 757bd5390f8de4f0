"""Django's error views for 404 and 400 outside any API view: under the API's prefixes they answer
in the API's one JSON shape, ``{"detail": ..., "errors": {}}``; anywhere else they are the site's
pages. An API view's own errors never come here (`audit_app.api.errors`); the one page under
`/api/` (the API docs) refuses with the site's 403 page, which says which roles open it."""

from __future__ import annotations

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

from audit_app.api.errors import body_too_large

# The API (`api/`) and the OTLP receiver's default path (`v1/traces`).
API_PREFIXES = ("/api/", "/v1/")


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIXES)


def _json(detail: str, status: int) -> JsonResponse:
    return JsonResponse({"detail": detail, "errors": {}}, status=status)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return _json("Not found.", 404)
    return defaults.page_not_found(request, exception)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """A request Django refused before any view (a body over DATA_UPLOAD_MAX_MEMORY_SIZE read
    outside an API view, a malformed header, ...)."""
    if _is_api(request):
        if isinstance(exception, RequestDataTooBig):
            too_large = body_too_large()
            return _json(str(too_large.detail), too_large.status_code)
        return _json("Bad request.", 400)
    return defaults.bad_request(request, exception)
