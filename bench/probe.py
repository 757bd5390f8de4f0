"""`make probe`: a token log naming a million distinct workloads, through the real stack.

What it does, in order, with a timeout on every wait:

1. recreates the PostgreSQL database ``audit_probe``: ``migrate``, ``collectstatic``,
   ``seed_demo`` (the demo month), then one finops account with an API token
   (`bench.load`'s helpers);
2. writes a generic CSV of PROBE_ROWS rows (default 1,000,000), every row its own workload
   (``probe-0000000`` ...), on the last 7 days of the demo data, so the pages' default window
   holds it;
3. starts the web server as production runs it (`config.processes.web_command`, DEBUG off),
   a Celery worker (prefork, 2 processes) for the default queue and another for the outbound
   queue (`config.processes.worker_command`), on a private Redis database, and samples the
   worker's memory (the largest resident set of any of its processes) every 0.2 s;
4. uploads the file through ``POST /api/v1/uploads/``, waits for the ingest, then for the
   post-ingest refresh (classification, recommendations, cache warm-up: the worker's log
   line for ``audit_app.refresh_derived``), and records both durations;
5. uploads files of 5,000 new names each until the database holds 20,000 workloads (the
   default MAX_WORKLOADS_TOTAL) and records the refresh after the last one;
6. times the main pages and APIs at that limit: the first (cold) request, then
   PROBE_REQUESTS (20) more for p50 / p95 / max, with the size of the answer;
7. deletes the big upload through the API, waits for the refresh that follows, then deletes
   the fill uploads, and checks that the workload count is back to what it was before;
8. sends the hostile requests (`bench/probe_hostile.py`), one per case, each of which must get
   its expected status and never a 5xx, then the outbound cases (`bench/probe_outbound.py`):
   sources and webhooks aimed at loopback, private and metadata addresses must be refused, and
   secrets must come back masked;
9. prints the figures and rewrites the "probe" section of docs/performance.md, ending with
   "Result: PASS" or "Result: FAIL" (and exits 1 on FAIL).

Knobs (environment): PROBE_ROWS (1000000; or ``--rows N``), PROBE_REQUESTS (20),
PROBE_DATABASE (audit_probe), PROBE_NO_DOC=1 leaves docs/performance.md alone.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

from bench.probe_hostile import Answer, Probe, hostile_markdown, run_hostile
from bench.probe_outbound import OutboundCase, outbound_cases
from config.processes import web_command, web_setup, worker_command

REPO = Path(__file__).resolve().parent.parent
PROBE_DIR = REPO / "var" / "probe"
REDIS_BROKER = "redis://127.0.0.1:6379/7"
INGEST_TIMEOUT_S = 1800
REFRESH_TIMEOUT_S = 1800
REQUEST_TIMEOUT_S = 150
PATHS = (
    "/",
    "/workloads/",
    "/api/v1/workloads/",
    "/api/v1/spend/?group_by=workload",
    "/uploads/",
)
# After the big upload, files of FILL_ROWS new names each fill the database up to FILL_TO
# workloads (the default MAX_WORKLOADS_TOTAL), so pages are timed at the limit.
FILL_ROWS = 5000
FILL_TO = 20_000
HEADER = "started_at,ended_at,workload,team,provider,model,input_tokens,output_tokens,cost_usd\n"

CHILD_SETUP = r"""
import json, sys
import django
django.setup()
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import Max
from audit_app.models import DailyRollup, Workload
from audit_app.access.tokens import api_token_issue

User = get_user_model()
for demo in User.objects.filter(username__in=["finops", "engineer", "manager", "admin"]):
    demo.set_unusable_password()
    demo.save(update_fields=["password"])
tokens = {}
# name: (role group or None, superuser); every probe account has the same password.
for name, group, superuser in (
    ("probe-finops", "finops", False),
    ("probe-engineer", "engineer", False),
    ("probe-admin", None, True),
    ("probe-norole", None, False),
    ("probe-victim", "finops", False),
):
    user, _ = User.objects.get_or_create(username=name)
    user.set_password(sys.argv[1])
    user.is_superuser = user.is_staff = superuser
    user.save()
    if group:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    tokens[name] = api_token_issue(user=user, name="probe").key
