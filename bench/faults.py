"""`make faults`: four faults injected into real processes, one PASS/FAIL line each.

1. sigkill-worker: the pool process of a real Celery worker is SIGKILLed mid-ingest; the task is
   handed back at once (acks_late + reject_on_worker_lost, so the Redis visibility timeout is not
   what brings it back) and the redelivered ingest lands exact totals.
2. postgres-restart: the local PostgreSQL cluster is restarted mid-ingest; the task fails with
   OperationalError/InterfaceError, retries by itself and lands exact totals.
3. redis-down: the broker is stopped; pages and /healthz (503 naming the broker) keep answering,
   an upload through the API is kept as `queued` with a note, and once Redis is back the
   worker's requeue sweep queues it and it lands exact totals, nobody uploading it again.
4. media-full: the media storage is a 1 MiB tmpfs; a 3 MiB upload is refused with a 507 JSON
   error, leaving no row and no partial file, and the server keeps serving.

Everything runs on its own: a private redis-server on port 6391 (started and killed here, so the
shared Redis is never touched), a database `audit_faults` on the local PostgreSQL (dropped and
created again), gunicorn and Celery workers started and stopped here, files under var/faults.
"Exact" means the upload's totals and the sums of its hourly and daily rollups equal what pandas
sums over the same CSV, and its rollup rows are the rows of a clean single-pass ingest of the
same file (same count, no key twice). Restarting PostgreSQL disturbs every client of the
cluster: never run this beside the test suite or a benchmark. Needs root for the tmpfs mount.
Writes section "faults" of docs/reliability.md. FAULTS_ONLY=name,name runs some scenarios only
(while developing; the section then lists only those).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from config.processes import web_command, worker_command

REPO = Path(__file__).resolve().parent.parent
FAULTS_DIR = REPO / "var" / "faults"
# The local PostgreSQL 15 cluster "main" (FAULTS_PG_CLUSTER="15 other" FAULTS_PG_PORT=5433 point
# the script at another cluster, e.g. a throw-away one, so no one else's connections are cut).
PG_CLUSTER = os.environ.get("FAULTS_PG_CLUSTER", "15 main").split()
PG_PORT = int(os.environ.get("FAULTS_PG_PORT", "5432"))
PG_ADMIN_URL = f"postgresql://postgres:postgres@127.0.0.1:{PG_PORT}/postgres"
DB_NAME = "audit_faults"
DB_URL = f"postgres://postgres:postgres@127.0.0.1:{PG_PORT}/{DB_NAME}"
REDIS_PORT = int(os.environ.get("FAULTS_REDIS_PORT", "6391"))
REDIS_URL = f"redis://127.0.0.1:{REDIS_PORT}/0"
WEB_PORT = int(os.environ.get("FAULTS_WEB_PORT", "8391"))
# Big enough that one ingest takes several seconds (single pass: below the fan-out size).
ROWS = int(os.environ.get("FAULTS_ROWS", "400000"))
SMALL_ROWS = 20_000
MEDIA_FULL_BYTES = 3 * 1024 * 1024
TMPFS_SIZE = "1m"
REQUEUE_INTERVAL = 2  # the workers' sweep interval here (the default is 30 s)
PASSWORD = secrets.token_urlsafe(16)


@dataclass(kw_only=True)
class Outcome:
    name: str
    done: str
    expected: str
    observed: str
    ok: bool

    def line(self) -> str:
        return f"{'PASS' if self.ok else 'FAIL'} {self.name}: {self.observed}"


class Failed(Exception):
    """A scenario's expectation did not hold; the message says which and what was seen."""


def check(condition: bool, why: str) -> None:
    if not condition:
        raise Failed(why)


