"""Queue Celery tasks by name, so that no service imports `audit_app.tasks`.

The tasks are a front end: each calls one service. A service that hands work to a worker
sends the task's name (the constants below, which `audit_app.tasks` registers its tasks
under), so imports run one way, from the tasks down. A publish gives up after about a second
when the broker refuses connections (`PUBLISH_RETRY_POLICY`; each attempt is also bounded by
CELERY_BROKER_CONNECTION_TIMEOUT when it does not answer at all) and asks for no result to
wait for. The task is found by its name among the Celery app's tasks, so its own options
apply; with `task_always_eager` (the unit tests, debugging) it runs in this process instead.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from celery import current_app

logger = logging.getLogger(__name__)

INGEST_UPLOAD = "audit_app.ingest_upload"
INGEST_PART = "audit_app.ingest_part"
REFRESH_DERIVED = "audit_app.refresh_derived"
DELIVER_ALERT = "audit_app.deliver_alert"
EVALUATE_ALERTS = "audit_app.evaluate_alerts"
POLL_BILLING_SOURCE = "audit_app.poll_billing_source"

PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.5,
    "interval_max": 1,
}


def in_process() -> bool:
    """Whether tasks run in the caller's process (`task_always_eager`)."""
    return bool(current_app.conf.task_always_eager)


def send(name: str, *, args: Sequence[Any] = (), queue: str | None = None) -> None:
    """Queue the task ``name`` with ``args`` (on ``queue``, else its route); raises when the
    broker does not take it. In process, the task runs here and its errors propagate."""
    options: dict[str, Any] = {
        "ignore_result": True,
        "retry": True,
        "retry_policy": PUBLISH_RETRY_POLICY,
    }
    if queue:
        options["queue"] = queue
    registered(name).apply_async(args=list(args), **options)


def publish(name: str, *, what: str, args: Sequence[Any] = ()) -> None:
    """`send`, with a broker that is away logged, never raised: a worker's sweep or the
    schedule asks again."""
    try:
        send(name, args=args)
    except Exception:
        logger.warning("could not queue %s", what, exc_info=True)


def registered(name: str) -> Any:
    """The Celery task registered under ``name``. The installed apps' task modules are found
    the first time one is asked for (Celery's autodiscovery, without the system checks a
    worker's start runs)."""
    if name not in current_app.tasks:
        current_app.autodiscover_tasks(force=True)
    return current_app.tasks[name]
