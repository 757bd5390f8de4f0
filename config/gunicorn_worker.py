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

Once the application is loaded, each pool thread also opens its database connection, when
connections persist between requests (``CONN_MAX_AGE`` not 0, as with PostgreSQL), instead of
leaving it to the thread's first request. A new PostgreSQL connection starts a server process
and signs in; when 50 users arrive on a fresh server, ~50 of them did so in the same second,
beside the answers. The threads open
them as the worker starts accepting, so a database slow to answer delays no request that does
not need it. A busy server's threads hold these connections anyway (every one of a 2 x 32
server's 64 threads answered within the first 10 s of `make load`).

With ``--reuse-port`` (as `make load` and the production image run it), every worker listens
on a socket of its own and the kernel spreads new connections among them. With one shared
socket, the worker awake when a burst arrives takes most of it, one core doing most of the work
while the other waits; with a socket each, a burst splits about evenly (`docs/performance.md`
has the traces' figures). A worker that stops (a restart, ``max_requests``) takes what the
kernel has queued on its socket and then closes it at once, so no new connection waits on a
socket nobody accepts from during its graceful shutdown (`close_listeners`).

Run with ``gunicorn --worker-class config.gunicorn_worker.ThreadWorker --threads N
--reuse-port``.
"""

from __future__ import annotations

import logging
import select
import threading
from collections.abc import Callable
from concurrent import futures
from typing import Any, TypeVar

from gunicorn.workers.gthread import ThreadWorker as GunicornThreadWorker

THREAD_START_TIMEOUT_S = 30.0
T = TypeVar("T")

logger = logging.getLogger(__name__)


class ThreadWorker(GunicornThreadWorker):
    def get_thread_pool(self) -> futures.ThreadPoolExecutor:
        pool = futures.ThreadPoolExecutor(max_workers=self.cfg.threads)
        start_all_threads(pool, self.cfg.threads)
        return pool

    def load_wsgi(self) -> None:
        super().load_wsgi()  # Django is set up from here on, with or without --preload
        # Not waited for; the task logs what goes wrong.
        run_on_every_thread(self.tpool, self.cfg.threads, open_database_connection)

    def accept(self, listener: Any) -> None:
        for _ in range(self.idle_threads()):
            before = self.nr_conns
            super().accept(listener)
            if self.nr_conns == before:  # nothing waiting (EAGAIN) or the client left
                return

    def set_accept_enabled(self, enabled: bool) -> None:
        super().set_accept_enabled(enabled)
        if not enabled and not self.alive and self.cfg.reuse_port:
            self.close_listeners()

    def close_listeners(self) -> None:
        """On the way out, with a listening socket of this worker's own (``--reuse-port``):
        accept what the kernel already queued on it, to be served before the worker exits, then
        close it, so the kernel sends new connections to the other workers. A socket shared
        with the other workers is left alone: they keep accepting from it."""
        for listener in self.sockets:
            if _closed(listener):
                continue
            # A listening socket is readable while its queue holds a connection; the queue
            # holds at most the backlog, so a flood of new ones cannot keep this going.
            for _ in range(self.cfg.backlog):
                if not select.select([listener], [], [], 0)[0]:
                    break
                super().accept(listener)
            listener.close()

    def idle_threads(self) -> int:
        """Threads with no request, at least 1: connections kept alive between requests hold
        no thread (gunicorn counts them in ``nr_conns`` all the same)."""
        waiting = len(getattr(self, "keepalived_conns", ())) + len(
            getattr(self, "pending_conns", ())
        )
        return max(1, self.cfg.threads - (self.nr_conns - waiting))


def _closed(listener: Any) -> bool:
    raw = getattr(listener, "sock", listener)  # gunicorn's wrapper drops its socket on close
    return raw is None or raw.fileno() == -1


def start_all_threads(pool: futures.ThreadPoolExecutor, threads: int) -> None:
    """Make `pool` start all its `threads` now. The pool starts a thread only when a task finds
    none idle, so each thread is handed a task that waits until all of them have one."""
    for started in run_on_every_thread(pool, threads, lambda: None):
        started.result()


def run_on_every_thread(
    pool: futures.ThreadPoolExecutor, threads: int, task: Callable[[], T]
) -> list[futures.Future[T]]:
    """Run `task` once on each of the `threads` threads of `pool`, returning at once with the
    futures of its results: each of the `threads` tasks first waits until all of them are
    held, so no thread takes two."""
    everyone = threading.Barrier(threads, timeout=THREAD_START_TIMEOUT_S)

    def hold_then_run() -> T:
        everyone.wait()
        return task()

    return [pool.submit(hold_then_run) for _ in range(threads)]


def open_database_connection(alias: str = "default") -> None:
    """Open this thread's connection to database `alias`, as its first request would, when
    connections persist between requests; with ``CONN_MAX_AGE`` 0 (SQLite here) a request
    closes the connection it finds, so there is nothing to open ahead. A database that cannot
    be reached is logged, and the first request that needs it reports it as before."""
    from django.db import connections

    connection = connections[alias]
    if connection.settings_dict.get("CONN_MAX_AGE", 0) == 0:  # None: kept without a limit
        return
    try:
        connection.ensure_connection()
    except Exception:
        logger.warning("database %r not reachable ahead of the first request", alias, exc_info=True)
