"""`make bench` (live): spans per second accepted by `/v1/traces` from 8 concurrent SDK
exporters, and how long until they landed.

What it does, with a timeout on every child process:

1. recreates the PostgreSQL database ``audit_bench_live`` (SQLite when PostgreSQL does not
   answer, said in the output) and migrates it; one engineer account with an API token;
2. starts the web server as production runs it (`config.processes.web_command`, production
   settings) and a Celery worker with beat (`config.processes.worker_command`) on Redis (the
   embedded broker without it) landing every LIVE_LAND_EVERY_SECONDS (10);
3. starts 8 client processes. Each builds its spans first (GenAI attributes, unique trace and
   span ids, 512 per export as `BatchSpanProcessor` sends them), then, all released together,
   hands them to the real `OTLPSpanExporter` (protobuf over HTTP, uncompressed as the SDK's
   default; LIVE_BENCH_GZIP=1 compresses as a Collector's otlphttp does) one export after
   another. Accepted spans per second = all spans / the wall time from the release to the last
   export's answer;
4. waits for the stream upload to hold every span (the micro-batch landing), and times it from
   the last export;
5. the yardstick, in the same run: the same exports' request bodies decoded by protobuf alone
   in this process (`ExportTraceServiceRequest.ParseFromString`), spans per second;
6. the size limit: a body one byte over LIVE_MAX_REQUEST_BYTES answers 413.

Knobs (environment): LIVE_BENCH_CLIENTS (8), LIVE_BENCH_EXPORTS (25 per client),
LIVE_BENCH_SPANS (512 per export), LIVE_BENCH_WORKERS and LIVE_BENCH_THREADS (gunicorn's
workers and threads; by default `config.gunicorn_conf`'s), LIVE_BENCH_GZIP=1.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import multiprocessing
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from config.processes import web_command, worker_command

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

REPO = Path(__file__).resolve().parent.parent
BENCH_DIR = REPO / "var" / "bench-live"
PG_SERVER = "postgres://postgres:postgres@127.0.0.1:5432"
DATABASE = "audit_bench_live"
REDIS_BROKER = "redis://127.0.0.1:6379/7"
TARGET_SPANS_PER_S = 20_000
TARGET_LANDED_S = 30.0
SETUP_TIMEOUT_S = 300
RUN_TIMEOUT_S = 600

CHILD_SETUP = r"""
import django
django.setup()
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from audit_app.access.tokens import api_token_issue
user, _ = get_user_model().objects.get_or_create(username="bench-live-engineer")
user.groups.add(Group.objects.get_or_create(name="engineer")[0])
print(api_token_issue(user=user, name="live bench").key)
"""

CHILD_LANDED = r"""
import django, json
django.setup()
from django.db.models import Sum
from audit_app.models import LiveBatch, Upload
streams = Upload.objects.exclude(stream_source="")
print(json.dumps({
    "requests": streams.aggregate(n=Sum("requests"))["n"] or 0,
    "output_tokens": streams.aggregate(n=Sum("output_tokens"))["n"] or 0,
    "pending": LiveBatch.objects.filter(landed_at__isnull=True).count(),
}))
"""


@dataclass(frozen=True, kw_only=True)
class Figures:
    backend: str
    clients: int
    spans: int
    export_s: float
    failed_exports: int
    landed_s: float | None
    landed_requests: int
    decode_spans_per_s: float
    over_limit_status: int | None
    server_cpu_us_per_span: float
    worker_cpu_us_per_span: float | None

    @property
    def spans_per_s(self) -> float:
        return self.spans / self.export_s if self.export_s else 0.0


def _postgres_answers() -> bool:
    try:
        import psycopg

        with psycopg.connect(f"{PG_SERVER}/postgres", connect_timeout=3):
            return True
    except Exception:
        return False


def _redis_answers() -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", 6379), timeout=2):
        return True
    return False


def _recreate_database() -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True, connect_timeout=5) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DATABASE))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))


def _env(*, postgres: bool, redis: bool) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("DJANGO_", "CELERY_", "LIVE_")) and name != "DATABASE_URL"
    }
    database = f"{PG_SERVER}/{DATABASE}" if postgres else f"sqlite:///{BENCH_DIR / 'bench.sqlite3'}"
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "DJANGO_DEBUG": "false",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DATABASE_URL": database,
            "DJANGO_VAR_DIR": str(BENCH_DIR),
            "DJANGO_LOG_LEVEL": "WARNING",
            "DJANGO_SECURE_SSL_REDIRECT": "false",
            "LIVE_LAND_EVERY_SECONDS": "10",
            "PYTHONUNBUFFERED": "1",
        }
    )
    if redis:
        env["CELERY_BROKER_URL"] = REDIS_BROKER
    return env


def _python(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=SETUP_TIMEOUT_S,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:2])} failed:\n{result.stderr[-3000:]}")
    return result.stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _spawn(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def _stop(process: subprocess.Popen[bytes] | None) -> None:
    if process is None or process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(os.getpgid(process.pid), signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(os.getpgid(process.pid), signal.SIGKILL)
        process.wait(timeout=10)


def _server_overrides() -> list[str]:
    """gunicorn flags for the LIVE_BENCH_WORKERS and LIVE_BENCH_THREADS knobs that are set."""
    flags = []
    for knob, flag in (("LIVE_BENCH_WORKERS", "--workers"), ("LIVE_BENCH_THREADS", "--threads")):
        if os.environ.get(knob):
            flags += [flag, os.environ[knob]]
    return flags


def _wait_healthy(base: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {server.returncode}")
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(f"{base}/healthz", timeout=2) as response,
        ):
            if response.status == 200:
                return
        time.sleep(0.3)
    raise RuntimeError("/healthz did not answer within 60 s")


def tree_cpu_s(root: int) -> float:
    """CPU seconds (user + system) used so far by a process and its live descendants."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    used: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        used[int(entry.name)] = (int(fields[11]) + int(fields[12])) / ticks
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += used.get(pid, 0.0)
        todo.extend(child for child, parent in parents.items() if parent == pid)
    return total