# --- Processes -------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_"))}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "DJANGO_DEBUG": "false",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DJANGO_SECURE_SSL_REDIRECT": "false",
            "DJANGO_SESSION_COOKIE_SECURE": "false",
            "DJANGO_CSRF_COOKIE_SECURE": "false",
            "DJANGO_VAR_DIR": str(FAULTS_DIR),
            "DJANGO_MEDIA_ROOT": str(FAULTS_DIR / "media"),
            "DJANGO_LOG_LEVEL": "INFO",
            "DATABASE_URL": DB_URL,
            "CELERY_BROKER_URL": REDIS_URL,
            "CELERY_RESULT_BACKEND": REDIS_URL,
            "CELERY_TASK_ALWAYS_EAGER": "false",
            "UPLOAD_REQUEUE_INTERVAL_SECONDS": str(REQUEUE_INTERVAL),
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def _port_open(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
        return True
    return False


def _stop_group(process: subprocess.Popen[bytes], *, timeout: float = 60.0) -> None:
    """Stop a process started here (in its own session) and whatever it started: SIGTERM to the
    process itself (a Celery worker then finishes its task first), SIGKILL to the group after."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # stragglers (pool children) go too


def _spawn(command: list[str], *, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(
            command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def _wait_log(log: Path, needle: str, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            raise Failed(f"{log.name}: exited ({process.returncode}) before '{needle}'")
        time.sleep(0.2)
    raise Failed(f"{log.name}: '{needle}' not seen within {timeout:.0f} s")


class Redis:
    """The private redis-server of this script (no persistence, like the broker it stands for)."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        if _port_open(REDIS_PORT):
            raise Failed(f"port {REDIS_PORT} is already taken; set FAULTS_REDIS_PORT")
        command = [
            "redis-server",
            "--port",
            str(REDIS_PORT),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(FAULTS_DIR),
        ]
        self.process = _spawn(command, env=dict(os.environ), log=FAULTS_DIR / "redis.log")
        _wait_until(lambda: _port_open(REDIS_PORT), 15, "the private Redis to listen")

    def stop(self) -> None:
        if self.process is not None:
            _stop_group(self.process, timeout=5)
            self.process = None
        _wait_until(lambda: not _port_open(REDIS_PORT), 10, "the private Redis to stop")


class Worker:
    """A Celery worker (prefork, one pool process) on the private Redis."""

    count = 0

    def __init__(self, env: dict[str, str]) -> None:
        Worker.count += 1
        self.log = FAULTS_DIR / f"worker-{Worker.count}.log"
        self.log.write_text("")
        command = worker_command(concurrency=1, hostname=f"faults-{Worker.count}@%h")
        self.process = _spawn(command, env=env, log=self.log)
        _wait_log(self.log, " ready.", self.process, 90)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def pool_children(self) -> list[int]:
        children = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                if int(stat.rsplit(")", 1)[1].split()[1]) == self.process.pid:
                    children.append(int(entry.name))
        return children

    def stop(self) -> None:
        _stop_group(self.process)


class Web:
    """The web server as production runs it (`config.processes.web_command`, DEBUG off) on
    loopback, plain HTTP."""

    def __init__(self, env: dict[str, str], *, port: int, name: str) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.log = FAULTS_DIR / f"{name}.log"
        self.log.write_text("")
        command = web_command(f"127.0.0.1:{port}")
        self.process = _spawn(command, env=env, log=self.log)
        _wait_until(lambda: _port_open(port), 60, f"gunicorn on port {port}")

    def stop(self) -> None:
        _stop_group(self.process)


# --- Django side -------------------------------------------------------------------------------


def _wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> float:
    """Poll until true; returns the seconds waited. Database errors (PostgreSQL restarting)
    count as "not yet": the connection is closed and opened again on the next poll."""
    from django.db import InterfaceError, OperationalError, connections

    started = time.monotonic()
    while time.monotonic() - started < timeout:
        try:
            if predicate():
                return time.monotonic() - started
        except (OperationalError, InterfaceError):
            connections.close_all()
        time.sleep(0.1)
    raise Failed(f"timed out after {timeout:.0f} s waiting for {what}")


def _generic_csv(path: Path, *, rows: int, seed: int) -> None:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2026-10-01T00:00:00Z")
    started = start + pd.to_timedelta(rng.integers(0, 14 * 86400, rows), unit="s")
    duration = pd.to_timedelta(rng.integers(100, 20_000, rows), unit="ms")
    frame = pd.DataFrame(
        {
            "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "ended_at": (started + duration).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "workload": rng.choice(["chat", "evals", "backfill", "agent", "rag"], rows),
            "provider": "openai",
            "model": rng.choice(["gpt-4o", "gpt-4o-mini", "o3-mini"], rows),
            "input_tokens": rng.integers(1, 4000, rows),
            "output_tokens": rng.integers(0, 800, rows),
            "request_id": [f"f{seed}-{i}" for i in range(rows)],
        }
    )
    frame.to_csv(path, index=False)


def _pandas_totals(path: Path) -> dict[str, int]:
    """What a clean ingest must land, summed by pandas straight from the CSV."""
    import pandas as pd

    frame = pd.read_csv(path, usecols=["input_tokens", "output_tokens"])
    return {
        "requests": len(frame),
        "input_tokens": int(frame["input_tokens"].sum()),
        "output_tokens": int(frame["output_tokens"].sum()),
    }


ROLLUP_KEY = ("hour", "workload", "team", "provider", "model", "pool", "operation", "batch_api")


def _rollup_shape(upload_id: int) -> dict[str, Any]:
    from django.db.models import Count, Sum

    from audit_app.models import DailyRollup, HourlyRollup, WorkloadDay

    hourly = HourlyRollup.objects.filter(upload_id=upload_id)
    daily = DailyRollup.objects.filter(upload_id=upload_id)
    sums = ("requests", "input_tokens", "output_tokens")
    h = hourly.aggregate(rows=Count("id"), **{k: Sum(k) for k in sums})
    d = daily.aggregate(rows=Count("id"), **{k: Sum(k) for k in sums})
    doubled = hourly.values(*ROLLUP_KEY).annotate(n=Count("id")).filter(n__gt=1).count()
    days = WorkloadDay.objects.filter(upload_id=upload_id).aggregate(requests=Sum("requests"))
    return {"hourly": h, "daily": d, "doubled_keys": doubled, "day_requests": days["requests"]}


def _check_exact(upload_id: int, expected: dict[str, int], reference_rows: int | None) -> str:
    """Raise Failed unless the upload landed exactly `expected`; returns a short summary."""
    from audit_app.models import Upload

    upload = Upload.objects.get(pk=upload_id)
    check(
        upload.status == Upload.Status.SUCCEEDED,
        f"upload {upload_id} is {upload.status}: {upload.error}",
    )
    got = {k: getattr(upload, k) for k in expected}
    check(got == expected, f"upload totals {got} != pandas {expected}")
    shape = _rollup_shape(upload_id)
    for table in ("hourly", "daily"):
        sums = {k: shape[table][k] for k in expected}
        check(sums == expected, f"{table} rollup sums {sums} != pandas {expected}")
    check(shape["doubled_keys"] == 0, f"{shape['doubled_keys']} hourly rollup keys twice")
    check(
        shape["day_requests"] == expected["requests"],
        f"workload-day requests {shape['day_requests']} != {expected['requests']}",
    )
    if reference_rows is not None:
        check(
            shape["hourly"]["rows"] == reference_rows,
            f"{shape['hourly']['rows']} hourly rollups != {reference_rows} of a clean ingest",
        )
    return (
        f"{expected['requests']:,} requests / {expected['input_tokens']:,} in / "
        f"{expected['output_tokens']:,} out tokens exact, {shape['hourly']['rows']:,} hourly "
        "rollups (none twice)"
    )


def _delete_upload(upload_id: int | None) -> bool:
    """Delete the upload if there is one; True once done (a condition for `_wait_until`)."""
    from audit_app.ingestion.uploads import upload_delete
    from audit_app.models import Upload

    if upload_id is None:
        return True
    upload = Upload.objects.filter(pk=upload_id).first()
    if upload is not None:
        upload_delete(upload=upload)
    return True


def _create_upload(path: Path, name: str) -> int:
    from audit_app.ingestion.uploads import upload_create

    with open(path, "rb") as source:
        return upload_create(source=source, original_name=name).pk


def _mid_ingest(upload_id: int) -> Callable[[], bool]:
    from audit_app.models import Upload

    def under_way() -> bool:
        current = Upload.objects.get(pk=upload_id)
        if current.status in (Upload.Status.SUCCEEDED, Upload.Status.FAILED):
            raise Failed(f"the ingest ended ({current.status}) before the fault could be injected")
        return current.status == Upload.Status.RUNNING and current.rows_read > 0

    return under_way


def _status_is(upload_id: int, status: str) -> Callable[[], bool]:
    from audit_app.models import Upload

    def reached() -> bool:
        current = Upload.objects.get(pk=upload_id)
        if current.status == Upload.Status.FAILED and status != Upload.Status.FAILED:
            raise Failed(f"upload {upload_id} failed: {current.error}")
        return current.status == status

    return reached


@dataclass(kw_only=True)
class Setup:
    env: dict[str, str]
    redis: Redis
    big: Path
    big_expected: dict[str, int]
    reference_rows: int
    reference_seconds: float
    user: str
    token: str


# --- Scenarios ---------------------------------------------------------------------------------


def scenario_sigkill(setup: Setup) -> str:
    from audit_app.models import Upload

    worker = Worker(setup.env)
    upload_id = None
    try:
        upload_id = _create_upload(setup.big, "faults-sigkill.csv")
        _wait_until(_mid_ingest(upload_id), 120, "the ingest to be under way")
        rows_at_kill = Upload.objects.get(pk=upload_id).rows_read
        children = worker.pool_children()
        check(len(children) == 1, f"expected one pool process, found {children}")
        killed = time.monotonic()
        os.kill(children[0], signal.SIGKILL)
        redelivered = _wait_until(
            lambda: Upload.objects.get(pk=upload_id).attempts >= 2, 120, "the redelivery"
        )
        _wait_until(_status_is(upload_id, Upload.Status.SUCCEEDED), 300, "the redelivered ingest")
        seconds = time.monotonic() - killed
        log = worker.text()
        landed = Upload.objects.get(pk=upload_id)
        check(
            "WorkerLostError" in log or "exited prematurely" in log,
            "the worker log does not show the lost process",
        )
        check(landed.attempts == 2, f"{landed.attempts} attempts, expected 2")
        summary = _check_exact(upload_id, setup.big_expected, setup.reference_rows)
        observed = (
            f"killed the pool process at {rows_at_kill:,} rows read; ingest started again "
            f"{redelivered:.1f} s later (not after the visibility timeout), `succeeded` "
            f"{seconds:.1f} s after the kill, attempts {landed.attempts}; {summary}"
        )
        return observed
    finally:
        worker.stop()
        _delete_upload(upload_id)


# The big CSV (34 MiB) is below the default INGEST_FANOUT_MIN_BYTES; the *-part scenarios lower
# the threshold for their worker so the same file is cut into parts (audit_app.ingest_part).
FANOUT_MIN_BYTES = 4 * 2**20
FANOUT_PARTS = 8


def _fanout_env(setup: Setup) -> dict[str, str]:
    return {
        **setup.env,
        "INGEST_FANOUT_MIN_BYTES": str(FANOUT_MIN_BYTES),
        "INGEST_FANOUT_PARTS": str(FANOUT_PARTS),
    }


def scenario_sigkill_part(setup: Setup) -> str:
    from audit_app.models import Upload

    worker = Worker(_fanout_env(setup))
    upload_id = None
    try:
        upload_id = _create_upload(setup.big, "faults-sigkill-part.csv")
        _wait_until(_mid_ingest(upload_id), 120, "the parts to be under way")
        rows_at_kill = Upload.objects.get(pk=upload_id).rows_read
        children = worker.pool_children()
        check(len(children) == 1, f"expected one pool process, found {children}")
        killed = time.monotonic()
        os.kill(children[0], signal.SIGKILL)
        _wait_until(_status_is(upload_id, Upload.Status.SUCCEEDED), 300, "the parts to land")
        seconds = time.monotonic() - killed
        log = worker.text()
        check(
            "WorkerLostError" in log or "exited prematurely" in log,
            "the worker log does not show the lost process",
        )
        parts = len(set(re.findall(r"ingest_part\[([0-9a-f-]+)\] received", log)))
        check(parts >= 2, f"{parts} part tasks in the worker log: the file was not cut into parts")
        summary = _check_exact(upload_id, setup.big_expected, setup.reference_rows)
        return (
            f"killed the pool process during a part at {rows_at_kill:,} rows read; the part was "
            f"handed back and run again, the upload `succeeded` {seconds:.1f} s after the kill "
            f"({parts} part tasks); {summary}"
        )
    finally:
        worker.stop()
        _delete_upload(upload_id)


def _other_pg_clients() -> list[str]:
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3) as conn:
        rows = conn.execute(
            "SELECT datname, count(*) FROM pg_stat_activity "
            "WHERE datname IS NOT NULL AND datname NOT IN (%s, 'postgres') "
            "AND pid <> pg_backend_pid() GROUP BY datname",
            (DB_NAME,),
        ).fetchall()
    return [f"{db} ({n})" for db, n in rows]