print(json.dumps({
    "token": tokens["probe-finops"],
    "tokens": tokens,
    "last_day": DailyRollup.objects.aggregate(d=Max("day"))["d"].isoformat(),
    "workloads": Workload.objects.count(),
}))
"""


# --- Pure parts (tested in tests/test_probe_script.py) -----------------------------------------


def csv_lines(rows: int, *, last_day: date, prefix: str = "probe") -> Iterator[str]:
    """The probe's CSV: a header, then ``rows`` requests, each of its own workload
    (``<prefix>-0000000``, ...), spread over the 7 days up to ``last_day`` (one a second),
    2 teams, 2 models."""
    yield HEADER
    first = last_day - timedelta(days=6)
    for i in range(rows):
        day = first + timedelta(days=i % 7)
        second = (i // 7) % 86_400
        at = f"{day.isoformat()}T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
        model = "gpt-4o" if i % 2 else "gpt-4o-mini"
        tokens = 100 + i % 900
        yield (
            f"{at}Z,{at}.500Z,{prefix}-{i:07d},team-{i % 2},openai,{model},{tokens},{tokens // 4},"
            f"0.001\n"
        )


@dataclass(frozen=True, kw_only=True)
class Timing:
    """One path's answers: the first (cold), then the repeated ones (warm)."""

    path: str
    status: int
    cold_ms: float
    warm_ms: list[float]
    size_bytes: int

    @property
    def p50_ms(self) -> float:
        return percentile(self.warm_ms, 50)

    @property
    def p95_ms(self) -> float:
        return percentile(self.warm_ms, 95)

    @property
    def max_ms(self) -> float:
        return max(self.warm_ms, default=0.0)


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (0 for no values): the smallest value with p % at or below."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


def peak_rss_kib(status_texts: list[str]) -> int:
    """The largest VmRSS (KiB) among /proc/<pid>/status texts (0 when none says)."""
    peak = 0
    for text in status_texts:
        match = re.search(r"^VmRSS:\s+(\d+) kB", text, re.M)
        if match:
            peak = max(peak, int(match.group(1)))
    return peak


@dataclass(kw_only=True)
class Figures:
    rows: int
    size_bytes: int = 0
    workloads_before: int = 0
    workloads_after_ingest: int = 0
    workloads_at_limit: int = 0
    workloads_after_delete: int = 0
    workloads_after_cleanup: int = 0
    fill_uploads: int = 0
    fill_refresh_s: float = 0.0
    upload_status: str = ""
    upload_notes: list[str] = field(default_factory=list)
    upload_s: float = 0.0
    ingest_s: float = 0.0
    refresh_s: float = 0.0
    delete_s: float = 0.0
    delete_refresh_s: float = 0.0
    peak_rss_kib: int = 0
    timings: list[Timing] = field(default_factory=list)
    hostile: list[Answer] = field(default_factory=list)
    outbound: list[OutboundCase] = field(default_factory=list)


def failures(figures: Figures) -> list[str]:
    """Why the probe fails (empty when it passes): a timed path not answering 200, the
    workloads not back to before after the deletions, a hostile request not answered as
    expected (or with a 5xx)."""
    reasons = [f"`{t.path}` answered {t.status}" for t in figures.timings if t.status != 200]
    if figures.workloads_after_cleanup != figures.workloads_before:
        reasons.append("the workloads are not back to before after the deletions")
    failed = [a for a in figures.hostile if not a.passed]
    if failed:
        reasons.append(f"{len(failed)} hostile request(s) not answered as expected")
    refused = [name for name, ok, _detail in figures.outbound if not ok]
    if refused:
        reasons.append(f"outbound case(s) not refused or masked: {', '.join(refused)}")
    return reasons


def _ms(value: float) -> str:
    return f"{value:,.0f}"


