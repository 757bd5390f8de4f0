"""`make load`: 50 users on the pages and the API for 60 s, gunicorn + PostgreSQL on loopback,
and whether every page and API call meets its p95 target.

What it does, in order, with a timeout on every child process:

1. recreates the PostgreSQL database ``audit_load`` and fills it the way an operator would:
   ``migrate``, ``collectstatic`` (whitenoise serves the hashed files when DEBUG is off),
   ``seed_demo`` (the demo month of traffic, a billing export, serving pools), two benchmark runs
   and a gate (``gate``, from the vLLM fixtures), then one account per simulated user, roles
   mixed (finops, engineer, manager, admin), each with its own API token; it stops there if the
   demo data did not land or a migration is pending (the code changed under the database);
2. starts the web server as production runs it (`config.processes.web_command`: gunicorn with
   `config.gunicorn_conf`) with production settings (DEBUG off, a random secret key) on
   127.0.0.1, plain HTTP: ``DJANGO_SECURE_SSL_REDIRECT``, ``DJANGO_SESSION_COOKIE_SECURE`` and
   ``DJANGO_CSRF_COOKIE_SECURE`` are switched off for this process only, since there is no TLS
   on loopback; every other production default stays; waits for ``/healthz``;
3. runs locust headless (``bench/locustfile.py``): page users sign in through the login form,
   API users send ``Authorization: Token <key>``; any non-2xx answer, a redirect to the login
   page included, is a failure;
4. prints per-endpoint requests, failures, p50 / p95 / max and req/s from locust's CSV, the
   server's mean CPU ms and queries per answer (gunicorn runs with DJANGO_SERVER_TIMING on; the
   locustfile sums each answer's ``Server-Timing`` header) and each endpoint's p95 over the
   requests sent after the first LOAD_SKIP seconds; then the target line: the highest of those
   p95s (sign-in POSTs aside) against 300 ms, MET or NOT MET; the machine's CPU yardstick
   (`bench.report.machine_scaling`) before and after; then PASS (no failure, no 5xx, no
   exception in the locustfile) or FAIL, and rewrites the "load" section of
   docs/performance.md;
5. stops locust and gunicorn (whole process groups) whatever happens.

The first seconds are left out of the target because every user starts in them at once: 30
sign-ins hash their passwords (PBKDF2, meant to cost a few hundred ms of CPU each) while the
first pages are drawn, which says nothing about the pages' speed.

Knobs (environment): LOAD_USERS (50), LOAD_SPAWN_RATE (50), LOAD_RUN_TIME (60s), LOAD_SKIP
(10s, the start the target leaves out), LOAD_WORKERS, LOAD_THREADS and LOAD_WORKER_CLASS
(gunicorn's workers, threads and worker class; by default `config.gunicorn_conf`'s),
LOAD_DATABASE (audit_load), LOAD_REUSE_DB=1 keeps an already seeded database (for comparing
server settings quickly), LOAD_NO_DOC=1 leaves docs/performance.md alone, LOAD_REDIS_DB (6) is
the Redis database number the server's broker uses (pick one no other job on the machine uses).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import json
import math
import os
import re
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOAD_DIR = REPO / "var" / "load"
PG_SERVER = "postgres://postgres:postgres@127.0.0.1:5432"
REDIS_SERVER = "redis://127.0.0.1:6379"

SETUP_TIMEOUT_S = 600  # seed_demo on PostgreSQL takes well under a minute; this is a bound
HEALTH_TIMEOUT_S = 60
STOP_GRACE_S = 10

# One account per simulated user; roles cycle in this order (4 finops : 3 engineer : 2 manager
# : 1 admin), so every role is present from 10 users on.
ROLE_CYCLE = (
    "finops",
    "engineer",
    "manager",
    "finops",
    "engineer",
    "admin",
    "finops",
    "manager",
    "engineer",
    "finops",
)

CHILD_SETUP = r"""
import json, sys
import django
django.setup()
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import Sum
from audit_app.models import (
    ApiToken, HourlyRollup, Recommendation, Upload, Workload,
)
from audit_app.access.tokens import api_token_issue
from benchmarks_app.models import BenchmarkRun, Gate