def scenario_postgres_restart(setup: Setup) -> str:
    from audit_app.models import Upload

    worker = Worker(setup.env)
    upload_id = None
    try:
        upload_id = _create_upload(setup.big, "faults-postgres.csv")
        _wait_until(_mid_ingest(upload_id), 120, "the ingest to be under way")
        rows_at_restart = Upload.objects.get(pk=upload_id).rows_read
        others = _other_pg_clients()
        if others:
            print(f"faults: note: other PostgreSQL clients disturbed: {', '.join(others)}")
        restarted = time.monotonic()
        result = subprocess.run(
            ["pg_ctlcluster", "--skip-systemctl-redirect", *PG_CLUSTER, "restart"],
            capture_output=True,
            text=True,
            check=False,
        )
        restart_seconds = time.monotonic() - restarted
        check(result.returncode == 0, f"pg_ctlcluster failed: {result.stderr.strip()[-300:]}")
        retried = _wait_until(
            lambda: Upload.objects.get(pk=upload_id).attempts >= 2, 300, "the retry to start"
        )
        _wait_until(_status_is(upload_id, Upload.Status.SUCCEEDED), 300, "the retried ingest")
        seconds = time.monotonic() - restarted
        log = worker.text()
        landed = Upload.objects.get(pk=upload_id)
        check(worker.process.poll() is None, "the worker process died")
        errors = sorted(set(re.findall(r"\b(OperationalError|InterfaceError)\b", log)))
        retries = len(re.findall(r"ingest_upload\[[0-9a-f-]+\] retry: Retry in", log))
        check(bool(errors), "the worker log shows no OperationalError/InterfaceError")
        check(retries >= 1, "the worker log shows no retry of the ingest task")
        check(landed.attempts >= 2, f"{landed.attempts} attempts, expected at least 2")
        summary = _check_exact(upload_id, setup.big_expected, setup.reference_rows)
        observed = (
            f"restart took {restart_seconds:.1f} s at {rows_at_restart:,} rows read; task saw "
            f"{'/'.join(errors)} and retried {retries}x (next attempt running "
            f"{restart_seconds + retried:.1f} s after the restart began), `succeeded` "
            f"{seconds:.1f} s after it began, attempts {landed.attempts}; worker stayed up; "
            f"{summary}"
        )
        return observed
    finally:
        worker.stop()
        with contextlib.suppress(Exception):
            _wait_until(lambda: _delete_upload(upload_id), 60, "PostgreSQL to be back")


