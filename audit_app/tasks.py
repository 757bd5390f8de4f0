"""Celery tasks. Thin: each takes ids, loads objects and calls a service.

A front end, like the views: tasks import services, never the other way round. A service that
queues a task sends its name (`audit_app.lib.task_queue`, whose constants name the tasks here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from celery import shared_task
from django.db import InterfaceError, OperationalError

from audit_app.lib import task_queue

if TYPE_CHECKING:
    from audit_app.ingestion.fanout import PartSpec

# Ingest tasks: acknowledged only when done, handed back if the worker dies, and retried with
# backoff while the database is away (a restart, a failover).
_INGEST_TASK = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": (OperationalError, InterfaceError),
    "retry_backoff": True,
    "retry_backoff_max": 60,
    "max_retries": 8,
}


@shared_task(name="audit_app.ping")
def ping() -> str:
    """Proves a worker is consuming: returns "pong"."""
    return "pong"


@shared_task(name=task_queue.INGEST_UPLOAD, **_INGEST_TASK)
def ingest_upload(upload_id: int) -> str:
    """Ingest one upload; idempotent, so a redelivered or retried task is harmless. An upload
    deleted before or during its ingest ends it ("deleted"). A large splittable file fans
    out into part tasks (audit_app.ingestion.fanout). The landing queues the refresh of
    derived results (audit_app.derived)."""
    from audit_app.ingestion.fanout import fan_out
    from audit_app.ingestion.ingest import UploadDeleted, upload_ingest
    from audit_app.models import Upload

    try:
        upload = fan_out(upload_id) or upload_ingest(upload_id=upload_id)
    except (UploadDeleted, Upload.DoesNotExist):
        return "deleted"
    return upload.status


@shared_task(name=task_queue.REFRESH_DERIVED, **_INGEST_TASK)
def refresh_derived() -> bool:
    """Refresh derived results when the data changed since the last refresh (a no-op
    otherwise, so duplicates are harmless); see audit_app.derived."""
    from audit_app.derived import derived_refresh

    return derived_refresh()


@shared_task(name=task_queue.INGEST_PART, **_INGEST_TASK)
def ingest_part(upload_id: int, spec: PartSpec) -> str:
    """Parse one byte range of a large upload (see audit_app.ingestion.fanout); the part
    that completes the set lands the upload. Idempotent: a redelivered part rewrites its file."""
    from audit_app.ingestion.fanout import part_ingest

    return part_ingest(upload_id=upload_id, spec=spec)


@shared_task(
    name=task_queue.DELIVER_ALERT,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=True,
    retry_backoff_max=60,
    max_retries=8,
)
def deliver_alert(self: Any, delivery_id: int) -> str:
    """One attempt at one alert delivery (an email or a webhook); a failed attempt is retried
    with exponential backoff up to delivery.MAX_ATTEMPTS attempts. A redelivered task never
    sends twice: a delivery already sent is skipped (see audit_app.budgets.delivery)."""
    from audit_app.budgets.delivery import (
        MAX_ATTEMPTS,
        DeliveryFailed,
        delivery_attempt,
        retry_countdown,
    )
    from audit_app.models import AlertDelivery

    try:
        return delivery_attempt(delivery_id)
    except AlertDelivery.DoesNotExist:
        return "deleted"
    except DeliveryFailed as exc:
        if exc.attempts >= MAX_ATTEMPTS:
            return "failed"
        # The delivery's own count of attempts stops the retries (a redelivered task keeps it);
        # Celery's count only bounds them in case the database kept failing as well.
        raise self.retry(
            exc=exc, countdown=retry_countdown(exc.attempts), max_retries=2 * MAX_ATTEMPTS
        ) from exc


@shared_task(name=task_queue.EVALUATE_ALERTS, **_INGEST_TASK)
def evaluate_alerts() -> int:
    """The schedule's pass (Celery beat, every ALERT_EVALUATE_EVERY_SECONDS): create the alerts
    due (budgets and anomalies) and queue again the deliveries whose task was lost; how many
    alerts were created."""
    from audit_app.budgets.alerts import alerts_evaluate
    from audit_app.budgets.delivery import deliveries_requeue_stale

    created = alerts_evaluate()
    deliveries_requeue_stale()
    return len(created)


@shared_task(name="audit_app.land_live", ignore_result=True)
def land_live() -> int:
    """The schedule's landing of live records (Celery beat, every LIVE_LAND_EVERY_SECONDS):
    micro-batches land what the receivers kept, exactly once, then a refresh of derived
    results is queued if one is due (see audit_app.ingestion.live.landing); how many records
    were counted. A failed pass lands nothing and the next beat tries again, so it is not
    retried here; two at once land different batches."""
    from audit_app.ingestion.live.landing import live_land_due

    return sum(landed.landed for landed in live_land_due())


@shared_task(name="audit_app.poll_billing_sources")
def poll_billing_sources() -> int:
    """The schedule's pass (Celery beat, every BILLING_SOURCES_CHECK_EVERY_SECONDS): queue a
    poll of each billing source that is due (see audit_app.ingestion.sources); how many."""
    from audit_app.ingestion.sources import sources_queue_due

    return sources_queue_due()


@shared_task(name="audit_app.prices_sync")
def prices_sync() -> int:
    """The weekly price sync (Celery beat, when PRICES_SYNC_WEEKLY): add the price dataset's
    new models and prices as cards; how many cards were added."""
    from audit_app.costs.price_cards import prices_sync as sync

    return len(sync().added)


@shared_task(name=task_queue.POLL_BILLING_SOURCE)
def poll_billing_source(source_id: int) -> str:
    """Poll one billing source now (its page's "Poll now", the API); "deleted" if it is gone,
    else "ok" or "failed" (the source records why)."""
    from audit_app.ingestion.sources import source_poll
    from audit_app.models import BillingSource

    source = BillingSource.objects.select_related("created_by").filter(pk=source_id).first()
    if source is None:
        return "deleted"
    return "ok" if source_poll(source).ok else "failed"


@shared_task(name="audit_app.send_statements")
def send_statements() -> int:
    """The schedule's pass (Celery beat, on STATEMENTS_SEND_DAY of each month): email each team
    owner last month's statement, once (see audit_app.statements.delivery); how many were
    sent. A redelivered task sends nothing twice."""
    from audit_app.statements.delivery import statements_send

    return sum(outcome.outcome == "sent" for outcome in statements_send())
