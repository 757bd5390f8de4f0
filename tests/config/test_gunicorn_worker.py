"""config.gunicorn_worker: every pool thread started up front, each thread's database connection
opened before its first request, a burst of connections accepted in one wake-up (as many as
there are idle threads), and gunicorn serving with it."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import pytest
from django.core.signals import request_finished, request_started
from django.db import OperationalError, connections
from gunicorn.config import Config
from gunicorn.glogging import Logger

from config.gunicorn_worker import (
    ThreadWorker,
    open_database_connection,
    run_on_every_thread,
    start_all_threads,
)
from tests.support.processes import REPO_ROOT, stop_process_group


def test_start_all_threads_starts_every_thread_before_returning() -> None:
    before = threading.active_count()
    pool = futures.ThreadPoolExecutor(max_workers=6)
    try:
        start_all_threads(pool, 6)
        assert threading.active_count() == before + 6
        # Six tasks that wait for each other run on the six threads already there.
        everyone = threading.Barrier(6, timeout=10)
        idents = list(pool.map(lambda _: (everyone.wait(), threading.get_ident())[1], range(6)))
        assert len(set(idents)) == 6
        assert threading.active_count() == before + 6
    finally:
        pool.shutdown()


def test_run_on_every_thread_runs_the_task_once_on_each_thread_without_waiting_for_it() -> None:
    pool = futures.ThreadPoolExecutor(max_workers=5)
    release = threading.Event()
    ran: list[int] = []

    def task() -> None:
        release.wait(10)
        ran.append(threading.get_ident())

    try:
        start_all_threads(pool, 5)
        pending = run_on_every_thread(pool, 5, task)
        assert ran == []  # returned while every task still waits
        release.set()
        for done in pending:
            done.result(timeout=10)
        assert len(ran) == 5
        assert len(set(ran)) == 5  # one per thread, none twice
    finally:
        release.set()
        pool.shutdown()


def test_run_on_every_thread_gives_a_quick_task_to_each_thread_not_twice_to_one() -> None:
    pool = futures.ThreadPoolExecutor(max_workers=6)
    ran: list[int] = []
    try:
        start_all_threads(pool, 6)
        for _ in range(20):
            ran.clear()
            for done in run_on_every_thread(pool, 6, lambda: ran.append(threading.get_ident())):
                done.result(timeout=10)
            assert len(set(ran)) == 6
    finally:
        pool.shutdown()


def test_the_worker_opens_connections_on_every_thread_once_the_application_is_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gunicorn.workers.gthread import ThreadWorker as GunicornThreadWorker

    import config.gunicorn_worker as module

    steps: list[str] = []
    opened: list[int] = []
    monkeypatch.setattr(GunicornThreadWorker, "load_wsgi", lambda self: steps.append("loaded"))

    def open_connection() -> None:
        steps.append("open")
        opened.append(threading.get_ident())

    monkeypatch.setattr(module, "open_database_connection", open_connection)
    worker, _ = _worker(threads=4)
    worker.tpool = worker.get_thread_pool()
    try:
        worker.load_wsgi()
        deadline = time.monotonic() + 10
        while len(opened) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert steps == ["loaded", "open", "open", "open", "open"]
        assert len(set(opened)) == 4
    finally:
        worker.tpool.shutdown()


def _thread_connections(pool: futures.ThreadPoolExecutor, threads: int) -> list[object]:
    """Each pool thread's open DB-API connection (None when it has none), one per thread."""
    return [
        done.result(timeout=20)
        for done in run_on_every_thread(pool, threads, lambda: connections["default"].connection)
    ]


def _close_thread_connections(pool: futures.ThreadPoolExecutor, threads: int) -> None:
    for done in run_on_every_thread(pool, threads, connections.close_all):
        done.result(timeout=20)


@pytest.mark.parametrize("max_age", [60, None])  # None: kept without a time limit
@pytest.mark.django_db(transaction=True)
def test_each_thread_opens_its_connection_and_its_first_request_uses_it(
    monkeypatch: pytest.MonkeyPatch, max_age: int | None
) -> None:
    # Persistent connections, as with PostgreSQL (the threads' wrappers read these settings).
    monkeypatch.setitem(connections.settings["default"], "CONN_MAX_AGE", max_age)
    pool = futures.ThreadPoolExecutor(max_workers=3)
    try:
        start_all_threads(pool, 3)
        assert _thread_connections(pool, 3) == [None, None, None]
        run_on_every_thread(pool, 3, open_database_connection)
        opened = _thread_connections(pool, 3)
        assert None not in opened and len({id(c) for c in opened}) == 3

        def first_request() -> tuple[object, object]:
            before = connections["default"].connection
            request_started.send(sender=None)  # Django drops obsolete connections here
            with connections["default"].cursor() as cursor:
                cursor.execute("SELECT 1")
            used = connections["default"].connection
            request_finished.send(sender=None)
            return before, used

        for before, used in pool.map(lambda _: first_request(), range(3), timeout=20):
            assert used is before
    finally:
        _close_thread_connections(pool, 3)
        pool.shutdown()


