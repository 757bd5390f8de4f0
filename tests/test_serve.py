"""`make run`'s embedded default, end to end: migrate, demo users, web server plus worker on the
embedded broker, login, overview; Ctrl-C stops both processes."""

from __future__ import annotations

import gzip
import http.cookiejar
import http.server
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import brotli
import pytest

from audit_app.management.commands import serve
from config.processes import web_command
from config.staticfiles import PLOTLY_STATIC_PATH
from tests.support.processes import REPO_ROOT, run_manage, stop_process_group

# `make run` needs no service: drop the ones CI configures for the rest of the suite.
SERVICE_VARIABLES = (
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "CELERY_RESULT_BACKEND",
    "DJANGO_SETTINGS_MODULE",
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _embedded_env(var_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SERVICE_VARIABLES}
    env.update({"DJANGO_VAR_DIR": str(var_dir), "DJANGO_DEBUG": "true", "PYTHONUNBUFFERED": "1"})
    return env


def _manage(*args: str, env: dict[str, str]) -> str:
    result = run_manage(*args, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def start_serve(
    *, port: int, env: dict[str, str], log_path: Path, prepare: bool = False
) -> subprocess.Popen[bytes]:
    """`manage.py serve` (with `--prepare`, as `make run` starts it) in its own process group,
    its output in ``log_path``."""
    command = [sys.executable, "manage.py", "serve", *(["--prepare"] if prepare else [])]
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            [*command, "--port", str(port)],
            cwd=REPO_ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _processes_matching(fragment: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if fragment in cmdline:
            pids.append(int(entry.name))
    return pids


@pytest.mark.slow
def test_embedded_serve_logs_in_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    env = _embedded_env(tmp_path)
    _manage("migrate", "--noinput", env=env)
    # What `make run` does, with a smaller demo month to keep the test quick.
    first = _manage("seed_demo", "--days", "3", "--scale", "0.005", env=env)
    match = re.search(r"username: (finops)\s+password: (\S+)", first)
    assert match, first
    assert re.search(r"Demo upload \d+ demo-litellm-spend-logs.csv: succeeded", first), first
    # A second run reuses what exists: the same credentials, no second copy of the demo data.
    second = _manage("seed_demo", "--days", "3", "--scale", "0.005", env=env)
    credentials = first.split("Demo upload", 1)[0]
    assert second == credentials + "Demo data already loaded.\n"

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = tmp_path / "serve.log"
    serve = start_serve(port=port, env=env, log_path=log_path)
    try:
        health = _wait_for_dashboard(base, serve, log_path)
        assert health == '{"database": "ok", "broker": "ok"}'
        assert "sqla+sqlite" in log_path.read_text()

        overview = _log_in(base, match.group(1), match.group(2))
        assert "<h1>Overview</h1>" in overview
        assert 'id="spend-per-day-data"' in overview
        assert "support-chat" in overview  # demo spend is on the overview
        assert _processes_matching(f"embedded-{serve.pid}@"), "worker not running"
        # Outbound work (source polls, webhooks) has a worker of its own, on its own queue.
        outbound = f"--queues outbound --concurrency 2 --hostname embedded-outbound-{serve.pid}@"
        assert _processes_matching(outbound), "outbound worker not running"
        assert _processes_matching(
            f"--queues celery --concurrency 2 --hostname embedded-{serve.pid}@"
        )

        # The worker embeds Celery beat (the alerts' schedule) with its file in the var folder.
        # Beat logs that it starts before it opens its schedule file: wait for both.
        def beat_started() -> bool:
            return "beat: Starting" in log_path.read_text() and bool(
                list(tmp_path.glob("celerybeat-schedule*"))
            )

        deadline = time.monotonic() + 30
        while not beat_started() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "beat: Starting" in log_path.read_text()
        assert list(tmp_path.glob("celerybeat-schedule*")), "no beat schedule file"

        os.killpg(serve.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        assert serve.wait(timeout=20) == 0
        time.sleep(0.5)
        assert _processes_matching(f"embedded-{serve.pid}@") == []
        assert _processes_matching(f"embedded-outbound-{serve.pid}@") == []
        with pytest.raises(OSError):
            urllib.request.urlopen(f"{base}/healthz", timeout=2)
        assert "Stopped the web server and the workers." in log_path.read_text()
    finally:
        stop_process_group(serve)


def _wait_for_health(base: str, serve: subprocess.Popen[bytes], log_path: Path) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if serve.poll() is not None:
            raise AssertionError(f"serve exited early:\n{log_path.read_text()}")
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=3) as response:
                return response.read().decode()
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"server did not answer:\n{log_path.read_text()}")


def _wait_for_dashboard(base: str, serve: subprocess.Popen[bytes], log_path: Path) -> str:
    """Wait for the "Dashboard:" line; the server must answer the moment it is printed (one
    request, no retry)."""
    deadline = time.monotonic() + 60
    while f"Dashboard: {base}/" not in log_path.read_text():
        if serve.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"no dashboard line:\n{log_path.read_text()}")
        time.sleep(0.05)
    with urllib.request.urlopen(f"{base}/healthz", timeout=10) as response:
        return response.read().decode()


def _log_in(base: str, username: str, password: str) -> str:
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    login_page = opener.open(f"{base}/accounts/login/", timeout=10).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login_page)
    assert token
    data = urllib.parse.urlencode(
        {"username": username, "password": password, "csrfmiddlewaretoken": token.group(1)}
    ).encode()
    request = urllib.request.Request(
        f"{base}/accounts/login/", data=data, headers={"Referer": f"{base}/accounts/login/"}
    )
    with opener.open(request, timeout=10) as response:
        assert response.url == f"{base}/"
        return response.read().decode()


