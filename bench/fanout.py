"""Ingest fan-out across Celery workers: one worker against two, on a 3M-row LiteLLM CSV.

Real workers (`celery -A config worker --concurrency 1`) on a real broker (Redis database 5 on
127.0.0.1, or BENCH_FANOUT_BROKER_URL) and PostgreSQL (`audit_bench`, as bench/ingest.py). Each
run stores the same file as a fresh upload (the previous one is deleted first: the same bytes
are refused twice), sends `audit_app.ingest_upload` and times from the send until the upload is
`succeeded` (the database is polled every 50 ms). Runs:

- single pass, 1 worker (INGEST_FANOUT_PARTS=0): today's path, for reference;
- fan-out, 1 worker: the parts run one after another;
- fan-out, 2 workers: two worker processes, each `--concurrency 1`;
- the single pass and the two-worker fan-out again with each worker confined to one core, and
  the ceiling of that: two confined workers each ingesting a file of its own (seed 2) at once.

The target (issue): 2 workers give >= 1.6x the rows/s of a single worker. Each figure is the best
of BENCH_FANOUT_REPEAT (default 3) interleaved runs. BENCH_FANOUT_ROWS sets the size (default
3,000,000), BENCH_FANOUT_PARTS the number of parts (default 8).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from bench import ingest as bench_ingest
from bench.report import machine_scaling, write_section
from config.processes import worker_command

REPO = Path(__file__).resolve().parent.parent
BENCH_DIR = REPO / "var" / "bench"
DEFAULT_ROWS = 3_000_000
DEFAULT_PARTS = 8
DEFAULT_REPEAT = 3
TARGET = 1.6
BROKER_URL = "redis://127.0.0.1:6379/5"

CHILD_RUN = r"""
import json, os, sys, time
import django
django.setup()
from audit_app.models import Upload
from audit_app.ingestion.uploads import upload_create
from config.celery import app
uploads = []
for path in sys.argv[1:]:
    name = os.path.basename(path)
    for old in Upload.objects.filter(original_name=name):
        old.file.delete(save=False)
        old.delete()
    with open(path, "rb") as source:
        uploads.append(upload_create(source=source, original_name=name, enqueue=False))
# The copies just written are still being flushed to disk; let that finish first so the
# kernel's writeback does not compete with the workers for the timed part.
os.sync()
t0 = time.perf_counter()
for upload in uploads:
    app.send_task("audit_app.ingest_upload", args=[upload.pk])
pending, done = {u.pk for u in uploads}, {}
while pending:
    for current in Upload.objects.filter(pk__in=pending):
        if current.status in (Upload.Status.SUCCEEDED, Upload.Status.FAILED):
            done[current.pk] = current
            pending.discard(current.pk)
    if time.perf_counter() - t0 > 1800:
        raise SystemExit("timed out")
    if pending:
        time.sleep(0.05)
elapsed = time.perf_counter() - t0  # until every upload is done
results = [{"status": c.status, "error": c.error, "rows": c.rows_read,
            "accepted": c.rows_accepted, "requests": c.requests,
            "input_tokens": c.input_tokens, "output_tokens": c.output_tokens,
            "cost": str(c.logged_cost_usd)} for c in (done[u.pk] for u in uploads)]
print(json.dumps({**results[0], "seconds": elapsed, "uploads": results}))
for current in done.values():
    current.file.delete(save=False)
    current.delete()
"""

CHILD_PING = r"""
import sys
import django
django.setup()
from config.celery import app
workers = int(sys.argv[1])
replies = []
for _ in range(60):
    replies = app.control.ping(timeout=1.0) or []
    if len(replies) >= workers:
        break
