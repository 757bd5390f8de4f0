"""Faults the suite can inject without disturbing other tests (`make faults` does the rest).

- The broker down: a private redis-server on a spare port, started and killed here (the shared
  Redis is never touched). An upload through the API is kept as `queued` with a note, /healthz
  answers 503 naming the broker, and once Redis is up a real worker's requeue sweep queues the
  upload and it lands, nobody uploading it again.
- The media storage full: a real 1 MiB tmpfs when running as root, and a simulated ENOSPC
  that always runs: a clear 507, no upload row, no partial file.

PostgreSQL is never restarted here: `make faults` does that.
"""

from __future__ import annotations

import errno
import io
import json
import logging
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client

from audit_app.ingestion import uploads
from audit_app.ingestion.requeue import ENQUEUE_NOTE, ENQUEUE_NOTE_PREFIX
from audit_app.ingestion.uploads import STORAGE_FULL_MESSAGE, StorageFull, upload_create
from audit_app.models import HourlyRollup, Upload
from audit_app.tasks import ingest_upload
from tests.audit_app.ingestion.ingest_samples import SAMPLE_CSV
from tests.integration_support import tasks_sent_to_broker, worker_environment
from tests.support.processes import celery_worker, run_python, stop_process_group
from tests.support.services import require_service


@pytest.mark.django_db
def test_api_upload_with_the_broker_down_is_kept_queued_with_a_note(
    client: Client,
    engineer_user: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from kombu.exceptions import OperationalError as BrokerError

    def refused(*args: Any, **kwargs: Any) -> None:
        raise BrokerError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(ingest_upload, "apply_async", refused)
    client.force_login(engineer_user)
    with (
        tasks_sent_to_broker(),
        caplog.at_level(logging.WARNING),
        django_capture_on_commit_callbacks(execute=True),
    ):
        response = client.post(
            "/api/v1/uploads/", {"file": SimpleUploadedFile("requests.csv", SAMPLE_CSV)}
        )

    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "queued"
    # (The response carries the note too when no test transaction holds the commit back; the
    # real-worker test below checks that.)
    stored = Upload.objects.get(pk=body["id"])
    assert stored.status == Upload.Status.QUEUED
    assert stored.error.startswith(ENQUEUE_NOTE_PREFIX)
    assert Path(stored.file.path).read_bytes() == SAMPLE_CSV
    assert "stays queued: the task broker could not be reached" in caplog.text


# --- The media storage full ----------------------------------------------------------------------


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _assert_refused_for_space(response: Any) -> None:
    assert response.status_code == 507
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body == {"detail": STORAGE_FULL_MESSAGE, "errors": {}}
    assert "no space left" in body["detail"]


class _FillsUp:
    """A file whose second write fails as a full disk does (after the first landed)."""

    def __init__(self, path: Path, failure: int) -> None:
        self.file = open(path, "wb")  # noqa: SIM115 - closed in __exit__
        self.failure = failure
        self.writes = 0

    def __enter__(self) -> _FillsUp:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()

    def write(self, data: bytes) -> int:
        self.writes += 1
        if self.writes > 1:
            raise OSError(self.failure, os.strerror(self.failure))
        return self.file.write(data)


@pytest.fixture
def media_root(settings: Any, tmp_path: Path) -> Path:
    root = tmp_path / "media"
    root.mkdir()
    settings.MEDIA_ROOT = str(root)
    return root


@pytest.mark.django_db
@pytest.mark.parametrize("failure", [errno.ENOSPC, errno.EDQUOT], ids=["ENOSPC", "EDQUOT"])
def test_simulated_full_disk_leaves_no_row_and_no_partial_file(
    client: Client,
    engineer_user: Any,
    media_root: Path,
    monkeypatch: pytest.MonkeyPatch,
    failure: int,
) -> None:
    opened: list[_FillsUp] = []

    def open_for_write(path: Path) -> _FillsUp:
        opened.append(_FillsUp(path, failure))
        return opened[-1]

    monkeypatch.setattr(uploads, "COPY_CHUNK_BYTES", 1024)
    monkeypatch.setattr(uploads, "_open_for_write", open_for_write)
    client.force_login(engineer_user)
    content = SAMPLE_CSV * 20

    api = client.post("/api/v1/uploads/", {"file": SimpleUploadedFile("a.csv", content)})
    _assert_refused_for_space(api)
    page = client.post(
        "/uploads/new/",
        {"file": SimpleUploadedFile("a.csv", content), "kind": "token_log", "format": "auto"},
    )
    assert page.status_code == 507
    assert STORAGE_FULL_MESSAGE in page.content.decode()

    assert len(opened) == 2 and all(o.writes == 2 for o in opened)  # it failed mid-file
    assert Upload.objects.count() == 0
    assert _files(media_root) == []
    with pytest.raises(StorageFull):
        upload_create(source=io.BytesIO(content), original_name="a.csv", enqueue=False)
    assert _files(media_root) == []


@pytest.mark.django_db
def test_cli_reports_a_full_disk_in_one_line(
    media_root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    source = tmp_path / "requests.csv"
    source.write_bytes(SAMPLE_CSV * 20)
    monkeypatch.setattr(uploads, "COPY_CHUNK_BYTES", 1024)
    monkeypatch.setattr(uploads, "_open_for_write", lambda path: _FillsUp(path, errno.ENOSPC))
    with pytest.raises(CommandError, match="no space left"):
        call_command("ingest", str(source))
    assert Upload.objects.count() == 0
    assert _files(media_root) == []


@pytest.mark.django_db
def test_other_write_errors_are_not_called_a_full_disk(
    media_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(uploads, "COPY_CHUNK_BYTES", 1024)
    monkeypatch.setattr(uploads, "_open_for_write", lambda path: _FillsUp(path, errno.EIO))
    with pytest.raises(OSError) as raised:
        upload_create(source=io.BytesIO(SAMPLE_CSV * 20), original_name="a.csv", enqueue=False)
    assert not isinstance(raised.value, StorageFull)
    assert raised.value.errno == errno.EIO
    assert Upload.objects.count() == 0
    assert _files(media_root) == []


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MiB tmpfs (root only; skips, or fails with REQUIRE_SERVICES=1, elsewhere)."""
    require_service("tmpfs", os.geteuid() == 0, "mounting a tmpfs needs root")
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    require_service("tmpfs", result.returncode == 0, f"mount failed: {result.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


@pytest.mark.django_db
def test_real_full_tmpfs_refuses_clearly_and_keeps_serving(
    client: Client, engineer_user: Any, settings: Any, tiny_tmpfs: Path
) -> None:
    settings.MEDIA_ROOT = str(tiny_tmpfs)
    kept = os.urandom(200 * 1024)
    (tiny_tmpfs / "kept.bin").write_bytes(kept)
    client.force_login(engineer_user)
    three_mib = (SAMPLE_CSV * (3 * 1024 * 1024 // len(SAMPLE_CSV) + 1))[: 3 * 1024 * 1024]

    _assert_refused_for_space(
        client.post("/api/v1/uploads/", {"file": SimpleUploadedFile("big.csv", three_mib)})
    )

    assert Upload.objects.count() == 0
    assert _files(tiny_tmpfs) == ["kept.bin"]
    assert (tiny_tmpfs / "kept.bin").read_bytes() == kept
    assert client.get("/healthz").status_code in (200, 503)  # 503 only for a missing broker
    assert client.get("/").status_code == 200
    # The space the refused file took is free again: a small upload is stored.
    small = client.post("/api/v1/uploads/", {"file": SimpleUploadedFile("s.csv", SAMPLE_CSV)})
    assert small.status_code == 202
    assert Path(Upload.objects.get().file.path).read_bytes() == SAMPLE_CSV


# --- The broker down, with a real worker ---------------------------------------------------------

UPLOAD_SNIPPET = r"""
import json, sys, time
import django
django.setup()
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
api = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Token {KEY}")
started = time.monotonic()
with open(PATH, "rb") as f:
    answer = api.post("/api/v1/uploads/", {"file": SimpleUploadedFile("down.csv", f.read())},
                      secure=True)
seconds = time.monotonic() - started
health = Client(HTTP_HOST="127.0.0.1").get("/healthz", secure=True)
print(json.dumps({"status": answer.status_code, "body": answer.json(), "seconds": seconds,
                  "health_status": health.status_code, "health": health.json()}))
"""


def _spare_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _generic_csv(path: Path, rows: int) -> dict[str, int]:
    rng = np.random.default_rng(3)
    started = pd.Timestamp("2026-09-01T00:00:00Z") + pd.to_timedelta(
        rng.integers(0, 3 * 86400, rows), unit="s"
    )
    frame = pd.DataFrame(
        {
            "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "ended_at": (started + pd.Timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "workload": rng.choice(["chat", "evals"], rows),
            "model": "gpt-4o",
            "input_tokens": rng.integers(1, 4000, rows),
            "output_tokens": rng.integers(0, 800, rows),
        }
    )
    frame.to_csv(path, index=False)
    return {
        "requests": rows,
        "input_tokens": int(frame["input_tokens"].sum()),
        "output_tokens": int(frame["output_tokens"].sum()),
    }


def _wait(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_broker_down_upload_waits_queued_then_lands_when_it_is_back(
    engineer_user: Any, tmp_path: Path
) -> None:
    binary = shutil.which("redis-server")
    require_service("redis-server", binary is not None, "no redis-server binary on PATH")
    assert binary is not None
    from audit_app.access.tokens import api_token_issue

    port = _spare_port()
    url = f"redis://127.0.0.1:{port}/0"
    env = {**worker_environment(url), "UPLOAD_REQUEUE_INTERVAL_SECONDS": "1"}
    key = api_token_issue(user=engineer_user).key
    csv = tmp_path / "down.csv"
    expected = _generic_csv(csv, rows=2000)

    # The broker is down: nothing listens on the port.
    snippet = f"KEY = {key!r}\nPATH = {str(csv)!r}\n{UPLOAD_SNIPPET}"
    out = json.loads(run_python(snippet, env=env).strip().splitlines()[-1])

    assert out["status"] == 202, out
    assert out["body"]["status"] == "queued"
    assert out["body"]["error"] == ENQUEUE_NOTE
    assert out["seconds"] < 10, out  # bounded publish retries, no hang
    assert out["health_status"] == 503
    assert out["health"]["database"] == "ok"
    assert out["health"]["broker"].startswith("down")
    upload_id = out["body"]["id"]
    assert Upload.objects.get(pk=upload_id).status == Upload.Status.QUEUED

    redis = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait(lambda: _port_open(port), 15, "the private redis-server")
        # The worker consumes only its own queue; its sweep queues the upload onto it.
        with celery_worker(env=env, tmp_path=tmp_path) as worker:
            _wait(
                lambda: Upload.objects.get(pk=upload_id).status == Upload.Status.SUCCEEDED,
                120,
                f"the queued upload to land; worker log:\n{worker.log()}",
            )
            log = worker.log()
    finally:
        stop_process_group(redis)

    assert f"requeue sweep: queued upload(s) {upload_id} again" in log
    landed = Upload.objects.get(pk=upload_id)
    assert landed.attempts == 1
    assert landed.error == ""
    assert {k: getattr(landed, k) for k in expected} == expected
    rollups = HourlyRollup.objects.filter(upload=landed)
    assert sum(r.requests for r in rollups) == expected["requests"]
    assert sum(r.input_tokens for r in rollups) == expected["input_tokens"]
    assert Upload.objects.count() == 1  # nobody uploaded it again