def markdown(figures: Figures, *, requests_each: int) -> str:
    from bench.report import markdown_table

    rows = [
        [
            f"`{t.path}`",
            str(t.status),
            _ms(t.cold_ms),
            _ms(t.p50_ms),
            _ms(t.p95_ms),
            _ms(t.max_ms),
            f"{t.size_bytes:,}",
        ]
        for t in figures.timings
    ]
    back = figures.workloads_after_cleanup == figures.workloads_before
    filled = figures.workloads_at_limit - figures.workloads_after_ingest
    lines = [
        "## Probe: a million distinct workloads",
        "",
        "Written by `make probe` (`bench/probe.py`).",
        "",
        f"Setup: gunicorn `config.wsgi` with {web_setup()} (`config.gunicorn_conf`, DEBUG off), "
        "a Celery worker (prefork, 2 processes), PostgreSQL and Redis on one 2-core machine, "
        "default limits (`MAX_WORKLOADS_PER_UPLOAD` 5,000, `MAX_WORKLOADS_TOTAL` 20,000). Data: "
        f"`seed_demo` ({figures.workloads_before} workloads), then one generic CSV of "
        f"{figures.rows:,} rows ({figures.size_bytes / 1024**2:,.0f} MiB), every row its own "
        "workload, uploaded through `POST /api/v1/uploads/`.",
        "",
        f"- Upload (HTTP) {figures.upload_s:,.1f} s; ingest until `{figures.upload_status}` "
        f"{figures.ingest_s:,.1f} s; post-ingest refresh (classes, recommendations, cache "
        f"warm-up) done {figures.refresh_s:,.1f} s later; the worker's largest process peaked at "
        f"{figures.peak_rss_kib / 1024:,.0f} MiB resident.",
        f"- Then {figures.fill_uploads} more uploads of new names filled the database to "
        f"{figures.workloads_at_limit:,} workloads (the total limit); the refresh after the "
        f"last one, over every workload, took {figures.fill_refresh_s:,.1f} s.",
        f"- Workloads: {figures.workloads_before:,} before, {figures.workloads_after_ingest:,} "
        f"after the ingest, {figures.workloads_at_limit:,} at the limit, "
        f"{figures.workloads_after_delete:,} after deleting the big upload (its {filled:,} "
        f"fill names stay), {figures.workloads_after_cleanup:,} after deleting the fill "
        f"uploads too ({'back to before' if back else 'NOT back to before'}).",
        f"- Deleting the big upload (HTTP) {figures.delete_s:,.1f} s; the refresh after it "
        f"done {figures.delete_refresh_s:,.1f} s later.",
        *[f"- The upload's note: {note}" for note in figures.upload_notes],
        "",
        f"Requests at the limit once the refresh was done, signed in as a finops user: the "
        f"first one (cold), then {requests_each} in a row (warm), times in ms.",
        "",
        markdown_table(
            ["path", "status", "cold", "p50", "p95", "max", "bytes"],
            rows,
        ),
        "",
        hostile_markdown(figures.hostile),
        "",
        outbound_markdown(figures.outbound),
        "",
        result_line(failures(figures)),
    ]
    return "\n".join(lines) + "\n"


def outbound_markdown(cases: list[OutboundCase]) -> str:
    """The outbound cases (`bench/probe_outbound.py`): requests the server makes to addresses a
    user typed in, each refused, and secrets that must come back masked."""
    from bench.report import markdown_table

    return "\n".join(
        [
            "### Outbound requests and secrets",
            "",
            markdown_table(
                ["case", "result", "detail"],
                [[name, "ok" if ok else "FAIL", detail] for name, ok, detail in cases],
            ),
        ]
    )


def result_line(reasons: list[str]) -> str:
    return f"Result: FAIL ({'; '.join(reasons)})" if reasons else "Result: PASS"