print(len(replies))
"""


def _env(database_url: str, broker_url: str, *, parts: int) -> dict[str, str]:
    env = bench_ingest._child_env(database_url)
    env.update(
        {
            "CELERY_BROKER_URL": broker_url,
            "CELERY_RESULT_BACKEND": broker_url,
            "CELERY_TASK_ALWAYS_EAGER": "false",
            "INGEST_FANOUT_PARTS": str(parts),
            "INGEST_FANOUT_MIN_BYTES": str(64 * 1024**2),
            "UPLOAD_REQUEUE_INTERVAL_SECONDS": "0",  # no sweeper thread in the timed workers
        }
    )
    return env


def _flush(broker_url: str) -> None:
    import redis

    redis.Redis.from_url(broker_url).flushdb()


@contextmanager
def _workers(count: int, env: dict[str, str], *, pin: bool = False) -> Iterator[list[int]]:
    """`count` worker processes, each `celery -A config worker --concurrency 1`; yields their
    process ids. With ``pin``, worker n runs on CPU n only (`taskset`): one core per worker, as
    if each were a one-core machine."""
    logs = BENCH_DIR / "fanout-logs"
    logs.mkdir(parents=True, exist_ok=True)
    processes = []
    try:
        for n in range(count):
            log = open(logs / f"worker-{n}.log", "w")  # noqa: SIM115
            affinity = ["taskset", "-c", str(n % (os.cpu_count() or 1))] if pin else []
            processes.append(
                subprocess.Popen(
                    [*affinity, *worker_command(concurrency=1, hostname=f"bench{n}@%h")],
                    cwd=REPO,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
        ready = bench_ingest.run_child(CHILD_PING, str(count), env=env)
        if ready < count:
            raise RuntimeError(f"fanout: only {ready} of {count} workers answered a ping")
        yield [process.pid for process in processes]
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _cpu_seconds(pids: list[int]) -> float:
    """CPU time (user + system) used so far by these processes and their pool children."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    wanted = set(pids)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, parent = int(entry.name), int(fields[1])
        if pid in wanted or parent in wanted:
            total += int(fields[11]) + int(fields[12])
    return total / tick


def _migrate(env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=REPO, env=env, check=True
    )


def _measure(
    paths: Path | list[Path],
    *,
    workers: int,
    env: dict[str, str],
    broker_url: str,
    pin: bool = False,
) -> dict:
    """Time ingesting `paths` (sent together) on fresh workers, until every one is done; the
    totals are the first upload's."""
    paths = paths if isinstance(paths, list) else [paths]
    _migrate(env)  # other benchmarks share the database
    _flush(broker_url)
    with ExitStack() as stack:
        pids = stack.enter_context(_workers(workers, env, pin=pin))
        cpu_before = _cpu_seconds(pids)
        result = bench_ingest.run_child(CHILD_RUN, *map(str, paths), env=env)
        result["cpu_seconds"] = _cpu_seconds(pids) - cpu_before
    for upload in result["uploads"]:
        if upload["status"] != "succeeded":
            raise RuntimeError(f"fanout: an upload did not land: {upload}")
    return result


def _generic_runs(
    *, rows: int, single_env: dict[str, str], fanout_env: dict[str, str], broker_url: str
) -> dict | None:
    """The same comparison on a generic CSV, which the row-by-row reader parses on one thread:
    single pass with one worker against fan-out with two. BENCH_FANOUT_GENERIC_ROWS=0 skips."""
    if rows <= 0:
        return None
    from bench.faults import _generic_csv

    path = BENCH_DIR / f"generic-{rows}.csv"
    if not path.exists():
        _generic_csv(path, rows=rows, seed=11)
    single = _measure(path, workers=1, env=single_env, broker_url=broker_url)
    two = _measure(path, workers=2, env=fanout_env, broker_url=broker_url)
    keys = ("rows", "accepted", "requests", "input_tokens", "output_tokens", "cost")
    if any(single[k] != two[k] for k in keys):
        raise RuntimeError(f"fanout: generic CSV landed different totals: {single} {two}")
    return {
        "rows": rows,
        "mib": path.stat().st_size / 2**20,
        "single": float(single["seconds"]),
        "two": float(two["seconds"]),
        "ratio": float(single["seconds"]) / float(two["seconds"]),
        "cores_single": _cores(single),
        "cores_two": _cores(two),
    }


def _generic_text(generic: dict | None) -> str:
    if not generic:
        return ""
    return (
        f"\nFor comparison, a generic CSV of {generic['rows']:,} rows ({generic['mib']:.0f} MiB), "
        "which the row-by-row reader parses on one thread: one worker reading it in one pass "
        f"took {generic['single']:.2f} s ({generic['cores_single']:.2f} cores busy), two workers "
        f"with fan-out {generic['two']:.2f} s ({generic['cores_two']:.2f} cores busy), "
        f"**{generic['ratio']:.2f}x**, with the same totals. Fan-out pays most where parsing is "
        "single-threaded; the LiteLLM figures above remain the measure of the target.\n"
    )


