"""config.first_requests: the sign-in form, pages and API reads a server serves itself before
its first visitor - every one answered 200 on demo data, nothing written, nothing kept that a
forked worker must not share, and a failure logged without stopping the server."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
from django.core.cache import caches
from django.core.handlers.wsgi import WSGIHandler
from django.core.management import call_command
from django.core.signals import request_finished, request_started
from django.db import ProgrammingError, close_old_connections, connections
from django.test import override_settings
from django.test.signals import template_rendered
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from audit_app.derived import derived_refresh
from audit_app.models import Recommendation, Upload, Workload
from benchmarks_app.models import BenchmarkRun, Gate
from config import first_requests
from config.first_requests import ANONYMOUS, SIGNED_IN, serve_first_requests

WRITES = ("INSERT", "UPDATE", "DELETE")


def _application() -> WSGIHandler:
    # What get_wsgi_application() returns, without its django.setup(), which would set logging
    # up again and drop the handler caplog listens with.
    return WSGIHandler()


@pytest.fixture
def demo(db: None, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Demo data, in the test's transaction. Closing the connections there would end it, so the
    close is recorded instead (the empty-tables test closes them for real), and the sign-in
    form's request leaves them open, as Django's test client does."""
    closed: list[str] = []
    monkeypatch.setattr(first_requests.connections, "close_all", lambda: closed.append("all"))
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    settings.RECOMMENDATION_MIN_SAVINGS_USD = 0  # a recommendation from a small demo, too
    with override_settings(DEBUG=True):
        call_command("seed_demo", "--days", "7", "--scale", "0.005", stdout=StringIO())
    derived_refresh(force=True)  # the recommendations, whatever the unit tests' settings
    for model in (Workload, Recommendation, Upload, BenchmarkRun, Gate):
        assert model.objects.exists(), model
    try:
        yield closed
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def _first(model: Any) -> int:
    return int(model.objects.order_by("pk").values_list("pk", flat=True)[0])


def test_every_first_request_answers_200_and_writes_nothing(demo: list[str]) -> None:
    sessions_before = _count("django_session")
    rendered: list[str] = []

    def record(sender: Any, template: Any, **_: Any) -> None:
        rendered.append(template.name)

    template_rendered.connect(record)
    try:
        with CaptureQueriesContext(connections["default"]) as queries:
            statuses = serve_first_requests(_application())
    finally:
        template_rendered.disconnect(record)
    workload, run = _first(Workload), _first(BenchmarkRun)
    assert len(statuses) == len(ANONYMOUS) + len(SIGNED_IN) == 26
    assert set(statuses.values()) == {200}
    assert statuses[reverse("login")] == 200
    assert statuses[f"/workloads/{workload}/"] == 200
    assert statuses[f"/api/v1/workloads/{workload}/"] == 200
    assert statuses[f"/api/v1/benchmark-runs/{run}/"] == 200
    assert statuses[f"/api/v1/gates/{_first(Gate)}/"] == 200
    assert statuses[f"/recommendations/{_first(Recommendation)}/"] == 200
    writes = [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().startswith(WRITES)]
    assert writes == []
    assert len(queries.captured_queries) > 50  # the views did query: they ran
    # The pages were rendered, as serving them would (a response is rendered after its view).
    assert {"registration/login.html", "audit/overview.html", "audit/workload_detail.html"} <= set(
        rendered
    )
    assert _count("django_session") == sessions_before


def _count(table: str) -> int:
    with connections["default"].cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table}")  # noqa: S608 - a fixed table name
        return int(cursor.fetchone()[0])


def test_it_closes_the_connections_and_drops_the_throttle_counts_for_the_workers(
    demo: list[str],
) -> None:
    throttles = caches["default"]
    throttles.set("from-before", 1)
    statuses = serve_first_requests(_application())
    assert set(statuses.values()) == {200}
    assert demo == ["all"]
    # The API views counted the in-memory user's requests in DRF's throttle cache.
    assert throttles.get("throttle_user_None") is None
    assert throttles.get("from-before") is None


def test_with_empty_tables_the_detail_routes_are_left_out_and_no_connection_stays_open(
    transactional_db: None,
) -> None:
    statuses = serve_first_requests(_application())
    expected = [reverse(name) for name in ANONYMOUS] + [
        reverse(name) for name, model in SIGNED_IN if model is None
    ]
    assert list(statuses) == expected
    assert set(statuses.values()) == {200}
    assert connections["default"].connection is None


def test_a_failing_request_is_logged_and_the_others_are_served(
    demo: list[str], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real_view = first_requests._view

    def view(path: str, *args: Any) -> int:
        if path == "/api/v1/pools/":
            raise RuntimeError("pools broke")
        return real_view(path, *args)

    monkeypatch.setattr(first_requests, "_view", view)
    with caplog.at_level(logging.WARNING, logger="config.first_requests"):
        statuses = serve_first_requests(_application())
    assert statuses["/api/v1/pools/"] == 0
    assert {s for path, s in statuses.items() if path != "/api/v1/pools/"} == {200}
    assert "first request /api/v1/pools/ failed" in caplog.text
    assert "pools broke" in caplog.text


@pytest.mark.parametrize(
    ("allowed", "debug", "host"),
    [
        (["app.example.com", "localhost"], False, "app.example.com"),
        ([".example.com"], False, "example.com"),
        (["*"], False, "localhost"),
        ([], True, "localhost"),
        ([], False, None),
    ],
)
def test_the_host_it_names_is_one_the_server_accepts(
    allowed: list[str], debug: bool, host: str | None
) -> None:
    with override_settings(ALLOWED_HOSTS=allowed, DEBUG=debug):
        assert first_requests._host() == host


@override_settings(ALLOWED_HOSTS=[], DEBUG=False)
def test_with_no_host_allowed_nothing_is_served(db: None) -> None:
    assert serve_first_requests(_application()) == {}


@override_settings(WARM_RESULTS_ON_START=False)
def test_switched_off_with_the_results_warm_up_nothing_is_served(db: None) -> None:
    assert serve_first_requests(_application()) == {}


def test_a_database_not_migrated_is_one_warning_and_nothing_served(
    db: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def no_table(name: str, model: str | None) -> str | None:
        if model is None:
            return reverse(name)
        raise ProgrammingError('relation "audit_app_workload" does not exist')

    monkeypatch.setattr(first_requests, "_path", no_table)
    with caplog.at_level(logging.WARNING, logger="config.first_requests"):
        assert serve_first_requests(_application()) == {}
    assert caplog.messages == [
        'first requests not served: relation "audit_app_workload" does not exist'
    ]
