"""Gate speed over curves: two 8-point vLLM sweeps with 100,000 per-request records a point.

The 16 result files (`vllm bench serve` JSON with per-request `ttfts`, `latencies`,
`input_lens`, `output_lens`) are written to a temporary directory. A fresh Python (DEBUG off)
with a fresh database (`audit_bench_gate` on the local PostgreSQL, created for the run and
dropped after it, else SQLite in the temporary directory; BENCH_GATE_DATABASE_URL for another,
empty, database) imports each side as one run through `benchmark_run_import` (timed apart, and
printed), then times what a user waits for: `manage.py gate --baseline ID --candidate ID
--slo-ttft-ms 1000 --slo-tpot-ms 60 --json` end to end (`call_command`, its JSON captured), the
first call and the median of three (target: 3 s), and a CI job's one command with both sweeps
as files (`gate --baseline FILE … --candidate FILE …`: both imported, then gated).
BENCH_GATE_REQUESTS sets another number of records a point.

Yardstick, measured in the same process: `json.loads` of the 16 files, the least a gate
recomputing its figures from the raw files would pay. The gate reads each point's stored metrics
instead, so the ratio gate / yardstick says how much of one pass over the raw data it costs.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.ingest import run_child

REPO = Path(__file__).resolve().parent.parent
PG_ADMIN_URL = "postgresql://postgres:postgres@127.0.0.1:5432/postgres"
PG_DATABASE = "audit_bench_gate"
REQUESTS = 100_000
CONCURRENCIES = (1, 2, 4, 8, 16, 32, 64, 128)
TARGET_S = 3.0
SLO = ("--slo-ttft-ms", "1000", "--slo-tpot-ms", "60")
META = {
    "model_hash": "abc",
    "quantization": "fp8",
    "batch_size": "256",
    "num_gpus": "8",
    "gpu_type": "H100",
    "usd_per_gpu_hour": "4.00",
    "dataset": "sharegpt",
    "input_len": "1024",
    "output_len": "256",
    "gpu_utilization_pct": "80",
}

CHILD = r"""
import io, json, statistics, sys, time
from contextlib import ExitStack
from pathlib import Path
import django
django.setup()
from django.core.management import call_command
from benchmarks_app.runs import benchmark_run_import

directory, sides = Path(sys.argv[1]), json.loads(sys.argv[2])
slo = json.loads(sys.argv[3])
runs, imports = {}, {}
for side, names in sides.items():
    t0 = time.perf_counter()
    with ExitStack() as opened:
        files = [(opened.enter_context((directory / n).open("rb")), n) for n in names]
        runs[side] = benchmark_run_import(files=files, name=f"bench {side}")
    imports[side] = time.perf_counter() - t0

raw = [(directory / n).read_bytes() for names in sides.values() for n in names]
t0 = time.perf_counter()
for data in raw:
    json.loads(data)
yardstick = time.perf_counter() - t0

def gate():
    out = io.StringIO()
    t0 = time.perf_counter()
    try:
        call_command("gate", "--baseline", str(runs["baseline"].pk), "--candidate",
                     str(runs["candidate"].pk), *slo, "--json", stdout=out)
    except SystemExit:  # the command exits 1 on anything but a pass; the JSON says which
        pass
    seconds = time.perf_counter() - t0
    return seconds, json.loads(out.getvalue())

times, result = [], None
for _ in range(3):
    seconds, result = gate()
    times.append(seconds)

# A CI job's wait: one `gate` with both sweeps as files (imported, then gated).
t0 = time.perf_counter()
try:
    call_command("gate", "--baseline", *[str(directory / n) for n in sides["baseline"]],
                 "--candidate", *[str(directory / n) for n in sides["candidate"]], *slo,
                 "--json", stdout=io.StringIO())
except SystemExit:
    pass