# --- Running it -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    rows: int = 1_000_000
    requests_each: int = 20
    database: str = "audit_probe"
    write_doc: bool = True

    @classmethod
    def from_env(cls, argv: list[str], env: dict[str, str]) -> Config:
        """The environment's knobs; ``--rows N`` on the command line wins over PROBE_ROWS."""
        parser = argparse.ArgumentParser(prog="python -m bench.probe")
        parser.add_argument("--rows", type=int, help="rows (= workloads) in the big file")
        args = parser.parse_args(argv)
        return cls(
            rows=args.rows or int(env.get("PROBE_ROWS", 1_000_000)),
            requests_each=int(env.get("PROBE_REQUESTS", 20)),
            database=env.get("PROBE_DATABASE", "audit_probe"),
            write_doc=env.get("PROBE_NO_DOC", "") not in ("1", "true", "yes"),
        )


class RssSampler(threading.Thread):
    """Samples the largest resident set among a process group's processes."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pgid = os.getpgid(pid)
        self.peak = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.2):
            texts = []
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                try:
                    if os.getpgid(int(entry.name)) == self.pgid:
                        texts.append((entry / "status").read_text())
                except (OSError, ProcessLookupError):
                    continue
            self.peak = max(self.peak, peak_rss_kib(texts))


def _wait(predicate: Callable[[], bool], timeout: float, what: str) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if predicate():
            return time.monotonic() - started
        time.sleep(0.5)
    raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")


def _sql(database: str, query: str) -> object:
    import psycopg

    from bench.load import PG_SERVER

    with psycopg.connect(f"{PG_SERVER}/{database}", connect_timeout=5) as conn:
        row = conn.execute(query).fetchone()
    return row[0] if row else None


def _refreshed(database: str) -> bool:
    """Derived results computed from the current data version."""
    return bool(
        _sql(
            database,
            "SELECT EXISTS (SELECT 1 FROM audit_app_derivedstate s JOIN audit_app_dataversion v "
            "ON s.data_token = v.token)",
        )
    )


def _spawn(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def _session(base: str, password: str, username: str = "probe-finops") -> object:
    import requests

    session = requests.Session()
    form = session.get(f"{base}/accounts/login/", timeout=REQUEST_TIMEOUT_S)
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    answer = session.post(
        f"{base}/accounts/login/",
        data={
            "username": username,
            "password": password,
            "csrfmiddlewaretoken": match.group(1) if match else "",
        },
        headers={"Referer": f"{base}/accounts/login/"},
        allow_redirects=False,
        timeout=REQUEST_TIMEOUT_S,
    )
    if answer.status_code != 302:
        raise RuntimeError(f"sign-in refused: HTTP {answer.status_code}")
    return session


def _time(session: object, base: str, path: str, count: int) -> Timing:
    import requests

    def once() -> tuple[int, float, int]:
        started = time.perf_counter()
        try:
            response = session.get(f"{base}{path}", timeout=REQUEST_TIMEOUT_S)  # type: ignore[attr-defined]
        except requests.RequestException:
            return 0, (time.perf_counter() - started) * 1000, 0
        return response.status_code, (time.perf_counter() - started) * 1000, len(response.content)

    status, cold, size = once()
    warm = [once()[1] for _ in range(count)]
    return Timing(path=path, status=status, cold_ms=cold, warm_ms=warm, size_bytes=size)


def _upload(base: str, api: dict[str, str], path: Path) -> str:
    """POST the file; the upload's API URL."""
    import requests

    with path.open("rb") as stream:
        created = requests.post(
            f"{base}/api/v1/uploads/",
            headers=api,
            files={"file": (path.name, stream, "text/csv")},
            data={"kind": "token_log"},
            timeout=600,
        )
    if created.status_code != 202:
        raise RuntimeError(f"upload refused: HTTP {created.status_code} {created.text[:500]}")
    return f"{base}/api/v1/uploads/{created.json()['id']}/"


def _landed(detail: str, api: dict[str, str]) -> dict[str, object] | None:
    """The upload's API body once it succeeded or failed, else None."""
    import requests

    body = requests.get(detail, headers=api, timeout=REQUEST_TIMEOUT_S).json()
    return body if body["status"] in ("succeeded", "failed") else None


def _delete(detail: str, api: dict[str, str]) -> None:
    import requests

    deleted = requests.delete(detail, headers=api, timeout=600)
    if deleted.status_code != 204:
        raise RuntimeError(f"delete refused: HTTP {deleted.status_code}")


