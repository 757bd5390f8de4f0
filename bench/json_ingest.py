"""Token-log parse speed: LiteLLM JSONL, JSON array and CSV, and OTel JSONL, through the
columnar paths.

Writes the same 1M requests (BENCH_JSON_ROWS) as a LiteLLM JSONL export, the same records as
one LiteLLM JSON array document (what LiteLLM's spend-log API returns), an OTel JSONL export
(500 spans per document) and a LiteLLM CSV, then, each in a fresh process:
- parse + map rows/s of `litellm.read` / `otel.read` (the columnar paths) over the whole file,
  the median of BENCH_JSON_REPEAT runs (default 3, each in a fresh process: on this shared
  2-core machine one run moves by 10-30% from the next), beside the row path (`read_rows`,
  the yardstick) on the first 100k rows and a bare
  `pyarrow.json.read_json` of the file with the same schema (the floor of the columnar path;
  the array and the CSV have the row path alone as their yardstick);
- unless BENCH_JSON_PARSE_ONLY is set (the columnar reads alone, no yardsticks),
  `manage.py ingest` end to end (store, parse, land, refresh) of the LiteLLM JSONL, the JSON
  array and the CSV, on PostgreSQL (BENCH_DATABASE_URL, default a database `audit_bench_json`
  on the local server, else SQLite).
Target: >= 200k rows/s parse + map for both formats. The machine's load average is printed:
rows/s on a shared 2-core machine moves with it, CPU seconds less so.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from bench.ingest import CHILD_FORGET, bench_database_url, run_child, run_ingest_command

if TYPE_CHECKING:
    import pandas as pd

REPO = Path(__file__).resolve().parent.parent
BENCH_DIR = REPO / "var" / "bench"
DEFAULT_ROWS = 1_000_000
ROW_PATH_ROWS = 100_000
OTEL_SPANS_PER_DOCUMENT = 500
TARGET_ROWS_PER_SECOND = 200_000
DEFAULT_REPEAT = 3

CHILD_PARSE = r"""
import json, sys, time
import pyarrow as pa, pyarrow.json as pa_json
from audit_app.ingestion.token_logs import litellm, otel, json_columnar, otel_columnar
kind, path, subset = sys.argv[1:4]
if kind == "litellm":
    module, schema = litellm, json_columnar.SCHEMA
else:
    module, schema = otel, otel_columnar.SCHEMA
def timed(read, file):
    wall, cpu = time.perf_counter(), time.process_time()
    rows = in_frame = 0
    with open(file, "rb") as stream:
        for chunk in read(stream, chunk_rows=20_000):
            rows += chunk.rows_read
            in_frame += 0 if chunk.frame is None else len(chunk.frame)
    return rows, in_frame, time.perf_counter() - wall, time.process_time() - cpu
rows, in_frame, seconds, cpu = timed(module.read, path)
row_rows = row_seconds = bare = None
if subset != "-":  # "-": the columnar read alone (a repeat)
    row_rows, _, row_seconds, _ = timed(module.read_rows, subset)
if subset != "-" and path.endswith(".jsonl"):  # the schemas are for JSON lines
    wall = time.perf_counter()
    pa_json.read_json(path, parse_options=pa_json.ParseOptions(
        explicit_schema=schema, unexpected_field_behavior="ignore"))
    bare = time.perf_counter() - wall
print(json.dumps({"rows": rows, "in_frame": in_frame, "seconds": seconds, "cpu": cpu,
                  "row_rows": row_rows, "row_seconds": row_seconds, "bare_seconds": bare}))
