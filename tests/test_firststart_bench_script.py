"""`bench/firststart.py`'s own pieces: a new user's environment, the steps read off `make run`'s
output, the timing of a start against a stand-in server, and the lines it prints (the benchmark
itself clones and installs under `make bench`, never in the suite)."""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path

import pytest

from bench import firststart
from bench.firstpage import free_port
from bench.firststart import Figures, Start, lines, new_user_env, step_times, time_start


def test_a_new_users_shell_points_at_no_service_and_has_empty_caches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "DATABASE_URL": "postgres://x/y",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
        "DJANGO_VAR_DIR": "/elsewhere",
        "DJANGO_DEBUG": "false",
        "REQUIRE_SERVICES": "1",
        "VIRTUAL_ENV": "/some/venv",
        "HOME_LIKE": "kept",
    }.items():
        monkeypatch.setenv(name, value)
    env = new_user_env(tmp_path, warm_cache=False)
    assert env["HOME_LIKE"] == "kept"
    for gone in ("DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_VAR_DIR", "DJANGO_DEBUG"):
        assert gone not in env
    assert "REQUIRE_SERVICES" not in env and "VIRTUAL_ENV" not in env
    assert env["UV_CACHE_DIR"] == str(tmp_path / "uv-cache")
    assert env["PIP_CACHE_DIR"] == str(tmp_path / "pip-cache")
    monkeypatch.setenv("UV_CACHE_DIR", "/machine/cache")
    assert new_user_env(tmp_path, warm_cache=True)["UV_CACHE_DIR"] == "/machine/cache"


FIRST_START_OUTPUT = [
    (0.05, "Requirement already satisfied: pip\n"),
    (31.5, "Installed with uv.\n"),
    (31.6, "DJANGO_DEBUG=true ... manage.py serve --prepare --host 127.0.0.1 --port 8000\n"),
    (33.0, "Migrations applied.\n"),
    (33.4, "Demo accounts (DEBUG only; passwords are public):\n"),
    (41.2, "Demo gate 1: pass - 3 of 3 checks passed\n"),
    (43.7, "Static files collected into var/staticfiles (hashed, gzip and brotli) in 2 s.\n"),
    (44.0, "Broker: sqlalchemy+sqlite:///var/broker.sqlite3\n"),
]


def test_each_step_runs_from_the_previous_steps_line_to_its_own() -> None:
    steps = dict(step_times(FIRST_START_OUTPUT, healthy_at=46.0))
    assert list(steps) == [
        "install (venv, uv, packages)",
        "migrations",
        "demo data",
        "static files",
        firststart.UNTIL_HEALTHY,
    ]
    assert steps["install (venv, uv, packages)"] == pytest.approx(31.5)
    assert steps["migrations"] == pytest.approx(33.0 - 31.5)
    assert steps["demo data"] == pytest.approx(41.2 - 33.0)
    assert steps["static files"] == pytest.approx(43.7 - 41.2)
    assert steps[firststart.UNTIL_HEALTHY] == pytest.approx(46.0 - 43.7)
    assert sum(steps.values()) == pytest.approx(46.0)


def test_a_second_start_counts_no_install_and_its_skipped_steps_in_the_next() -> None:
    printed = [
        (0.02, "DJANGO_DEBUG=true ... manage.py serve --prepare\n"),
        (1.1, "Migrations applied.\n"),
        (1.6, "Demo data already loaded.\n"),
        (1.7, "Static files already collected.\n"),
    ]
    assert step_times(printed, healthy_at=3.2) == (
        ("migrations", pytest.approx(1.1)),
        ("demo data", pytest.approx(0.5)),
        ("static files", pytest.approx(0.1)),
        (firststart.UNTIL_HEALTHY, pytest.approx(1.5)),
    )
    # Without the static-files line (DJANGO_STATIC_MANIFEST=false) its time is the server's.
    assert step_times(printed[:3], healthy_at=3.2)[-1] == (
        firststart.UNTIL_HEALTHY,
        pytest.approx(1.6),
    )


