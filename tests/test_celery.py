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


def _queue_of(task_name: str) -> str:
    route = celery_app.amqp.router.route({}, task_name)
    return str(route["queue"].name)


def test_outbound_work_has_its_own_queue_and_ingestion_keeps_the_default() -> None:
    """Source polls and alert deliveries wait on slow peers: they go to the outbound queue,
    so a worker that ingests and lands is never held by them."""
    outbound = ["audit_app.poll_billing_sources", "audit_app.poll_billing_source"]
    outbound.append("audit_app.deliver_alert")
    assert {name: _queue_of(name) for name in outbound} == dict.fromkeys(outbound, "outbound")
    default = [
        "audit_app.ingest_upload",
        "audit_app.ingest_part",
        "audit_app.land_live",
        "audit_app.evaluate_alerts",
        "audit_app.refresh_derived",
    ]
    assert {name: _queue_of(name) for name in default} == dict.fromkeys(default, "celery")
    # A worker started without -Q consumes both, so nothing waits on a queue no one reads.
    assert sorted(q.name for q in celery_app.conf.task_queues) == ["celery", "outbound"]


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
