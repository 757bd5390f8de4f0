"""`make bench` (firstpage): how long the overview takes to appear in Chromium, first and again.

What it does, with a timeout on every wait:

1. starts the dashboard as `make run` does (`manage.py serve --prepare`: SQLite, DEBUG on,
   static files hashed and compressed, the demo seeded) in a scratch var directory,
   ``var/bench-firstpage``, kept between runs so only the first run pays for the demo seed;
2. logs in as the demo finops user in one browser context and hands its session cookie to a
   fresh context, so the timed load starts with an empty HTTP cache;
3. first load: from `page.goto("/")` until every chart on the overview is drawn by plotly.js
   (each ``[data-figure]`` element carries ``data-drawn="true"``); repeat load: the same in the
   same context, its cache warm (hashed static files are cached for a year, so nothing but the
   page itself is fetched again). Each is the median of FIRSTPAGE_BENCH_REPEATS (3) fresh
   contexts;
4. the yardstick, in the same run: the time to fetch `/healthz` (the server's floor for any
   request) and the overview's HTML alone, each the median of 5 fetches.

Targets: first load <= 1 s, repeat load <= 300 ms on localhost. The figures are also written
to docs/performance.md (section ``firstpage``).
"""

from __future__ import annotations

import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any

from bench import report

REPO = Path(__file__).resolve().parent.parent
BENCH_DIR = REPO / "var" / "bench-firstpage"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
USERNAME, PASSWORD = "finops", "finops-demo"
TARGET_FIRST_MS = 1000.0
TARGET_REPEAT_MS = 300.0
START_TIMEOUT_S = 600
LOAD_TIMEOUT_MS = 60_000
# The variables that point elsewhere than `make run`'s embedded default.
SERVICE_VARIABLES = ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")
ALL_CHARTS_DRAWN = """() => {
  const charts = document.querySelectorAll('[data-figure]');
  return charts.length > 0 && [...charts].every(c => c.getAttribute('data-drawn') === 'true');
}"""
PLOTLY_TRANSFER = """() => performance.getEntriesByType('resource')
  .filter(e => e.name.includes('/vendor/plotly/'))
  .map(e => e.transferSize)"""


@dataclass(frozen=True, kw_only=True)
class Figures:
    first_load_ms: float
    repeat_load_ms: float
    healthz_ms: float
    overview_html_ms: float
    plotly_first_bytes: int
    plotly_repeat_bytes: int
    charts: int
    start_s: float


def lines(figures: Figures) -> Iterator[str]:
    """The printed figures, each beside its target and the yardstick of the same run."""
    yield (
        f"firstpage: overview first load {figures.first_load_ms:,.0f} ms "
        f"(target <= {TARGET_FIRST_MS:,.0f} ms, "
        f"{_verdict(figures.first_load_ms, TARGET_FIRST_MS)}), "
        f"repeat load {figures.repeat_load_ms:,.0f} ms "
        f"(target <= {TARGET_REPEAT_MS:,.0f} ms, "
        f"{_verdict(figures.repeat_load_ms, TARGET_REPEAT_MS)}); {figures.charts} charts drawn"
    )
    yield (
        f"firstpage: yardstick: /healthz {figures.healthz_ms:,.1f} ms, the overview's HTML alone "
        f"{figures.overview_html_ms:,.0f} ms; first load = "
        f"{_ratio(figures.first_load_ms, figures.overview_html_ms)} the HTML, repeat = "
        f"{_ratio(figures.repeat_load_ms, figures.overview_html_ms)}"
    )
    yield (
        f"firstpage: plotly.js over the wire {figures.plotly_first_bytes / 1e6:,.2f} MB on the "
        f"first load, {figures.plotly_repeat_bytes:,} bytes on the repeat (0 = from the cache); "
        f"server start (serve --prepare) {figures.start_s:,.1f} s"
    )


def section(figures: Figures) -> str:
    """The docs/performance.md section: what was measured, and the table of figures."""
    rows = [
        (
            "overview, first load (empty cache)",
            f"{figures.first_load_ms:,.0f}",
            f"<= {TARGET_FIRST_MS:,.0f}",
            _verdict(figures.first_load_ms, TARGET_FIRST_MS),
        ),
        (
            "overview, repeat load (cache warm)",
            f"{figures.repeat_load_ms:,.0f}",
            f"<= {TARGET_REPEAT_MS:,.0f}",
            _verdict(figures.repeat_load_ms, TARGET_REPEAT_MS),
        ),
        ("yardstick: the overview's HTML alone", f"{figures.overview_html_ms:,.0f}", "", ""),
        ("yardstick: `/healthz`", f"{figures.healthz_ms:,.1f}", "", ""),
    ]
    return (
        "## First page\n\n"
        "Written by `make bench` (`bench/firstpage.py`). The dashboard started as `make run` "
        "starts it (`manage.py serve --prepare`: runserver, SQLite, DEBUG on, static files "
        "hashed, gzip and brotli, a year's Cache-Control), Chromium headless on the same "
        "machine (2 cores), logged in as the demo finops user. A load is timed from navigation "
        f"to every chart drawn by plotly.js ({figures.charts} on the overview); each figure is "
        "the median of fresh browser contexts. plotly.js travelled as "
        f"{figures.plotly_first_bytes / 1e6:,.2f} MB on the first load and "
        f"{figures.plotly_repeat_bytes:,} bytes on the repeat.\n\n"
        + report.markdown_table(("load", "ms", "target ms", "target"), rows)
    )


