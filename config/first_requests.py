"""A web server's first requests, served by the process itself before it takes any: the sign-in
form and the pages and API reads visitors open first.

A process builds a good deal on its first request to each view and keeps it: the models' field
and relation caches, the URL patterns' compiled expressions, the modules Django and DRF import
by name on first use, the serializers' and pages' code paths. With gunicorn's ``--preload``,
config.wsgi serves these requests in the master, before it forks, so every worker starts with
all of it built and shared, instead of building it while the first visitors wait: a server's
first second is when most users arrive at once (`make load`: 50 within 7 ms).

A worker's first ``/api/v1/workloads/<id>/`` costs less than half the CPU when the master has
served it once; `docs/performance.md` has the paired figures.

The sign-in form goes through the whole WSGI application, its middleware included, as an
anonymous visitor would. The other reads call their views directly, as a superuser that exists
only in memory (no row, no session saved, nothing written): no request from outside can reach
that path. Each detail page uses the first row of its table, and is left out when the table is
empty. A request that fails is logged, and the server starts all the same.
``WARM_RESULTS_ON_START=false`` turns these requests off with the results cache's warm-up.
"""

from __future__ import annotations

import io
import logging
import sys
from functools import partial
from importlib import import_module
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.cache import caches
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest
from django.db import DatabaseError, connections
from django.urls import resolve, reverse

if TYPE_CHECKING:
    from collections.abc import Callable

    from django.contrib.auth.models import User
    from django.db.models import Model

logger = logging.getLogger(__name__)

# Through the whole application, signed out.
ANONYMOUS = ("login",)
# (URL name, the model whose first row a detail route takes, or None).
SIGNED_IN: tuple[tuple[str, str | None], ...] = (
    ("overview", None),
    ("workloads", None),
    ("workload-detail", "audit_app.Workload"),
    ("recommendations", None),
    ("recommendation-detail", "audit_app.Recommendation"),
    ("reconciliation", None),
    ("uploads", None),
    ("upload-detail", "audit_app.Upload"),
    ("benchmarks", None),
    ("benchmark-run", "benchmarks_app.BenchmarkRun"),
    ("gate", "benchmarks_app.Gate"),
    ("api-me", None),
    ("api-spend", None),
    ("api-workloads", None),
    ("api-workload-detail", "audit_app.Workload"),
    ("api-recommendations", None),
    ("api-recommendation-detail", "audit_app.Recommendation"),
    ("api-reconciliation", None),
    ("api-pools", None),
    ("api-uploads", None),
    ("api-upload-detail", "audit_app.Upload"),
    ("api-benchmark-runs", None),
    ("api-benchmark-run-detail", "benchmarks_app.BenchmarkRun"),
    ("api-gate-detail", "benchmarks_app.Gate"),
    ("api-audit-events", None),
)


def serve_first_requests(application: WSGIHandler) -> dict[str, int]:
    """Serve the first requests in this process; the status of each, by path (0: it raised).
    Nothing is served with ``WARM_RESULTS_ON_START`` off, with no host allowed, or when the
    database cannot be read (not there or not migrated yet: one warning). The database
    connections it opened are closed and the throttles' counts it left are cleared: with
    --preload this runs in the master, whose workers must share neither."""
    statuses: dict[str, int] = {}
    host = _host()
    if not settings.WARM_RESULTS_ON_START or host is None:
        return statuses
    try:
        try:
            signed_in = [path for name, model in SIGNED_IN if (path := _path(name, model))]
        except DatabaseError as error:
            logger.warning("first requests not served: %s", error)
            return statuses
        for path in [reverse(name) for name in ANONYMOUS]:
            statuses[path] = _attempt(path, partial(_through, application, path, host))
        user = _superuser_in_memory()
        for path in signed_in:
            statuses[path] = _attempt(path, partial(_view, path, user, host))
    finally:
        connections.close_all()
        caches["default"].clear()
    return statuses


def _attempt(path: str, serve: Callable[[], int]) -> int:
    try:
        status = serve()
    except Exception:
        logger.warning(
            "first request %s failed; the server starts all the same", path, exc_info=True
        )
        return 0
    if status != 200:
        logger.warning("first request %s answered %s", path, status)
    return status


def _host() -> str | None:
    """A host name the server accepts: the first one ALLOWED_HOSTS names (a subdomain pattern
    names its domain), else localhost, which "*" and Django's own default under DEBUG accept;
    None when ALLOWED_HOSTS is empty without DEBUG (the server then accepts no request)."""
    allowed = settings.ALLOWED_HOSTS
    if not allowed and not settings.DEBUG:
        return None
    named = [h.lstrip(".") for h in allowed if h.lstrip(".") not in ("", "*")]
    return named[0] if named else "localhost"


def _environ(path: str, host: str) -> dict[str, object]:
    return {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": host,
        "SERVER_PORT": "443",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": host,
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.url_scheme": "https",  # as behind TLS: no redirect to it
        "wsgi.input": io.BytesIO(),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
    }


def _through(application: WSGIHandler, path: str, host: str) -> int:
    statuses: list[str] = []

    def start_response(
        status: str, headers: object, exc_info: object = None
    ) -> Callable[..., None]:
        statuses.append(status)
        return lambda _data: None

    body = application(_environ(path, host), start_response)
    try:
        b"".join(body)
    finally:
        getattr(body, "close", lambda: None)()
    return int(statuses[0].split()[0])


def _superuser_in_memory() -> User:
    from django.contrib.auth import get_user_model

    return get_user_model()(
        username="first-requests", is_active=True, is_staff=True, is_superuser=True
    )


def _path(name: str, model: str | None) -> str | None:
    if model is None:
        return reverse(name)
    from django.apps import apps

    table: type[Model] = apps.get_model(model)
    pk = table._default_manager.order_by("pk").values_list("pk", flat=True).first()
    return None if pk is None else reverse(name, args=[pk])


def _view(path: str, user: User, host: str) -> int:
    request = WSGIRequest(_environ(path, host))
    request.user = user
    request.session = import_module(settings.SESSION_ENGINE).SessionStore()
    match = resolve(path)
    request.resolver_match = match
    response = match.func(request, *match.args, **match.kwargs)
    if callable(getattr(response, "render", None)):
        response.render()  # a template's or DRF's response renders when served
    return int(response.status_code)
