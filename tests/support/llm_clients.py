"""Real LLM clients for end-to-end tests: a LiteLLM proxy process and the openai SDK (plain or
instrumented by opentelemetry-instrumentation-openai-v2 or OpenLLMetry), run from their own
virtualenv, never imported into the test process.

The virtualenv is ``$LLM_CLIENTS_VENV`` when set (an existing one, used as it is), else
``var/llm-clients-venv`` (git-ignored), built once from ``llm_clients_requirements.txt`` under a
file lock so pytest-xdist workers never build it at once. A requirements file or virtualenv
holding litellm 1.107.0 (a compromised release) is refused: the test fails, whatever
REQUIRE_SERVICES says. When the virtualenv cannot be had (no index to install from), the tests
that need it skip, or fail under REQUIRE_SERVICES=1.

``proxy_running`` starts ``litellm --config X`` on a free port with the proxy's model price map
read from its own package (nothing fetched), waits for ``/health/liveliness`` and stops it;
``client_calls`` runs ``llm_client_calls.py`` in the virtualenv and returns what each call's
answer said.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.services import require_service

REPO = Path(__file__).resolve().parents[2]
SUPPORT = Path(__file__).resolve().parent
REQUIREMENTS = SUPPORT / "llm_clients_requirements.txt"
CLIENT_SCRIPT = SUPPORT / "llm_client_calls.py"
VENV = REPO / "var" / "llm-clients-venv"
VENV_ENV = "LLM_CLIENTS_VENV"
# Releases never to install or run: litellm 1.107.0 was published compromised.
REFUSED_RELEASES = {"litellm": frozenset({"1.107.0"})}
MASTER_KEY = "sk-spend-audit-test-master"
START_TIMEOUT_SECONDS = 90.0
INSTALL_TIMEOUT_SECONDS = 1800
_PIN = re.compile(r"^\s*([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?\s*==\s*([^\s;#]+)")
_NAME = re.compile(r"^\s*([A-Za-z0-9_.\-]+)")


class RefusedRelease(Exception):
    """A requirements file or virtualenv would run a release on the refused list."""


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements_check(text: str) -> None:
    """Raise `RefusedRelease` unless every refused package is pinned (``==``) to a release
    other than the refused ones: an unpinned one could resolve to a refused release."""
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        name_match = _NAME.match(line)
        if not line or not name_match:
            continue
        name = _canonical(name_match.group(1))
        refused = REFUSED_RELEASES.get(name)
        if refused is None:
            continue
        pin = _PIN.match(line)
        if pin is None:
            raise RefusedRelease(f"{raw.strip()!r}: {name} must be pinned with ==")
        if pin.group(2) in refused:
            raise RefusedRelease(f"{raw.strip()!r}: {name} {pin.group(2)} is a refused release")


def installed_check(venv: Path) -> dict[str, str]:
    """The refused packages' installed versions in ``venv`` (read from their metadata, never
    imported); raises `RefusedRelease` for a refused one."""
    names = json.dumps(sorted(REFUSED_RELEASES))
    probe = (
        "import json, importlib.metadata as m\n"
        f"found = {{}}\nfor name in {names}:\n"
        "    try:\n        found[name] = m.version(name)\n"
        "    except m.PackageNotFoundError:\n        pass\n"
        "print(json.dumps(found))"
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    found: dict[str, str] = json.loads(done.stdout)
    for name, version in found.items():
        if version in REFUSED_RELEASES[name]:
            raise RefusedRelease(f"{venv} holds {name} {version}, a refused release")
    return found


def _installer() -> list[str] | None:
    """uv (the project's own, else on PATH) as `uv pip install --python`; None: use pip."""
    for candidate in (REPO / ".venv" / "bin" / "uv", shutil.which("uv")):
        if candidate and os.access(candidate, os.X_OK):
            return [str(candidate), "pip", "install", "--quiet", "--python"]
    return None


def venv_build(venv: Path = VENV) -> Path:
    """The clients' virtualenv, built from REQUIREMENTS unless a complete one is there (its
    marker holds the requirements it was built from; changed requirements rebuild it)."""
    wanted = REQUIREMENTS.read_text()
    requirements_check(wanted)
    venv.parent.mkdir(parents=True, exist_ok=True)
    marker = venv / ".complete"
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists() or marker.read_text() != wanted:
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
            python = str(venv / "bin" / "python")
            uv = _installer()
            command = (
                [*uv, python, "-r", str(REQUIREMENTS)]
                if uv
                else [python, "-m", "pip", "install", "--quiet", "-r", str(REQUIREMENTS)]
            )
            subprocess.run(command, check=True, timeout=INSTALL_TIMEOUT_SECONDS)
            installed_check(venv)
            marker.write_text(wanted)
    return venv


def clients_venv() -> Path:
    """The virtualenv to run the clients from (see the module docstring); skips or fails when
    there is none, fails on a refused release."""
    configured = os.environ.get(VENV_ENV, "").strip()
    if configured:
        venv = Path(configured)
        require_service(
            "LLM clients",
            (venv / "bin" / "litellm").exists() and (venv / "bin" / "python").exists(),
            f"{VENV_ENV}={configured} has no bin/litellm and bin/python",
        )
    try:
        if not configured:
            try:
                venv = venv_build()
            except (OSError, subprocess.SubprocessError) as error:
                require_service("LLM clients", False, f"cannot build {VENV}: {error}")
        installed_check(venv)
    except RefusedRelease as error:
        pytest.fail(f"refused: {error}", pytrace=False)
    return venv


@pytest.fixture(scope="session")
def llm_clients() -> Path:
    return clients_venv()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def proxy_env(extra: Mapping[str, str] = {}) -> dict[str, str]:
    """The proxy's environment: this one without the project's settings, the bundled price
    map (no download at start), no telemetry to LiteLLM, and ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))}
    env.update(
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LITELLM_TELEMETRY="False",
        NO_COLOR="1",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


@dataclass(frozen=True)
class RunningProxy:
    base_url: str
    process: subprocess.Popen[bytes]
    log: Path
    master_key: str = MASTER_KEY

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def _healthy(base_url: str, process: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(f"{base_url}/health/liveliness", timeout=2) as answer:
                if answer.status == 200:
                    return True
        except OSError:
            time.sleep(0.25)
    return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, 15)
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        process.wait(timeout=15)
    except ProcessLookupError:
        pass


@contextmanager
def proxy_running(
    venv: Path, config: str, tmp_dir: Path, *, env: Mapping[str, str] = {}
) -> Iterator[RunningProxy]:
    """A LiteLLM proxy serving ``config`` (YAML text) on a free port, stopped on exit."""
    tmp_dir.mkdir(parents=True, exist_ok=True)
    config_path = tmp_dir / "litellm-config.yaml"
    config_path.write_text(config)
    for _attempt in range(3):
        port = free_port()
        log = tmp_dir / f"litellm-{port}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [str(venv / "bin" / "litellm"), "--config", str(config_path)]
                + ["--host", "127.0.0.1", "--port", str(port)],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=tmp_dir,
                env=proxy_env(env),
                start_new_session=True,
            )
        proxy = RunningProxy(base_url=f"http://127.0.0.1:{port}", process=process, log=log)
        if _healthy(proxy.base_url, process):
            try:
                yield proxy
            finally:
                _stop(process)
            return
        _stop(process)
    raise RuntimeError(f"the LiteLLM proxy did not start; see {log}:\n{log.read_text()[-3000:]}")


def client_calls(
    venv: Path,
    *,
    base_url: str,
    api_key: str,
    calls: Sequence[Mapping[str, Any]],
    concurrency: int = 8,
    instrumentation: str | None = None,
    otlp: Mapping[str, str] | None = None,
    timeout: float = 300.0,
) -> list[dict[str, Any]]:
    """Run `llm_client_calls.py` in ``venv``: each of ``calls`` through the openai SDK, what
    each answer said (see that script's docstring)."""
    spec = {
        "base_url": base_url,
        "api_key": api_key,
        "calls": list(calls),
        "concurrency": concurrency,
        "instrumentation": instrumentation,
        "otlp": otlp,
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "OTEL_"))}
    done = subprocess.run(
        [str(venv / "bin" / "python"), str(CLIENT_SCRIPT)],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**env, "PYTHONUNBUFFERED": "1"},
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"client script failed ({done.returncode}):\n{done.stderr[-4000:]}")
    answers: list[dict[str, Any]] = json.loads(done.stdout)
    return answers