"""


def _child_env(database_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": "bench-only",
        "DATABASE_URL": database_url,
        "DJANGO_VAR_DIR": str(BENCH_DIR),
        "DJANGO_LOG_LEVEL": "WARNING",
    }


def _write_once(path: Path, write: Callable[[Path], object]) -> Path:
    if not path.exists():
        started = time.perf_counter()
        part = path.with_name(path.name + ".part")
        write(part)
        part.rename(path)
        print(
            f"json_ingest: wrote {path.name} ({path.stat().st_size / 2**20:.0f} MiB) "
            f"in {time.perf_counter() - started:.1f} s"
        )
    return path


def _write_days(path: Path, rows: int, write_day: Callable[[pd.DataFrame, Path], None]) -> None:
    """The bench requests, a day at a time, appended to `path` by `write_day(frame, part)`."""
    from audit_app.demo.writers import bench_frames

    day_file = path.with_name(path.name + ".day")
    with path.open("wb") as out:
        for frame in bench_frames(rows=rows, seed=1):
            write_day(frame, day_file)
            out.write(day_file.read_bytes())
    day_file.unlink()


def _head_lines(source: Path, target: Path, lines: int) -> Path:
    if not target.exists():
        with source.open("rb") as stream, target.open("wb") as out:
            out.writelines(islice(stream, lines))
    return target


def _exports(rows: int) -> Iterator[tuple[str, str, Path, Path]]:
    """(label, kind, file, its first 100k rows) for LiteLLM JSONL, the same as a JSON array,
    OTel JSONL and the same requests as a LiteLLM CSV."""
    from audit_app.demo.writers import write_litellm_jsonl, write_otel_jsonl

    def otel_day(frame: pd.DataFrame, part: Path) -> None:
        write_otel_jsonl(frame, part, spans_per_document=OTEL_SPANS_PER_DOCUMENT)

    litellm_path = _write_once(
        BENCH_DIR / f"litellm-{rows}.jsonl",
        lambda part: _write_days(part, rows, write_litellm_jsonl),
    )
    litellm_head = _head_lines(
        litellm_path, BENCH_DIR / f"litellm-{rows}-head.jsonl", ROW_PATH_ROWS
    )
    yield ("LiteLLM JSONL", "litellm", litellm_path, litellm_head)
    array_path = _write_once(
        BENCH_DIR / f"litellm-{rows}.json", lambda part: _as_json_array(litellm_path, part)
    )
    array_head = _write_once(
        BENCH_DIR / f"litellm-{rows}-head.json", lambda part: _as_json_array(litellm_head, part)
    )
    yield ("LiteLLM JSON array", "litellm", array_path, array_head)
    otel_path = _write_once(
        BENCH_DIR / f"otel-{rows}.jsonl", lambda part: _write_days(part, rows, otel_day)
    )
    documents = ROW_PATH_ROWS // OTEL_SPANS_PER_DOCUMENT
    yield (
        "OTel JSONL",
        "otel",
        otel_path,
        _head_lines(otel_path, BENCH_DIR / f"otel-{rows}-head.jsonl", documents),
    )
    csv_path = _csv_export(rows)
    yield (
        "LiteLLM CSV",
        "litellm",
        csv_path,
        _head_lines(csv_path, BENCH_DIR / f"litellm-{rows}-head.csv", ROW_PATH_ROWS + 1),
    )


def _as_json_array(jsonl: Path, target: Path) -> None:
    """The JSONL file's records as one JSON array, a record a line (as `json.dumps` of a list
    writes them, but one per line)."""
    with jsonl.open("rb") as lines, target.open("wb") as out:
        out.write(b"[\n")
        separator = b""
        for line in lines:
            if line.strip():
                out.write(separator + line.rstrip(b"\r\n"))
                separator = b",\n"
        out.write(b"\n]\n")


def _csv_export(rows: int) -> Path:
    from audit_app.demo.writers import bench_litellm_csv

    # The same requests as the JSONL (seed 1), and the file `bench.ingest` writes.
    return _write_once(
        BENCH_DIR / f"litellm-{rows}.csv", lambda part: bench_litellm_csv(part, rows=rows, seed=1)
    )


def _verdict(rows_per_second: float) -> str:
    met = "MET" if rows_per_second >= TARGET_ROWS_PER_SECOND else "NOT met"
    return f"target >= {TARGET_ROWS_PER_SECOND:,} rows/s: {met} ({rows_per_second:,.0f})"


def run() -> list[str]:
    sys.path.insert(0, str(REPO))
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    rows = int(os.environ.get("BENCH_JSON_ROWS", DEFAULT_ROWS))
    database_url = bench_database_url("audit_bench_json", label="json_ingest")
    env = _child_env(database_url)
    backend = "PostgreSQL" if database_url.startswith("postgres") else "SQLite"
    lines = [
        f"json_ingest ({rows:,} rows; load average {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} CPUs):"
    ]
    repeat = max(1, int(os.environ.get("BENCH_JSON_REPEAT", DEFAULT_REPEAT)))
    parse_only = bool(os.environ.get("BENCH_JSON_PARSE_ONLY"))
    for label, kind, path, head in _exports(rows):
        # "-": the columnar read alone, without the yardsticks.
        subset = "-" if parse_only else str(head)
        result = run_child(CHILD_PARSE, kind, str(path), subset, env=env)
        runs = [result] + [
            run_child(CHILD_PARSE, kind, str(path), "-", env=env) for _ in range(repeat - 1)
        ]
        median = sorted(runs, key=lambda run: run["seconds"])[(len(runs) - 1) // 2]
        rate = median["rows"] / median["seconds"]
        each = " / ".join(f"{run['seconds']:.2f}" for run in runs)
        cpu_each = " / ".join(f"{run['cpu']:.2f}" for run in runs)
        lines += [
            f"  {label}: columnar {median['rows']:,} rows in {median['seconds']:.2f} s = "
            f"{rate:,.0f} rows/s, the median of {len(runs)} runs ({each} s; CPU "
            f"{median['cpu']:.1f} s = {median['rows'] / median['cpu']:,.0f} rows per "
            f"CPU-second; {median['in_frame'] / max(median['rows'], 1):.0%} in the frame)",
            f"    CPU seconds of each run: {cpu_each}",
        ]
        if not parse_only:
            row_rate = result["row_rows"] / result["row_seconds"]
            lines.append(
                f"    yardsticks: row path {row_rate:,.0f} rows/s on {result['row_rows']:,} "
                f"rows (columnar {rate / row_rate:.1f}x); bare pyarrow.json read of the file "
                + (
                    "(none: not JSON lines)"
                    if result["bare_seconds"] is None
                    else f"{result['bare_seconds']:.1f} s"
                )
            )
        lines.append(f"    {_verdict(rate)}")
    if parse_only:
        return lines
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=REPO, env=env, check=True
    )
    seconds: dict[str, float] = {}
    for label, path in (
        ("JSONL", BENCH_DIR / f"litellm-{rows}.jsonl"),
        ("JSON array", BENCH_DIR / f"litellm-{rows}.json"),
        ("CSV", _csv_export(rows)),
    ):
        run_child(CHILD_FORGET, str(path), env=env)
        try:
            result = run_ingest_command(path, env=env)
        finally:
            run_child(CHILD_FORGET, str(path), env=env)
        if result["report"]["rows_accepted"] != rows:
            raise RuntimeError(f"ingest of {path.name} did not land whole: {result['report']}")
        seconds[label] = float(result["seconds"])
        lines.append(
            f"  manage.py ingest ({backend}) LiteLLM {label}: {seconds[label]:.1f} s end to end "
            f"({rows / seconds[label]:,.0f} rows/s, CPU {result['cpu_s']:.1f} s, "
            f"peak RSS {result['peak_mib']:.0f} MiB)"
        )
    lines.append(
        f"    JSONL / CSV end to end: {seconds['JSONL'] / seconds['CSV']:.2f}x; "
        f"JSON array / CSV: {seconds['JSON array'] / seconds['CSV']:.2f}x"
    )
    return lines
