"""The refresh of derived results: classify, recommend, plan, evaluate alerts, warm caches.

Its rules in full: `docs/architecture.md`, section "The refresh, step by step".
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from audit_app.budgets.alerts import alerts_after_refresh
from audit_app.costs.billing import pool_reports, reconciliation
from audit_app.lib.derived_state import refresh_due
from audit_app.lib.results_cache import current_version, refresh_request
from audit_app.models import DataVersion, DerivedState
from audit_app.recommendations.plan import plan_read
from audit_app.recommendations.services import recommendations_refresh
from audit_app.reporting.filters import parse_filters, quick_windows
from audit_app.reporting.selectors import filter_choices
from audit_app.reporting.spend import month_comparison, spend_report, workload_list
from audit_app.workloads import services as workloads

logger = logging.getLogger(__name__)


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


def derived_refresh(*, force: bool = False, now: datetime | None = None) -> bool:
    """Re-classify workloads and re-price recommendations if a refresh is due (`refresh_due`:
    the data changed since the last refresh, live landings only on their throttle) or
    ``force``; then warm the pages' cache (`warm_defaults`). True when it recomputed; False
    when nothing was due or the data changed under it (then a new refresh is requested)."""
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
            workloads.workloads_classify(checkpoint=checkpoint)
            checkpoint()
            recommendations_refresh(data_version=version.version, checkpoint=checkpoint)
            checkpoint()
            state.data_token = version.token
            state.data_version = version.version
            state.computed_at = now
            state.save()
    except RefreshCancelled:
        logger.info("derived refresh stopped: the data changed under it; asking again")
        refresh_request()
        return False
    try:
        warm_defaults()
    except Exception:  # a cold cache is slower, never wrong
        logger.warning("could not warm the results cache", exc_info=True)
    # Budgets and anomalies follow the new data in the same pass; deliveries are queued, and a
    # failed evaluation is logged, never raised (the schedule evaluates again).
    alerts_after_refresh()
    return True


def warm_defaults() -> None:
    """Compute what the overview, workloads list, reconciliation and spend API show by default
    and over each quick window (the last 7, 30, 90 and 365 days with data,
    `filters.QUICK_WINDOW_DAYS`), and the overview's month comparison, so the first visitor
    after a change is served from the cache, a year of data included; and the savings plan the
    overview, the recommendations and the workload pages show."""
    filter_choices()
    month_comparison()  # the overview's this month vs last
    default = parse_filters({})
    windows = [default, *(w for w in quick_windows() if w != default)]
    for filters in windows:  # the default first: most visitors see it
        spend_report(filters)
        workload_list(filters)
        pool_reports(start=filters.start, end=filters.end)
        reconciliation(start=filters.start, end=filters.end)
    plan_read()