# --- The clients ---------------------------------------------------------------------------


def make_spans(client: int, exports: int, per_export: int) -> list[list[ReadableSpan]]:
    """`exports` lists of `per_export` finished SDK spans with GenAI attributes, ids unique
    across clients; 100 output tokens each."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import SpanContext, SpanKind, TraceFlags

    resource = Resource.create({"service.name": f"bench-client-{client}", "workload": "bench"})
    start = 1_764_547_200_000_000_000 + client * 1_000_000_000  # 2025-12-01, client apart
    batches = []
    for export in range(exports):
        batch = []
        for index in range(per_export):
            n = (client * exports + export) * per_export + index
            context = SpanContext(
                trace_id=(client + 1) << 64 | (export * per_export + index + 1),
                span_id=n + 1,
                is_remote=False,
                trace_flags=TraceFlags(1),
            )
            began = start + n * 1_000_000
            batch.append(
                ReadableSpan(
                    name="chat gpt-4o-mini",
                    context=context,
                    kind=SpanKind.CLIENT,
                    resource=resource,
                    start_time=began,
                    end_time=began + 800_000_000,
                    attributes={
                        "gen_ai.operation.name": "chat",
                        "gen_ai.provider.name": "openai",
                        "gen_ai.request.model": "gpt-4o-mini",
                        "gen_ai.usage.input_tokens": 1000,
                        "gen_ai.usage.output_tokens": 100,
                        "team": f"team-{client}",
                    },
                )
            )
        batches.append(batch)
    return batches


def _client(
    client: int,
    exports: int,
    per_export: int,
    endpoint: str,
    token: str,
    start: object,
    out: object,
) -> None:
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    batches = make_spans(client, exports, per_export)
    exporter = OTLPSpanExporter(
        endpoint=endpoint,
        headers={"Authorization": f"Bearer {token}"},
        compression=Compression.Gzip if os.environ.get("LIVE_BENCH_GZIP") else None,
        timeout=60,
    )
    start.wait()  # type: ignore[attr-defined]
    failed = 0
    for batch in batches:
        if exporter.export(batch) is not SpanExportResult.SUCCESS:
            failed += 1
    out.put((client, time.monotonic(), failed))  # type: ignore[attr-defined]
    exporter.shutdown()


def export_all(
    endpoint: str, token: str, clients: int, exports: int, per_export: int
) -> tuple[float, int]:
    """Wall seconds from the release to the last export's answer, and failed exports."""
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    out = context.Queue()
    processes = [
        context.Process(
            target=_client, args=(c, exports, per_export, endpoint, token, start, out), daemon=True
        )
        for c in range(clients)
    ]
    for process in processes:
        process.start()
    # Building 25 x 512 spans takes a client a few seconds; release them together after.
    time.sleep(max(3.0, exports * per_export / 4000))
    released = time.monotonic()
    start.set()
    finished, failed = [], 0
    for _ in processes:
        _, at, bad = out.get(timeout=RUN_TIMEOUT_S)
        finished.append(at)
        failed += bad
    for process in processes:
        process.join(timeout=30)
    return max(finished) - released, failed


