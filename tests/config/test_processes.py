"""The command lines of the web server and a Celery worker (config.processes), and gunicorn
reading the recommended settings (config.gunicorn_conf) from them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from config.processes import web_command, web_setup, worker_command
from tests.support.processes import REPO_ROOT, child_env

SIZING = ("WEB_CONCURRENCY", "WEB_THREADS")


def _gunicorn_settings(command: list[str], env: dict[str, str]) -> dict[str, str]:
    """What gunicorn would run with, as its --print-config lists it (no server starts), with
    the sizing variables only as `env` sets them."""
    environment = {k: v for k, v in child_env(env).items() if k not in SIZING or k in env}
    done = subprocess.run(
        [*command, "--print-config"],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return dict(re.findall(r"^(\w+)\s+= (.*)$", done.stdout, flags=re.MULTILINE))


def test_gunicorn_runs_the_recommended_settings_and_flags_override_them() -> None:
    settings = _gunicorn_settings(web_command("127.0.0.1:8123"), {})
    assert (settings["worker_class"], settings["workers"], settings["threads"]) == (
        "gthread",
        "2",
        "4",
    )
    assert settings["bind"] == "['127.0.0.1:8123']"
    assert settings["timeout"] == "120"
    # The environment sizes it; a flag wins over both.
    sized = _gunicorn_settings(
        web_command("0.0.0.0:9000", "--workers", "7"), {"WEB_CONCURRENCY": "3", "WEB_THREADS": "5"}
    )
    assert (sized["workers"], sized["threads"]) == ("7", "5")


def test_the_setup_is_named_as_configured() -> None:
    assert web_setup() == "2 workers x 4 threads (gthread)"


def test_a_worker_command_line() -> None:
    plain = worker_command(concurrency=1, hostname="one@%h")
    assert plain == [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config",
        "worker",
        "--loglevel",
        "INFO",
        "--concurrency",
        "1",
        "--hostname",
        "one@%h",
        "--without-gossip",
        "--without-mingle",
    ]
    full = worker_command(
        concurrency=2,
        hostname="two@%h",
        queues=["celery", "outbound"],
        loglevel="WARNING",
        beat_schedule=Path("/var/beat"),
    )
    assert full[6:] == [
        "--loglevel",
        "WARNING",
        "--queues",
        "celery,outbound",
        "--concurrency",
        "2",
        "--hostname",
        "two@%h",
        "--without-gossip",
        "--without-mingle",
        "--beat",
        "--schedule",
        "/var/beat",
    ]


def test_a_worker_command_line_names_a_pool_other_than_celerys_default() -> None:
    solo = worker_command(concurrency=1, hostname="one@%h", pool="solo")
    assert solo[solo.index("--pool") + 1] == "solo"
    assert "--pool" not in worker_command(concurrency=1, hostname="one@%h", pool="prefork")
