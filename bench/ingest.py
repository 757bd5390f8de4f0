"""Ingest speed and memory on LiteLLM exports of 100k, 1M and 3M rows, on PostgreSQL.

Each measurement runs in a fresh process so its peak RSS (VmHWM) is its own. The bare parse is
`pyarrow.csv.read_csv` of the same file, timed in the same run, so the ratio survives a noisy
machine. Set BENCH_ROWS=100000,1000000 to choose sizes and BENCH_DATABASE_URL for the database
(default: a database `audit_bench` on the local PostgreSQL, else SQLite).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BENCH_DIR = REPO / "var" / "bench"
DEFAULT_ROWS = (100_000, 1_000_000, 3_000_000)
PG_ADMIN_URL = "postgresql://postgres:postgres@127.0.0.1:5432/postgres"
PG_BENCH_URL = "postgres://postgres:postgres@127.0.0.1:5432/audit_bench"

CHILD_INGEST = r"""
import json, os, resource, sys, time
import django
django.setup()
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import Upload
path = sys.argv[1]
Upload.objects.filter(original_name=os.path.basename(path)).delete()
t0 = time.perf_counter()
with open(path, "rb") as source:
    upload = upload_create(source=source, original_name=os.path.basename(path), enqueue=False)
t1 = time.perf_counter()
upload = upload_ingest(upload_id=upload.pk, refresh=False)
t2 = time.perf_counter()
from audit_app.ingestion.ingest import after_ingest
after_ingest()
t3 = time.perf_counter()
peak_kib = int([l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1])
print(json.dumps({"status": upload.status, "error": upload.error, "rows": upload.rows_read,
                  "accepted": upload.rows_accepted, "store_s": t1 - t0, "ingest_s": t2 - t1,
                  "classify_s": t3 - t2,
                  "peak_mib": peak_kib / 1024}))
Upload.objects.filter(pk=upload.pk).delete()
"""

CHILD_BARE = r"""
import json, sys, time
import pyarrow.csv
t0 = time.perf_counter()
table = pyarrow.csv.read_csv(sys.argv[1])
print(json.dumps({"rows": table.num_rows, "seconds": time.perf_counter() - t0}))
"""


def _database_url() -> str:
    configured = os.environ.get("BENCH_DATABASE_URL")
    if configured:
        return configured
    try:
        import psycopg

        with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = 'audit_bench'")
            if exists.fetchone() is None:
                conn.execute("CREATE DATABASE audit_bench")
        return PG_BENCH_URL
    except Exception as exc:  # no PostgreSQL here: still measure, and say so
        print(f"ingest: PostgreSQL unavailable ({type(exc).__name__}); using SQLite")
        return f"sqlite:///{BENCH_DIR / 'bench.sqlite3'}"


def _child_env(database_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "DJANGO_DEBUG": "false",
            "DJANGO_SECRET_KEY": "bench-only",
            "DATABASE_URL": database_url,
            "DJANGO_VAR_DIR": str(BENCH_DIR),
            "DJANGO_LOG_LEVEL": "WARNING",
        }
    )
    return env


def run_child(code: str, *args: str, env: dict[str, str], timeout: float | None = None) -> Any:
    """Run `code` in a fresh Python (the benchmarks' children) and return the JSON of the last
    line it printed; its stderr's end if it fails."""
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
    if result.returncode != 0:
        raise RuntimeError(result.stderr[-4000:])
    return json.loads(result.stdout.strip().splitlines()[-1])


def _export(rows: int, *, seed: int = 1) -> Path:
    """The LiteLLM export of `rows` rows (written once); another seed gives other rows, for a
    second file the upload path does not refuse as a duplicate."""
    from audit_app.demo.writers import bench_litellm_csv

    path = BENCH_DIR / (f"litellm-{rows}.csv" if seed == 1 else f"litellm-{rows}-seed{seed}.csv")
    if not path.exists():
        started = time.perf_counter()
        bench_litellm_csv(path, rows=rows, seed=seed)
        print(
            f"ingest: wrote {path.name} ({path.stat().st_size / 2**20:.0f} MiB) "
            f"in {time.perf_counter() - started:.1f} s"
        )
    return path


def run() -> list[str]:
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    sizes = [int(n) for n in os.environ.get("BENCH_ROWS", "").split(",") if n] or DEFAULT_ROWS
    database_url = _database_url()
    env = _child_env(database_url)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=REPO, env=env, check=True
    )
    backend = "PostgreSQL" if database_url.startswith("postgres") else "SQLite"
    lines = [
        f"ingest ({backend}, LiteLLM CSV):",
        f"  {'rows':>9} {'MiB':>6} {'bare parse s':>12} {'ingest s':>9} {'rows/s':>9} "
        f"{'x bare':>7} {'peak RSS MiB':>12} {'store s':>8} {'classify s':>10}",
    ]
    peaks: dict[int, float] = {}
    for rows in sizes:
        path = _export(rows)
        bare = run_child(CHILD_BARE, str(path), env=env)
        result = run_child(CHILD_INGEST, str(path), env=env)
        if result["status"] != "succeeded" or result["accepted"] != rows:
            raise RuntimeError(f"ingest of {path.name} did not land whole: {result}")
        ingest_s = float(result["ingest_s"])
        peaks[rows] = float(result["peak_mib"])
        lines.append(
            f"  {rows:>9,} {path.stat().st_size / 2**20:>6.0f} {bare['seconds']:>12.2f} "
            f"{ingest_s:>9.2f} {rows / ingest_s:>9,.0f} {ingest_s / float(bare['seconds']):>7.2f} "
            f"{peaks[rows]:>12.0f} {float(result['store_s']):>8.2f} "
            f"{float(result['classify_s']):>10.2f}"
        )
    if 1_000_000 in peaks and 3_000_000 in peaks:
        lines.append(
            f"  peak RSS 3M / 1M = {peaks[3_000_000] / peaks[1_000_000]:.2f} "
            "(target <= 1.3; targets: >= 250k rows/s at 1M, <= 3x bare, < 1 GiB)"
        )
    return lines