roles = json.loads(sys.argv[1])
password = sys.argv[2]
User = get_user_model()
# The demo accounts have published passwords: no one signs in with them on this server.
for demo in User.objects.filter(username__in=["finops", "engineer", "manager", "admin"]):
    demo.set_unusable_password()
    demo.save(update_fields=["password"])
accounts = []
for index, role in enumerate(roles):
    username = f"load-{index:03d}-{role}"
    user, _ = User.objects.get_or_create(username=username)
    user.set_password(password)
    user.is_active = True
    user.is_staff = user.is_superuser = role == "admin"
    user.save()
    user.groups.clear()
    if role != "admin":
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    ApiToken.objects.filter(user=user).delete()
    token = api_token_issue(user=user, name="load test").key
    accounts.append({"username": username, "role": role, "token": token})
token_logs = Upload.objects.filter(kind=Upload.Kind.TOKEN_LOG, status=Upload.Status.SUCCEEDED)
print(json.dumps({
    "password": password,
    "accounts": accounts,
    "workload_ids": list(Workload.objects.order_by("id").values_list("id", flat=True)),
    "recommendation_ids": list(Recommendation.objects.order_by("id").values_list("id", flat=True)),
    "upload_ids": list(Upload.objects.order_by("id").values_list("id", flat=True)),
    "run_ids": list(BenchmarkRun.objects.order_by("id").values_list("id", flat=True)),
    "gate_ids": list(Gate.objects.order_by("id").values_list("id", flat=True)),
    "failed_uploads": [
        f"{u.original_name}: {u.error[:300]}"
        for u in Upload.objects.filter(status=Upload.Status.FAILED)
    ],
    "size": {
        "requests": token_logs.aggregate(n=Sum("rows_accepted"))["n"] or 0,
        "hourly_rollups": HourlyRollup.objects.count(),
        "workloads": Workload.objects.count(),
        "uploads": Upload.objects.count(),
        "recommendations": Recommendation.objects.count(),
        "benchmark_runs": BenchmarkRun.objects.count(),
    },
}))
"""


# --- locust CSV stats: parsing and the verdict (unit-tested in tests/test_load_script.py) ----


@dataclass(frozen=True)
class EndpointStats:
    method: str
    name: str
    requests: int
    failures: int
    p50_ms: float | None
    p95_ms: float | None
    max_ms: float | None
    rps: float


@dataclass(frozen=True)
class FailureRow:
    method: str
    name: str
    error: str
    occurrences: int

    @property
    def status(self) -> int | None:
        """The HTTP status the locustfile wrote into the error ("HTTP 503 ..."), if any."""
        match = re.search(r"\bHTTP (\d{3})\b", self.error)
        return int(match.group(1)) if match else None


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reasons: list[str] = field(default_factory=list)


def _number(raw: str | None) -> float | None:
    text = (raw or "").strip()
    if text in ("", "N/A"):
        return None
    return float(text)


def parse_stats(text: str) -> tuple[list[EndpointStats], EndpointStats | None]:
    """Rows of locust's ``<prefix>_stats.csv`` and its "Aggregated" total (None if missing)."""
    rows: list[EndpointStats] = []
    total: EndpointStats | None = None
    for record in csv.DictReader(io.StringIO(text)):
        stats = EndpointStats(
            method=(record.get("Type") or "").strip(),
            name=record["Name"].strip(),
            requests=int(record["Request Count"]),
            failures=int(record["Failure Count"]),
            p50_ms=_number(record.get("50%")),
            p95_ms=_number(record.get("95%")),
            max_ms=_number(record.get("Max Response Time")),
            rps=float(_number(record.get("Requests/s")) or 0.0),
        )
        if stats.name == "Aggregated" and not stats.method:
            total = stats
        else:
            rows.append(stats)
    return rows, total


def parse_failures(text: str) -> list[FailureRow]:
    """Rows of locust's ``<prefix>_failures.csv``."""
    return [
        FailureRow(
            method=record["Method"].strip(),
            name=record["Name"].strip(),
            error=record["Error"].strip(),
            occurrences=int(record["Occurrences"]),
        )
        for record in csv.DictReader(io.StringIO(text))
    ]


