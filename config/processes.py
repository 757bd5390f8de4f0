"""The command lines of the project's long-running processes: the web server (gunicorn with
`config.gunicorn_conf`) and a Celery worker. `manage.py serve` and the benches start theirs from
here, so each is written once."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

GUNICORN_CONFIG = "python:config.gunicorn_conf"


def web_setup() -> str:
    """The recommended web server's processes, as reports name them."""
    from config import gunicorn_conf

    if gunicorn_conf.worker_class == "sync":
        return f"{gunicorn_conf.workers} sync workers"
    return (
        f"{gunicorn_conf.workers} workers x {gunicorn_conf.threads} threads "
        f"({gunicorn_conf.worker_class})"
    )


def web_command(bind: str, *flags: str) -> list[str]:
    """gunicorn serving `config.wsgi` on `bind` (``host:port``) with the recommended settings;
    `flags` (gunicorn's own) override them."""
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "--config",
        GUNICORN_CONFIG,
        "config.wsgi",
        "--bind",
        bind,
        *flags,
    ]


def worker_command(
    *,
    hostname: str,
    concurrency: int,
    queues: Sequence[str] = (),
    loglevel: str = "INFO",
    beat_schedule: Path | None = None,
    pool: str = "prefork",
) -> list[str]:
    """A Celery worker (`pool`, prefork by default, of `concurrency` processes) consuming
    `queues` (every queue the settings declare when empty); with `beat_schedule`, Celery beat
    runs inside it, keeping its schedule in that file. Gossip and mingle are off: no worker
    needs the others' state."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config",
        "worker",
        "--loglevel",
        loglevel,
        *(["--queues", ",".join(queues)] if queues else []),
        # Celery's default pool is prefork; another one is named.
        *(["--pool", pool] if pool != "prefork" else []),
        "--concurrency",
        str(concurrency),
        "--hostname",
        hostname,
        "--without-gossip",
        "--without-mingle",
        *(["--beat", "--schedule", str(beat_schedule)] if beat_schedule is not None else []),
    ]