def scenario_postgres_restart_part(setup: Setup) -> str:
    from audit_app.models import Upload

    worker = Worker(_fanout_env(setup))
    upload_id = None
    try:
        upload_id = _create_upload(setup.big, "faults-postgres-part.csv")
        _wait_until(_mid_ingest(upload_id), 120, "the parts to be under way")
        rows_at_restart = Upload.objects.get(pk=upload_id).rows_read
        restarted = time.monotonic()
        result = subprocess.run(
            ["pg_ctlcluster", "--skip-systemctl-redirect", *PG_CLUSTER, "restart"],
            capture_output=True,
            text=True,
            check=False,
        )
        check(result.returncode == 0, f"pg_ctlcluster failed: {result.stderr.strip()[-300:]}")
        _wait_until(
            lambda: _status_is(upload_id, Upload.Status.SUCCEEDED)(), 300, "the parts to land"
        )
        seconds = time.monotonic() - restarted
        log = worker.text()
        check(worker.process.poll() is None, "the worker process died")
        parts = len(set(re.findall(r"ingest_part\[([0-9a-f-]+)\] received", log)))
        check(parts >= 2, f"{parts} part tasks in the worker log: the file was not cut into parts")
        retries = len(re.findall(r"ingest_(?:part|upload)\[[0-9a-f-]+\] retry: Retry in", log))
        errors = sorted(set(re.findall(r"\b(OperationalError|InterfaceError)\b", log)))
        # A part between two database calls may not notice the restart at all (connections are
        # health-checked before reuse), so retries are reported, not required.
        summary = _check_exact(upload_id, setup.big_expected, setup.reference_rows)
        return (
            f"restarted PostgreSQL during the parts at {rows_at_restart:,} rows read; tasks saw "
            f"{'/'.join(errors) or 'no error'} and retried {retries}x; `succeeded` {seconds:.1f} s "
            f"after the restart began ({parts} part tasks); worker stayed up; {summary}"
        )
    finally:
        worker.stop()
        with contextlib.suppress(Exception):
            _wait_until(lambda: _delete_upload(upload_id), 60, "PostgreSQL to be back")