@pytest.mark.django_db(transaction=True)
def test_nothing_is_opened_when_connections_close_after_each_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(connections.settings["default"], "CONN_MAX_AGE", 0)
    pool = futures.ThreadPoolExecutor(max_workers=2)
    try:
        start_all_threads(pool, 2)
        run_on_every_thread(pool, 2, open_database_connection)
        assert _thread_connections(pool, 2) == [None, None]
    finally:
        pool.shutdown()


def test_a_database_out_of_reach_is_logged_and_not_raised(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(connections.settings["default"], "CONN_MAX_AGE", 60)
    refused = OperationalError("connection refused on 127.0.0.1:5432")

    def unreachable(self: object) -> None:
        raise refused

    pool = futures.ThreadPoolExecutor(max_workers=1)
    try:
        monkeypatch.setattr(type(connections["default"]), "ensure_connection", unreachable)
        with caplog.at_level("WARNING", logger="config.gunicorn_worker"):
            pool.submit(open_database_connection).result(timeout=10)  # no exception
        assert "database 'default' not reachable" in caplog.text
        assert "connection refused on 127.0.0.1:5432" in caplog.text
    finally:
        pool.shutdown()


def _worker(threads: int) -> tuple[ThreadWorker, list[object]]:
    cfg = Config()
    cfg.set("threads", threads)
    worker = ThreadWorker(0, 0, [], None, 30, cfg, Logger(cfg))
    handed: list[object] = []
    worker.enqueue_req = handed.append  # the connections the pool would serve
    return worker, handed


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        sock.setblocking(False)  # as gunicorn's worker sets it before selecting on it
        yield sock


def _connect(listener: socket.socket, count: int) -> list[socket.socket]:
    return [socket.create_connection(listener.getsockname(), timeout=5) for _ in range(count)]


def test_one_wake_up_accepts_as_many_waiting_connections_as_there_are_idle_threads(
    listener: socket.socket,
) -> None:
    worker, handed = _worker(threads=4)
    clients = _connect(listener, 6)
    try:
        worker.accept(listener)
        assert (len(handed), worker.nr_conns) == (4, 4)
        # All four threads busy: one at a time, as gunicorn's own worker does.
        worker.accept(listener)
        assert (len(handed), worker.nr_conns) == (5, 5)
    finally:
        for client in clients:
            client.close()


def test_a_wake_up_with_fewer_waiting_takes_them_all_and_stops(listener: socket.socket) -> None:
    worker, handed = _worker(threads=8)
    clients = _connect(listener, 3)
    try:
        worker.accept(listener)
        assert (len(handed), worker.nr_conns) == (3, 3)
        worker.accept(listener)  # nothing waiting: no error, nothing counted
        assert (len(handed), worker.nr_conns) == (3, 3)
    finally:
        for client in clients:
            client.close()


def test_connections_kept_alive_between_requests_do_not_count_as_busy_threads() -> None:
    worker, _ = _worker(threads=8)
    worker.nr_conns = 6
    worker.keepalived_conns.extend([object(), object(), object()])
    assert worker.idle_threads() == 8 - 3
    worker.nr_conns = 20
    assert worker.idle_threads() == 1


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _gunicorn(
    app: str, port: int, *options: str, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """gunicorn serving `app` on `port` with the worker, 2 workers x 4 threads unless `options`
    say otherwise (later options win)."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            app,
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--threads",
            "4",
            "--worker-class",
            "config.gunicorn_worker.ThreadWorker",
            "--log-level",
            "warning",
            *options,
        ],
        cwd=REPO_ROOT,
        env=env,
        start_new_session=True,
    )


def _start_hello_gunicorn(port: int, *options: str) -> subprocess.Popen[bytes]:
    """gunicorn serving tests.support.hello_wsgi on `port` (`_gunicorn`), once it accepts
    connections."""
    server = _gunicorn("tests.support.hello_wsgi:app", port, *options)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                stop_process_group(server)
                raise AssertionError("gunicorn did not listen in 30 s") from None
            time.sleep(0.1)


def _fetch(port: int, path: str) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=20) as answer:
        return bytes(answer.read())


def test_gunicorn_serves_a_burst_of_connections_with_it() -> None:
    port = _free_port()
    server = _start_hello_gunicorn(port)
    try:
        with futures.ThreadPoolExecutor(max_workers=40) as clients:
            bodies = list(clients.map(lambda n: _fetch(port, f"/hello/{n}"), range(40)))
        assert bodies == [f"/hello/{number}".encode() for number in range(40)]
    finally:
        stop_process_group(server)


def _children(pid: int) -> list[int]:
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            # "pid (name) state ppid ...": the name may hold spaces, so split after it.
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                children.append(int(stat.parent.name))
    return sorted(children)


def _listening_sockets(port: int) -> set[str]:
    """Inodes of the IPv4 sockets listening on `port` (state 0A in /proc/net/tcp)."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1].endswith(f":{port:04X}") and fields[3] == "0A":
            inodes.add(fields[9])
    return inodes


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    return inodes


def _workers(server: subprocess.Popen[bytes], count: int) -> list[int]:
    deadline = time.monotonic() + 30
    while len(workers := _children(server.pid)) != count:
        assert time.monotonic() < deadline, f"{count} workers did not start: {workers}"
        time.sleep(0.1)
    return workers


def test_with_reuse_port_each_worker_listens_on_its_own_socket_and_both_serve() -> None:
    port = _free_port()
    server = _start_hello_gunicorn(port, "--reuse-port")
    try:
        workers = _workers(server, 2)
        listening = _listening_sockets(port)
        assert len(listening) == 2
        assert [len(_socket_inodes(pid) & listening) for pid in workers] == [1, 1]
        assert not _socket_inodes(server.pid) & listening  # the arbiter listens on none
        # The kernel spreads new connections: 40 all going to one worker has odds of 2^-39.
        with futures.ThreadPoolExecutor(max_workers=40) as clients:
            pids = set(clients.map(lambda _: int(_fetch(port, "/pid")), range(40)))
        assert pids == set(workers)
    finally:
        stop_process_group(server)


def test_a_stopping_worker_closes_its_own_socket_and_new_connections_go_to_the_others() -> None:
    port = _free_port()
    server = _start_hello_gunicorn(
        port, "--reuse-port", "--threads", "32", "--graceful-timeout", "20"
    )
    try:
        stopping = _workers(server, 2)[0]
        # Requests in flight on both workers (16 connections: none on one worker has odds of
        # 2^-15), so the stopping one stays in its graceful shutdown for a while.
        with futures.ThreadPoolExecutor(max_workers=60) as clients:
            sleepers = [clients.submit(_fetch, port, "/sleep/3") for _ in range(16)]
            time.sleep(0.5)
            os.kill(stopping, signal.SIGTERM)
            time.sleep(0.3)
            # Left open, the stopping worker's socket would keep getting about half of these,
            # which nobody accepts: reset when it closes after its requests.
            answers = list(clients.map(lambda _: int(_fetch(port, "/pid")), range(40)))
            assert [s.result() for s in sleepers] == [b"/sleep/3"] * 16
        assert stopping not in answers
    finally:
        stop_process_group(server)


def test_a_stopping_worker_serves_what_the_kernel_queued_on_its_socket_then_closes_it(
    listener: socket.socket,
) -> None:
    worker, handed = _worker(threads=2)
    worker.cfg.set("reuse_port", True)
    worker.sockets = [listener]
    clients = _connect(listener, 5)  # queued beyond the threads: all are taken all the same
    try:
        worker.alive = False
        worker.set_accept_enabled(False)
        assert (len(handed), worker.nr_conns) == (5, 5)
        assert listener.fileno() == -1
        worker.set_accept_enabled(False)  # the end of gunicorn's shutdown: nothing more
        assert len(handed) == 5
    finally:
        for client in clients:
            client.close()


@pytest.mark.parametrize(
    ("reuse_port", "alive"), [(False, False), (True, True)], ids=["shared socket", "running"]
)
def test_a_shared_socket_or_a_running_worker_keeps_listening(
    listener: socket.socket, reuse_port: bool, alive: bool
) -> None:
    worker, handed = _worker(threads=2)
    worker.cfg.set("reuse_port", reuse_port)
    worker.sockets = [listener]
    worker.alive = alive
    worker.set_accept_enabled(False)  # also what a worker at its connection limit does
    assert handed == []
    assert listener.fileno() != -1


def _postgresql_url(settings_dict: dict[str, object]) -> str:
    user = settings_dict.get("USER") or ""
    password = settings_dict.get("PASSWORD") or ""
    credentials = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{credentials}{host}:{port}/{settings_dict['NAME']}"


def test_gunicorn_opens_each_threads_postgresql_connection_before_any_request(
    postgres_db: None,
) -> None:
    from django.db import connection

    def now() -> object:
        with connection.cursor() as cursor:
            cursor.execute("SELECT clock_timestamp()")  # now() stops at the transaction's start
            return cursor.fetchone()[0]

    def sessions_since(started: object) -> int:
        """Sessions to the test database begun after `started`: other tests' connections, which
        may close meanwhile, do not count."""
        with connection.cursor() as cursor:
            # The test's transaction would otherwise see the statistics of its first look.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND backend_start > %s",
                [connection.settings_dict["NAME"], started],
            )
            return int(cursor.fetchone()[0])

    started = now()
    env = {**os.environ, "DATABASE_URL": _postgresql_url(connection.settings_dict)}
    env["DJANGO_SETTINGS_MODULE"] = "config.settings.test"
    server = _gunicorn(
        "config.wsgi:application", _free_port(), "--preload", "--threads", "3", env=env
    )
    try:
        deadline = time.monotonic() + 90
        while sessions_since(started) < 6:  # no request sent: 2 workers x 3 threads opened them
            assert server.poll() is None, "gunicorn exited"
            assert time.monotonic() < deadline, f"{sessions_since(started)} of 6 connections"
            time.sleep(0.2)
    finally:
        stop_process_group(server)
