"""Whether derived results (classes, recommendations, the plan, alerts) are current.

`DerivedState` holds the data version the last refresh computed them from; the data version
is `audit_app.lib.results_cache`'s. A refresh is due when the data changed since, at once for
any change but a live landing (the version number moved), and for live landings alone once
LIVE_REFRESH_MIN_SECONDS have passed since the last refresh (`refresh_due`). Every path goes by
that one rule: the refresh itself (`audit_app.derived`, so a duplicate task does not refresh
early), the live land task's check after each pass and the workers' sweep (`refresh_if_due`).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from audit_app.lib.results_cache import current_version, refresh_request
from audit_app.models import DataVersion, DerivedState


def refresh_due(*, state: DerivedState | None, version: DataVersion, now: datetime) -> bool:
    """Whether derived results are to be recomputed now: the data changed since they were
    computed, and either by something other than a live landing (the version number moved:
    at once) or LIVE_REFRESH_MIN_SECONDS have passed since the last refresh."""
    if state is None or not version.token:
        return True
    if state.data_token == version.token:
        return False
    if state.data_version != version.version or state.computed_at is None:
        return True
    return now - state.computed_at >= timedelta(seconds=settings.LIVE_REFRESH_MIN_SECONDS)


def derived_state() -> DerivedState | None:
    return DerivedState.objects.filter(pk=1).first()


def derived_is_stale() -> bool:
    """True when the data changed since derived results were last computed."""
    state = derived_state()
    return state is None or state.data_token != current_version().token


def refresh_if_due(*, now: datetime | None = None) -> bool:
    """Ask for a refresh when one is due (`refresh_due`). Every worker's sweep calls it, so a
    refresh asked for while the broker was down still happens; the live land task calls it
    after each pass, so data that changed only by live landings is refreshed once
    LIVE_REFRESH_MIN_SECONDS have passed since the last refresh, and not before."""
    due = refresh_due(state=derived_state(), version=current_version(), now=now or timezone.now())
    if due:
        refresh_request()
    return due
