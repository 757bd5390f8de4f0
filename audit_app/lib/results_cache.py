"""The data version: where a change to the data is recorded; results of reads cached under it.

Its rules in full: `docs/architecture.md`, section "The data version and the results cache".
"""

from __future__ import annotations

import hashlib
import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import BaseCache, caches
from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from audit_app.lib import task_queue
from audit_app.models import DataVersion

logger = logging.getLogger(__name__)

T = TypeVar("T")
_MISSING = object()


def _cache() -> BaseCache:
    return caches["results"]


def new_token() -> str:
    return uuid.uuid4().hex


def current_version() -> DataVersion:
    """The database's data version row (created, with a fresh token, when missing)."""
    row = DataVersion.objects.filter(pk=1).first()
    if row is not None:
        return row
    try:
        with transaction.atomic():
            return DataVersion.objects.create(pk=1, version=0, token=new_token())
    except IntegrityError:  # created meanwhile by another process
        return DataVersion.objects.get(pk=1)


def data_version() -> int:
    return current_version().version


# The data token of the request running on this thread, once read (see the module docstring).
_request = threading.local()


def request_started(**_kwargs: Any) -> None:
    _request.active = True
    _request.token = None


def request_finished(**_kwargs: Any) -> None:
    _request.active = False
    _request.token = None


def data_token() -> str:
    """The current data token; read once per web request."""
    if not getattr(_request, "active", False):
        return _read_token()
    if _request.token is None:
        _request.token = _read_token()
    token: str = _request.token
    return token


def _read_token() -> str:
    row = current_version()
    if not row.token:  # a row from before tokens existed
        DataVersion.objects.filter(pk=1, token="").update(token=new_token())
        row = DataVersion.objects.get(pk=1)
    return row.token


def data_changed(*, live: bool = False) -> None:
    """Record a change to the data (call it after the change): a new data version in the
    caller's transaction, and a refresh of derived results asked for once it commits.

    ``live``: the change is a landing of live records (`audit_app.ingestion.live.landing`). It
    draws a new token, so pages show the new records at once, but keeps the version number and
    asks for no refresh: the number counts the changes derived results follow at once, and live
    landings refresh them at most every LIVE_REFRESH_MIN_SECONDS (the land task asks,
    `derived_state.refresh_if_due`)."""
    _request.token = None  # this request reads the new token from now on
    changes: dict[str, Any] = {"token": new_token(), "changed_at": timezone.now()}
    if not live:
        changes["version"] = F("version") + 1
    with transaction.atomic():
        if not DataVersion.objects.filter(pk=1).update(**changes):
            try:
                with transaction.atomic():
                    DataVersion.objects.create(pk=1, version=1, token=new_token())
            except IntegrityError:  # created meanwhile by another process
                DataVersion.objects.filter(pk=1).update(version=F("version") + 1, token=new_token())
    if not live and settings.DERIVED_REFRESH_ON_CHANGE:
        transaction.on_commit(refresh_request)  # at once outside a transaction


def refresh_request() -> None:
    """Ask a worker for a refresh of derived results: queue the `audit_app.refresh_derived`
    task by its name. A no-op when DERIVED_REFRESH_ON_CHANGE is off (the unit tests). A broker
    that is away is logged: the workers' sweep asks again (`derived_state.refresh_if_due`)."""
    if settings.DERIVED_REFRESH_ON_CHANGE:
        task_queue.publish(task_queue.REFRESH_DERIVED, what="a refresh of derived results")


def query_key(queryset: QuerySet[Any]) -> str:
    """The queryset's SQL with its parameters: two different filters never share a key."""
    sql, params = queryset.query.sql_with_params()
    return f"{queryset.model._meta.label}:{sql}:{params!r}"


def cached(kind: str, key: str, compute: Callable[[], T]) -> T:
    """``compute()``'s result, from the cache when this data version already has it."""
    cache = _cache()
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
    full_key = f"{data_token()}:{kind}:{digest}"
    try:
        value = cache.get(full_key, _MISSING)
    except Exception:  # a cache that is down must not take pages down: compute instead
        logger.warning("results cache unavailable; computing %s", kind, exc_info=True)
        return compute()
    if value is _MISSING:
        value = _compute_once(cache, full_key, kind, compute)
    return value


# A missing entry's computation per key, with how many threads want it: the first computes,
# the others wait for its result instead of computing the same thing beside it (a burst of
# first visitors after a change, or after a server start with an empty cache, would otherwise
# compute one page's seconds of work once per thread).
_computing: dict[str, tuple[threading.Lock, int]] = {}
_computing_guard = threading.Lock()
# A computation that takes longer than this no longer holds the others back.
SINGLE_FLIGHT_WAIT_S = 30.0


def _compute_once(cache: BaseCache, full_key: str, kind: str, compute: Callable[[], T]) -> T:
    with _computing_guard:
        lock, wanting = _computing.get(full_key, (threading.Lock(), 0))
        _computing[full_key] = (lock, wanting + 1)
    acquired = lock.acquire(timeout=SINGLE_FLIGHT_WAIT_S)
    try:
        value: Any = _MISSING
        if wanting:  # another thread computed it meanwhile, most likely
            try:
                value = cache.get(full_key, _MISSING)
            except Exception:
                logger.warning("results cache unavailable; computing %s", kind, exc_info=True)
        if value is _MISSING:
            value = compute()
            try:
                cache.set(full_key, value)
            except Exception:
                logger.warning("results cache unavailable; not storing %s", kind, exc_info=True)
        return value
    finally:
        if acquired:
            lock.release()
        with _computing_guard:
            lock, wanting = _computing[full_key]
            if wanting == 1:
                del _computing[full_key]
            else:
                _computing[full_key] = (lock, wanting - 1)
