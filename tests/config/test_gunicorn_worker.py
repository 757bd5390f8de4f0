"""config.gunicorn_worker: every pool thread started up front, a burst of connections accepted
in one wake-up (as many as there are idle threads), and gunicorn serving with it."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent import futures

import pytest
from gunicorn.config import Config
from gunicorn.glogging import Logger

from config.gunicorn_worker import ThreadWorker, start_all_threads
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


def test_gunicorn_serves_a_burst_of_connections_with_it() -> None:
    port = _free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "tests.support.hello_wsgi:app",
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
        ],
        cwd=REPO_ROOT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, "gunicorn exited"
                assert time.monotonic() < deadline, "gunicorn did not listen in 30 s"
                time.sleep(0.1)

        def fetch(number: int) -> bytes:
            url = f"http://127.0.0.1:{port}/hello/{number}"
            with urllib.request.urlopen(url, timeout=20) as answer:
                return bytes(answer.read())

        with futures.ThreadPoolExecutor(max_workers=40) as clients:
            bodies = list(clients.map(fetch, range(40)))
        assert bodies == [f"/hello/{number}".encode() for number in range(40)]
    finally:
        stop_process_group(server)