# A stand-in for `make run`: prints its steps' lines, then serves /healthz until SIGINT.
STAND_IN = textwrap.dedent(
    """
    import http.server, signal, sys, time
    port = int(sys.argv[1])
    time.sleep(0.4)
    print("Installed with uv.", flush=True)
    time.sleep(0.3)
    print("Migrations applied.", flush=True)

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/healthz" else 404)
            self.end_headers()

        def log_message(self, *args):
            pass

    def stop(signum, frame):
        print("Stopped the web server and the worker.", flush=True)
        sys.exit(0)

    signal.signal(signal.SIGINT, stop)
    server = http.server.HTTPServer(("127.0.0.1", port), Health)
    time.sleep(0.3)
    server.serve_forever()
    """
)


def test_a_start_is_timed_until_healthz_answers_and_then_stopped_as_ctrl_c_does(
    tmp_path: Path,
) -> None:
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    port = free_port()
    log = tmp_path / "start.log"
    started = time.monotonic()
    start = time_start(
        [sys.executable, str(script), str(port)], cwd=tmp_path, env={}, port=port, log=log
    )
    # The stand-in sleeps 0.4 + 0.3 + 0.3 s before it can answer.
    assert 1.0 <= start.seconds <= time.monotonic() - started
    # Each step is timed from the line before it as the reader saw the lines: a busy machine
    # reads one late and the next at once, so only the whole start has a lower bound.
    steps = dict(start.steps)
    assert list(steps) == ["install (venv, uv, packages)", "migrations", firststart.UNTIL_HEALTHY]
    assert all(seconds > 0 for seconds in steps.values())
    assert sum(steps.values()) == pytest.approx(start.seconds)
    # Stopped with SIGINT (its handler ran), and everything it printed is in the log.
    assert log.read_text().splitlines() == [
        "Installed with uv.",
        "Migrations applied.",
        "Stopped the web server and the worker.",
    ]


def test_a_start_that_exits_before_serving_is_an_error_naming_the_log(tmp_path: Path) -> None:
    script = tmp_path / "fails.py"
    script.write_text(
        "print('uv failed; installing with pip (a few minutes).')\nraise SystemExit(2)\n"
    )
    log = tmp_path / "start.log"
    with pytest.raises(RuntimeError, match=rf"exited with 2 before serving; see {log}"):
        time_start([sys.executable, str(script)], cwd=tmp_path, env={}, port=free_port(), log=log)
    assert "uv failed" in log.read_text()


def _figures(first_s: float, second_s: float) -> Figures:
    first = step_times(FIRST_START_OUTPUT, healthy_at=first_s)
    second = ((firststart.UNTIL_HEALTHY, second_s),)
    return Figures(
        commit="abc1234",
        clone_s=0.42,
        first=Start(seconds=first_s, steps=first),
        second=Start(seconds=second_s, steps=second),
        warm_cache=False,
    )


def test_each_start_is_printed_beside_its_target_and_its_steps() -> None:
    printed = list(lines(_figures(46.0, 4.25)))
    assert printed[0] == (
        "firststart: `make run` on a fresh clone (abc1234, empty package caches) answered "
        "/healthz after 46.0 s (target <= 60 s, met); second start 4.2 s (target <= 10 s, met)"
    )
    assert printed[1] == (
        "firststart: first start: install (venv, uv, packages) 31.5 s, migrations 1.5 s, "
        "demo data 8.2 s, static files 2.5 s, web server and worker start, until /healthz 2.3 s"
    )
    assert printed[2] == (
        "firststart: second start: web server and worker start, until /healthz 4.2 s"
    )
    assert printed[3] == "firststart: beside them: `git clone` of the repository 0.4 s"


def test_a_target_is_met_at_exactly_its_figure_and_not_beyond() -> None:
    assert "after 60.0 s (target <= 60 s, met)" in next(lines(_figures(60.0, 10.0)))
    assert "second start 10.0 s (target <= 10 s, met)" in next(lines(_figures(60.0, 10.0)))
    printed = next(lines(_figures(60.5, 10.5)))
    assert "(target <= 60 s, NOT met)" in printed
    assert "(target <= 10 s, NOT met)" in printed


def test_the_docs_section_holds_both_starts_and_their_steps() -> None:
    text = firststart.section(_figures(46.0, 4.25))
    assert text.startswith("## First start\n")
    assert "commit abc1234" in text and "empty uv and pip caches" in text
    assert "| first start (fresh clone, install included) | 46.0 | <= 60 | met | install" in text
    assert "| second start | 4.2 | <= 10 | met | web server and worker start" in text