def parse_exceptions(text: str) -> int:
    """How many exceptions the locustfile raised (``<prefix>_exceptions.csv``)."""
    return sum(int(record["Count"]) for record in csv.DictReader(io.StringIO(text)))


def verdict(
    rows: list[EndpointStats],
    total: EndpointStats | None,
    failures: Iterable[FailureRow],
    exceptions: int = 0,
) -> Verdict:
    """PASS only with requests made, no failed request, no 5xx and no locustfile exception."""
    reasons: list[str] = []
    failures = list(failures)
    requests = total.requests if total else sum(r.requests for r in rows)
    failed = total.failures if total else sum(r.failures for r in rows)
    if requests == 0:
        reasons.append("no request was made")
    if failed:
        reasons.append(f"{failed} of {requests} requests failed")
    server_errors = sum(f.occurrences for f in failures if (f.status or 0) >= 500)
    if server_errors:
        reasons.append(f"{server_errors} answers were 5xx")
    if exceptions:
        reasons.append(f"the locustfile raised {exceptions} exceptions")
    return Verdict(passed=not reasons, reasons=reasons)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


@dataclass(frozen=True)
class EndpointTiming:
    """Sums of the server's ``Server-Timing`` figures over one endpoint's answers, and the
    response times of its requests the target counts (sent after the first LOAD_SKIP s)."""

    answers: int
    cpu_ms: float
    db_ms: float
    queries: int
    counted_ms: tuple[float, ...] = ()

    def p95_counted(self) -> float | None:
        """Nearest-rank p95 of ``counted_ms`` (None without any)."""
        times = sorted(self.counted_ms)
        return times[math.ceil(0.95 * len(times)) - 1] if times else None

    def mean_cpu_ms(self) -> float | None:
        return self.cpu_ms / self.answers if self.answers else None

    def mean_queries(self) -> float | None:
        return self.queries / self.answers if self.answers else None


def parse_timing(text: str) -> dict[tuple[str, str], EndpointTiming]:
    """The locustfile's per-endpoint figures (JSON written when locust quits)."""
    return {
        (row["method"], row["name"]): EndpointTiming(
            answers=int(row["answers"]),
            cpu_ms=float(row["cpu_ms"]),
            db_ms=float(row["db_ms"]),
            queries=int(row["queries"]),
            counted_ms=tuple(float(ms) for ms in row.get("counted_ms", ())),
        )
        for row in json.loads(text)
    }


def total_timing(timing: dict[tuple[str, str], EndpointTiming]) -> EndpointTiming:
    return EndpointTiming(
        answers=sum(t.answers for t in timing.values()),
        cpu_ms=sum(t.cpu_ms for t in timing.values()),
        db_ms=sum(t.db_ms for t in timing.values()),
        queries=sum(t.queries for t in timing.values()),
        counted_ms=tuple(ms for t in timing.values() for ms in t.counted_ms),
    )


# The target: every page and API call answers within this p95 under `make load`, counting the
# requests sent after the first LOAD_SKIP seconds; signing in is left out (PBKDF2 is meant to
# cost).
TARGET_P95_MS = 300.0
TARGET_EXEMPT = {("POST", "login (POST)")}


@dataclass(frozen=True)
class Target:
    """Each counted endpoint's p95 (the sign-in POST aside), slowest first."""

    p95: list[tuple[str, float]]
    skip_s: int

    @property
    def worst(self) -> tuple[str, float] | None:
        return self.p95[0] if self.p95 else None

    @property
    def misses(self) -> list[tuple[str, float]]:
        return [(name, ms) for name, ms in self.p95 if ms > TARGET_P95_MS]

    @property
    def met(self) -> bool:
        return bool(self.p95) and not self.misses


def target(timing: dict[tuple[str, str], EndpointTiming], skip_s: int) -> Target:
    p95 = [
        (f"{method} {name}", value)
        for (method, name), t in timing.items()
        if (method, name) not in TARGET_EXEMPT and (value := t.p95_counted()) is not None
    ]
    return Target(p95=sorted(p95, key=lambda item: (-item[1], item[0])), skip_s=skip_s)