def _session(web: Web, user: str) -> Any:
    import requests

    session = requests.Session()
    login = session.get(f"{web.base}/accounts/login/", timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)
    check(token is not None, "no CSRF token on the login page")
    assert token is not None
    answer = session.post(
        f"{web.base}/accounts/login/",
        data={"username": user, "password": PASSWORD, "csrfmiddlewaretoken": token[1]},
        headers={"Referer": f"{web.base}/accounts/login/"},
        timeout=30,
        allow_redirects=False,
    )
    check(answer.status_code == 302, f"login answered {answer.status_code}")
    return session


def _api_upload(web: Web, token: str, path: Path, name: str) -> tuple[Any, float]:
    import requests

    started = time.monotonic()
    with open(path, "rb") as source:
        answer = requests.post(
            f"{web.base}/api/v1/uploads/",
            headers={"Authorization": f"Token {token}"},
            files={"file": (name, source, "text/csv")},
            data={"kind": "token_log", "format": "auto"},
            timeout=120,
        )
    return answer, time.monotonic() - started


def scenario_redis_down(setup: Setup) -> str:
    from audit_app.models import Upload

    small = FAULTS_DIR / "redis-down.csv"
    _generic_csv(small, rows=SMALL_ROWS, seed=8)
    small_expected = _pandas_totals(small)
    worker = Worker(setup.env)
    web = Web(setup.env, port=WEB_PORT, name="gunicorn-redis-down")
    upload_id = None
    try:
        session = _session(web, setup.user)
        check(session.get(f"{web.base}/healthz", timeout=30).status_code == 200, "healthz not 200")
        setup.redis.stop()
        pages = {}
        for page in ("/", "/workloads/", "/uploads/"):
            started = time.monotonic()
            answer = session.get(f"{web.base}{page}", timeout=60, allow_redirects=False)
            pages[page] = (answer.status_code, time.monotonic() - started)
        check(all(code == 200 for code, _ in pages.values()), f"pages answered {pages}")
        health = session.get(f"{web.base}/healthz", timeout=60)
        body = health.json()
        check(health.status_code == 503, f"/healthz answered {health.status_code}")
        check(str(body.get("broker", "")).startswith("down"), f"/healthz body {body}")
        check(body.get("database") == "ok", f"/healthz body {body}")
        answer, post_seconds = _api_upload(web, setup.token, small, "faults-redis-down.csv")
        check(answer.status_code == 202, f"upload answered {answer.status_code}: {answer.text}")
        created = answer.json()
        upload_id = created["id"]
        check(created["status"] == "queued", f"upload is {created['status']}")
        check("broker" in created["error"], f"no note on the upload: {created['error']!r}")
        check(post_seconds < 15, f"the upload took {post_seconds:.1f} s to answer")
        detail = session.get(f"{web.base}/uploads/{upload_id}/", timeout=60)
        check(detail.status_code == 200 and "queued" in detail.text, "upload page not queued")
        time.sleep(3 * REQUEUE_INTERVAL)  # the sweep runs meanwhile, and cannot publish
        still = Upload.objects.get(pk=upload_id)
        check(still.status == Upload.Status.QUEUED, f"upload became {still.status} without Redis")
        check(worker.process.poll() is None, "the worker exited while Redis was down")
        setup.redis.start()
        back = time.monotonic()
        _wait_until(_status_is(upload_id, Upload.Status.SUCCEEDED), 240, "the queued upload")
        seconds = time.monotonic() - back
        healthy = session.get(f"{web.base}/healthz", timeout=60).status_code
        check(healthy == 200, f"/healthz answered {healthy} after Redis came back")
        summary = _check_exact(upload_id, small_expected, None)
        check(
            "requeue sweep: queued upload(s)" in worker.text(),
            "the worker log does not show the sweep queueing the upload",
        )
        slowest = max(s for _, s in pages.values())
        observed = (
            f"pages 200 (slowest {slowest:.2f} s); /healthz 503 {json.dumps(body)}; upload "
            f"202 `queued` with a note in {post_seconds:.1f} s; Redis back -> queued again by "
            f"the sweep and `succeeded` in {seconds:.1f} s; {summary}"
        )
        return observed
    finally:
        if setup.redis.process is None:
            with contextlib.suppress(Exception):
                setup.redis.start()
        web.stop()
        worker.stop()
        _delete_upload(upload_id)


