"""Derived results are never stale: workload classes and recommendations follow their inputs.

Their inputs are the token logs and bills that landed (or were deleted), price cards, serving
pools, hardware entries, throughput assumptions, workloads' latency SLOs and class overrides.
The signals in `audit_app.apps` answer every change to one of those with a new data version
(`results_cache.data_changed`) and `derived_refresh_request`, so that once the change commits:

- in the web app and the worker, the `audit_app.refresh_derived` task refreshes (the worker
  does it);
- from the CLI, `ingest` and `seed_demo` call `derived_refresh` themselves before they return
  (and `recommend` re-prices directly).

A refresh that recomputed then evaluates alerts (`audit_app.budgets.alerts`): budgets crossing
a threshold and new anomalies become alerts, their deliveries queued, never sent inline.

`derived_refresh` recomputes only when the data version moved since the last refresh (kept in
`DerivedState`), so a second request, a redelivered task or `manage.py recommend` right after
changes nothing. Refreshes lock the state row: two never run at once.

Live landings (`audit_app.ingestion.live.landing`, every few seconds) are throttled: they draw
a new data token but keep the version number (`results_cache.data_changed(live=True)`), and
data that changed only by live landings is refreshed once LIVE_REFRESH_MIN_SECONDS have
passed since the last refresh, not before (`refresh_due`). Every path goes by that one rule:
the land task's check after each pass, the workers' sweep, and the refresh itself (so a
duplicate task does not refresh early). Any other change moves the number and refreshes at
once, as before; a refresh that sees only live landings land under it carries on (their
records wait for the next refresh) instead of being cancelled by every micro-batch.

A refresh is proportional to the workloads (at most `MAX_WORKLOADS_TOTAL`, batches of a few
queries each) and cancellable: it checks the data version between its steps and every
`CHECKPOINT_EVERY` workloads, and when the data changed under it (another upload landed, one
was deleted) it stops there, writes nothing (its transaction rolls back) and asks for a new
refresh, which sees the new data.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit_app.lib.results_cache import current_version
from audit_app.models import DataVersion, DerivedState

logger = logging.getLogger(__name__)

REFRESH_TASK = "audit_app.refresh_derived"
# Set while the caller will run `derived_refresh` itself once its change commits.
_REFRESHED_BY_CALLER: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "refreshed_by_caller", default=False
)


class RefreshCancelled(Exception):
    """The data changed while a refresh ran: its results would be stale, so it stops."""


def refresh_checkpoint(token: str, version: int | None = None) -> Callable[[], None]:
    """A check that raises RefreshCancelled once the data version is no longer ``token``
    (with ``version``: once its number moved, so live landings alone do not cancel).

    A refresh runs for as long as its workloads take; an upload landing or deleted meanwhile
    makes its results stale before they are written, so it stops at its next check, writes
    nothing (its transaction rolls back) and asks for a new refresh. Live records landing
    meanwhile do not stop it: micro-batches land every few seconds, and a refresh longer than
    that would never finish; the next throttled refresh counts them."""

    def check() -> None:
        row = DataVersion.objects.filter(pk=1).values_list("token", "version").first()
        if row is not None and (row[0] == token or (version is not None and row[1] == version)):
            return
        raise RefreshCancelled(token)

    return check


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


def derived_refresh(*, force: bool = False, now: datetime | None = None) -> bool:
    """Re-classify workloads and re-price recommendations if a refresh is due (`refresh_due`:
    the data changed since the last refresh, live landings only on their throttle) or
    ``force``; then warm the pages' cache (`warm_defaults`). True when it recomputed; False
    when nothing was due or the data changed under it (then a new refresh is requested)."""
    from audit_app.recommendations.services import recommendations_refresh
    from audit_app.workloads.services import workloads_classify

    try:
        with transaction.atomic():
            DerivedState.objects.get_or_create(pk=1)
            state = DerivedState.objects.select_for_update().get(pk=1)
            version = current_version()
            now = now or timezone.now()
            due = refresh_due(state=state, version=version, now=now)
            if not force and not due:
                return False
            checkpoint = refresh_checkpoint(version.token, version.version)
            workloads_classify(checkpoint=checkpoint)
            checkpoint()
            recommendations_refresh(data_version=version.version, checkpoint=checkpoint)
            checkpoint()
            state.data_token = version.token
            state.data_version = version.version
            state.computed_at = now
            state.save()
    except RefreshCancelled:
        logger.info("derived refresh stopped: the data changed under it; asking again")
        derived_refresh_request()
        return False
    try:
        warm_defaults()
    except Exception:  # a cold cache is slower, never wrong
        logger.warning("could not warm the results cache", exc_info=True)
    # Budgets and anomalies follow the new data in the same pass; deliveries are queued, and a
    # failed evaluation is logged, never raised (the schedule evaluates again).
    from audit_app.budgets.alerts import alerts_after_refresh

    alerts_after_refresh()
    return True


def derived_state() -> DerivedState | None:
    return DerivedState.objects.filter(pk=1).first()


def derived_refresh_request() -> None:
    """Ask the worker for a refresh once the caller's transaction commits (a no-op when
    `DERIVED_REFRESH_ON_CHANGE` is off, as in the unit tests, and inside
    `refreshed_by_caller`)."""
    if not getattr(settings, "DERIVED_REFRESH_ON_CHANGE", True) or _REFRESHED_BY_CALLER.get():
        return
    transaction.on_commit(_enqueue)


@contextmanager
def refreshed_by_caller() -> Iterator[None]:
    """Changes made inside ask the worker for no refresh: the caller runs `derived_refresh`
    itself right after (`upload_ingest`), so the worker's would find nothing due. Publishing
    it cost `manage.py ingest` a broker connection (over a second on the default SQLite
    broker). Should the caller's refresh not happen, the workers' sweep
    (`derived_refresh_if_stale`) still sees the data stale and asks."""
    token = _REFRESHED_BY_CALLER.set(True)
    try:
        yield
    finally:
        _REFRESHED_BY_CALLER.reset(token)


def _enqueue() -> None:
    from audit_app.ingestion.requeue import publish
    from audit_app.tasks import refresh_derived

    # The broker is down: a worker's sweep asks again (`derived_is_stale`).
    publish(refresh_derived, what="a refresh of derived results")


def derived_is_stale() -> bool:
    """True when the data changed since derived results were last computed."""
    state = derived_state()
    return state is None or state.data_token != current_version().token


def derived_refresh_if_stale(*, now: datetime | None = None) -> bool:
    """Queue a refresh when one is due (`refresh_due`). Every worker's sweep calls it, so a
    refresh asked for while the broker was down still happens; the live land task calls it
    after each pass, so data that changed only by live landings is refreshed once
    LIVE_REFRESH_MIN_SECONDS have passed since the last refresh, and not before."""
    due = refresh_due(state=derived_state(), version=current_version(), now=now or timezone.now())
    if not due:
        return False
    _enqueue()
    return True


def warm_defaults() -> None:
    """Compute what the overview, workloads list, reconciliation and spend API show by default
    and over each quick window (the last 7, 30, 90 and 365 days with data,
    `filters.QUICK_WINDOW_DAYS`), and the overview's month comparison, so the first visitor
    after a change is served from the cache, a year of data included; and the savings plan the
    overview, the recommendations and the workload pages show."""
    from audit_app.costs.billing import pool_reports, reconciliation
    from audit_app.recommendations.plan import plan_read
    from audit_app.reporting.filters import parse_filters, quick_windows
    from audit_app.reporting.selectors import filter_choices
    from audit_app.reporting.spend import month_comparison, spend_report, workload_list

    filter_choices()
    month_comparison(today=timezone.now().date())  # the overview's this month vs last
    default = parse_filters({})
    windows = [default, *(w for w in quick_windows() if w != default)]
    for filters in windows:  # the default first: most visitors see it
        spend_report(filters)
        workload_list(filters)
        pool_reports(start=filters.start, end=filters.end)
        reconciliation(start=filters.start, end=filters.end)
    plan_read()
