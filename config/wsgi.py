"""WSGI entry point (gunicorn config.wsgi)."""

from __future__ import annotations

import gc
import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.wsgi import get_wsgi_application

if TYPE_CHECKING:
    from django.urls import URLResolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")

application = get_wsgi_application()

# What pages and API answers import on first use (the figures, the benchmark metrics, the
# classifier's features): a management command or a worker that needs none of it starts
# without it (tests/config/test_startup_imports.py), but a web worker that has just forked
# loads it here, before it takes its first request, so no visitor waits ~1 s for pandas.
PAGE_MODULES = (
    "pandas",
    "plotly.graph_objects",
    "audit_app.reporting.charts",
    "audit_app.workloads.features",
    "benchmarks_app.metrics",
    "benchmarks_app.selectors",
)


def _compile_templates() -> None:
    """Compile every project and app template into the cached loader, as the first request to
    each page would otherwise do under load."""
    from django.template import engines
    from django.template.utils import get_app_template_dirs

    engine = engines["django"]
    directories = [Path(d) for d in engine.dirs] + [
        Path(d) for d in get_app_template_dirs("templates")
    ]
    for directory in directories:
        for path in sorted(directory.rglob("*.html")):
            engine.get_template(path.relative_to(directory).as_posix())


def _populate_resolvers(resolver: URLResolver) -> None:
    """Build the reverse() tables of `resolver` and of every include in it, for the active
    language, as the first `reverse()` would. Django guards that build per thread, not per
    process: 30 first requests at once on a fresh worker built it 30 times over (some 40 ms of
    CPU each), which held every answer of a load test's first seconds."""
    from django.urls import URLResolver as Resolver

    resolver.reverse_dict  # noqa: B018 - built on first access
    for pattern in resolver.url_patterns:
        if isinstance(pattern, Resolver):
            _populate_resolvers(pattern)


def _warm_results() -> None:
    """Fill the results cache for the default windows before the first request
    (`warm_on_start`): after a restart with a cold cache, a load test's first second had
    50 requests queueing behind the few that computed spend, pools and workloads (0.7 s each).
    The connections it opened are closed: with gunicorn's --preload this runs in the master,
    whose workers must not share its database socket."""
    from django.db import connections

    from audit_app.derived import warm_on_start

    try:
        warm_on_start()
    finally:
        connections.close_all()


def _load_and_freeze() -> None:
    """Import every view and what pages use now (the URLconf is otherwise loaded by the first
    request), compile the templates, fill the results cache, serve the first requests
    (config.first_requests), then move everything allocated so far - Django, pandas, numpy,
    plotly and the app's modules - out of the garbage collector's reach. Full collections then
    scan only what requests allocate: measured on the scale benchmark, they had put a cached
    page's p95 at 4x its p50."""
    from django.urls import get_resolver
    from django.utils import translation

    from config.first_requests import serve_first_requests

    with translation.override(settings.LANGUAGE_CODE):
        _populate_resolvers(get_resolver())
    for name in PAGE_MODULES:
        importlib.import_module(name)
    _compile_templates()
    _warm_results()
    serve_first_requests(application)
    gc.collect()
    gc.freeze()


_load_and_freeze()
