"""Password hashing that yields the CPU to everything else the server does.

PBKDF2 is meant to cost (about 0.2 s of CPU per sign-in with Django's iterations), and a burst
of sign-ins (a team arriving at 9:00, a load test's users all starting at once) would otherwise
hold every core for seconds while pages and API calls wait behind it. `LowPriorityPBKDF2Hasher`
runs the hash in a small pool of threads of its own whose scheduling priority is the lowest
(nice 19, Linux schedules threads one by one), so a page view preempts a sign-in instead of
queueing behind it; a sign-in alone on an idle machine takes as long as before.

The stored format is Django's own ``pbkdf2_sha256``: existing passwords verify, and a password
this hasher stores verifies with Django's hasher.
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from django.contrib.auth.hashers import PBKDF2PasswordHasher

# Two threads: hashlib releases the GIL, so two sign-ins can use both cores when nothing else
# wants them.
POOL_THREADS = 2
LOWEST_PRIORITY = 19

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_pid = 0


def _lower_this_thread() -> None:
    # Not Linux, or not allowed: hash at normal priority.
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), LOWEST_PRIORITY)


def hashing_pool() -> ThreadPoolExecutor:
    """The process's pool of low-priority hashing threads (a new one after a fork: a forked
    child has none of its parent's threads)."""
    global _pool, _pool_pid
    with _lock:
        if _pool is None or _pool_pid != os.getpid():
            _pool = ThreadPoolExecutor(
                max_workers=POOL_THREADS,
                thread_name_prefix="password-hash",
                initializer=_lower_this_thread,
            )
            _pool_pid = os.getpid()
        return _pool


class LowPriorityPBKDF2Hasher(PBKDF2PasswordHasher):
    """Django's PBKDF2-SHA256 hasher, hashing on a low-priority thread."""

    def encode(self, password: str, salt: str, iterations: int | None = None) -> str:
        encode = PBKDF2PasswordHasher.encode
        result: str = hashing_pool().submit(encode, self, password, salt, iterations).result()
        return result
