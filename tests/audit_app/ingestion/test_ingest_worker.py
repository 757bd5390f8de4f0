"""Exactly once through a real worker: kill the process mid-ingest, the retry lands exact totals."""

from __future__ import annotations

import io
import os
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from audit_app.ingestion.ingest import CHUNK_ROWS
from audit_app.ingestion.uploads import upload_create
from audit_app.models import HourlyRollup, Upload
from audit_app.tasks import ingest_upload
from tests.integration_support import tasks_sent_to_broker, worker_environment
from tests.support.processes import celery_worker

pytestmark = [pytest.mark.slow, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

# More than two chunks: the first progress report (rows_read > 0) comes after the first chunk,
# so the ingest is still reading, not landing, when the test sees it under way.
ROWS = 2 * CHUNK_ROWS + CHUNK_ROWS // 4


def _generic_csv(rows: int, seed: int) -> tuple[bytes, dict[str, int]]:
    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2026-11-01T00:00:00Z")
    started = start + pd.to_timedelta(rng.integers(0, 7 * 86400, rows), unit="s")
    duration = pd.to_timedelta(rng.integers(100, 20_000, rows), unit="ms")
    frame = pd.DataFrame(
        {
            "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "ended_at": (started + duration).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "workload": rng.choice(["chat", "evals", "backfill", "agent"], rows),
            "provider": "openai",
            "model": rng.choice(["gpt-4o", "gpt-4o-mini"], rows),
            "input_tokens": rng.integers(1, 4000, rows),
            "output_tokens": rng.integers(0, 800, rows),
            "request_id": [f"k{i}" for i in range(rows)],
        }
    )
    expected = {
        "requests": rows,
        "input_tokens": int(frame["input_tokens"].sum()),
        "output_tokens": int(frame["output_tokens"].sum()),
    }
    return frame.to_csv(index=False).encode(), expected


def _pool_children(worker_pid: int) -> list[int]:
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == worker_pid:
                children.append(int(entry.name))
    return children


def _wait(predicate: Any, timeout: float, what: str, interval: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


def test_worker_killed_mid_ingest_is_retried_with_exact_totals(
    redis_url: str, tmp_path: Path
) -> None:
    content, expected = _generic_csv(ROWS, seed=42)
    upload = upload_create(source=io.BytesIO(content), original_name="big.csv", enqueue=False)
    env = worker_environment(redis_url) | {"INGEST_FANOUT_PARTS": "0"}  # the one-pass ingest
    with (
        celery_worker(env=env, tmp_path=tmp_path, pool="prefork") as worker,
        tasks_sent_to_broker(),
    ):
        ingest_upload.apply_async(args=[upload.pk], queue=worker.queue)

        def mid_ingest() -> bool:
            current = Upload.objects.get(pk=upload.pk)
            return current.status == Upload.Status.RUNNING and current.rows_read > 0

        _wait(mid_ingest, 60, "the ingest to be under way", interval=0.02)
        children = _pool_children(worker.process.pid)
        assert len(children) == 1, children
        # Freeze the process first, then confirm nothing has landed: a frozen process cannot
        # commit, so the kill below is certainly mid-ingest (a COMMIT already on the wire would
        # show up within the pause).
        os.kill(children[0], signal.SIGSTOP)
        time.sleep(0.5)
        frozen = Upload.objects.get(pk=upload.pk)
        assert frozen.status == Upload.Status.RUNNING, frozen.status
        assert frozen.rows_read < ROWS, frozen.rows_read
        os.kill(children[0], signal.SIGKILL)  # the process running the task dies at once

        _wait(
            lambda: Upload.objects.get(pk=upload.pk).status == Upload.Status.SUCCEEDED,
            180,
            f"the redelivered ingest to finish; worker log:\n{worker.log()}",
        )
        log = worker.log()

    landed = Upload.objects.get(pk=upload.pk)
    assert landed.attempts == 2, log
    assert "WorkerLostError" in log or "exited prematurely" in log
    assert landed.requests == expected["requests"]
    assert landed.input_tokens == expected["input_tokens"]
    assert landed.output_tokens == expected["output_tokens"]
    rollups = HourlyRollup.objects.filter(upload=landed)
    assert sum(r.requests for r in rollups) == expected["requests"]
    assert sum(r.input_tokens for r in rollups) == expected["input_tokens"]
