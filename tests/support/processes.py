"""Start real processes for integration tests: a Celery worker, the `serve` command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from config.processes import worker_command

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, kw_only=True)
class RunningWorker:
    process: subprocess.Popen[bytes]
    queue: str
    log_path: Path
    env: dict[str, str]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for_log(self, needle: str, *, timeout: float = 30.0) -> str:
        """The log once it holds `needle`. A worker logs a task's end after the task's own writes
        (its database rows, its result) are visible, so read the log only after waiting."""
        wait_for_log(self.log_path, needle, process=self.process, timeout=timeout)
        return self.log()


def child_env(extra: Mapping[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def wait_for_log(
    path: Path, needle: str, *, process: subprocess.Popen[bytes], timeout: float = 60.0
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text(errors="replace") if path.exists() else ""
        if needle in text:
            return
        if process.poll() is not None:
            raise RuntimeError(f"process exited ({process.returncode}) before '{needle}':\n{text}")
        time.sleep(0.2)
    raise TimeoutError(
        f"'{needle}' not seen in {timeout:.0f}s:\n{path.read_text(errors='replace')}"
    )


@contextmanager
def celery_worker(
    *, env: Mapping[str, str], tmp_path: Path, pool: str = "solo"
) -> Iterator[RunningWorker]:
    """A real worker on its own queue, so stray workers on the same broker cannot steal tasks:
    not another test's, nor another pytest-xdist worker's (its name is in the queue's)."""
    queue = f"test-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{uuid.uuid4().hex[:10]}"
    log_path = tmp_path / f"worker-{queue}.log"
    full_env = child_env(env)
    command = worker_command(concurrency=1, hostname=f"{queue}@%h", queues=[queue], pool=pool)
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=full_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    worker = RunningWorker(process=process, queue=queue, log_path=log_path, env=full_env)
    try:
        wait_for_log(log_path, " ready.", process=process)
        yield worker
    finally:
        stop_process_group(process)


def stop_process_group(process: subprocess.Popen[bytes], *, timeout: float = 15.0) -> None:
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass


def _run(
    argv: list[str], *, env: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """This interpreter with `argv`, from the repository, with exactly `env`."""
    return subprocess.run(
        [sys.executable, *argv],
        cwd=REPO_ROOT,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_python(code: str, *, env: Mapping[str, str], timeout: float = 60.0) -> str:
    """Run a snippet in a fresh interpreter (its own Celery app state); returns stdout."""
    result = _run(["-c", code], env=child_env(env), timeout=timeout)
    if result.returncode != 0:
        raise AssertionError(f"snippet failed ({result.returncode}):\n{result.stderr}")
    return result.stdout


def run_manage(
    *args: str, env: Mapping[str, str], timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """`manage.py ARGS` in its own process with exactly `env`; the caller reads its outcome."""
    return _run(["manage.py", *args], env=env, timeout=timeout)
