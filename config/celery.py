"""The Celery application.

Configuration comes from Django settings (names prefixed ``CELERY_``), so the same environment
variables drive the web process and the workers.
"""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_ready, worker_shutdown

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")

app = Celery("inference_spend_audit")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
def _start_requeue_sweeper(sender: object = None, **kwargs: object) -> None:
    """Each worker re-enqueues uploads left `queued` (broker down at upload time, or a lost
    message): once at start, then every UPLOAD_REQUEUE_INTERVAL_SECONDS (see
    audit_app.ingestion.requeue)."""
    from audit_app.ingestion.requeue import start_worker_sweeper

    start_worker_sweeper(app)


@worker_shutdown.connect
def _stop_requeue_sweeper(sender: object = None, **kwargs: object) -> None:
    from audit_app.ingestion.requeue import stop_worker_sweeper

    stop_worker_sweeper()
