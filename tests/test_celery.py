"""The Celery app: configuration, and a ping round trip through real workers."""

from __future__ import annotations

from pathlib import Path

import pytest

from audit_app.tasks import ping
from config.celery import app as celery_app
from tests.support.processes import celery_worker, run_python

SEND_PING = """
import django, os, sys
django.setup()
from audit_app.tasks import ping
result = ping.apply_async(queue=os.environ["TEST_QUEUE"])
print(result.get(timeout=30))
"""


def test_celery_is_configured_for_safe_ingestion() -> None:
    conf = celery_app.conf
    assert conf.task_serializer == "json"
    assert conf.result_serializer == "json"
    assert conf.accept_content == ["json"]
    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
    assert conf.worker_prefetch_multiplier == 1


def test_ping_runs_eagerly_in_unit_tests() -> None:
    assert ping.delay().get(timeout=5) == "pong"


@pytest.mark.slow
def test_ping_round_trip_on_the_embedded_broker(tmp_path: Path) -> None:
    """The broker `make run` uses: SQLite through kombu's SQLAlchemy transport, no service."""
    env = {
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "DJANGO_VAR_DIR": str(tmp_path),
        "CELERY_BROKER_URL": f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}",
        "CELERY_RESULT_BACKEND": f"db+sqlite:///{tmp_path / 'results.sqlite3'}",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    with celery_worker(env=env, tmp_path=tmp_path) as worker:
        out = run_python(SEND_PING, env={**env, "TEST_QUEUE": worker.queue})
        assert out.strip() == "pong"
        assert "audit_app.ping" in worker.wait_for_log("succeeded")


@pytest.mark.slow
@pytest.mark.redis
def test_ping_round_trip_on_redis(redis_url: str, tmp_path: Path) -> None:
    env = {
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "DJANGO_VAR_DIR": str(tmp_path),
        "CELERY_BROKER_URL": redis_url,
        "CELERY_RESULT_BACKEND": redis_url,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    with celery_worker(env=env, tmp_path=tmp_path) as worker:
        assert "transport:   redis://" in worker.log()
        out = run_python(SEND_PING, env={**env, "TEST_QUEUE": worker.queue})
        assert out.strip() == "pong"