def _get(url: str, accept_encoding: str) -> tuple[dict[str, str], bytes]:
    request = urllib.request.Request(url, headers={"Accept-Encoding": accept_encoding})
    with urllib.request.urlopen(request, timeout=10) as response:
        return dict(response.headers.items()), response.read()


@pytest.mark.slow
def test_make_run_serves_hashed_static_files_compressed_and_cached_for_a_year(
    tmp_path: Path,
) -> None:
    """`make run` = `serve --prepare` with DJANGO_STATIC_MANIFEST: plotly.js under a hashed name,
    brotli or gzip as asked, a year's max-age; the second start collects nothing."""
    env = {**_embedded_env(tmp_path), "DJANGO_STATIC_MANIFEST": "true"}
    _manage("migrate", "--noinput", env=env)
    _manage("seed_demo", "--days", "3", "--scale", "0.005", env=env)  # --prepare's is then a no-op
    plain = REPO_ROOT / "static" / PLOTLY_STATIC_PATH
    for start in ("first", "second"):
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        log_path = tmp_path / f"serve-{start}.log"
        serve = start_serve(port=port, env=env, log_path=log_path, prepare=True)
        try:
            _wait_for_health(base, serve, log_path)
            log_text = log_path.read_text()
            assert "Demo data already loaded." in log_text
            if start == "first":
                assert "Static files collected into" in log_text
                login = urllib.request.urlopen(f"{base}/accounts/login/", timeout=10).read()
                css = re.search(rb'href="/static/css/app\.([0-9a-f]{12})\.css"', login)
                assert css, login[:2000]
                overview = _log_in(base, "finops", "finops-demo")
                src = re.search(
                    r'src="(/static/vendor/plotly/plotly-audit\.min\.[0-9a-f]{12}\.js)"',
                    overview,
                )
                assert src, "plotly.js is not under a hashed name"
                url = base + src.group(1)
                for encoding, expected_encoding in (("br", "br"), ("gzip", "gzip"), ("", None)):
                    headers, body = _get(url, encoding)
                    assert headers["Cache-Control"] == "max-age=315360000, public, immutable"
                    assert headers.get("Content-Encoding") == expected_encoding
                    assert headers["Vary"] == "Accept-Encoding"
                    if expected_encoding is None:
                        assert body == plain.read_bytes()
                    else:
                        # Compressed: gzip about 35 % of the 1.2 MB file, brotli about 31 %.
                        assert len(body) < plain.stat().st_size * 0.37
                assert brotli.decompress(_get(url, "br")[1]) == plain.read_bytes()
                assert gzip.decompress(_get(url, "gzip")[1]) == plain.read_bytes()
                # Only hashed names are kept, so no page can cache a stale plain name.
                with pytest.raises(urllib.error.HTTPError, match="404"):
                    _get(f"{base}/static/css/app.css", "")
            else:
                assert "Static files already collected." in log_text
        finally:
            stop_process_group(serve)


class _Running:
    """A child that has not exited (what `wait_until_answering` polls beside the URL)."""

    returncode = None

    def __init__(self) -> None:
        self.exit_code: int | None = None

    def poll(self) -> int | None:
        return self.exit_code


def _serve_later(port: int, delay_s: float, status: int, served: list[float]) -> threading.Thread:
    """An HTTP server on `port` from `delay_s` on, answering `status` to one request."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            served.append(time.monotonic())
            self.send_response(status)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    def run() -> None:
        time.sleep(delay_s)
        with http.server.HTTPServer(("127.0.0.1", port), Handler) as server:
            server.handle_request()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("status", [200, 503])
def test_the_dashboard_is_announced_once_the_server_answers(status: int) -> None:
    # Nothing listens for the first 0.6 s; then any HTTP answer counts, a 503 (broker down) too.
    port = _free_port()
    served: list[float] = []
    thread = _serve_later(port, 0.6, status, served)
    started = time.monotonic()
    assert serve.wait_until_answering(f"http://127.0.0.1:{port}/", [_Running()], lambda: False)
    assert time.monotonic() - started >= 0.6
    assert len(served) == 1  # it returned on the server's answer
    thread.join(timeout=5)


def test_no_dashboard_when_a_child_exits_or_a_stop_is_asked_first() -> None:
    url = f"http://127.0.0.1:{_free_port()}/"  # nothing ever listens there
    child = _Running()
    child.exit_code = 1
    assert serve.wait_until_answering(url, [_Running(), child], lambda: False) is False
    assert serve.wait_until_answering(url, [_Running()], lambda: True) is False


def test_the_dashboard_url_reaches_a_wildcard_address_on_loopback() -> None:
    assert serve.dashboard_url("0.0.0.0", 8000) == "http://127.0.0.1:8000/"
    assert serve.dashboard_url("::", 8001) == "http://[::1]:8001/"
    assert serve.dashboard_url("192.0.2.1", 80) == "http://192.0.2.1:80/"


@pytest.mark.parametrize("debug", [True, False])
def test_the_web_server_is_runserver_under_debug_and_gunicorn_otherwise(
    debug: bool, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.DEBUG = debug
    started: list[list[str]] = []
    forked: list[tuple[str, int]] = []
    monkeypatch.setattr(serve.subprocess, "Popen", lambda command, **_: started.append(command))
    monkeypatch.setattr(serve, "_fork_web_server", lambda host, port: forked.append((host, port)))
    options = {"concurrency": 2, "outbound_concurrency": 1}
    serve.Command()._start_children("127.0.0.1", 8123, options)
    workers = [command for command in started if "celery" in command]
    assert [command[command.index("--queues") + 1] for command in workers] == [
        "celery",
        "outbound",
    ]
    if debug:
        assert forked == [("127.0.0.1", 8123)] and len(started) == 2
    else:
        assert forked == []
        assert web_command("127.0.0.1:8123") in started
