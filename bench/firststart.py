"""`make bench` (firststart): how long a new user waits for `make run`.

What it does, with a timeout on every wait:

1. clones the repository's committed HEAD into a scratch folder (`git clone`), as a new user
   gets it: no `.venv`, no `var`;
2. runs `make run` there in the environment a new user's shell has: none of this shell's
   service, Django or Celery variables (so the embedded default: SQLite, the embedded broker),
   and an empty uv and pip cache of its own, so every package is fetched from the registry as
   on a new machine (FIRSTSTART_WARM_CACHE=1 keeps the machine's caches instead);
3. times it from launch until `/healthz` answers 200, and notes when each step's line appears
   in its output: the install, the migrations, the demo data, the static files;
4. stops it as Ctrl-C does (SIGINT to its process group) and runs `make run` again: the second
   start, which reuses the virtualenv, the database and the collected static files;
5. removes the scratch folder.

Targets: first start <= 60 s including the install, second start <= 10 s. Both are times on
this machine, not ratios; the steps printed beside them say where the time went. The figures
are also written to docs/performance.md (section ``firststart``).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import report
from bench.firstpage import free_port

REPO = Path(__file__).resolve().parent.parent
LOG = REPO / "var" / "bench-firststart.log"
TARGET_FIRST_S = 60.0
TARGET_SECOND_S = 10.0
START_TIMEOUT_S = 600.0
STOP_TIMEOUT_S = 30.0
# What a new user's shell does not have: whatever points the app at a service or another var
# directory, or changes its settings (CI sets several of these).
SCRUBBED_PREFIXES = ("DJANGO_", "CELERY_")
SCRUBBED = ("DATABASE_URL", "REQUIRE_SERVICES", "VIRTUAL_ENV", "PYTHONPATH")
# The lines `make run` prints as each step ends, in the order it prints them.
STEPS: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("install (venv, uv, packages)", lambda line: line.startswith("Installed with")),
    ("migrations", lambda line: line.startswith("Migrations applied.")),
    (
        "demo data",
        lambda line: line.startswith(("Demo gate ", "Demo data already loaded.")),
    ),
    ("static files", lambda line: line.startswith("Static files")),
)
UNTIL_HEALTHY = "web server and worker start, until /healthz"


@dataclass(frozen=True)
class Start:
    """One `make run`: seconds from launch until `/healthz` answered, and each step's share."""

    seconds: float
    steps: tuple[tuple[str, float], ...]


def new_user_env(scratch: Path, *, warm_cache: bool) -> dict[str, str]:
    """This environment as a new user's shell has it: no variable that points the app elsewhere
    than `make run`'s embedded default, and (unless `warm_cache`) empty package caches in
    `scratch`."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in SCRUBBED and not key.startswith(SCRUBBED_PREFIXES)
    }
    env["PYTHONUNBUFFERED"] = "1"  # each line as it is printed, for its time
    if not warm_cache:
        env["UV_CACHE_DIR"] = str(scratch / "uv-cache")
        env["PIP_CACHE_DIR"] = str(scratch / "pip-cache")
    return env


def step_times(
    printed: Sequence[tuple[float, str]], healthy_at: float
) -> tuple[tuple[str, float], ...]:
    """Each step's seconds from the times its ending line was printed (seconds since launch):
    a step runs from the previous step's end (or the launch) to its own line. A step whose line
    never came (a second start installs nothing) is left out and its time counted in the next
    one; the last share runs to `healthy_at`."""
    steps: list[tuple[str, float]] = []
    previous = 0.0
    for name, ends in STEPS:
        at = next((when for when, line in printed if ends(line.strip())), None)
        if at is None or at < previous:
            continue
        steps.append((name, at - previous))
        previous = at
    steps.append((UNTIL_HEALTHY, max(0.0, healthy_at - previous)))
    return tuple(steps)


def time_start(
    command: Sequence[str], *, cwd: Path, env: Mapping[str, str], port: int, log: Path
) -> Start:
    """Run `command` (which serves on `port`), time it until `/healthz` answers 200, then stop
    it as Ctrl-C does. Its output goes to `log`. RuntimeError when it exits first or does not
    answer within START_TIMEOUT_S."""
    log.parent.mkdir(parents=True, exist_ok=True)
    printed: list[tuple[float, str]] = []
    launched = time.monotonic()
    process = subprocess.Popen(
        list(command),
        cwd=cwd,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    reader = threading.Thread(target=_read_lines, args=(process, launched, printed, log))
    reader.start()
    try:
        healthy_at = _wait_healthy(f"http://127.0.0.1:{port}/healthz", process, launched, log)
    finally:
        _interrupt(process)
        reader.join(timeout=STOP_TIMEOUT_S)
    return Start(seconds=healthy_at, steps=step_times(list(printed), healthy_at))


def _read_lines(
    process: subprocess.Popen[bytes], launched: float, printed: list[tuple[float, str]], log: Path
) -> None:
    assert process.stdout is not None
    with open(log, "ab") as out:
        for raw in process.stdout:
            printed.append((time.monotonic() - launched, raw.decode("utf-8", "replace")))
            out.write(raw)


def _wait_healthy(url: str, process: subprocess.Popen[bytes], launched: float, log: Path) -> float:
    while (elapsed := time.monotonic() - launched) < START_TIMEOUT_S:
        if process.poll() is not None:
            raise RuntimeError(
                f"make run exited with {process.returncode} before serving; see {log}"
            )
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return time.monotonic() - launched
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"make run did not answer /healthz within {elapsed:.0f} s; see {log}")


def _interrupt(process: subprocess.Popen[bytes]) -> None:
    """Ctrl-C for the whole process group (make, serve, the web server and the worker)."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@dataclass(frozen=True)