def target_line(result: Target) -> str:
    """The figure (the highest p95, and whose) and MET or NOT MET, naming every miss."""
    line = (
        f"Target: every page and API p95 <= {TARGET_P95_MS:.0f} ms after the first "
        f"{result.skip_s} s (sign-in POSTs aside): "
    )
    if result.worst is None:
        return line + "NOT MET (no request counted)"
    name, value = result.worst
    line += f"highest p95 {_ms(value)} ms ({name}): " + ("MET" if result.met else "NOT MET")
    if result.misses:
        over = ", ".join(f"{miss} {_ms(ms)} ms" for miss, ms in result.misses)
        line += f" ({len(result.misses)} over: {over})"
    return line


TABLE_HEADER = [
    "endpoint",
    "requests",
    "failures",
    "p50 ms",
    "p95 ms",
    "max ms",
    "req/s",
    "cpu ms",
    "queries",
    "p95 counted",
]


def _mean(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table_rows(
    rows: list[EndpointStats],
    total: EndpointStats | None,
    timing: dict[tuple[str, str], EndpointTiming] | None = None,
) -> list[list[str]]:
    """Endpoints sorted by name (pages, then the API, then the login), then the total; with
    the server's mean CPU ms and queries per answer beside each (``-`` without figures)."""
    timing = timing or {}
    none = EndpointTiming(answers=0, cpu_ms=0.0, db_ms=0.0, queries=0)
    ordered = sorted(rows, key=lambda r: (r.name, r.method))
    out = []
    for r in ordered:
        t = timing.get((r.method, r.name), none)
        out.append(
            [
                f"{r.method} {r.name}".strip(),
                str(r.requests),
                str(r.failures),
                _ms(r.p50_ms),
                _ms(r.p95_ms),
                _ms(r.max_ms),
                f"{r.rps:.2f}",
                _mean(t.mean_cpu_ms(), 1),
                _mean(t.mean_queries(), 1),
                _ms(t.p95_counted()),
            ]
        )
    if total is not None:
        t = total_timing(timing)
        out.append(
            [
                "total",
                str(total.requests),
                str(total.failures),
                _ms(total.p50_ms),
                _ms(total.p95_ms),
                _ms(total.max_ms),
                f"{total.rps:.2f}",
                _mean(t.mean_cpu_ms(), 1),
                _mean(t.mean_queries(), 1),
                _ms(t.p95_counted()),
            ]
        )
    return out


def text_table(rows: list[list[str]]) -> str:
    widths = [max(len(str(c)) for c in column) for column in zip(TABLE_HEADER, *rows, strict=True)]
    lines = []
    for line in [TABLE_HEADER, *rows]:
        cells = [
            str(c).ljust(w) if i == 0 else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(line, widths, strict=True))
        ]
        lines.append("  ".join(cells))
    return "\n".join(lines)


# --- the run ---------------------------------------------------------------------------------


def _recommended() -> tuple[int, int, str]:
    """(workers, threads, worker class) of `config.gunicorn_conf`, what production runs."""
    from config import gunicorn_conf

    return gunicorn_conf.workers, gunicorn_conf.threads, gunicorn_conf.worker_class


