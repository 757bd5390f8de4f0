"""gunicorn's threaded worker, with its threads started before the first request and every
waiting connection accepted when it wakes.

In `make load`'s first second, 50 users connect within 7 ms while the first API calls hold both
cores. gunicorn's gthread worker met that burst one connection at a time: its main thread
accepted one connection per wake-up from ``select``, and the thread pool started a new thread
for each (``Thread.start`` waits until the new thread has run, so each start waited its turn for
the GIL behind the request threads, ~10 ms apiece). The last login forms were accepted 40-330 ms
after they arrived and then answered in 15-90 ms.

This worker starts every pool thread before it accepts anything, and accepts up to as many
connections as it has idle threads per wake-up. The cap keeps one worker from taking the whole
backlog while another has threads to spare: a busy worker's main thread wakes later, so the idle
one takes more of a burst.

Run with ``gunicorn --worker-class config.gunicorn_worker.ThreadWorker --threads N``.
"""

from __future__ import annotations

import threading
from concurrent import futures
from typing import Any

from gunicorn.workers.gthread import ThreadWorker as GunicornThreadWorker

THREAD_START_TIMEOUT_S = 30.0


class ThreadWorker(GunicornThreadWorker):
    def get_thread_pool(self) -> futures.ThreadPoolExecutor:
        pool = futures.ThreadPoolExecutor(max_workers=self.cfg.threads)
        start_all_threads(pool, self.cfg.threads)
        return pool

    def accept(self, listener: Any) -> None:
        for _ in range(self.idle_threads()):
            before = self.nr_conns
            super().accept(listener)
            if self.nr_conns == before:  # nothing waiting (EAGAIN) or the client left
                return

    def idle_threads(self) -> int:
        """Threads with no request, at least 1: connections kept alive between requests hold
        no thread (gunicorn counts them in ``nr_conns`` all the same)."""
        waiting = len(getattr(self, "keepalived_conns", ())) + len(
            getattr(self, "pending_conns", ())
        )
        return max(1, self.cfg.threads - (self.nr_conns - waiting))


def start_all_threads(pool: futures.ThreadPoolExecutor, threads: int) -> None:
    """Make `pool` start all its `threads` now. The pool starts a thread only when a task finds
    none idle, so every thread is handed a task that waits until all of them have one."""
    everyone = threading.Barrier(threads + 1, timeout=THREAD_START_TIMEOUT_S)
    for _ in range(threads):
        pool.submit(everyone.wait)
    everyone.wait()
