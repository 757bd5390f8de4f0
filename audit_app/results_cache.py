"""Results of reads over rollups, cached until the data changes.

Pages recompute spend, percentiles and filter choices from rollups on every request; over a
year of data for hundreds of workloads that is seconds of work, while the data only changes
when an upload lands or is deleted, or a price card or serving pool is edited. So results are
kept in the `results` cache under a *data version*: a number in the database (`DataVersion`)
that each of those changes raises in its own transaction, so a reader that sees the new data
sees the new number, whichever process or machine made the change and whichever cache backend
each process uses. Entries of old versions are never read again and expire.

Keys include the SQL of the queryset a result was computed from, so two filters never share an
entry. The first reader after a change pays the full cost; `warm_defaults` pays it in the
worker right after an ingest instead.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.cache import caches
from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from audit_app.models import DataVersion

logger = logging.getLogger(__name__)

T = TypeVar("T")
_MISSING = object()


def _cache() -> Any:
    return caches["results"]


def data_version() -> int:
    version = DataVersion.objects.filter(pk=1).values_list("version", flat=True).first()
    return version or 0


def data_changed() -> None:
    """Start a new data version, in the caller's transaction (call it after the change)."""
    with transaction.atomic():
        if not DataVersion.objects.filter(pk=1).update(
            version=F("version") + 1, changed_at=timezone.now()
        ):
            try:
                with transaction.atomic():
                    DataVersion.objects.create(pk=1, version=1)
            except IntegrityError:  # created meanwhile by another process
                DataVersion.objects.filter(pk=1).update(version=F("version") + 1)


def query_key(queryset: QuerySet[Any]) -> str:
    """The queryset's SQL with its parameters: two different filters never share a key."""
    sql, params = queryset.query.sql_with_params()
    return f"{queryset.model._meta.label}:{sql}:{params!r}"


def cached(kind: str, key: str, compute: Callable[[], T]) -> T:
    """``compute()``'s result, from the cache when this data version already has it."""
    cache = _cache()
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
    full_key = f"{data_version()}:{kind}:{digest}"
    try:
        value = cache.get(full_key, _MISSING)
    except Exception:  # a cache that is down must not take pages down: compute instead
        logger.warning("results cache unavailable; computing %s", kind, exc_info=True)
        return compute()
    if value is _MISSING:
        value = compute()
        try:
            cache.set(full_key, value)
        except Exception:
            logger.warning("results cache unavailable; not storing %s", kind, exc_info=True)
    return value  # type: ignore[return-value]


def warm_defaults() -> None:
    """Compute what the overview, workloads list and spend API show by default, so the first
    visitor after an ingest is served from the cache."""
    from audit_app.filters import parse_filters
    from audit_app.selectors import (
        filter_choices,
        spend_breakdown,
        spend_per_day,
        workload_stats,
    )
    from audit_app.selectors_billing import pool_reports

    filters = parse_filters({})
    queryset = filters.queryset()
    filter_choices()
    pool_reports(start=filters.start, end=filters.end)
    workload_stats(queryset=queryset)
    for group_by in ("provider", "workload"):
        spend_breakdown(group_by=group_by, queryset=queryset)
    spend_per_day(dimension="provider", queryset=queryset, start=filters.start, end=filters.end)