@dataclass
class Config:
    users: int = 50
    spawn_rate: float = 50
    run_time_s: int = 60
    skip_s: int = 10
    workers: int = field(default_factory=lambda: _recommended()[0])
    threads: int = field(default_factory=lambda: _recommended()[1])
    worker_class: str = field(default_factory=lambda: _recommended()[2])
    database: str = "audit_load"
    reuse_db: bool = False
    write_doc: bool = True
    redis_db: int = 6

    @classmethod
    def from_env(cls) -> Config:
        env = os.environ
        workers, threads, worker_class = _recommended()
        return cls(
            users=int(env.get("LOAD_USERS", 50)),
            spawn_rate=float(env.get("LOAD_SPAWN_RATE", 50)),
            run_time_s=_seconds(env.get("LOAD_RUN_TIME", "60s")),
            skip_s=_seconds(env.get("LOAD_SKIP", "10s")),
            workers=int(env.get("LOAD_WORKERS", workers)),
            threads=int(env.get("LOAD_THREADS", threads)),
            worker_class=env.get("LOAD_WORKER_CLASS", worker_class),
            database=env.get("LOAD_DATABASE", "audit_load"),
            reuse_db=env.get("LOAD_REUSE_DB", "") in ("1", "true", "yes"),
            write_doc=env.get("LOAD_NO_DOC", "") not in ("1", "true", "yes"),
            redis_db=int(env.get("LOAD_REDIS_DB", 6)),
        )

    @property
    def server_label(self) -> str:
        """The web server's processes, as the report names them."""
        if self.worker_class == "sync":
            return f"{self.workers} sync workers"
        return f"{self.workers} workers x {self.threads} threads ({self.worker_class})"


def _seconds(text: str) -> int:
    match = re.fullmatch(r"\s*(\d+)\s*([sm]?)\s*", text)
    if not match:
        raise SystemExit(f"LOAD_RUN_TIME={text!r}: use seconds like 60s or minutes like 2m")
    return int(match.group(1)) * (60 if match.group(2) == "m" else 1)


def _server_env(config: Config) -> dict[str, str]:
    env = dict(os.environ)
    for name in list(env):  # nothing from the caller's shell changes what is measured
        if name.startswith(("DJANGO_", "API_THROTTLE_", "CELERY_")) or name == "DATABASE_URL":
            del env[name]
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "DJANGO_DEBUG": "false",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DATABASE_URL": f"{PG_SERVER}/{config.database}",
            "CELERY_BROKER_URL": f"{REDIS_SERVER}/{config.redis_db}",
            "DJANGO_VAR_DIR": str(LOAD_DIR),
            "DJANGO_LOG_LEVEL": "WARNING",
            # CPU ms, database ms and queries of every answer, which the locustfile sums.
            "DJANGO_SERVER_TIMING": "true",
            # Plain HTTP on loopback: no TLS to redirect to, and cookies marked Secure would
            # never come back. HSTS, CSP, nosniff and the rest keep their production values.
            "DJANGO_SECURE_SSL_REDIRECT": "false",
            "DJANGO_SESSION_COOKIE_SECURE": "false",
            "DJANGO_CSRF_COOKIE_SECURE": "false",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def _manage(env: dict[str, str], *args: str, timeout: float = SETUP_TIMEOUT_S) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0 and args[0] != "gate":  # gate exits 1 on a failed verdict
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{result.stderr[-3000:]}")
    return result.stdout


