"""Serve the dashboard with Celery workers beside it: the embedded default of `make run`.

Its rules in full: `docs/architecture.md`, section "manage.py serve".
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from multiprocessing.process import BaseProcess
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

from django.apps import apps
from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.db import connections

from config.processes import web_command, worker_command

_STOP_GRACE_SECONDS = 10
_POLL_SECONDS = 0.2
FINGERPRINT_NAME = ".collected-fingerprint"


class Command(BaseCommand):
    help = "Run the web server and a Celery worker (with beat) together until Ctrl-C."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--concurrency", type=int, default=2, help="Worker processes.")
        parser.add_argument(
            "--outbound-concurrency",
            type=int,
            default=2,
            help="Processes of the worker for the outbound queue (source polls, webhooks).",
        )
        parser.add_argument(
            "--prepare",
            action="store_true",
            help="Migrate, load the demo data and collect static files first (make run).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["prepare"]:
            self._prepare()
        host, port = options["host"], options["port"]
        self.stdout.write(f"Broker: {_redact(settings.CELERY_BROKER_URL)}")
        children = self._start_children(host, port, options)
        stopping = False

        def request_stop(signum: int, frame: FrameType | None) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, request_stop)
        signal.signal(signal.SIGTERM, request_stop)
        try:
            if wait_until_answering(dashboard_url(host, port), children, lambda: stopping):
                self.stdout.write(
                    f"Dashboard: http://{host}:{port}/  (Ctrl-C stops the server and the workers)"
                )
            while not stopping and all(child.poll() is None for child in children):
                time.sleep(_POLL_SECONDS)
        finally:
            _stop(children)
        exited = [c for c in children if c.returncode not in (0, -signal.SIGINT, -signal.SIGTERM)]
        if not stopping and exited:
            self.stderr.write("A child process exited unexpectedly; stopped the others.")
            sys.exit(1)
        self.stdout.write("Stopped the web server and the workers.")

    def _start_children(self, host: str, port: int, options: dict[str, Any]) -> list[Child]:
        """The two Celery workers, then the web server."""
        base_dir = Path(settings.BASE_DIR)
        env = dict(os.environ)
        env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
        env.setdefault("PYTHONUNBUFFERED", "1")
        worker_cmd = worker_command(
            queues=[settings.CELERY_TASK_DEFAULT_QUEUE],
            concurrency=options["concurrency"],
            hostname=f"embedded-{os.getpid()}@%h",
            beat_schedule=Path(settings.VAR_DIR) / "celerybeat-schedule",
        )
        outbound_cmd = worker_command(
            queues=[settings.CELERY_OUTBOUND_QUEUE],
            concurrency=options["outbound_concurrency"],
            hostname=f"embedded-outbound-{os.getpid()}@%h",
        )
        web: Child = (
            _fork_web_server(host, port)
            if settings.DEBUG
            else subprocess.Popen(web_command(f"{host}:{port}"), cwd=base_dir, env=env)
        )
        return [
            subprocess.Popen(worker_cmd, cwd=base_dir, env=env),
            subprocess.Popen(outbound_cmd, cwd=base_dir, env=env),
            web,
        ]

    def _prepare(self) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write("Migrations applied.")
        from audit_app.costs.price_cards import prices_sync_first_start

        started = time.monotonic()
        synced = prices_sync_first_start()
        if synced is not None:
            self.stdout.write(
                f"Price cards synced from {synced.dataset}: {len(synced.added)} added "
                f"in {time.monotonic() - started:.1f} s."
            )
        call_command("seed_demo", stdout=self.stdout, stderr=self.stderr)
        if not getattr(settings, "STATIC_MANIFEST", False):
            return
        static_root = Path(settings.STATIC_ROOT)
        fingerprint = static_fingerprint()
        stamp = static_root / FINGERPRINT_NAME
        if stamp.exists() and stamp.read_text() == fingerprint:
            self.stdout.write("Static files already collected.")
            return
        started = time.monotonic()
        call_command("collectstatic", interactive=False, verbosity=0)
        stamp.write_text(fingerprint)
        self.stdout.write(
            f"Static files collected into {static_root} (hashed, gzip and brotli) "
            f"in {time.monotonic() - started:.0f} s."
        )


def dashboard_url(host: str, port: int) -> str:
    """Where this machine reaches the server: a wildcard address is reached on loopback."""
    reach = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    return f"http://[{reach}]:{port}/" if ":" in reach else f"http://{reach}:{port}/"


def wait_until_answering(url: str, children: Sequence[Child], stopping: Callable[[], bool]) -> bool:
    """Poll `url`'s /healthz until the server answers HTTP (any status: a 503 naming a broker
    that is down is an answer); False if a child exits or a stop is asked for first."""
    while not stopping() and all(child.poll() is None for child in children):
        try:
            with urllib.request.urlopen(f"{url}healthz", timeout=2):
                return True
        except urllib.error.HTTPError:
            return True
        except OSError:
            time.sleep(_POLL_SECONDS)
    return False


def static_fingerprint() -> str:
    """A digest of every file the static finders list (its path, size and modification time)."""
    digest = hashlib.sha256(str(settings.STORAGES["staticfiles"]["BACKEND"]).encode())
    ignore_patterns: list[str] = getattr(apps.get_app_config("staticfiles"), "ignore_patterns", [])
    entries = []
    for finder in finders.get_finders():
        for path, storage in finder.list(ignore_patterns):
            stat = os.stat(storage.path(path))
            entries.append(
                f"{getattr(storage, 'prefix', '') or ''}/{path}\0{stat.st_size}\0{stat.st_mtime_ns}"
            )
    for entry in sorted(entries):
        digest.update(entry.encode() + b"\n")
    return digest.hexdigest()


class Child(Protocol):
    """What `handle` and `_stop` use of a child: a `subprocess.Popen`, or a `ForkedChild`."""

    @property
    def returncode(self) -> int | None: ...
    def poll(self) -> int | None: ...
    def send_signal(self, sig: int) -> None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def kill(self) -> None: ...


class ForkedChild:
    """A forked process seen through Popen's methods, so both children stop the same way."""

    def __init__(self, process: BaseProcess) -> None:
        self.process = process

    @property
    def returncode(self) -> int | None:
        return self.process.exitcode

    def poll(self) -> int | None:
        return self.process.exitcode

    def send_signal(self, sig: int) -> None:
        if self.process.pid is not None and self.process.exitcode is None:
            os.kill(self.process.pid, sig)

    def wait(self, timeout: float | None = None) -> int:
        self.process.join(timeout)
        if self.process.exitcode is None:
            raise subprocess.TimeoutExpired("web server", timeout or 0)
        return self.process.exitcode

    def kill(self) -> None:
        self.process.kill()


def _fork_web_server(host: str, port: int) -> ForkedChild:
    """runserver in a fork of this process: Django is set up and the URLconf imported already, so
    it answers at once instead of after the ~5 s a fresh `manage.py runserver` spends starting."""
    connections.close_all()  # each process opens its own
    process = multiprocessing.get_context("fork").Process(
        target=_run_web_server, args=(host, port), name="web"
    )
    process.start()
    return ForkedChild(process)


def _run_web_server(host: str, port: int) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # This process has run the system checks already.
    call_command("runserver", f"{host}:{port}", use_reloader=False, skip_checks=True)


def _stop(children: list[Child]) -> None:
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + _STOP_GRACE_SECONDS
    for child in children:
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _redact(url: str) -> str:
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url
