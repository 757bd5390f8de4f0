"""The requeue service: which queued uploads a sweep hands to the broker again, and when not.

The broker is faked by replacing `upload_enqueue` (or the task's `apply_async`); the real broker
going down and coming back is in tests/reliability/test_faults.py.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from audit_app.ingestion import requeue
from audit_app.ingestion.requeue import ENQUEUE_NOTE, requeue_sweep, uploads_to_requeue
from audit_app.lib import task_queue
from audit_app.models import Upload
from tests.integration_support import tasks_sent_to_broker

STALE = 300.0


def _upload(
    name: str, *, status: str = Upload.Status.QUEUED, age: float = 0, note: str = ""
) -> int:
    upload = Upload.objects.create(
        kind=Upload.Kind.TOKEN_LOG,
        file=f"uploads/{name}",
        original_name=name,
        sha256=name.ljust(64, "0"),
        status=status,
        error=note,
    )
    Upload.objects.filter(pk=upload.pk).update(created_at=timezone.now() - timedelta(seconds=age))
    return upload.pk


@pytest.mark.django_db
def test_sweep_picks_queued_uploads_with_the_broker_note_or_older_than_the_limit() -> None:
    fresh = _upload("fresh")
    noted = _upload("noted", note=ENQUEUE_NOTE)
    stale = _upload("stale", age=STALE + 60)
    oldest = _upload("oldest", age=STALE + 600)
    _upload("running", status=Upload.Status.RUNNING, age=STALE + 60)
    _upload("succeeded", status=Upload.Status.SUCCEEDED, age=STALE + 60, note=ENQUEUE_NOTE)
    _upload("failed", status=Upload.Status.FAILED, age=STALE + 60, note="bad file")
    _upload("other-note", note="some other text")  # fresh, and not the broker note

    picked = uploads_to_requeue(now=timezone.now(), stale_after_seconds=STALE)

    assert picked == [oldest, stale, noted]  # oldest first
    assert fresh not in picked


@pytest.mark.django_db
def test_sweep_skips_what_it_queued_itself_until_the_limit_has_passed_again() -> None:
    just_sent = _upload("just-sent", age=STALE + 60)
    sent_long_ago = _upload("sent-long-ago", age=STALE * 3)
    now = timezone.now()
    recently = {
        just_sent: now - timedelta(seconds=60),
        sent_long_ago: now - timedelta(seconds=STALE + 1),
    }

    assert uploads_to_requeue(now=now, stale_after_seconds=STALE, recently_enqueued=recently) == [
        sent_long_ago
    ]


@pytest.mark.django_db
def test_sweep_queues_drops_the_note_and_remembers(monkeypatch: pytest.MonkeyPatch) -> None:
    noted = _upload("noted", note=ENQUEUE_NOTE)
    fresh = _upload("fresh")
    sent: list[tuple[int, str | None]] = []

    def enqueue(upload_id: int, *, queue: str | None = None) -> bool:
        sent.append((upload_id, queue))
        return True

    monkeypatch.setattr(requeue, "upload_enqueue", enqueue)
    recently: dict[int, Any] = {}

    assert requeue_sweep(stale_after_seconds=STALE, recently_enqueued=recently, queue="q") == [
        noted
    ]
    assert sent == [(noted, "q")]
    assert Upload.objects.get(pk=noted).error == ""
    assert set(recently) == {noted}
    assert Upload.objects.get(pk=fresh).status == Upload.Status.QUEUED
    # The next sweep leaves it alone: the message is with the broker.
    assert requeue_sweep(stale_after_seconds=STALE, recently_enqueued=recently) == []


@pytest.mark.django_db
def test_sweep_stops_at_the_first_upload_the_broker_refuses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = _upload("first", age=10, note=ENQUEUE_NOTE)
    _upload("second", note=ENQUEUE_NOTE)
    tried: list[int] = []

    def broker_down(upload_id: int, *, queue: str | None = None) -> bool:
        tried.append(upload_id)
        return False

    monkeypatch.setattr(requeue, "upload_enqueue", broker_down)

    assert requeue_sweep(stale_after_seconds=STALE) == []
    assert tried == [first]
    assert Upload.objects.filter(error=ENQUEUE_NOTE).count() == 2  # notes kept


@pytest.mark.django_db
def test_enqueue_with_the_broker_down_keeps_the_upload_queued_with_the_note(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kombu.exceptions import OperationalError as BrokerError

    from audit_app.tasks import ingest_upload

    queued = _upload("queued")
    finished = _upload("finished", status=Upload.Status.SUCCEEDED)

    def refused(*args: Any, **kwargs: Any) -> None:
        raise BrokerError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(ingest_upload, "apply_async", refused)
    with tasks_sent_to_broker():
        assert requeue.upload_enqueue(queued) is False
        assert requeue.upload_enqueue(finished) is False

    assert Upload.objects.get(pk=queued).error == ENQUEUE_NOTE
    # Only a queued upload takes the note: one that finished meanwhile keeps its own state.
    assert Upload.objects.get(pk=finished).error == ""
    assert Upload.objects.get(pk=finished).status == Upload.Status.SUCCEEDED


@pytest.mark.django_db
def test_enqueue_publishes_without_a_result_and_to_the_queue_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from audit_app.tasks import ingest_upload

    queued = _upload("queued")
    published: list[tuple[list[int], dict[str, Any]]] = []

    def publish(*, args: list[int], **options: Any) -> None:
        published.append((args, options))

    monkeypatch.setattr(ingest_upload, "apply_async", publish)
    with tasks_sent_to_broker():
        assert requeue.upload_enqueue(queued, queue="ingest") is True

    assert published == [
        (
            [queued],
            {
                "ignore_result": True,
                "retry": True,
                "retry_policy": task_queue.PUBLISH_RETRY_POLICY,
                "queue": "ingest",
            },
        )
    ]
    assert Upload.objects.get(pk=queued).error == ""