from_files = time.perf_counter() - t0
print(json.dumps({
    "imports": imports, "yardstick": yardstick, "gate_first": times[0], "from_files": from_files,
    "gate_median": statistics.median(times), "verdict": result["verdict"],
    "summary": result["summary"], "points": len(result["points"]),
    "runs": [runs["baseline"].pk, runs["candidate"].pk],
    "operating": {s: (p or {}).get("load") for s, p in result["operating_point"].items()},
}))
"""


def vllm_file(*, seed: int, speed: float, concurrency: int, requests: int = REQUESTS) -> bytes:
    """One point: TTFT × (1 + c / 32) and TPOT × (1 + c / 64) grow with the concurrency c,
    `speed` divides every latency; c requests in flight make the duration."""
    rng = np.random.default_rng([seed, concurrency])
    outputs = rng.integers(16, 512, requests)
    ttft = (rng.lognormal(-2.0, 0.3, requests) * (1 + concurrency / 32) / speed).round(6)  # s
    tpot = rng.lognormal(-3.7, 0.2, requests) * (1 + concurrency / 64) / speed
    latency = (ttft + tpot * (outputs - 1)).round(6)
    duration = float(latency.sum() / concurrency)
    body = {
        "backend": "vllm",
        "model_id": "meta-llama/Llama-3.3-70B-Instruct",
        "date": "20261129-120000",
        "duration": duration,
        "completed": requests,
        "failed": 0,
        "total_input_tokens": requests * 1024,
        "total_output_tokens": int(outputs.sum()),
        "request_throughput": requests / duration,
        "output_throughput": float(outputs.sum()) / duration,
        "request_rate": "inf",
        "max_concurrency": concurrency,
        "mean_ttft_ms": float(ttft.mean() * 1000),
        "median_ttft_ms": float(np.median(ttft) * 1000),
        "ttfts": ttft.tolist(),
        "latencies": latency.tolist(),
        "output_lens": outputs.tolist(),
        "input_lens": [1024] * requests,
        "itls": [],
        **META,
    }
    return json.dumps(body).encode()


def _postgres(action: str) -> bool:
    """Drop (and with ``create``, create) the benchmark's database on the local PostgreSQL;
    False when PostgreSQL does not answer."""
    try:
        import psycopg

        with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {PG_DATABASE} WITH (FORCE)")
            if action == "create":
                conn.execute(f"CREATE DATABASE {PG_DATABASE}")
        return True
    except Exception:  # no PostgreSQL here: SQLite instead, said in the first line
        return False


def _database_url(directory: Path) -> str:
    configured = os.environ.get("BENCH_GATE_DATABASE_URL")
    if configured:
        return configured
    if _postgres("create"):
        return f"postgres://postgres:postgres@127.0.0.1:5432/{PG_DATABASE}"
    return f"sqlite:///{directory / 'gate.sqlite3'}"


def _env(directory: Path, database_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "DJANGO_DEBUG": "false",
            "DJANGO_SECRET_KEY": "bench-only-" + "x" * 50,
            "DATABASE_URL": database_url,
            "DJANGO_VAR_DIR": str(directory / "var"),
            "DJANGO_LOG_LEVEL": "WARNING",
            "PYTHONPATH": str(REPO),
        }
    )
    return env


def write_sweeps(directory: Path, *, requests: int) -> tuple[dict[str, list[str]], float]:
    """The two sweeps (the candidate 10 % faster at every point); names per side, MiB a file."""
    sides: dict[str, list[str]] = {"baseline": [], "candidate": []}
    sizes = []
    for side, seed, speed in (("baseline", 1, 1.0), ("candidate", 2, 1.1)):
        for concurrency in CONCURRENCIES:
            path = directory / f"{side}-c{concurrency}.json"
            data = vllm_file(seed=seed, speed=speed, concurrency=concurrency, requests=requests)
            path.write_bytes(data)
            sides[side].append(path.name)
            sizes.append(path.stat().st_size)
    return sides, statistics.mean(sizes) / 2**20


def _load_text(load: dict[str, Any] | None) -> str:
    if not load:
        return "none"
    return ", ".join(f"{key.replace('_', ' ')} {value}" for key, value in load.items())


def run() -> list[str]:
    requests = int(os.environ.get("BENCH_GATE_REQUESTS") or REQUESTS)
    with tempfile.TemporaryDirectory(prefix="bench-gate-") as temporary:
        directory = Path(temporary)
        started = time.perf_counter()
        sides, mib = write_sweeps(directory, requests=requests)
        written = time.perf_counter() - started
        database_url = _database_url(directory)
        env = _env(directory, database_url)
        try:
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
                cwd=REPO,
                env=env,
                check=True,
            )
            args = (str(directory), json.dumps(sides), json.dumps(SLO))
            result: Any = run_child(CHILD, *args, env=env)
        finally:
            if PG_DATABASE in database_url and "BENCH_GATE_DATABASE_URL" not in os.environ:
                _postgres("drop")
    backend = "SQLite" if database_url.startswith("sqlite") else "PostgreSQL"
    gate_s = float(result["gate_first"])
    baseline_id, candidate_id = result["runs"]
    return [
        f"gate: 2 curves x {len(CONCURRENCIES)} points x {requests:,} per-request records "
        f"({2 * len(CONCURRENCIES)} vLLM files of {mib:.1f} MiB, written in {written:.1f} s), "
        f"{backend}",
        f"gate:   import (store, convert, metrics): baseline {result['imports']['baseline']:.1f} "
        f"s, candidate {result['imports']['candidate']:.1f} s",
        f"gate:   `gate --baseline {baseline_id} --candidate {candidate_id} {' '.join(SLO)} "
        f"--json` end to end: {gate_s:.3f} s (median of 3: {result['gate_median']:.3f} s); "
        f"target <= {TARGET_S:g} s: {'met' if gate_s <= TARGET_S else 'NOT met'}",
        f"gate:   `gate --baseline FILE x{len(CONCURRENCIES)} --candidate FILE "
        f"x{len(CONCURRENCIES)} …` (import both sweeps, then gate) end to end: "
        f"{result['from_files']:.1f} s ({result['from_files'] / result['yardstick']:.1f}x the "
        "yardstick)",
        f"gate:   yardstick, json.loads of the {2 * len(CONCURRENCIES)} files: "
        f"{result['yardstick']:.2f} s; gate / yardstick = {gate_s / result['yardstick']:.3f}x",
        f"gate:   verdict {result['verdict']} over {result['points']} matched points; operating "
        f"points {_load_text(result['operating']['baseline'])} -> "
        f"{_load_text(result['operating']['candidate'])}",
    ]


if __name__ == "__main__":
    for line in run():
        print(line)
