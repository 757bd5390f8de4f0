"""The Server-Timing header (audit_app.lib.middleware.ServerTimingMiddleware)."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.test import override_settings

from audit_app.lib.middleware import ServerTimingMiddleware

pytestmark = pytest.mark.django_db

HEADER = re.compile(r'^cpu;dur=([0-9.]+), db;dur=([0-9.]+);desc="(\d+) queries"$')


def _view_with(queries: int, spin_s: float) -> Any:
    def view(request: HttpRequest) -> HttpResponse:
        for _ in range(queries):
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
        deadline = time.thread_time() + spin_s
        while time.thread_time() < deadline:  # CPU work, counted by thread_time
            pass
        return HttpResponse("ok")

    return view


@override_settings(SERVER_TIMING=True)
def test_the_header_counts_the_queries_and_the_cpu_time() -> None:
    response = ServerTimingMiddleware(_view_with(3, 0.02))(HttpRequest())
    match = HEADER.match(response["Server-Timing"])
    assert match, response["Server-Timing"]
    cpu_ms, db_ms, queries = float(match[1]), float(match[2]), int(match[3])
    assert queries == 3  # the three SELECT 1 above
    assert cpu_ms >= 20.0  # the view spun 20 ms of this thread's CPU time
    assert 0.0 <= db_ms < 1000.0


@override_settings(SERVER_TIMING=True)
def test_time_asleep_is_not_cpu_time() -> None:
    def sleepy(request: HttpRequest) -> HttpResponse:
        time.sleep(0.2)
        return HttpResponse("ok")

    response = ServerTimingMiddleware(sleepy)(HttpRequest())
    match = HEADER.match(response["Server-Timing"])
    assert match and float(match[1]) < 100.0  # 200 ms asleep, a few ms of CPU at most
    assert int(match[3]) == 0


def test_off_by_default_no_header(client: Any, finops_user: Any) -> None:
    client.force_login(finops_user)
    response = client.get("/uploads/")
    assert response.status_code == 200
    assert "Server-Timing" not in response


@override_settings(SERVER_TIMING=True)
def test_a_real_page_carries_the_header(client: Any, finops_user: Any) -> None:
    client.force_login(finops_user)
    response = client.get("/uploads/")
    assert response.status_code == 200
    match = HEADER.match(response["Server-Timing"])
    assert match and int(match[3]) >= 1  # at least the session and user lookups