def _files_under(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _data_snapshot() -> dict[str, Any]:
    from django.db.models import Sum

    from audit_app.models import HourlyRollup, Upload

    return {
        "uploads": list(Upload.objects.order_by("pk").values_list("pk", "status", "sha256")),
        "rollups": HourlyRollup.objects.aggregate(n=Sum("requests"), t=Sum("input_tokens")),
    }


def scenario_media_full(setup: Setup) -> str:
    from audit_app.models import Upload

    if os.geteuid() != 0:
        raise Failed("mounting the tmpfs needs root")
    mount = FAULTS_DIR / "media-full"
    mount.mkdir(parents=True, exist_ok=True)
    if os.path.ismount(mount):
        subprocess.run(["umount", str(mount)], check=False)
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    check(result.returncode == 0, f"mount failed: {result.stderr.strip()}")
    env = {**setup.env, "DJANGO_MEDIA_ROOT": str(mount)}
    worker = web = None
    small_id = None
    try:
        (mount / "kept-before.bin").write_bytes(os.urandom(200 * 1024))
        big = FAULTS_DIR / "media-full.csv"
        rows = 10_000
        while True:
            _generic_csv(big, rows=rows, seed=9)
            if big.stat().st_size >= MEDIA_FULL_BYTES:
                break
            rows = int(rows * MEDIA_FULL_BYTES / big.stat().st_size) + 500
        worker = Worker(env)
        web = Web(env, port=WEB_PORT + 1, name="gunicorn-media-full")
        session = _session(web, setup.user)
        files_before = _files_under(mount)
        data_before = _data_snapshot()

        answer, post_seconds = _api_upload(web, setup.token, big, "faults-media-full.csv")
        check(answer.status_code == 507, f"API answered {answer.status_code}: {answer.text[:300]}")
        check(
            answer.headers.get("Content-Type", "").startswith("application/json"),
            f"API answer is {answer.headers.get('Content-Type')}, not JSON",
        )
        detail = answer.json().get("detail", "")
        check("space" in detail, f"API message does not name the lack of space: {detail!r}")

        form = session.get(f"{web.base}/uploads/new/", timeout=60)
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
        check(csrf is not None, "no CSRF token on the upload form")
        assert csrf is not None
        with open(big, "rb") as source:
            page = session.post(
                f"{web.base}/uploads/new/",
                data={"kind": "token_log", "format": "auto", "csrfmiddlewaretoken": csrf[1]},
                files={"file": ("faults-media-full.csv", source, "text/csv")},
                headers={"Referer": f"{web.base}/uploads/new/"},
                timeout=120,
                allow_redirects=False,
            )
        check(page.status_code == 507, f"upload page answered {page.status_code}")
        check("no space left" in page.text, "the upload page does not say why")
        check("Traceback" not in page.text + answer.text, "a traceback was shown")

        check(_files_under(mount) == files_before, "the tmpfs holds other files than before")
        check(_data_snapshot() == data_before, "rows changed after the refused uploads")
        check(
            not Upload.objects.filter(original_name="faults-media-full.csv").exists(),
            "an upload row was left",
        )
        check(session.get(f"{web.base}/healthz", timeout=30).status_code == 200, "healthz")
        check(session.get(f"{web.base}/", timeout=60).status_code == 200, "overview page")
        tiny = FAULTS_DIR / "media-full-small.csv"
        _generic_csv(tiny, rows=500, seed=10)
        after, _ = _api_upload(web, setup.token, tiny, "faults-media-small.csv")
        check(after.status_code == 202, f"a small upload then answered {after.status_code}")
        small_id = after.json()["id"]
        _wait_until(_status_is(small_id, Upload.Status.SUCCEEDED), 120, "the small upload")
        _check_exact(small_id, _pandas_totals(tiny), None)
        observed = (
            f"API 507 in {post_seconds:.2f} s, JSON detail {detail!r}; page 507 with the same "
            "message; no upload row, tmpfs holds only the file it held before; other rows "
            "unchanged; /healthz and / 200; a 500-row upload then stored and `succeeded`"
        )
        return observed
    finally:
        for process in (web, worker):
            if process is not None:
                process.stop()
        with contextlib.suppress(Exception):
            _delete_upload(small_id)
        subprocess.run(["umount", str(mount)], check=False)


@dataclass(frozen=True, kw_only=True)
class Scenario:
    name: str
    done: str
    expected: str
    run: Callable[[Setup], str]


SCENARIOS = [
    Scenario(
        name="sigkill-worker",
        done="SIGKILL to the worker's pool process while it ingests the big CSV",
        expected="task handed back at once and redelivered; `succeeded`, 2 attempts, exact",
        run=scenario_sigkill,
    ),
    Scenario(
        name="postgres-restart",
        done=f"`pg_ctlcluster {' '.join(PG_CLUSTER)} restart` while the worker ingests the big CSV",
        expected="the task fails with OperationalError/InterfaceError and retries by itself; "
        "`succeeded`, exact; the worker stays up",
        run=scenario_postgres_restart,
    ),
    Scenario(
        name="sigkill-part",
        done=f"SIGKILL to the worker's pool process while it parses one of {FANOUT_PARTS} parts "
        f"of the big CSV (fan-out: INGEST_FANOUT_MIN_BYTES {FANOUT_MIN_BYTES // 2**20} MiB)",
        expected="the part is handed back and run again; the last part lands; `succeeded`, exact",
        run=scenario_sigkill_part,
    ),
    Scenario(
        name="postgres-restart-part",
        done=f"`pg_ctlcluster {' '.join(PG_CLUSTER)} restart` while the worker parses parts of the "
        f"big CSV cut into {FANOUT_PARTS}",
        expected="part tasks fail with OperationalError/InterfaceError and retry; `succeeded`, "
        "exact; the worker stays up",
        run=scenario_postgres_restart_part,
    ),
    Scenario(
        name="redis-down",
        done=f"private Redis stopped; `/`, `/workloads/`, `/uploads/`, `/healthz` fetched and a "
        f"{SMALL_ROWS:,}-row CSV uploaded through the API; Redis started again",
        expected="pages 200; `/healthz` 503 naming the broker; upload 202 `queued` with a note, "
        "answered quickly; `succeeded` and exact once Redis is back, nobody uploading again",
        run=scenario_redis_down,
    ),
    Scenario(
        name="media-full",
        done=f"media storage on a 1 MiB tmpfs holding a 200 KiB file; a "
        f"{MEDIA_FULL_BYTES // 2**20} MiB CSV uploaded through the API and the upload page",
        expected="507 with a message naming the lack of space (JSON for the API); no upload row "
        "and no partial file; other data untouched; the server keeps serving",
        run=scenario_media_full,
    ),
]


# --- Setup and report --------------------------------------------------------------------------


def _recreate_database() -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB_NAME}")