def _verdict(measured: float, target: float) -> str:
    return "met" if measured <= target else "NOT met"


def _ratio(measured: float, yardstick: float) -> str:
    return f"{measured / yardstick:,.1f}x" if yardstick > 0 else "n/a"


def server_env(var_dir: Path) -> dict[str, str]:
    """`make run`'s environment in a scratch var directory, with no service configured."""
    env = {key: value for key, value in os.environ.items() if key not in SERVICE_VARIABLES}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.update(
        {
            "DJANGO_VAR_DIR": str(var_dir),
            "DJANGO_DEBUG": "true",
            "DJANGO_STATIC_MANIFEST": "true",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _start(port: int) -> subprocess.Popen[bytes]:
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    with open(BENCH_DIR.with_suffix(".log"), "wb") as log:
        return subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--prepare", "--port", str(port)],
            cwd=REPO,
            env=server_env(BENCH_DIR),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _stop(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def _wait_healthy(base: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"serve exited with {server.returncode}; see {BENCH_DIR}.log")
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"serve did not answer /healthz within {START_TIMEOUT_S} s")


def _median_fetch_ms(opener: urllib.request.OpenerDirector, url: str, times: int = 5) -> float:
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        with opener.open(url, timeout=30) as response:
            response.read()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def _logged_in_opener(base: str) -> urllib.request.OpenerDirector:
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
    page = opener.open(f"{base}/accounts/login/", timeout=30).read().decode()
    token = page.split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]
    data = urllib.parse.urlencode(
        {"username": USERNAME, "password": PASSWORD, "csrfmiddlewaretoken": token}
    ).encode()
    request = urllib.request.Request(
        f"{base}/accounts/login/", data=data, headers={"Referer": f"{base}/accounts/login/"}
    )
    opener.open(request, timeout=30).read()
    return opener


def _timed_load(page: Any, url: str) -> float:
    started = time.perf_counter()
    page.goto(url, wait_until="commit", timeout=LOAD_TIMEOUT_MS)
    page.wait_for_function(ALL_CHARTS_DRAWN, timeout=LOAD_TIMEOUT_MS)
    return (time.perf_counter() - started) * 1000


def _browser_loads(base: str, repeats: int) -> tuple[list[float], list[float], list[int], int]:
    from playwright.sync_api import sync_playwright

    firsts, repeated, transfers, charts = [], [], [0, 0], 0
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            login = browser.new_context(base_url=base)
            page = login.new_page()
            page.goto("/accounts/login/")
            page.fill("input[name=username]", USERNAME)
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_url(f"{base}/")
            state = login.storage_state()
            login.close()
            for _ in range(repeats):
                context = browser.new_context(base_url=base, storage_state=state)
                page = context.new_page()
                firsts.append(_timed_load(page, f"{base}/"))
                transfers[0] = sum(page.evaluate(PLOTLY_TRANSFER))
                repeated.append(_timed_load(page, f"{base}/"))
                transfers[1] = sum(page.evaluate(PLOTLY_TRANSFER))
                charts = page.locator("[data-figure]").count()
                context.close()
        finally:
            browser.close()
    return firsts, repeated, transfers, charts


def measure() -> Figures:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    server = _start(port)
    try:
        _wait_healthy(base, server)
        start_s = time.monotonic() - started
        opener = _logged_in_opener(base)
        healthz_ms = _median_fetch_ms(opener, f"{base}/healthz")
        html_ms = _median_fetch_ms(opener, f"{base}/")
        repeats = int(os.environ.get("FIRSTPAGE_BENCH_REPEATS", "3"))
        firsts, repeated, transfers, charts = _browser_loads(base, repeats)
    finally:
        _stop(server)
    return Figures(
        first_load_ms=statistics.median(firsts),
        repeat_load_ms=statistics.median(repeated),
        healthz_ms=healthz_ms,
        overview_html_ms=html_ms,
        plotly_first_bytes=transfers[0],
        plotly_repeat_bytes=transfers[1],
        charts=charts,
        start_s=start_s,
    )


def run() -> Iterator[str]:
    if not os.access(CHROMIUM, os.X_OK):
        yield f"firstpage: skipped: no Chromium at {CHROMIUM} (apt-get install chromium)"
        return
    figures = measure()
    yield from lines(figures)
    report.write_section("firstpage", section(figures))