def _recreate_database(name: str, *, reuse: bool) -> bool:
    """Drop and create ``name``; with reuse, keep it if it exists. True when it is new."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True, connect_timeout=5) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if exists and reuse:
            return False
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return True


def prepare(config: Config, env: dict[str, str]) -> dict[str, object]:
    LOAD_DIR.mkdir(parents=True, exist_ok=True)
    fresh = _recreate_database(config.database, reuse=config.reuse_db)
    # Cached page results are keyed by a data version that restarts with a new database, and
    # every run starts cold; uploaded files belong to the database they were recorded in.
    for stale in ("cache", *(("media", "demo") if fresh else ())):
        shutil.rmtree(LOAD_DIR / stale, ignore_errors=True)
    _manage(env, "migrate", "--noinput", "-v0")
    _manage(env, "collectstatic", "--noinput", "-v0")
    # seed_demo creates the demo accounts with published passwords, so it runs only with DEBUG
    # on; the account setup below makes those passwords unusable before the server starts. On a
    # reused database it finds the demo data loaded and only resets the accounts.
    _manage({**env, "DJANGO_DEBUG": "true"}, "seed_demo")
    if fresh:
        fixtures = REPO / "tests" / "fixtures" / "benchmarks"
        _manage(
            env,
            "gate",
            "--baseline",
            str(fixtures / "vllm_baseline.json"),
            "--candidate",
            str(fixtures / "vllm_candidate.json"),
            "--meta-baseline",
            "gpu_utilization_pct=80",
            "--meta-candidate",
            "gpu_utilization_pct=85",
            "--json",
        )
    roles = [ROLE_CYCLE[i % len(ROLE_CYCLE)] for i in range(config.users)]
    result = subprocess.run(
        [sys.executable, "-c", CHILD_SETUP, json.dumps(roles), secrets.token_urlsafe(18)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=SETUP_TIMEOUT_S,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"account setup failed:\n{result.stderr[-3000:]}")
    fixture = json.loads(result.stdout.strip().splitlines()[-1])
    # A load test on an empty dashboard measures nothing: the demo data must have landed.
    if fixture["failed_uploads"] or not fixture["size"]["requests"]:
        raise RuntimeError(
            "the demo data did not land (recreate the database: run without LOAD_REUSE_DB): "
            + "; ".join(fixture["failed_uploads"] or ["no request ingested"])
        )
    if not fixture["run_ids"] or not fixture["gate_ids"]:
        raise RuntimeError("the benchmark runs or the gate were not created (manage.py gate)")
    # The code must match the schema it runs on (no migration written since `migrate` ran).
    _manage(env, "migrate", "--check", "-v0")
    return fixture


@dataclass(frozen=True)
class CpuUse:
    """Cores busy on average during the locust run: the whole machine and our two servers."""

    machine: float
    gunicorn: float
    locust: float
    # Pure CPU work in 2 processes vs 1, before and after the run (`bench.report`).
    scaling: tuple[float, float] | None = None

    @property
    def other(self) -> float:
        """PostgreSQL, Redis and whatever else the machine was running."""
        return max(0.0, self.machine - self.gunicorn - self.locust)


def _machine_jiffies() -> tuple[int, int]:
    """(busy, total) CPU jiffies since boot, all cores, from /proc/stat (0, 0 elsewhere)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields[:8]) - idle, sum(fields[:8])


def _children_cpu_s() -> float:
    """CPU seconds of every child process reaped so far (gunicorn's workers roll into it)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(base_url: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
    last = "no answer"
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {server.returncode} before /healthz answered")
        try:
            with urllib.request.urlopen(f"{base_url}/healthz", timeout=2) as response:
                if response.status == 200:
                    return
                last = f"HTTP {response.status}"
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code}: {exc.read()[:200]!r}"
        except OSError as exc:
            last = type(exc).__name__
        time.sleep(0.3)
    raise RuntimeError(f"/healthz did not answer 200 within {HEALTH_TIMEOUT_S} s ({last})")


def _stop(process: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM the process group, then SIGKILL it after a grace period."""
    if process is None:
        return
    try:
        pgid = os.getpgid(process.pid)
    except ProcessLookupError:
        pgid = None
    if pgid is not None and process.poll() is None:
        os.killpg(pgid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=STOP_GRACE_S)
    if pgid is not None:  # stragglers in the group (gunicorn's workers) go too
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
    process.wait(timeout=STOP_GRACE_S)


def _gunicorn_command(config: Config, port: int) -> list[str]:
    from config.processes import web_command

    return web_command(
        f"127.0.0.1:{port}",
        "--workers",
        str(config.workers),
        "--threads",
        str(config.threads),
        "--worker-class",
        config.worker_class,
        "--error-logfile",
        str(LOAD_DIR / "gunicorn.log"),
        "--log-level",
        "warning",
    )


