"""Failed logins and invalid API tokens, counted per client address and per account: for logins
per (account, client address) pair, so failures sent from other addresses never lock a named
account out for its owner (a count per account alone let anyone do that); for API tokens per
the token's owner, as a valid token always authenticates.

Every web process must see the same counts, and a restart must not reset them, so they live in
Redis when AUTH_FAILURES_REDIS_URL names one, else in the database (`AuthFailureCount`). When
that Redis does not answer, the database counts instead: a login never fails on a count.

A count covers a fixed window of FAILURE_WINDOW_SECONDS from its first failure; a key with
AUTH_FAILURES_PER_MINUTE failures in its window is locked until the window ends. Which lock
refuses what is the callers' rule (docs/running.md, "Running in production"): the login page and
`HashedTokenAuthentication`.

Ours, not django-axes: axes checks its lock before the credentials, so a lock on an address
would refuse everyone's correct password there, and it cannot count invalid API tokens per owner.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Protocol, TypeVar

import redis
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from audit_app.models import AuthFailureCount

logger = logging.getLogger(__name__)

FAILURE_WINDOW_SECONDS = 60
_REDIS_KEY_PREFIX = "audit-auth-failures:"
# INCR and a window that starts with the first failure, in one step: a key can never be left
# without an expiry (which a separate SET NX EX and INCR could do across an expiry).
_REDIS_ADD = """
local failures = redis.call('INCR', KEYS[1])
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return failures
"""

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class FailureCount:
    failures: int
    seconds_left: int  # until the window ends


@dataclass(frozen=True, kw_only=True)
class Lock:
    on_account: bool  # else on the client address
    retry_after: int  # seconds


class FailureStore(Protocol):
    def counts(self, keys: Sequence[str]) -> dict[str, FailureCount]:
        """The live count of each key that has one."""
        ...

    def add(self, keys: Sequence[str]) -> None:
        """One more failure for each key."""
        ...


class DatabaseFailureStore:
    def counts(self, keys: Sequence[str]) -> dict[str, FailureCount]:
        now = timezone.now()
        rows = AuthFailureCount.objects.filter(key__in=keys, window_ends_at__gt=now)
        return {
            row.key: FailureCount(
                failures=row.failures, seconds_left=_seconds_until(row.window_ends_at, now)
            )
            for row in rows
        }

    def add(self, keys: Sequence[str]) -> None:
        now = timezone.now()
        # Ended windows go first, so the increment below always counts in a live window.
        AuthFailureCount.objects.filter(window_ends_at__lte=now).delete()
        window_ends_at = now + timedelta(seconds=FAILURE_WINDOW_SECONDS)
        for key in keys:
            _database_add(key, window_ends_at)


def _database_add(key: str, window_ends_at: datetime) -> None:
    # F() increments in SQL, so concurrent failures from several processes all count; of two
    # processes creating the same key, the one that loses the unique index increments instead.
    for _ in range(2):
        if AuthFailureCount.objects.filter(key=key).update(failures=F("failures") + 1):
            return
        try:
            with transaction.atomic():
                AuthFailureCount.objects.create(key=key, failures=1, window_ends_at=window_ends_at)
            return
        except IntegrityError:
            continue


class RedisFailureStore:
    def __init__(self, url: str) -> None:
        # Fail fast when Redis is away: the database counts instead.
        self._client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=1.0)
        self._add = self._client.register_script(_REDIS_ADD)

    def counts(self, keys: Sequence[str]) -> dict[str, FailureCount]:
        pipe = self._client.pipeline(transaction=False)
        for key in keys:
            pipe.get(_REDIS_KEY_PREFIX + key)
            pipe.pttl(_REDIS_KEY_PREFIX + key)
        replies = pipe.execute()
        found = {}
        for key, failures, milliseconds_left in zip(
            keys, replies[0::2], replies[1::2], strict=True
        ):
            if failures is not None and milliseconds_left > 0:
                found[key] = FailureCount(
                    failures=int(failures), seconds_left=math.ceil(milliseconds_left / 1000)
                )
        return found

    def add(self, keys: Sequence[str]) -> None:
        for key in keys:
            self._add(keys=[_REDIS_KEY_PREFIX + key], args=[FAILURE_WINDOW_SECONDS * 1000])


@lru_cache(maxsize=4)
def _redis_store(url: str) -> RedisFailureStore:
    return RedisFailureStore(url)


def _with_store(operation: Callable[[FailureStore], T]) -> T:
    url = settings.AUTH_FAILURES_REDIS_URL
    if not url:
        return operation(DatabaseFailureStore())
    try:
        return operation(_redis_store(url))
    except redis.RedisError as exc:
        logger.warning("Counting failed logins in the database: Redis answered %r", exc)
        return operation(DatabaseFailureStore())


def _seconds_until(moment: datetime, now: datetime) -> int:
    return max(1, math.ceil((moment - now).total_seconds()))


def login_account_key(username: str, address: str) -> str:
    """The key of one account's failed logins from one client address."""
    # Hashed: a username field sometimes holds a mistyped password.
    account = username.strip().casefold()
    digest = hashlib.sha256(f"{account}\n{address}".encode("utf-8", "backslashreplace"))
    return f"login-account:{digest.hexdigest()[:40]}"


def login_address_key(address: str) -> str:
    return f"login-address:{address}"


def token_account_key(user_id: int) -> str:
    return f"token-account:{user_id}"


def token_address_key(address: str) -> str:
    return f"token-address:{address}"


def failure_lock(*, account_key: str | None, address_key: str | None) -> Lock | None:
    """The lock on the account key (first) or the address, or None when neither is locked."""
    keys = [key for key in (account_key, address_key) if key is not None]
    if not keys:
        return None
    counts = _with_store(lambda store: store.counts(keys))
    for key in keys:
        count = counts.get(key)
        if count is not None and count.failures >= settings.AUTH_FAILURES_PER_MINUTE:
            return Lock(on_account=key == account_key, retry_after=count.seconds_left)
    return None


def failure_record(*, account_key: str | None, address_key: str | None) -> None:
    keys = [key for key in (account_key, address_key) if key is not None]
    if keys:
        _with_store(lambda store: store.add(keys))
