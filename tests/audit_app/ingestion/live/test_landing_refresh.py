"""After live landings, derived results (classes, recommendations, alerts) refresh at most every
LIVE_REFRESH_MIN_SECONDS: a landing within the interval asks for nothing, the refresh it held
back happens once the interval has passed, and neither the workers' sweep nor a duplicate
refresh task nor the upload signal gets round that. Every other change refreshes at once.

Time is passed in (`now=`), never read from a frozen clock."""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from audit_app import derived
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.live.landing import live_land
from audit_app.ingestion.uploads import upload_create
from audit_app.lib import derived_state, task_queue
from audit_app.lib.results_cache import current_version, data_changed
from audit_app.models import DerivedState, PriceCard, Upload
from audit_app.tasks import land_live
from tests.audit_app.ingestion.live.live_samples import log_text, receive

pytestmark = pytest.mark.django_db

INTERVAL = 300


@pytest.fixture
def requested(monkeypatch: pytest.MonkeyPatch, settings: Any) -> list[str]:
    """Refresh requests (what would be queued for a worker), and the throttle's interval."""
    settings.DERIVED_REFRESH_ON_CHANGE = True
    settings.LIVE_REFRESH_MIN_SECONDS = INTERVAL
    calls: list[str] = []

    def publish(name: str, **kwargs: Any) -> None:
        if name == task_queue.REFRESH_DERIVED:
            calls.append("refresh")

    monkeypatch.setattr(task_queue, "publish", publish)
    return calls


@pytest.fixture
def refreshed_an_hour_ago() -> Any:
    """A file landed and derived results were computed from it an hour ago."""
    upload = upload_create(source=io.BytesIO(log_text(("t/1",))), original_name="a.csv")
    upload_ingest(upload_id=upload.pk)
    start = timezone.now() - timedelta(hours=1)
    assert derived.derived_refresh(now=start) is True
    return start + timedelta(hours=1)


def test_live_landings_refresh_once_per_interval(
    requested: list[str], refreshed_an_hour_ago: Any, django_capture_on_commit_callbacks: Any
) -> None:
    now = refreshed_an_hour_ago
    version = current_version()
    receive(("t/2",), at=now)
    with django_capture_on_commit_callbacks(execute=True):
        live_land(now=now)
    after = current_version()
    assert after.token != version.token  # pages show the new records...
    assert after.version == version.version  # ...but it is a live change
    assert requested == []  # the stream upload's save asked for nothing by itself

    # The last refresh is an hour old: the first landing's check asks for one.
    assert derived_state.refresh_if_due(now=now) is True
    assert requested == ["refresh"]
    assert derived.derived_refresh(now=now) is True  # the worker runs it

    # A second landing within the interval: no refresh asked, and none run early.
    receive(("t/4",), at=now + timedelta(seconds=60))
    live_land(now=now + timedelta(seconds=60))
    assert derived_state.derived_is_stale() is True
    assert derived_state.refresh_if_due(now=now + timedelta(seconds=60)) is False
    assert derived_state.refresh_if_due(now=now + timedelta(seconds=299)) is False
    assert derived.derived_refresh(now=now + timedelta(seconds=120)) is False  # a duplicate task
    assert requested == ["refresh"]

    # The interval has passed: the held-back refresh is asked for, with nothing new landing.
    assert derived_state.refresh_if_due(now=now + timedelta(seconds=300)) is True
    assert requested == ["refresh", "refresh"]
    assert derived.derived_refresh(now=now + timedelta(seconds=300)) is True
    assert derived_state.derived_is_stale() is False
    assert derived_state.refresh_if_due(now=now + timedelta(seconds=900)) is False


def test_other_changes_still_refresh_at_once_within_the_interval(
    requested: list[str], refreshed_an_hour_ago: Any, django_capture_on_commit_callbacks: Any
) -> None:
    now = refreshed_an_hour_ago
    receive(("t/2",), at=now)
    live_land(now=now)
    assert derived.derived_refresh(now=now) is True  # just refreshed: live changes now wait
    receive(("t/4",), at=now + timedelta(seconds=5))
    live_land(now=now + timedelta(seconds=5))
    assert derived_state.refresh_if_due(now=now + timedelta(seconds=10)) is False
    with django_capture_on_commit_callbacks(execute=True):
        PriceCard.objects.create(
            provider="openai",
            model="gpt-4o-mini",
            input_usd_per_mtok="0.15",
            output_usd_per_mtok="0.60",
            valid_from="2026-11-01",
        )
    assert requested == ["refresh"]  # the signal asked at once, as before
    assert derived_state.refresh_if_due(now=now + timedelta(seconds=11)) is True  # the sweep
    assert derived.derived_refresh(now=now + timedelta(seconds=12)) is True


def test_the_land_task_asks_for_the_refresh_once_it_is_due(
    requested: list[str], refreshed_an_hour_ago: Any
) -> None:
    receive(("t/2",), at=timezone.now())
    assert land_live() == 1
    assert requested == ["refresh"]  # the last refresh is an hour old
    derived.derived_refresh()
    receive(("t/4",), at=timezone.now())
    assert land_live() == 1
    assert requested == ["refresh"]  # refreshed a moment ago: this landing waits
    DerivedState.objects.update(computed_at=timezone.now() - timedelta(seconds=INTERVAL + 1))
    assert land_live() == 0  # nothing to land, but the held-back refresh is due now
    assert requested == ["refresh", "refresh"]


def test_a_refresh_is_not_cancelled_by_live_landings_but_is_by_other_changes(
    refreshed_an_hour_ago: Any,
) -> None:
    version = current_version()
    check = derived.refresh_checkpoint(version.token, version.version)
    receive(("t/2",), at=refreshed_an_hour_ago)
    live_land(now=refreshed_an_hour_ago)
    check()  # a micro-batch landed under it: it carries on
    with pytest.raises(derived.RefreshCancelled):
        derived.refresh_checkpoint(version.token)()  # without the number: any change stops it
    data_changed()
    with pytest.raises(derived.RefreshCancelled):
        check()


def test_deleting_a_stream_upload_refreshes_at_once(
    requested: list[str], refreshed_an_hour_ago: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from audit_app.ingestion.uploads import upload_delete

    receive(("t/2",), at=refreshed_an_hour_ago)
    live_land(now=refreshed_an_hour_ago)
    derived.derived_refresh(now=refreshed_an_hour_ago)
    with django_capture_on_commit_callbacks(execute=True):
        upload_delete(upload=Upload.objects.get(stream_source="otlp"))
    assert requested == ["refresh"]
    assert derived.derived_refresh(now=refreshed_an_hour_ago + timedelta(seconds=1)) is True


def test_the_schedule_lands_live_records(settings: Any) -> None:
    """Celery beat (a process of its own in production, inside `manage.py serve`'s worker in
    `make run`) runs the land task every LIVE_LAND_EVERY_SECONDS."""
    import audit_app.tasks  # noqa: F401 - registers the tasks
    from config.celery import app

    entry = settings.CELERY_BEAT_SCHEDULE["land-live-records"]
    assert entry["task"] == "audit_app.land_live" in app.tasks
    assert entry["schedule"] == float(settings.LIVE_LAND_EVERY_SECONDS) == 10.0
