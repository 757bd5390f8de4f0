"""The health checks (audit_app.lib.health) and /healthz: up, broker down, database down."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import OperationalError
from django.test import Client

from audit_app.lib.health import HealthReport, check_database
from config.celery import app as celery_app


@pytest.mark.django_db
def test_healthz_ok_when_database_and_broker_answer(client: Client) -> None:
    # The test settings use the embedded broker (SQLite via SQLAlchemy), or Redis when
    # CELERY_BROKER_URL is set: either way a real connection is made.
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"database": "ok", "broker": "ok"}
    assert "no-store" in response["Cache-Control"]


@pytest.mark.django_db
def test_healthz_503_names_the_broker_when_it_is_down(client: Client, monkeypatch: Any) -> None:
    # Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
    # Celery copies broker_url into broker_write_url when configured, so set both.
    # Patch the write URL first: read before broker_url changes, its saved value is the real one.
    monkeypatch.setattr(celery_app.conf, "broker_write_url", "redis://127.0.0.1:9/0")
    monkeypatch.setattr(celery_app.conf, "broker_url", "redis://127.0.0.1:9/0")
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["database"] == "ok"
    assert body["broker"].startswith("down: ")


@pytest.mark.django_db
def test_healthz_503_names_the_database_when_it_is_down(client: Client, monkeypatch: Any) -> None:
    from django.db import connection

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("connection refused")

    monkeypatch.setattr(connection, "cursor", refuse)
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"database": "down: OperationalError", "broker": "ok"}


def test_healthz_only_answers_get(client: Client) -> None:
    assert client.post("/healthz").status_code == 405


@pytest.mark.parametrize(
    ("database", "broker", "healthy"),
    [
        ("ok", "ok", True),
        ("ok", "down: OperationalError", False),
        ("down: OperationalError", "ok", False),
    ],
)
def test_a_report_is_healthy_only_when_both_answer(
    database: str, broker: str, healthy: bool
) -> None:
    report = HealthReport(database=database, broker=broker)
    assert report.healthy is healthy
    assert report.as_dict() == {"database": database, "broker": broker}


@pytest.mark.django_db
def test_check_database_names_the_error_when_the_query_fails(monkeypatch: Any) -> None:
    from django.db import connection

    assert check_database() == "ok"

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("connection refused")

    monkeypatch.setattr(connection, "cursor", refuse)
    assert check_database() == "down: OperationalError"
