"""Sign-ins hash on a low-priority thread, in Django's own format."""

from __future__ import annotations

import os
import threading

from django.contrib.auth.hashers import PBKDF2PasswordHasher, check_password, make_password
from django.test import override_settings

from audit_app.access.hashers import LOWEST_PRIORITY, LowPriorityPBKDF2Hasher, hashing_pool

LOW = ["audit_app.access.hashers.LowPriorityPBKDF2Hasher"]


def test_the_hash_runs_on_a_thread_of_the_lowest_priority() -> None:
    def nice_here() -> tuple[int, int]:
        return threading.get_native_id(), os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    thread_id, nice = hashing_pool().submit(nice_here).result()
    assert nice == LOWEST_PRIORITY
    assert thread_id != threading.get_native_id()
    # The caller's own thread keeps its priority.
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) < LOWEST_PRIORITY


def test_same_format_as_djangos_hasher_both_ways() -> None:
    salt, iterations = "fixedsalt1234567", 1000
    ours = LowPriorityPBKDF2Hasher().encode("s3cret-pass", salt, iterations)
    theirs = PBKDF2PasswordHasher().encode("s3cret-pass", salt, iterations)
    assert ours == theirs
    assert ours.startswith("pbkdf2_sha256$1000$fixedsalt1234567$")
    assert PBKDF2PasswordHasher().verify("s3cret-pass", ours)
    assert LowPriorityPBKDF2Hasher().verify("s3cret-pass", theirs)
    assert not LowPriorityPBKDF2Hasher().verify("wrong", theirs)


@override_settings(PASSWORD_HASHERS=LOW)
def test_passwords_stored_before_still_sign_in() -> None:
    stored = PBKDF2PasswordHasher().encode("old-password", "oldsalt123456789", 1000)
    assert check_password("old-password", stored)
    assert not check_password("other", stored)
    assert make_password("new-password").startswith("pbkdf2_sha256$")


def test_production_settings_list_it_first_and_one_hasher_per_algorithm() -> None:
    from config.settings import base

    assert base.PASSWORD_HASHERS[0] == LOW[0]
    assert "django.contrib.auth.hashers.PBKDF2PasswordHasher" not in base.PASSWORD_HASHERS