class Figures:
    commit: str
    clone_s: float
    first: Start
    second: Start
    warm_cache: bool


def measure() -> Figures:
    warm_cache = os.environ.get("FIRSTSTART_WARM_CACHE", "") == "1"
    LOG.unlink(missing_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="firststart-"))
    try:
        clone = scratch / "clone"
        started = time.monotonic()
        subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
        clone_s = time.monotonic() - started
        commit = (
            subprocess.run(
                ["git", "rev-parse", "--short", "HEAD"], cwd=clone, check=True, capture_output=True
            )
            .stdout.decode()
            .strip()
        )
        env = new_user_env(scratch, warm_cache=warm_cache)
        starts = []
        for _ in range(2):
            port = free_port()
            command = ["make", "run", f"PORT={port}"]
            starts.append(time_start(command, cwd=clone, env=env, port=port, log=LOG))
        return Figures(commit, clone_s, starts[0], starts[1], warm_cache)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _verdict(seconds: float, target: float) -> str:
    return "met" if seconds <= target else "NOT met"


def _steps_text(start: Start) -> str:
    return ", ".join(f"{name} {seconds:.1f} s" for name, seconds in start.steps)


def lines(figures: Figures) -> Iterator[str]:
    caches = "the machine's package caches" if figures.warm_cache else "empty package caches"
    yield (
        f"firststart: `make run` on a fresh clone ({figures.commit}, {caches}) answered /healthz "
        f"after {figures.first.seconds:.1f} s (target <= {TARGET_FIRST_S:.0f} s, "
        f"{_verdict(figures.first.seconds, TARGET_FIRST_S)}); second start "
        f"{figures.second.seconds:.1f} s (target <= {TARGET_SECOND_S:.0f} s, "
        f"{_verdict(figures.second.seconds, TARGET_SECOND_S)})"
    )
    yield f"firststart: first start: {_steps_text(figures.first)}"
    yield f"firststart: second start: {_steps_text(figures.second)}"
    yield f"firststart: beside them: `git clone` of the repository {figures.clone_s:.1f} s"


def section(figures: Figures) -> str:
    rows = [
        (
            "first start (fresh clone, install included)",
            f"{figures.first.seconds:.1f}",
            f"<= {TARGET_FIRST_S:.0f}",
            _verdict(figures.first.seconds, TARGET_FIRST_S),
            _steps_text(figures.first),
        ),
        (
            "second start",
            f"{figures.second.seconds:.1f}",
            f"<= {TARGET_SECOND_S:.0f}",
            _verdict(figures.second.seconds, TARGET_SECOND_S),
            _steps_text(figures.second),
        ),
    ]
    caches = (
        "the machine's package caches (FIRSTSTART_WARM_CACHE=1)"
        if figures.warm_cache
        else "empty uv and pip caches, so every package came from the registry"
    )
    return (
        "## First start\n\n"
        "Written by `make bench` (`bench/firststart.py`). A `git clone` of commit "
        f"{figures.commit} into a scratch folder ({figures.clone_s:.1f} s), then `make run` "
        "there as a new user runs it: no service variables (SQLite, the embedded broker), "
        f"{caches}. Each start is timed from launch until `/healthz` answered 200; a step ends "
        "when `make run` prints its line. Stopped with Ctrl-C (SIGINT) between the two.\n\n"
        + report.markdown_table(("start", "s", "target s", "target", "steps"), rows)
    )


def run() -> Iterator[str]:
    if shutil.which("make") is None or shutil.which("git") is None:
        yield "firststart: skipped: needs make and git"
        return
    figures = measure()
    yield from lines(figures)
    report.write_section("firststart", section(figures))
