"""Failure counts: shared by processes, kept across restarts, in the database or Redis."""

from __future__ import annotations

import subprocess
import sys
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone

from audit_app.access.auth_failures import (
    DatabaseFailureStore,
    Lock,
    RedisFailureStore,
    failure_lock,
    failure_record,
    login_account_key,
    login_address_key,
)
from audit_app.models import AuthFailureCount
from tests import integration_support
from tests.support.processes import REPO_ROOT, child_env


def test_keys() -> None:
    # The account key is the start of the SHA-256 of the case-folded name and the client
    # address (a username field sometimes holds a mistyped password):
    # `printf 'ann\n198.51.100.7' | sha256sum` gives 285b7a2e2f7c...
    address = "198.51.100.7"
    assert login_account_key(" Ann ", address) == login_account_key("ann", address)
    assert login_account_key("ann", address) == (
        "login-account:285b7a2e2f7c5ea163fd1d1d0e5b9397d46c105b"
    )
    assert login_account_key("ann", "198.51.100.8") != login_account_key("ann", address)
    assert login_address_key("2001:db8::7") == "login-address:2001:db8::7"


@pytest.mark.django_db
def test_database_counts_are_shared_by_store_instances() -> None:
    writer, reader = DatabaseFailureStore(), DatabaseFailureStore()
    for _ in range(3):
        writer.add(["login-address:192.0.2.5", "login-account:x"])
    counts = reader.counts(["login-address:192.0.2.5", "login-account:x", "login-account:y"])
    assert {key: count.failures for key, count in counts.items()} == {
        "login-address:192.0.2.5": 3,
        "login-account:x": 3,
    }
    assert AuthFailureCount.objects.count() == 2


@pytest.mark.django_db
def test_an_ended_window_counts_nothing_and_is_removed() -> None:
    store = DatabaseFailureStore()
    store.add(["login-address:192.0.2.5"])
    AuthFailureCount.objects.update(failures=99, window_ends_at=timezone.now() - timedelta(1))
    assert store.counts(["login-address:192.0.2.5"]) == {}
    store.add(["login-address:192.0.2.6"])
    assert list(AuthFailureCount.objects.values_list("key", "failures")) == [
        ("login-address:192.0.2.6", 1)
    ]


@pytest.mark.django_db
def test_a_lock_starts_at_the_limit_and_names_account_or_address() -> None:
    account, address = "login-account:x", "login-address:192.0.2.5"
    with override_settings(AUTH_FAILURES_PER_MINUTE=2):
        failure_record(account_key=None, address_key=address)
        assert failure_lock(account_key=account, address_key=address) is None
        failure_record(account_key=account, address_key=address)
        lock = failure_lock(account_key=account, address_key=address)
        assert lock is not None and not lock.on_account
        assert 1 <= lock.retry_after <= 60
        failure_record(account_key=account, address_key=None)
        lock = failure_lock(account_key=account, address_key=address)
        assert lock is not None and lock.on_account
        assert failure_lock(account_key=None, address_key=None) is None


def _record_in_another_process(address: str, extra_env: dict[str, str], tmp_path: Any) -> None:
    """Three failures for ``address``, counted by a separate Python process that then exits
    (as a gunicorn worker that restarts)."""
    code = (
        "import django; django.setup()\n"
        "from audit_app.access.auth_failures import failure_record, login_address_key\n"
        "for _ in range(3):\n"
        f"    failure_record(account_key=None, address_key=login_address_key({address!r}))\n"
    )
    env = child_env(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "DJANGO_DEBUG": "true",
            "DJANGO_VAR_DIR": str(tmp_path),
            "DATABASE_URL": integration_support.test_database_url(),
            "AUTH_FAILURES_REDIS_URL": "",
            **extra_env,
        }
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.django_db(transaction=True)
def test_database_counts_are_shared_across_processes(tmp_path: Any) -> None:
    _record_in_another_process("192.0.2.7", {}, tmp_path)
    with override_settings(AUTH_FAILURES_PER_MINUTE=3, AUTH_FAILURES_REDIS_URL=""):
        lock = failure_lock(account_key=None, address_key=login_address_key("192.0.2.7"))
        assert isinstance(lock, Lock) and not lock.on_account
        assert failure_lock(account_key=None, address_key=login_address_key("192.0.2.8")) is None


@pytest.mark.django_db(transaction=True)
def test_redis_counts_are_shared_across_processes(redis_url: str, tmp_path: Any) -> None:
    address = f"test-{uuid.uuid4().hex}"  # unique: the Redis may hold earlier runs
    _record_in_another_process(address, {"AUTH_FAILURES_REDIS_URL": redis_url}, tmp_path)
    assert AuthFailureCount.objects.count() == 0  # counted in Redis, not the database
    with override_settings(AUTH_FAILURES_PER_MINUTE=3, AUTH_FAILURES_REDIS_URL=redis_url):
        lock = failure_lock(account_key=None, address_key=login_address_key(address))
        assert isinstance(lock, Lock) and not lock.on_account
        assert 1 <= lock.retry_after <= 60


def test_redis_store_instances_share_counts_with_a_window(redis_url: str) -> None:
    key = f"login-address:test-{uuid.uuid4().hex}"
    writer, reader = RedisFailureStore(redis_url), RedisFailureStore(redis_url)
    writer.add([key])
    writer.add([key])
    count = reader.counts([key, key + "-other"])
    assert list(count) == [key]
    assert count[key].failures == 2
    assert 1 <= count[key].seconds_left <= 60


@pytest.mark.django_db
def test_a_redis_that_does_not_answer_leaves_counting_to_the_database() -> None:
    with override_settings(
        AUTH_FAILURES_PER_MINUTE=1, AUTH_FAILURES_REDIS_URL="redis://127.0.0.1:9/0"
    ):
        failure_record(account_key=None, address_key="login-address:192.0.2.9")
        assert failure_lock(account_key=None, address_key="login-address:192.0.2.9")
    assert list(AuthFailureCount.objects.values_list("key", "failures")) == [
        ("login-address:192.0.2.9", 1)
    ]