def _prepare(redis: Redis) -> Setup:
    FAULTS_DIR.mkdir(parents=True, exist_ok=True)
    for stale in ("media", "staticfiles"):
        shutil.rmtree(FAULTS_DIR / stale, ignore_errors=True)
    env = _env()
    _recreate_database()
    redis.start()
    os.environ.update(env)
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    logging.getLogger().setLevel(logging.WARNING)  # this process: only what goes wrong
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command

    from audit_app.access.tokens import api_token_issue
    from audit_app.ingestion.ingest import upload_ingest
    from audit_app.ingestion.uploads import upload_create
    from audit_app.models import Upload

    call_command("migrate", interactive=False, verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)
    user = User.objects.create_user(username="faults", password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name="engineer")[0])
    token = api_token_issue(user=user, name="faults").key

    big = FAULTS_DIR / f"faults-{ROWS}.csv"
    if not big.exists():
        _generic_csv(big, rows=ROWS, seed=7)
    expected = _pandas_totals(big)
    # The clean single pass the faulted runs are compared with (in this process, no worker).
    with open(big, "rb") as source:
        upload = upload_create(source=source, original_name="faults-reference.csv", enqueue=False)
    started = time.monotonic()
    upload = upload_ingest(upload_id=upload.pk)
    seconds = time.monotonic() - started
    reference = _rollup_shape(upload.pk)["hourly"]["rows"]
    check(upload.status == Upload.Status.SUCCEEDED, f"clean ingest: {upload.error}")
    _check_exact(upload.pk, expected, None)
    _delete_upload(upload.pk)
    print(
        f"faults: clean single-pass ingest of {ROWS:,} rows ({big.stat().st_size / 2**20:.0f} "
        f"MiB) took {seconds:.1f} s, {reference:,} hourly rollups; totals equal pandas'"
    )
    return Setup(
        env=env,
        redis=redis,
        big=big,
        big_expected=expected,
        reference_rows=reference,
        reference_seconds=seconds,
        user="faults",
        token=token,
    )