def _workloads(database: str) -> int:
    return int(_sql(database, "SELECT count(*) FROM audit_app_workload"))  # type: ignore[call-overload]


def _wait_refreshed(database: str) -> None:
    _wait(lambda: _refreshed(database), REFRESH_TIMEOUT_S, "a refresh")


def _hostile_probe(
    base: str, password: str, tokens: dict[str, str], database: str, env: dict[str, str]
) -> Probe:
    """The hostile phase's clients: signed-in sessions and token-carrying ones per role."""
    import requests

    def with_token(key: str) -> requests.Session:
        session = requests.Session()
        session.headers["Authorization"] = f"Token {key}"
        return session

    clients = {
        "finops": _session(base, password, "probe-finops"),
        "admin": _session(base, password, "probe-admin"),
        "no-role": _session(base, password, "probe-norole"),
        "finops-api": with_token(tokens["probe-finops"]),
        "admin-api": with_token(tokens["probe-admin"]),
        "engineer-api": with_token(tokens["probe-engineer"]),
        "bad-token": with_token("not-a-token-" + secrets.token_hex(16)),
        "anonymous": requests.Session(),
        "login": requests.Session(),
    }
    return Probe(
        base=base,
        clients=clients,
        password=password,
        sql=lambda query: _sql(database, query),
        wait_refreshed=lambda: _wait_refreshed(database),
        land_live=lambda: _manage_land_live(env),
    )


def _manage_land_live(env: dict[str, str]) -> str:
    """Land the live records waiting now (`manage.py land_live`; the probe runs no beat)."""
    from bench.load import _manage

    return _manage(env, "land_live", "--json")


