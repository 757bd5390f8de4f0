"""Tasks queued by name: every name a service sends is a task `audit_app.tasks` registers, a
message asks for no result and carries the bounded publish retry, and a broker that refuses
is logged by `publish`, raised by `send`."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from audit_app.lib import task_queue

NAMES = (
    task_queue.INGEST_UPLOAD,
    task_queue.INGEST_PART,
    task_queue.REFRESH_DERIVED,
    task_queue.DELIVER_ALERT,
    task_queue.EVALUATE_ALERTS,
    task_queue.POLL_BILLING_SOURCE,
)


@pytest.mark.parametrize("name", NAMES)
def test_every_name_is_a_registered_task(name: str) -> None:
    assert task_queue.registered(name).name == name


def test_send_publishes_by_name_without_a_result_and_to_the_queue_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent: list[tuple[list[Any], dict[str, Any]]] = []
    task = task_queue.registered(task_queue.POLL_BILLING_SOURCE)

    def apply_async(*, args: list[Any], **options: Any) -> None:
        sent.append((args, options))

    monkeypatch.setattr(task, "apply_async", apply_async)
    task_queue.send(task_queue.POLL_BILLING_SOURCE, args=(7,), queue="outbound")
    assert sent == [
        (
            [7],
            {
                "ignore_result": True,
                "retry": True,
                "retry_policy": task_queue.PUBLISH_RETRY_POLICY,
                "queue": "outbound",
            },
        )
    ]


def test_a_refused_publish_is_logged_and_a_refused_send_raises(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refused(**kwargs: Any) -> None:
        raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(task_queue.registered(task_queue.EVALUATE_ALERTS), "apply_async", refused)
    with caplog.at_level(logging.WARNING, logger="audit_app.lib.task_queue"):
        task_queue.publish(task_queue.EVALUATE_ALERTS, what="the alert evaluation")
    assert [r.getMessage() for r in caplog.records] == ["could not queue the alert evaluation"]
    with pytest.raises(ConnectionRefusedError):
        task_queue.send(task_queue.EVALUATE_ALERTS)
