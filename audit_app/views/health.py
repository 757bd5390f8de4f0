"""/healthz: 200 when the database and broker answer, 503 naming what is down."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from audit_app.lib.health import health_report


@login_not_required
@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    report = health_report()
    return JsonResponse(report.as_dict(), status=200 if report.healthy else 503)
