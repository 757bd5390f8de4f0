"""Headers the framework does not set: a strict content security policy, and (when switched
on) the server's CPU and database time per request.

Every script is a file served by this site (charts read their data from JSON script tags, not
inline code), so scripts are limited to 'self'. Styles allow inline attributes because plotly
positions its SVG with style attributes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        policy = settings.CONTENT_SECURITY_POLICY
        if policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = policy
        return response


class ServerTimingMiddleware:
    """``Server-Timing: cpu;dur=<ms>, db;dur=<ms>;desc="<n> queries"`` on every answer, when
    the SERVER_TIMING setting is on (`make load` turns it on to report CPU per request and
    endpoint; browsers show it in their developer tools).

    ``cpu`` is this thread's CPU time for the request (``time.thread_time``: other threads of a
    gthread worker are not counted, waits on the database are not CPU), ``db`` the wall time
    spent in queries and their count. Off by default: the figures describe the server's work,
    which is no business of a client's in production."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not settings.SERVER_TIMING:
            return self.get_response(request)
        queries = _QueryTimer()
        cpu0 = time.thread_time()
        with connection.execute_wrapper(queries):
            response = self.get_response(request)
        cpu_ms = (time.thread_time() - cpu0) * 1000
        db_ms = queries.seconds * 1000
        response["Server-Timing"] = (
            f'cpu;dur={cpu_ms:.1f}, db;dur={db_ms:.1f};desc="{queries.count} queries"'
        )
        return response


class _QueryTimer:
    """A database execute wrapper counting queries and their wall time."""

    def __init__(self) -> None:
        self.count = 0
        self.seconds = 0.0

    def __call__(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.count += 1
            self.seconds += time.perf_counter() - started
