"""Hand queued uploads to the task broker, and hand them again when the broker could not take them.

`upload_enqueue` publishes the ingest task with a bounded retry and no result to wait for, so a
broker that is down costs a request about a second, not a hang: the upload is kept, stays
`queued` with a note saying why (in `Upload.error`, which the ingest clears when it starts) and
a warning is logged.

Every Celery worker runs a `RequeueSweeper` thread (started on `worker_ready`, see
`config.celery`): at start and then every `UPLOAD_REQUEUE_INTERVAL_SECONDS` it re-enqueues the
uploads still `queued` that either carry that note (the broker was down when they came in) or
have waited longer than `UPLOAD_REQUEUE_AFTER_SECONDS` (a message lost, e.g. by a Redis restart
without persistence). A sweeper does not re-enqueue what it enqueued itself within the last
`UPLOAD_REQUEUE_AFTER_SECONDS`. A duplicate message is harmless: the ingest is idempotent (an
upload already `succeeded` or `failed` is left alone, and landing is one transaction that a
second run finds done). Each sweep also asks for a refresh of derived results when one is due
(`audit_app.lib.derived_state.refresh_if_due`), so one asked for while the broker was down
still happens.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, MutableMapping
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connections
from django.db.models import Q
from django.utils import timezone

from audit_app.lib import derived_state, task_queue
from audit_app.models import Upload

logger = logging.getLogger(__name__)

ENQUEUE_NOTE_PREFIX = "Waiting for the task broker"
ENQUEUE_NOTE = (
    f"{ENQUEUE_NOTE_PREFIX}: it could not be reached when this file was uploaded. The file is "
    "stored; a worker queues it by itself once the broker is back, no need to upload it again."
)


def upload_enqueue(upload_id: int, *, queue: str | None = None) -> bool:
    """Queue the ingest of one upload; False (and a note on the upload) when the broker is down.

    The message asks for no result (`ignore_result`): the upload row is the result, and waiting
    on a Redis result backend that is down would block the caller for 20 s.
    """
    if task_queue.in_process():
        # In-process (tests, debugging): the "publish" is the ingest itself; let errors show.
        task_queue.send(task_queue.INGEST_UPLOAD, args=[upload_id], queue=queue)
        return True
    try:
        task_queue.send(task_queue.INGEST_UPLOAD, args=[upload_id], queue=queue)
    except Exception as exc:  # any failure to publish means the broker did not take it
        logger.warning(
            "upload %s stays queued: the task broker could not be reached (%s: %s); "
            "a worker's requeue sweep will queue it once the broker is back",
            upload_id,
            type(exc).__name__,
            exc,
        )
        Upload.objects.filter(pk=upload_id, status=Upload.Status.QUEUED).update(error=ENQUEUE_NOTE)
        return False
    return True


def uploads_to_requeue(
    *,
    now: datetime,
    stale_after_seconds: float,
    recently_enqueued: Mapping[int, datetime] | None = None,
) -> list[int]:
    """Ids of the uploads a sweep should queue again, oldest first: `queued` ones that carry
    the broker-down note or were created `stale_after_seconds` ago or earlier, less those this
    sweeper itself queued less than `stale_after_seconds` ago."""
    stale_before = now - timedelta(seconds=stale_after_seconds)
    candidates = (
        Upload.objects.filter(status=Upload.Status.QUEUED)
        .filter(Q(error__startswith=ENQUEUE_NOTE_PREFIX) | Q(created_at__lte=stale_before))
        .order_by("created_at", "pk")
        .values_list("pk", flat=True)
    )
    recent = recently_enqueued or {}
    return [pk for pk in candidates if not (pk in recent and recent[pk] > stale_before)]


def requeue_sweep(
    *,
    now: datetime | None = None,
    stale_after_seconds: float | None = None,
    recently_enqueued: MutableMapping[int, datetime] | None = None,
    queue: str | None = None,
) -> list[int]:
    """Queue again what `uploads_to_requeue` picks; returns the ids handed to the broker.

    Stops at the first upload the broker refuses (it is down: the next sweep tries again).
    """
    now = now or timezone.now()
    if stale_after_seconds is None:
        stale_after_seconds = settings.UPLOAD_REQUEUE_AFTER_SECONDS
    recent = recently_enqueued if recently_enqueued is not None else {}
    stale_before = now - timedelta(seconds=stale_after_seconds)
    for pk in [pk for pk, when in recent.items() if when <= stale_before]:
        del recent[pk]  # forget what is old enough to be picked again anyway
    sent: list[int] = []
    for pk in uploads_to_requeue(
        now=now, stale_after_seconds=stale_after_seconds, recently_enqueued=recent
    ):
        if not upload_enqueue(pk, queue=queue):
            break
        recent[pk] = now
        # The message is with the broker now: drop the note (the ingest would clear it anyway).
        Upload.objects.filter(
            pk=pk, status=Upload.Status.QUEUED, error__startswith=ENQUEUE_NOTE_PREFIX
        ).update(error="")
        sent.append(pk)
    if sent:
        logger.info("requeue sweep: queued upload(s) %s again", ", ".join(map(str, sent)))
    return sent


class RequeueSweeper(threading.Thread):
    """Runs `requeue_sweep` at start and every `interval` seconds until `stop()`."""

    def __init__(self, *, interval: float, queue: str | None = None) -> None:
        super().__init__(name="upload-requeue-sweeper", daemon=True)
        self.interval = interval
        self.queue = queue
        self.recently_enqueued: dict[int, datetime] = {}
        self._stopping = threading.Event()

    def run(self) -> None:
        while not self._stopping.is_set():
            self.sweep_once()
            self._stopping.wait(self.interval)

    def sweep_once(self) -> list[int]:
        close_old_connections()
        try:
            sent = requeue_sweep(recently_enqueued=self.recently_enqueued, queue=self.queue)
            derived_state.refresh_if_due()
            return sent
        except Exception:
            # The database may be restarting: log it and try again at the next interval.
            logger.warning("requeue sweep failed; retrying in %ss", self.interval, exc_info=True)
            return []
        finally:
            # This thread's connection is not reused between sweeps, so a database restart
            # between two sweeps cannot leave it holding a dead connection.
            connections.close_all()

    def stop(self) -> None:
        self._stopping.set()


_sweeper: RequeueSweeper | None = None


def start_worker_sweeper(app: Any) -> RequeueSweeper | None:
    """Start this worker's sweeper (once); it queues onto the default queue if this worker
    consumes it, else onto the first queue it consumes, so the worker that sweeps can run what
    it queues. None when UPLOAD_REQUEUE_INTERVAL_SECONDS is 0."""
    global _sweeper
    interval = settings.UPLOAD_REQUEUE_INTERVAL_SECONDS
    if interval <= 0 or (_sweeper is not None and _sweeper.is_alive()):
        return None
    consumed = list(app.amqp.queues.consume_from or app.amqp.queues)
    default = app.conf.task_default_queue
    queue = None if not consumed or default in consumed else consumed[0]
    _sweeper = RequeueSweeper(interval=interval, queue=queue)
    _sweeper.start()
    logger.info(
        "requeue sweep: every %ss, uploads queued longer than %ss or refused by the broker",
        interval,
        settings.UPLOAD_REQUEUE_AFTER_SECONDS,
    )
    return _sweeper


def stop_worker_sweeper() -> None:
    if _sweeper is not None:
        _sweeper.stop()