def _markdown(outcomes: list[Outcome], setup: Setup | None) -> str:
    from bench.report import markdown_table

    rows = [
        [o.name, o.done, o.expected, o.observed.replace("|", "\\|"), "PASS" if o.ok else "FAIL"]
        for o in outcomes
    ]
    context = (
        f"a generic CSV of {ROWS:,} rows ({setup.big.stat().st_size / 2**20:.0f} MiB; a clean "
        f"single pass took {setup.reference_seconds:.1f} s and made {setup.reference_rows:,} "
        "hourly rollups)"
        if setup is not None
        else "no file (setup failed)"
    )
    return "\n".join(
        [
            "## Faults",
            "",
            "Written by `make faults` (`bench/faults.py`): each fault is injected into real "
            "processes (Celery workers with a prefork pool, gunicorn, a private redis-server, "
            f"the local PostgreSQL cluster `{' '.join(PG_CLUSTER)}`) with a database "
            f"`{DB_NAME}` of its own. The "
            f"ingests use {context}. Exact means: the upload's totals and the sums of its "
            "hourly and daily rollups equal what pandas sums over the same CSV, and no hourly "
            "rollup key appears twice (the row count equals the clean pass). Workers sweep "
            f"for stuck `queued` uploads every {REQUEUE_INTERVAL} s here "
            "(UPLOAD_REQUEUE_INTERVAL_SECONDS; default 30).",
            "",
            markdown_table(["Scenario", "Done", "Expected", "Observed", "Result"], rows),
            "",
        ]
    )


def _outcome(scenario: Scenario, observed: str, *, ok: bool) -> Outcome:
    return Outcome(
        name=scenario.name,
        done=scenario.done,
        expected=scenario.expected,
        observed=observed,
        ok=ok,
    )


def main() -> int:
    redis = Redis()
    outcomes: list[Outcome] = []
    setup: Setup | None = None
    try:
        try:
            setup = _prepare(redis)
        except Exception as exc:
            why = str(exc) if isinstance(exc, Failed) else f"{type(exc).__name__}: {exc}"
            for scenario in SCENARIOS:
                outcomes.append(_outcome(scenario, f"setup failed: {why}", ok=False))
                print(outcomes[-1].line(), flush=True)
        only = {n for n in os.environ.get("FAULTS_ONLY", "").split(",") if n}
        if setup is not None:
            for scenario in SCENARIOS:
                if only and scenario.name not in only:
                    continue
                try:
                    outcome = _outcome(scenario, scenario.run(setup), ok=True)
                except Exception as exc:  # a failed expectation, or anything unexpected
                    why = str(exc) if isinstance(exc, Failed) else f"{type(exc).__name__}: {exc}"
                    outcome = _outcome(scenario, why, ok=False)
                outcomes.append(outcome)
                print(outcome.line(), flush=True)
    finally:
        redis.stop()
    from bench.report import write_section

    write_section("faults", _markdown(outcomes, setup))
    failed = [o.name for o in outcomes if not o.ok]
    print(f"faults: {len(outcomes) - len(failed)} of {len(outcomes)} passed; docs/reliability.md")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