def run_load(config: Config) -> tuple[list[EndpointStats], EndpointStats | None, Verdict, dict]:
    env = _server_env(config)
    started = time.monotonic()
    print(f"load: preparing PostgreSQL database {config.database} ...", flush=True)
    fixture = prepare(config, env)
    fixture_path = LOAD_DIR / "fixture.json"
    fixture_path.write_text(json.dumps(fixture))
    fixture_path.chmod(0o600)
    print(f"load: data ready in {time.monotonic() - started:.0f} s: {fixture['size']}", flush=True)
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}"
    csv_prefix = LOAD_DIR / "locust"
    timing_file = LOAD_DIR / "timing.json"
    timing_file.unlink(missing_ok=True)
    for suffix in ("_stats.csv", "_failures.csv", "_exceptions.csv", "_stats_history.csv"):
        Path(f"{csv_prefix}{suffix}").unlink(missing_ok=True)
    server = load = None
    try:
        with open(LOAD_DIR / "gunicorn.out", "wb") as server_log:
            server = subprocess.Popen(
                _gunicorn_command(config, port),
                cwd=REPO,
                env=env,
                stdout=server_log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        _wait_healthy(base_url, server)
        print(
            f"load: gunicorn {config.server_label} on {base_url}; "
            f"locust {config.users} users for {config.run_time_s} s ...",
            flush=True,
        )
        locust_env = {
            k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL"))
        }
        locust_env["LOAD_FIXTURE"] = str(fixture_path)
        locust_env["LOAD_TIMING"] = str(timing_file)
        locust_env["LOAD_SKIP_S"] = str(config.skip_s)
        cpu0 = _children_cpu_s()
        busy0, total0 = _machine_jiffies()
        t0 = time.monotonic()
        with open(LOAD_DIR / "locust.log", "wb") as locust_log:
            load = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "locust",
                    "-f",
                    str(REPO / "bench" / "locustfile.py"),
                    "--headless",
                    "--host",
                    base_url,
                    "--users",
                    str(config.users),
                    "--spawn-rate",
                    str(config.spawn_rate),
                    "--run-time",
                    f"{config.run_time_s}s",
                    "--stop-timeout",
                    "10",
                    "--csv",
                    str(csv_prefix),
                    "--only-summary",
                    "--loglevel",
                    "WARNING",
                ],
                cwd=REPO,
                env=locust_env,
                stdout=locust_log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                load.wait(timeout=config.run_time_s + 90)
            except subprocess.TimeoutExpired:
                raise RuntimeError("locust did not finish in time; stopped it") from None
            wall_s = time.monotonic() - t0
            busy1, total1 = _machine_jiffies()
            locust_cpu_s = _children_cpu_s() - cpu0
    finally:
        _stop(load)
        _stop(server)
        fixture_path.unlink(missing_ok=True)  # it holds passwords and tokens
    # gunicorn's CPU (start-up included) is known once it and its workers have been reaped.
    gunicorn_cpu_s = _children_cpu_s() - cpu0 - locust_cpu_s
    cores = os.cpu_count() or 1
    cpu = CpuUse(
        machine=(busy1 - busy0) / (total1 - total0) * cores if total1 > total0 else 0.0,
        gunicorn=gunicorn_cpu_s / wall_s,
        locust=locust_cpu_s / wall_s,
    )
    stats_file = Path(f"{csv_prefix}_stats.csv")
    if not stats_file.exists():
        tail = (LOAD_DIR / "locust.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"locust wrote no stats (exit {load.returncode}):\n{tail}")
    rows, total = parse_stats(stats_file.read_text())
    failures_file = Path(f"{csv_prefix}_failures.csv")
    failures = parse_failures(failures_file.read_text()) if failures_file.exists() else []
    exceptions_file = Path(f"{csv_prefix}_exceptions.csv")
    exceptions = parse_exceptions(exceptions_file.read_text()) if exceptions_file.exists() else 0
    result = verdict(rows, total, failures, exceptions)
    if load.returncode != 0:  # locust saw a failure or an error, perhaps after its last CSV write
        result = Verdict(
            passed=False, reasons=[*result.reasons, f"locust exited with {load.returncode}"]
        )
    timing = parse_timing(timing_file.read_text()) if timing_file.exists() else {}
    extra = {"fixture": fixture, "failures": failures, "cpu": cpu, "timing": timing}
    return rows, total, result, extra


def cpu_line(cpu: CpuUse) -> str:
    cores = os.cpu_count() or 0
    line = (
        f"CPU during the run (average cores busy): machine {cpu.machine:.2f} of {cores}, "
        f"gunicorn {cpu.gunicorn:.2f} (start-up included), locust {cpu.locust:.2f}, "
        f"PostgreSQL, Redis and any other process {cpu.other:.2f}."
    )
    if cpu.scaling is not None:
        before, after = cpu.scaling
        line += (
            f" As a yardstick for the machine itself, two processes of pure CPU work finished "
            f"{before:.2f}x as fast as one before the run and {after:.2f}x after (2.00x on two "
            "idle cores; less when the host's other guests hold the cores)."
        )
    return line


def markdown(
    config: Config,
    rows: list[list[str]],
    target: str,
    result: Verdict,
    size: dict[str, int],
    failures: list[FailureRow],
    cpu: CpuUse,
) -> str:
    from bench.report import markdown_table

    cpus = os.cpu_count() or 0
    lines = [
        "## Load",
        "",
        "Written by `make load` (`bench/load.py`, tasks in `bench/locustfile.py`).",
        "",
        f"Setup: gunicorn `config.wsgi` with {config.server_label} (`config.gunicorn_conf`), "
        "production settings (DEBUG off; plain "
        "HTTP on loopback, so only the TLS redirect and Secure cookies are off), PostgreSQL "
        f"database `{config.database}` and Redis on the same {cpus}-core machine as locust. "
        f"Data: `seed_demo` ({size.get('requests', 0):,} requests over 30 days, "
        f"{size.get('hourly_rollups', 0):,} hourly rollups, {size.get('workloads', 0)} workloads, "
        f"{size.get('uploads', 0)} uploads, {size.get('recommendations', 0)} recommendations) "
        f"plus {size.get('benchmark_runs', 0)} benchmark runs and a gate.",
        "",
        f"Load: locust headless, {config.users} users (spawn rate {config.spawn_rate:g}/s) for "
        f"{config.run_time_s} s, wait 0.5-2 s between tasks. Page users (3 in 5) sign in through "
        "the login form; API users (2 in 5) send their own `Authorization: Token`; roles mixed "
        "4 finops : 3 engineer : 2 manager : 1 admin, one account per user, throttling on. Any "
        "non-2xx answer (a redirect to the login page too) counts as a failure. Percentiles are "
        "locust's (rounded to 2 significant digits above 100 ms); req/s is over the whole run. "
        "*cpu ms* and *queries* are the server's own means per answer (its `Server-Timing` "
        "header, DJANGO_SERVER_TIMING: the request thread's CPU time and its database queries); "
        f"*p95 counted* is over the requests sent after the first {config.skip_s} s, when every "
        "user starts at once (the sign-ins hash their passwords with PBKDF2): the target's "
        "figure.",
        "",
        markdown_table(TABLE_HEADER, rows),
        "",
        cpu_line(cpu),
        "",
        target + ".",
        "",
        f"Result: **{'PASS' if result.passed else 'FAIL'}**"
        + ("" if result.passed else " (" + "; ".join(result.reasons) + ")"),
    ]
    if failures:
        lines += ["", "Failures:", ""]
        lines += [f"- {f.method} {f.name}: {f.error} x {f.occurrences}" for f in failures[:20]]
    return "\n".join(lines) + "\n"


def main() -> int:
    sys.path.insert(0, str(REPO))
    from bench.report import machine_scaling

    config = Config.from_env()
    scaling = [machine_scaling()]
    rows, total, result, extra = run_load(config)
    scaling.append(machine_scaling())
    extra["cpu"] = dataclasses.replace(extra["cpu"], scaling=(scaling[0], scaling[1]))
    table = table_rows(rows, total, extra["timing"])
    line = target_line(target(extra["timing"], config.skip_s))
    print()
    print(text_table(table))
    for failure in extra["failures"][:20]:
        print(f"  failure: {failure.method} {failure.name}: {failure.error} x{failure.occurrences}")
    print(cpu_line(extra["cpu"]))
    print(line)
    print()
    print("PASS" if result.passed else "FAIL: " + "; ".join(result.reasons))
    if config.write_doc:
        from bench.report import write_section

        section = markdown(
            config,
            table,
            line,
            result,
            extra["fixture"]["size"],
            extra["failures"],
            extra["cpu"],
        )
        page = write_section("load", section)
        print(f"load: wrote the load section of {page.relative_to(REPO)}")
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
