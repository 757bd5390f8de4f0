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

A refresh is proportional to the workloads (at most `MAX_WORKLOADS_TOTAL`, batches of a few
queries each) and cancellable: it checks the data version between its steps and every
`CHECKPOINT_EVERY` workloads, and when the data changed under it (another upload landed, one
was deleted) it stops there, writes nothing (its transaction rolls back) and asks for a new
refresh, which sees the new data.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit_app.lib.results_cache import current_version
from audit_app.models import DataVersion, DerivedState

logger = logging.getLogger(__name__)

REFRESH_TASK = "audit_app.refresh_derived"


class RefreshCancelled(Exception):
    """The data changed while a refresh ran: its results would be stale, so it stops."""


def refresh_checkpoint(token: str) -> Callable[[], None]:
    """A check that raises RefreshCancelled once the data version is no longer ``token``.

    A refresh runs for as long as its workloads take; an upload landing or deleted meanwhile
    makes its results stale before they are written, so it stops at its next check, writes
    nothing (its transaction rolls back) and asks for a new refresh."""

    def check() -> None:
        if DataVersion.objects.filter(pk=1).values_list("token", flat=True).first() != token:
            raise RefreshCancelled(token)

    return check


def derived_refresh(*, force: bool = False) -> bool:
    """Re-classify workloads and re-price recommendations if the data changed since the last
    refresh (or ``force``); then warm the default pages' cache. True when it recomputed; False
    when nothing changed or the data changed under it (then a new refresh is requested)."""
    from audit_app.recommendations.services import recommendations_refresh
    from audit_app.workloads.services import workloads_classify

    try:
        with transaction.atomic():
            DerivedState.objects.get_or_create(pk=1)
            state = DerivedState.objects.select_for_update().get(pk=1)
            version = current_version()
            if not force and version.token and state.data_token == version.token:
                return False
            checkpoint = refresh_checkpoint(version.token)
            workloads_classify(checkpoint=checkpoint)
            checkpoint()
            recommendations_refresh(data_version=version.version, checkpoint=checkpoint)
            checkpoint()
            state.data_token = version.token
            state.data_version = version.version
            state.computed_at = timezone.now()
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
    `DERIVED_REFRESH_ON_CHANGE` is off, as in the unit tests)."""
    if not getattr(settings, "DERIVED_REFRESH_ON_CHANGE", True):
        return
    transaction.on_commit(_enqueue)


def _enqueue() -> None:
    from audit_app.ingestion.requeue import publish
    from audit_app.tasks import refresh_derived

    # The broker is down: a worker's sweep asks again (`derived_is_stale`).
    publish(refresh_derived, what="a refresh of derived results")


def derived_is_stale() -> bool:
    """True when the data changed since derived results were last computed."""
    state = derived_state()
    return state is None or state.data_token != current_version().token


def derived_refresh_if_stale() -> bool:
    """Queue a refresh when one is due (every worker's sweep calls it, so a refresh asked for
    while the broker was down still happens)."""
    if not derived_is_stale():
        return False
    _enqueue()
    return True


def warm_defaults() -> None:
    """Compute what the overview, workloads list and spend API show by default, so the first
    visitor after a change is served from the cache."""
    from audit_app.reporting.filters import parse_filters
    from audit_app.reporting.selectors import filter_choices
    from audit_app.reporting.spend import spend_report, workload_list

    filters = parse_filters({})
    filter_choices()
    spend_report(filters)
    workload_list(filters)
