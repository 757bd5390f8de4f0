"""Helpers for tests that run a real Celery worker against the test database."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

from django.conf import settings
from django.db import connection

from config.celery import app as celery_app


def test_database_url() -> str:
    """A DATABASE_URL for the database this test run uses (the test database, not the real)."""
    params = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{params['NAME']}"
    user = quote(params.get("USER") or "", safe="")
    password = quote(params.get("PASSWORD") or "", safe="")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = f"{params['HOST'] or '127.0.0.1'}:{params['PORT'] or 5432}"
    return f"postgres://{auth}{host}/{params['NAME']}"


def worker_environment(broker_url: str) -> dict[str, str]:
    return {
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": "worker-under-test",
        "DATABASE_URL": test_database_url(),
        "DJANGO_MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "CELERY_BROKER_URL": broker_url,
        "CELERY_RESULT_BACKEND": broker_url,
        "CELERY_TASK_ALWAYS_EAGER": "false",
    }


@contextmanager
def tasks_sent_to_broker() -> Iterator[None]:
    """Switch the test process's Celery app from eager to really sending messages."""
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = False
    try:
        yield
    finally:
        celery_app.conf.task_always_eager = previous