def run_probe(config: Config) -> Figures:  # noqa: PLR0915 (one flat sequence of steps)
    import redis

    from bench.load import (
        Config as LoadConfig,
    )
    from bench.load import (
        _free_port,
        _manage,
        _recreate_database,
        _server_env,
        _stop,
        _wait_healthy,
    )

    PROBE_DIR.mkdir(parents=True, exist_ok=True)
    env = _server_env(LoadConfig(database=config.database))
    env.update({"DJANGO_VAR_DIR": str(PROBE_DIR), "CELERY_BROKER_URL": REDIS_BROKER})
    print(f"probe: preparing PostgreSQL database {config.database} ...", flush=True)
    _recreate_database(config.database, reuse=False)
    redis.Redis.from_url(REDIS_BROKER).flushdb()  # no task of an earlier run is left queued
    for stale in ("cache", "media", "demo"):
        subprocess.run(["rm", "-rf", str(PROBE_DIR / stale)], check=True)
    _manage(env, "migrate", "--noinput", "-v0")
    _manage(env, "collectstatic", "--noinput", "-v0")
    _manage({**env, "DJANGO_DEBUG": "true"}, "seed_demo")
    password = secrets.token_urlsafe(18)
    setup = subprocess.run(
        [sys.executable, "-c", CHILD_SETUP, password],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    fixture = json.loads(setup.stdout.strip().splitlines()[-1])
    figures = Figures(rows=config.rows, workloads_before=fixture["workloads"])
    path = PROBE_DIR / f"probe-{config.rows}.csv"
    last_day = date.fromisoformat(fixture["last_day"])
    with path.open("w") as out:
        out.writelines(csv_lines(config.rows, last_day=last_day))
    figures.size_bytes = path.stat().st_size
    print(f"probe: {path.name}, {figures.size_bytes / 1024**2:.0f} MiB", flush=True)

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    web = worker = outbound_worker = sampler = None
    worker_log = PROBE_DIR / "worker.log"
    try:
        web = _spawn(web_command(f"127.0.0.1:{port}"), env, PROBE_DIR / "gunicorn.log")
        worker = _celery_worker("celery", "probe@%h", env, worker_log)
        outbound_worker = _celery_worker(
            "outbound", "probe-outbound@%h", env, PROBE_DIR / "worker-outbound.log"
        )
        _wait_healthy(base, web)
        _wait(lambda: " ready." in worker_log.read_text(errors="replace"), 90, "the worker")
        _wait(lambda: _refreshed(config.database), REFRESH_TIMEOUT_S, "the demo's refresh")
        sampler = RssSampler(worker.pid)
        sampler.start()
        api = {"Authorization": f"Token {fixture['token']}"}

        print("probe: uploading ...", flush=True)
        started = time.monotonic()
        detail = _upload(base, api, path)
        figures.upload_s = time.monotonic() - started
        body: dict[str, object] = {}

        def landed() -> bool:
            body.update(_landed(detail, api) or {})
            return bool(body)

        figures.ingest_s = _wait(landed, INGEST_TIMEOUT_S, "the ingest")
        figures.upload_status = str(body["status"])
        figures.upload_notes = list(body.get("notes", []))  # type: ignore[call-overload]
        print(f"probe: {figures.upload_status} in {figures.ingest_s:.0f} s", flush=True)
        figures.refresh_s = _wait(
            lambda: _refreshed(config.database), REFRESH_TIMEOUT_S, "the post-ingest refresh"
        )
        print(f"probe: refreshed {figures.refresh_s:.0f} s later", flush=True)
        figures.workloads_after_ingest = _workloads(config.database)

        fills: list[str] = []
        while (missing := FILL_TO - _workloads(config.database)) > 0:
            fill = PROBE_DIR / f"fill-{len(fills)}.csv"
            with fill.open("w") as out:
                out.writelines(
                    csv_lines(min(missing, FILL_ROWS), last_day=last_day, prefix=fill.stem)
                )
            fills.append(_upload(base, api, fill))
            _wait(lambda: _landed(fills[-1], api) is not None, INGEST_TIMEOUT_S, "a fill")
            figures.fill_refresh_s = _wait(
                lambda: _refreshed(config.database), REFRESH_TIMEOUT_S, "a fill's refresh"
            )
        figures.fill_uploads = len(fills)
        figures.workloads_at_limit = _workloads(config.database)
        print(f"probe: {figures.workloads_at_limit} workloads", flush=True)

        session = _session(base, password)
        for page in PATHS:
            figures.timings.append(_time(session, base, page, config.requests_each))
            print(f"probe: {page}: {figures.timings[-1]}", flush=True)

        started = time.monotonic()
        _delete(detail, api)
        figures.delete_s = time.monotonic() - started
        figures.delete_refresh_s = _wait(
            lambda: _refreshed(config.database), REFRESH_TIMEOUT_S, "the refresh after delete"
        )
        figures.workloads_after_delete = _workloads(config.database)
        for fill_detail in fills:
            _delete(fill_detail, api)
        figures.workloads_after_cleanup = _workloads(config.database)
        probe = _hostile_probe(base, password, fixture["tokens"], config.database, env)
        figures.hostile = run_hostile(probe, last_day=fixture["last_day"])
        figures.outbound = outbound_cases(probe)  # prints each case as it goes
    finally:
        if sampler is not None:
            sampler.stopped.set()
            sampler.join()
            figures.peak_rss_kib = sampler.peak
        _stop(web)
        _stop(worker)
        _stop(outbound_worker)
    return figures


def _celery_worker(
    queue: str, hostname: str, env: dict[str, str], log: Path
) -> subprocess.Popen[bytes]:
    """A Celery worker (prefork, 2 processes) consuming ``queue``."""
    return _spawn(worker_command(queues=[queue], concurrency=2, hostname=hostname), env, log)


def main() -> int:
    sys.path.insert(0, str(REPO))
    config = Config.from_env(sys.argv[1:], dict(os.environ))
    figures = run_probe(config)
    text = markdown(figures, requests_each=config.requests_each)
    print()
    print(text)
    if config.write_doc:
        from bench.report import write_section

        page = write_section("probe", text)
        print(f"probe: wrote the probe section of {page.relative_to(REPO)}")
    return 1 if failures(figures) else 0


if __name__ == "__main__":
    sys.exit(main())
