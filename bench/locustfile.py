"""Locust tasks for `make load` (bench/load.py starts locust with this file; not run alone).

Two kinds of user, each on its own account (read from the file named by LOAD_FIXTURE, written
by bench/load.py): page users sign in through the login form like a browser and walk the
pages; API users call /api/v1/ with `Authorization: Token <key>`. Every answer that is not 2xx
is a failure, a redirect (to the login page or anywhere else) included: redirects are never
followed. Failure messages start with "HTTP <status>" so bench/load.py can count 5xx.

The server runs with DJANGO_SERVER_TIMING on: each answer's ``Server-Timing`` header (CPU ms,
database ms, query count) is summed per endpoint and written, when locust quits, to the JSON
file named by LOAD_TIMING (bench/load.py reports the means). Beside them go each endpoint's
response times of the requests sent LOAD_SKIP_S seconds (10) or more after the test started,
the ones the p95 target counts: the first seconds hold every user's start at once (the sign-ins
hash their passwords with PBKDF2, a few hundred ms of CPU each).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import time
from collections import defaultdict
from typing import Any

from locust import FastHttpUser, between, events, task

with open(os.environ["LOAD_FIXTURE"], encoding="utf-8") as _fixture_file:
    FIXTURE: dict[str, Any] = json.load(_fixture_file)

ACCOUNTS: list[dict[str, str]] = FIXTURE["accounts"]
PASSWORD: str = FIXTURE["password"]
_next_account = itertools.count()

GROUP_BY = ("workload", "team", "model", "provider")
STACKS = ("provider", "model", "team", "workload")
_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


_SERVER_TIMING = re.compile(r"(\w+);dur=([0-9.]+)(?:;desc=\"(\d+) queries\")?")
# (method, name) -> [answers with the header, CPU ms, database ms, queries]
TIMING: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0])


# (method, name) -> [(start time, response ms)] of every request; when the test started.
RESPONSES: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
STARTED = {"at": time.time()}
SKIP_S = float(os.environ.get("LOAD_SKIP_S", "10"))


@events.test_start.add_listener
def _test_started(**_kwargs: Any) -> None:
    STARTED["at"] = time.time()


@events.request.add_listener
def _record_response(
    request_type: str, name: str, response_time: float, start_time: float, **_kwargs: Any
) -> None:
    RESPONSES[(request_type, name)].append((start_time, response_time))


def record_timing(method: str, name: str, header: str | None) -> None:
    """Add one answer's ``Server-Timing`` figures to its endpoint's sums."""
    if not header:
        return
    sums = TIMING[(method, name)]
    sums[0] += 1
    for metric, duration, queries in _SERVER_TIMING.findall(header):
        if metric == "cpu":
            sums[1] += float(duration)
        elif metric == "db":
            sums[2] += float(duration)
            sums[3] += int(queries or 0)


@events.quitting.add_listener
def _write_timing(**_kwargs: Any) -> None:
    path = os.environ.get("LOAD_TIMING")
    if not path:
        return
    counted_from = STARTED["at"] + SKIP_S
    rows = []
    for method, name in sorted(set(TIMING) | set(RESPONSES)):
        s = TIMING[(method, name)]
        responses = RESPONSES.get((method, name), [])
        rows.append(
            {
                "method": method,
                "name": name,
                "answers": int(s[0]),
                "cpu_ms": s[1],
                "db_ms": s[2],
                "queries": int(s[3]),
                "counted_ms": [ms for start, ms in responses if start >= counted_from],
            }
        )
    with open(path, "w", encoding="utf-8") as out:
        json.dump(rows, out)


def _pick(key: str) -> int | None:
    ids = FIXTURE.get(key) or []
    return random.choice(ids) if ids else None


class AuditUser(FastHttpUser):
    abstract = True
    wait_time = between(0.5, 2)

    def on_start(self) -> None:
        # One account per simulated user, so per-user throttles and sessions are real.
        self.account = ACCOUNTS[next(_next_account) % len(ACCOUNTS)]
        self.is_admin = self.account["role"] == "admin"

    def get(self, path: str, name: str | None = None, **headers: str) -> None:
        with self.client.request(
            "GET",
            path,
            name=name or path,
            headers=headers or None,
            allow_redirects=False,
            catch_response=True,
        ) as response:
            status = response.status_code or 0
            record_timing("GET", name or path, response.headers.get("Server-Timing"))
            if 200 <= status < 300:
                response.success()
            elif 300 <= status < 400:
                response.failure(f"HTTP {status} -> {response.headers.get('Location', '?')}")
            else:
                response.failure(f"HTTP {status}")


class PageUser(AuditUser):
    """A signed-in person in a browser (HTML pages and the CSV export)."""

    weight = 3

    def on_start(self) -> None:
        super().on_start()
        form = self.client.get("/accounts/login/", name="login form")
        header = form.headers.get("Server-Timing") if form.headers else None
        record_timing("GET", "login form", header if isinstance(header, str) else None)
        match = _CSRF.search(form.text or "")
        token = match.group(1) if match else ""
        with self.client.request(
            "POST",
            "/accounts/login/",
            name="login (POST)",
            data={
                "username": self.account["username"],
                "password": PASSWORD,
                "csrfmiddlewaretoken": token,
            },
            headers={"Referer": f"{self.host}/accounts/login/"},
            allow_redirects=False,
            catch_response=True,
        ) as response:
            location = response.headers.get("Location", "")
            record_timing("POST", "login (POST)", response.headers.get("Server-Timing"))
            if response.status_code == 302 and "/accounts/login/" not in location:
                response.success()
            else:
                response.failure(f"HTTP {response.status_code} sign-in refused ({location})")

    @task(6)
    def overview(self) -> None:
        self.get("/")

    @task(2)
    def overview_stacked(self) -> None:
        self.get(f"/?stack={random.choice(STACKS)}", name="/?stack=[dimension]")

    @task(4)
    def workloads(self) -> None:
        self.get("/workloads/")

    @task(4)
    def workload_detail(self) -> None:
        workload = _pick("workload_ids")
        if workload is not None:
            self.get(f"/workloads/{workload}/", name="/workloads/[id]/")

    @task(2)
    def spend_csv(self) -> None:
        self.get(f"/spend.csv?group_by={random.choice(GROUP_BY)}", name="/spend.csv?group_by=[g]")

    @task(2)
    def reconciliation(self) -> None:
        self.get("/reconciliation/")

    @task(3)
    def recommendations(self) -> None:
        self.get("/recommendations/")

    @task(2)
    def recommendation_detail(self) -> None:
        recommendation = _pick("recommendation_ids")
        if recommendation is not None:
            self.get(f"/recommendations/{recommendation}/", name="/recommendations/[id]/")

    @task(2)
    def benchmarks(self) -> None:
        self.get("/benchmarks/")

    @task(1)
    def benchmark_run(self) -> None:
        run = _pick("run_ids")
        if run is not None:
            self.get(f"/benchmarks/runs/{run}/", name="/benchmarks/runs/[id]/")

    @task(1)
    def gate(self) -> None:
        gate = _pick("gate_ids")
        if gate is not None:
            self.get(f"/benchmarks/gates/{gate}/", name="/benchmarks/gates/[id]/")

    @task(2)
    def uploads(self) -> None:
        self.get("/uploads/")

    @task(1)
    def upload_detail(self) -> None:
        upload = _pick("upload_ids")
        if upload is not None:
            self.get(f"/uploads/{upload}/", name="/uploads/[id]/")

    @task(1)
    def audit_trail(self) -> None:
        # Administrators only (the page is for staff); others look at the overview instead.
        if self.is_admin:
            self.get("/audit/")
        else:
            self.get("/")


class ApiUser(AuditUser):
    """A script or notebook reading the API with its own token."""

    weight = 2

    def on_start(self) -> None:
        super().on_start()
        self.auth = f"Token {self.account['token']}"

    def api(self, path: str, name: str | None = None) -> None:
        self.get(f"/api/v1/{path}", name=f"/api/v1/{name or path}", Authorization=self.auth)

    @task(4)
    def spend(self) -> None:
        self.api(f"spend/?group_by={random.choice(GROUP_BY)}", "spend/?group_by=[g]")

    @task(3)
    def workloads(self) -> None:
        self.api("workloads/")

    @task(1)
    def workloads_page(self) -> None:
        # Lists come 100 at a time: a script reading them all asks for the later pages too.
        pages = -(-len(FIXTURE.get("workload_ids") or [None]) // 100)
        offset = 100 * random.randrange(pages)
        self.api(f"workloads/?limit=100&offset={offset}", "workloads/?limit=100&offset=[n]")

    @task(3)
    def workload_detail(self) -> None:
        workload = _pick("workload_ids")
        if workload is not None:
            self.api(f"workloads/{workload}/", "workloads/[id]/")

    @task(2)
    def recommendations(self) -> None:
        self.api("recommendations/")

    @task(1)
    def recommendation_detail(self) -> None:
        recommendation = _pick("recommendation_ids")
        if recommendation is not None:
            self.api(f"recommendations/{recommendation}/", "recommendations/[id]/")

    @task(2)
    def uploads(self) -> None:
        self.api("uploads/")

    @task(1)
    def upload_detail(self) -> None:
        upload = _pick("upload_ids")
        if upload is not None:
            self.api(f"uploads/{upload}/", "uploads/[id]/")

    @task(2)
    def benchmark_runs(self) -> None:
        self.api("benchmark-runs/")

    @task(1)
    def benchmark_run(self) -> None:
        run = _pick("run_ids")
        if run is not None:
            self.api(f"benchmark-runs/{run}/", "benchmark-runs/[id]/")

    @task(1)
    def gate(self) -> None:
        gate = _pick("gate_ids")
        if gate is not None:
            self.api(f"gates/{gate}/", "gates/[id]/")

    @task(1)
    def reconciliation(self) -> None:
        self.api("reconciliation/")

    @task(1)
    def pools(self) -> None:
        self.api("pools/")

    @task(1)
    def me(self) -> None:
        self.api("me/")

    @task(1)
    def audit_events(self) -> None:
        # Administrators only; others ask who they are instead.
        self.api("audit-events/" if self.is_admin else "me/")