def decode_yardstick(clients: int, exports: int, per_export: int) -> float:
    """Spans per second protobuf alone decodes from the same request bodies."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    bodies = [
        encode_spans(batch).SerializePartialToString()
        for batch in make_spans(0, min(exports, 10), per_export)
    ]
    began = time.perf_counter()
    spans = 0
    for body in bodies:
        request = ExportTraceServiceRequest()
        request.ParseFromString(gzip.decompress(gzip.compress(body, compresslevel=1)))
        spans += sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
    return spans / (time.perf_counter() - began)


def over_limit_status(base: str, token: str, limit: int) -> int | None:
    """The status a body one byte over the limit gets. The server answers from the
    Content-Length and may close before the body is sent, so the send may fail first."""
    import http.client
    from urllib.parse import urlsplit

    address = urlsplit(base)
    connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=60)
    try:
        connection.putrequest("POST", "/v1/traces")
        connection.putheader("Content-Type", "application/x-protobuf")
        connection.putheader("Authorization", f"Bearer {token}")
        connection.putheader("Content-Length", str(limit + 1))
        connection.endheaders()
        with contextlib.suppress(OSError):
            connection.send(b"\0" * (limit + 1))
        return connection.getresponse().status
    except OSError:
        return None
    finally:
        connection.close()


def _landed(env: dict[str, str]) -> dict[str, int]:
    return json.loads(_python(env, "-c", CHILD_LANDED).strip().splitlines()[-1])


def measure() -> Figures:
    clients = int(os.environ.get("LIVE_BENCH_CLIENTS", "8"))
    exports = int(os.environ.get("LIVE_BENCH_EXPORTS", "25"))
    per_export = int(os.environ.get("LIVE_BENCH_SPANS", "512"))
    postgres, redis = _postgres_answers(), _redis_answers()
    shutil.rmtree(BENCH_DIR, ignore_errors=True)
    BENCH_DIR.mkdir(parents=True)
    if postgres:
        _recreate_database()
    env = _env(postgres=postgres, redis=redis)
    _python(env, "manage.py", "migrate", "--noinput", "-v0")
    token = _python(env, "-c", CHILD_SETUP).strip().splitlines()[-1]
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    server = worker = None
    try:
        server = _spawn(
            web_command(f"127.0.0.1:{port}", *_server_overrides(), "--log-level", "warning"),
            env,
            BENCH_DIR / "gunicorn.log",
        )
        worker = _spawn(
            worker_command(
                concurrency=1,
                hostname="live-bench@%h",
                loglevel="WARNING",
                beat_schedule=BENCH_DIR / "beat-schedule",
            ),
            env,
            BENCH_DIR / "worker.log",
        )
        _wait_healthy(base, server)
        server_cpu, worker_cpu = tree_cpu_s(server.pid), tree_cpu_s(worker.pid)
        export_s, failed = export_all(f"{base}/v1/traces", token, clients, exports, per_export)
        exported_at = time.monotonic()
        server_cpu = tree_cpu_s(server.pid) - server_cpu
        spans = clients * exports * per_export
        landed_s = None
        landed = {"requests": 0}
        while time.monotonic() - exported_at < 120:
            landed = _landed(env)
            if landed["requests"] >= spans:
                landed_s = time.monotonic() - exported_at
                worker_cpu = tree_cpu_s(worker.pid) - worker_cpu
                break
            time.sleep(0.5)
        status = over_limit_status(base, token, 16 * 1024 * 1024)
    finally:
        _stop(server)
        _stop(worker)
    return Figures(
        backend="PostgreSQL" if postgres else "SQLite",
        clients=clients,
        spans=spans,
        export_s=export_s,
        failed_exports=failed,
        landed_s=landed_s,
        landed_requests=int(landed["requests"]),
        decode_spans_per_s=decode_yardstick(clients, exports, per_export),
        over_limit_status=status,
        server_cpu_us_per_span=server_cpu / spans * 1e6,
        worker_cpu_us_per_span=worker_cpu / spans * 1e6 if landed_s is not None else None,
    )


def lines(f: Figures) -> Iterator[str]:
    yield (
        f"live: {f.clients} OTLP SDK exporters sent {f.spans:,} GenAI spans to /v1/traces "
        f"(gunicorn + {f.backend}) in {f.export_s:.2f} s: {f.spans_per_s:,.0f} spans/s accepted "
        f"(target >= {TARGET_SPANS_PER_S:,}), {f.failed_exports} failed exports"
    )
    yield (
        f"live: yardstick, protobuf alone decodes the same bodies at {f.decode_spans_per_s:,.0f} "
        f"spans/s in one process ({f.decode_spans_per_s / max(f.spans_per_s, 1):.1f}x the "
        "server's end-to-end rate)"
    )
    worker = f.worker_cpu_us_per_span
    yield (
        f"live: CPU per span: gunicorn {f.server_cpu_us_per_span:.0f} us while receiving, "
        f"the landing worker {'-' if worker is None else f'{worker:.0f}'} us (2 cores shared "
        "with the 8 exporters and PostgreSQL)"
    )
    landed = "never" if f.landed_s is None else f"{f.landed_s:.1f} s"
    yield (
        f"live: landed {f.landed_requests:,} of {f.spans:,} requests, {landed} after the last "
        f"export (target <= {TARGET_LANDED_S:.0f} s, landing every 10 s)"
    )
    yield f"live: a body of 16 MiB + 1 byte answered {f.over_limit_status} (expected 413)"


def run() -> Iterator[str]:
    yield from lines(measure())


if __name__ == "__main__":
    for line in run():
        print(line)