def _cores(result: dict) -> float:
    """Worker CPU time over wall time: how many cores the workers kept busy on average."""
    return float(result["cpu_seconds"]) / float(result["seconds"])


def run() -> list[str]:
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    rows = int(os.environ.get("BENCH_FANOUT_ROWS", "").replace("_", "") or DEFAULT_ROWS)
    parts = int(os.environ.get("BENCH_FANOUT_PARTS", "") or DEFAULT_PARTS)
    broker_url = os.environ.get("BENCH_FANOUT_BROKER_URL", BROKER_URL)
    path = bench_ingest._export(rows)
    database_url = bench_ingest.bench_database_url()
    base_env = _env(database_url, broker_url, parts=parts)
    size_mib = path.stat().st_size / 2**20
    repeat = max(int(os.environ.get("BENCH_FANOUT_REPEAT", "") or DEFAULT_REPEAT), 1)
    single_env = _env(database_url, broker_url, parts=0)
    both = [path, bench_ingest._export(rows, seed=2)]
    ceiling_label = "2 files at once, single pass each, 2 workers on 1 core each"
    runs = [
        ("single pass, 1 worker", 1, single_env, False, [path]),
        (f"fan-out ({parts} parts), 1 worker", 1, base_env, False, [path]),
        (f"fan-out ({parts} parts), 2 workers", 2, base_env, False, [path]),
        ("single pass, 1 worker on 1 core", 1, single_env, True, [path]),
        (f"fan-out ({parts} parts), 2 workers on 1 core each", 2, base_env, True, [path]),
        # What two confined workers reach with no fan-out at all (each reads its own file):
        # the ceiling of this machine for this work, shared cache and memory bus included.
        (ceiling_label, 2, single_env, True, both),
    ]
    load_before = os.getloadavg()[0]
    scaling_before = machine_scaling()
    best: dict[str, dict] = {}
    for _ in range(repeat):  # interleaved, best of `repeat`: other load on the machine varies
        for label, workers, env, pin, paths in runs:
            result = _measure(paths, workers=workers, env=env, broker_url=broker_url, pin=pin)
            result["files"] = len(paths)
            if label not in best or result["seconds"] < best[label]["seconds"]:
                best[label] = result
    generic = _generic_runs(
        rows=int(os.environ.get("BENCH_FANOUT_GENERIC_ROWS", "").replace("_", "") or rows),
        single_env=single_env,
        fanout_env=base_env,
        broker_url=broker_url,
    )
    load_after = os.getloadavg()[0]
    scaling_after = machine_scaling()
    results = [(label, workers, best[label]) for label, workers, _, _, _ in runs]
    reference = results[0][2]
    for label, _, result in results:
        same = all(
            result[k] == reference[k]
            for k in ("rows", "accepted", "requests", "input_tokens", "output_tokens", "cost")
        )
        if not same:
            raise RuntimeError(f"fanout: {label} landed different totals: {result} {reference}")
    backend = "PostgreSQL" if database_url.startswith("postgres") else "SQLite"
    rate = {label: rows * r["files"] / float(r["seconds"]) for label, _, r in results}
    one, two = results[1][0], results[2][0]
    ratio = rate[two] / rate[one]
    ratio_single = rate[two] / rate[results[0][0]]
    ratio_pinned = rate[results[4][0]] / rate[results[3][0]]
    ceiling_pinned = rate[ceiling_label] / rate[results[3][0]]
    lines = [
        f"fanout ({backend}, Redis broker, LiteLLM CSV of {rows:,} rows, {size_mib:.0f} MiB, "
        f"{os.cpu_count()} CPUs, best of {repeat}, load average {load_before:.1f} before / "
        f"{load_after:.1f} after):",
    ]
    for label, _, result in results:
        lines.append(
            f"  {label:<32} {float(result['seconds']):>7.2f} s {rate[label]:>10,.0f} rows/s "
            f"{_cores(result):>5.2f} cores busy"
        )
    lines.append(
        f"  pure CPU work in 2 processes vs 1 on this machine: {scaling_before:.2f}x before, "
        f"{scaling_after:.2f}x after (2.00x on two idle cores)"
    )
    lines.append(
        f"  2 workers / 1 worker (fan-out) = {ratio:.2f}x; 2 workers / single pass = "
        f"{ratio_single:.2f}x; totals identical in every run"
    )
    if generic:
        lines.append(
            f"  generic CSV ({generic['rows']:,} rows, {generic['mib']:.0f} MiB, row-by-row "
            f"reader): single pass, 1 worker {generic['single']:.2f} s; fan-out, 2 workers "
            f"{generic['two']:.2f} s = {generic['ratio']:.2f}x"
        )
    lines.append(
        f"  scale-out, one core per worker: 2 workers / 1 worker (single pass) = "
        f"{ratio_pinned:.2f}x (target >= {TARGET}x: "
        f"{'met' if ratio_pinned >= TARGET else 'NOT met'}); two files at once, no fan-out: "
        f"{ceiling_pinned:.2f}x (the machine's ceiling for this work)"
    )
    table = "\n".join(
        [
            "| run | seconds | rows/s | worker CPU s | cores busy |",
            "|---|---|---|---|---|",
            *(
                f"| {label} | {float(r['seconds']):.2f} | {rate[label]:,.0f} | "
                f"{float(r['cpu_seconds']):.1f} | {_cores(r):.2f} |"
                for label, _, r in results
            ),
        ]
    )
    verdict = "met" if ratio_pinned >= TARGET else "not met in this run"
    one_cores = _cores(results[1][2])
    ceiling = (os.cpu_count() or 1) / max(one_cores, 1.0)
    write_section(
        "fanout",
        f"""## Ingestion fan-out

Written by `make bench` (`bench/fanout.py`). A LiteLLM CSV export of {rows:,} rows
({size_mib:.0f} MiB) is ingested through real Celery workers (`celery -A config worker
--concurrency 1`, one or two such processes) on a Redis broker and {backend}, on a machine with
{os.cpu_count()} CPUs (load average {load_before:.1f} before the runs, {load_after:.1f} after;
each figure is the best of {repeat} interleaved runs). Time runs from sending
`audit_app.ingest_upload` until the upload is `succeeded`; with fan-out the file is cut into
{parts} parts (`INGEST_FANOUT_PARTS`), each an `audit_app.ingest_part` task, and the last part
to finish merges and lands them. Every run lands the same rows, tokens and cost. "Worker CPU s"
is the CPU time the worker processes used during the run and "cores busy" that time over the
wall time: on a shared machine, a figure well under the number of workers means other work
held the cores. As a yardstick for the machine itself, two processes of pure CPU work (a Python
loop) finished {scaling_before:.2f}x as fast as one before the runs and {scaling_after:.2f}x
after (2.00x on two idle cores): no two-worker figure can beat that ceiling.

{table}

**Scale-out, one core per worker** (the last three rows: each worker process confined to its own
CPU with `taskset`, as if each were a one-core machine; PostgreSQL is not confined): two
workers ingest **{ratio_pinned:.2f}x** the rows per second of one worker reading the file in
one pass; the target is at least {TARGET}x ({verdict}). The last row is the ceiling of this
machine for this work: two confined workers each reading a file of its own in one pass, with
nothing to share or merge, reach {ceiling_pinned:.2f}x together (two busy cores share the cache
and memory bus, and on a virtual machine the host). Fan-out reaches
{ratio_pinned / ceiling_pinned:.0%} of that.

Unconfined, two workers ingest {ratio:.2f}x the rate of one worker with the same fan-out and
{ratio_single:.2f}x the single-pass rate. That is the ceiling of a 2-core machine rather than of
the design: one worker alone already keeps {one_cores:.2f} cores busy (pyarrow parses CSV blocks
on several threads while the next block is read ahead), so a second worker can add at most
{ceiling:.2f}x before the serial steps (planning the parts, and landing the merged
parts in one transaction) take their share. Adding worker machines adds cores, which is what
the confined runs model.
{_generic_text(generic)}""",
    )
    return lines


if __name__ == "__main__":
    for line in run():
        print(line)
