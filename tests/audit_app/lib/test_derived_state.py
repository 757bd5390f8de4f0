"""When a refresh of derived results is due: at once after any change but a live landing, after
live landings alone once LIVE_REFRESH_MIN_SECONDS have passed since the last refresh, never when
the data did not change."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from audit_app.lib.derived_state import refresh_due
from audit_app.models import DataVersion, DerivedState

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
INTERVAL = 300


@pytest.fixture(autouse=True)
def interval(settings: Any) -> None:
    settings.LIVE_REFRESH_MIN_SECONDS = INTERVAL


def _state(*, token: str = "t1", version: int = 4, seconds_ago: float = 60) -> DerivedState:
    return DerivedState(
        data_token=token, data_version=version, computed_at=NOW - timedelta(seconds=seconds_ago)
    )


def test_never_refreshed_is_due() -> None:
    assert refresh_due(state=None, version=DataVersion(version=4, token="t1"), now=NOW) is True


def test_unchanged_data_is_not_due_however_old_the_refresh() -> None:
    state = _state(seconds_ago=10 * INTERVAL)
    assert refresh_due(state=state, version=DataVersion(version=4, token="t1"), now=NOW) is False


def test_a_change_other_than_a_live_landing_is_due_at_once() -> None:
    state = _state(seconds_ago=1)
    assert refresh_due(state=state, version=DataVersion(version=5, token="t2"), now=NOW) is True


@pytest.mark.parametrize(("seconds_ago", "due"), [(INTERVAL - 1, False), (INTERVAL, True)])
def test_live_landings_alone_wait_for_the_interval(seconds_ago: float, due: bool) -> None:
    # A live landing draws a new token and keeps the version number.
    state = _state(seconds_ago=seconds_ago)
    assert refresh_due(state=state, version=DataVersion(version=4, token="t2"), now=NOW) is due
