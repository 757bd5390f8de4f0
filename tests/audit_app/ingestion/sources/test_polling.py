"""The schedule: which sources are due (their interval, or a shorter back-off after failures),
each polled on its own so an unreachable URL or bucket never stops the others, and the beat
task."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from audit_app.ingestion.sources import next_poll_at, poll_wait, source_due
from audit_app.models import BillingSource, Upload
from audit_app.tasks import poll_billing_source, poll_billing_sources
from tests.audit_app.ingestion.sources.source_samples import (
    FOCUS_SAMPLE,
    SAMPLE_TOTAL,
    billed,
    closed_port,
    make_source,
    poll_due,
    write,
)

pytestmark = pytest.mark.django_db
NOON = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def root(tmp_path: Path, settings: Any) -> Path:
    settings.BILLING_SOURCE_ROOTS = [tmp_path]
    return tmp_path


@pytest.fixture
def capture(django_capture_on_commit_callbacks: Any) -> Any:
    return django_capture_on_commit_callbacks


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        boto3.client("s3").create_bucket(Bucket="some-other-bucket")
        yield


def _at(minutes: float) -> datetime:
    return NOON + timedelta(minutes=minutes)


@pytest.mark.parametrize(
    ("failures", "interval", "wait"),
    [(0, 60, 60), (1, 60, 2), (2, 60, 4), (5, 60, 32), (6, 60, 60), (40, 60, 60), (3, 5, 5)],
)
def test_the_wait_is_the_interval_or_a_shorter_back_off(
    failures: int, interval: int, wait: int
) -> None:
    source = BillingSource(poll_every_minutes=interval, consecutive_failures=failures)
    assert poll_wait(source) == timedelta(minutes=wait)


def test_due_once_the_wait_has_passed_never_when_disabled() -> None:
    source = BillingSource(poll_every_minutes=60, last_polled_at=NOON)
    assert next_poll_at(source) == _at(60)
    assert [source_due(source, _at(m)) for m in (0, 59.9, 60, 61)] == [False, False, True, True]
    source.consecutive_failures = 1
    assert (source_due(source, _at(1.9)), source_due(source, _at(2))) == (False, True)
    never = BillingSource(poll_every_minutes=60)
    assert next_poll_at(never) is None and source_due(never, NOON)
    source.enabled = never.enabled = False
    assert not source_due(source, _at(600)) and not source_due(never, NOON)


def test_an_unreachable_url_and_a_missing_bucket_do_not_stop_a_good_source(
    root: Path, aws: None, capture: Any
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/focus.csv"
    down = make_source(name="a-down", kind="http", location=url)
    gone = make_source(name="b-gone", kind="s3", location="no-such-bucket")
    write(root / "focus.csv", FOCUS_SAMPLE.read_bytes())
    good = make_source(name="c-good", location=str(root))

    results = poll_due(capture, now=NOON)

    assert [r.source_name for r in results] == ["a-down", "b-gone", "c-good"]
    for source in (down, gone, good):
        source.refresh_from_db()
        assert source.last_polled_at == NOON
    assert down.last_error == (
        f'Billing source "a-down" could not list {url}: the server could not be reached '
        "(Connection refused)."
    )
    assert gone.last_error == (
        'Billing source "b-gone" could not list s3://no-such-bucket/: the bucket does not exist '
        "(NoSuchBucket)."
    )
    assert (down.consecutive_failures, gone.consecutive_failures) == (1, 1)
    assert (good.last_error, good.consecutive_failures, good.last_changed_at) == ("", 0, NOON)
    assert Upload.objects.get().billing_source == good
    assert billed() == {"USD": SAMPLE_TOTAL}

    # Two minutes later the failed ones are retried (back-off), the good one waits its hour.
    again = poll_due(capture, now=_at(2))
    assert [r.source_name for r in again] == ["a-down", "b-gone"]
    down.refresh_from_db()
    assert (down.consecutive_failures, down.last_polled_at) == (2, _at(2))
    assert poll_due(capture, now=_at(5)) == []  # next retry after 4 minutes: at 12:06
    assert [r.source_name for r in poll_due(capture, now=_at(60))] == [
        "a-down",
        "b-gone",
        "c-good",
    ]


def test_a_source_claimed_by_another_pass_is_not_polled_twice(
    root: Path, capture: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = make_source(location=str(root), last_polled_at=_at(-120))
    original = BillingSource.objects.filter

    def racing(*args: Any, **kwargs: Any) -> Any:
        if "last_polled_at" in kwargs:  # the claim: another pass claimed it just before
            BillingSource.objects.all().update(last_polled_at=_at(-1))
        return original(*args, **kwargs)

    monkeypatch.setattr(BillingSource.objects, "filter", racing)
    assert poll_due(capture, now=NOON) == []
    source.refresh_from_db()
    assert source.last_polled_at == _at(-1)


def test_disabled_sources_wait_but_can_be_polled_by_hand(root: Path, capture: Any) -> None:
    write(root / "focus.csv", FOCUS_SAMPLE.read_bytes())
    source = make_source(location=str(root), enabled=False)
    assert poll_due(capture, now=NOON) == []
    with capture(execute=True):
        assert poll_billing_source(source.pk) == "ok"
    assert Upload.objects.get().billing_source == source
    assert poll_billing_source(source.pk + 1) == "deleted"


def test_the_beat_task_polls_what_is_due(root: Path, capture: Any) -> None:
    write(root / "focus.csv", FOCUS_SAMPLE.read_bytes())
    make_source(name="due", location=str(root))
    make_source(name="waits", location=str(root), last_polled_at=datetime.now(UTC))
    with capture(execute=True):
        assert poll_billing_sources() == 1
    assert Upload.objects.get().billing_source.name == "due"


def test_the_beat_schedule_names_the_task(settings: Any) -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["poll-billing-sources"]
    assert (entry["task"], entry["schedule"]) == ("audit_app.poll_billing_sources", 60.0)


def test_a_new_export_and_its_restatement_are_picked_up_on_schedule(
    root: Path, capture: Any
) -> None:
    from tests.audit_app.ingestion.sources.source_samples import RESTATED_TOTAL, restated_sample

    original, restated = restated_sample()
    source = make_source(name="mounted", location=str(root))
    assert [r.uploads for r in poll_due(capture, now=NOON)] == [()]  # nothing there yet

    write(root / "focus-2024-09.csv", original)
    assert poll_due(capture, now=_at(30)) == []  # not due before its hour
    (first,) = poll_due(capture, now=_at(60))
    assert len(first.uploads) == 1 and billed() == {"USD": SAMPLE_TOTAL}

    write(root / "focus-2024-09.csv", restated)  # the export rewritten the next day
    (second,) = poll_due(capture, now=_at(120))
    assert len(second.uploads) == 1
    assert billed() == {"USD": RESTATED_TOTAL}
    source.refresh_from_db()
    assert (source.last_polled_at, source.last_changed_at) == (_at(120), _at(120))
    assert (poll_due(capture, now=_at(180))[0].uploads, Upload.objects.count()) == ((), 2)


def test_the_beat_pass_queues_one_poll_per_due_source(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each due source is its own task on the outbound queue, so a slow or silent one holds up
    no other; a source whose poll could not be queued waits for the next pass, not its interval."""
    from audit_app import tasks
    from audit_app.ingestion.sources import sources_queue_due

    first = make_source(name="first", location=str(root))
    second = make_source(name="second", location=str(root))
    make_source(name="waits", location=str(root), last_polled_at=datetime.now(UTC))
    queued: list[int] = []
    monkeypatch.setattr(
        tasks.poll_billing_source, "apply_async", lambda args, **_: queued.append(args[0])
    )
    assert sources_queue_due(now=NOON) == 2
    assert sorted(queued) == sorted([first.pk, second.pk])
    assert sources_queue_due(now=NOON) == 0  # claimed: a second pass queues nothing

    def refuse(args: Any, **_: Any) -> None:
        raise ConnectionError("broker down")

    monkeypatch.setattr(tasks.poll_billing_source, "apply_async", refuse)
    monkeypatch.setitem(tasks.poll_billing_source.app.conf, "task_always_eager", False)
    third = make_source(name="third", location=str(root))
    assert sources_queue_due(now=NOON) == 0
    third.refresh_from_db()
    assert third.last_polled_at is None  # released for the next pass
