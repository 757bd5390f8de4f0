"""A real OpenID Connect provider for tests: oidc-provider-mock (discovery, JWKS, an
authorization form, a token endpoint; users and their claims set with ``PUT /users/{sub}``).

Its 0.4 releases need Python 3.12+, so it runs as a subprocess from its own virtualenv,
``var/oidc-mock-venv`` (git-ignored, built once and reused), on the first interpreter found:
``$OIDC_MOCK_PYTHON``, ``python3.13`` or ``python3.12`` on PATH, then
``~/.pyenv/versions/3.1[2-9]*/bin/python3``. Building the virtualenv holds a file lock, so
pytest-xdist workers never build it at once; each worker starts its own provider on a free
port. Without such an interpreter the tests that need the provider skip, or fail under
REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.support.services import require_service

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / "var" / "oidc-mock-venv"
REQUIREMENT = "oidc-provider-mock>=0.4,<0.5"
START_TIMEOUT_SECONDS = 30.0


def interpreter_candidates() -> list[str]:
    found = [os.environ.get("OIDC_MOCK_PYTHON", "")]
    found += [shutil.which(name) or "" for name in ("python3.13", "python3.12")]
    found += [str(p) for p in sorted(Path.home().glob(".pyenv/versions/3.1[2-9]*/bin/python3"))]
    return [path for path in found if path]


def interpreter_find() -> str | None:
    """The first candidate that runs and is Python 3.12 or newer (a pyenv shim on PATH may
    name a version it does not select, so each is run)."""
    check = "import sys; print(sys.version_info >= (3, 12))"
    for path in interpreter_candidates():
        try:
            done = subprocess.run(
                [path, "-c", check], capture_output=True, text=True, timeout=20, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0 and done.stdout.strip() == "True":
            return path
    return None


def venv_ensure(python: str) -> Path:
    """The provider's virtualenv, built on ``python`` unless a complete one is there."""
    VENV.parent.mkdir(parents=True, exist_ok=True)
    marker = VENV / ".complete"
    with open(VENV.parent / "oidc-mock-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            shutil.rmtree(VENV, ignore_errors=True)
            subprocess.run([python, "-m", "venv", str(VENV)], check=True, timeout=300)
            subprocess.run(
                [str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", REQUIREMENT],
                check=True,
                timeout=600,
            )
            marker.write_text(REQUIREMENT + "\n")
    return VENV


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class MockProvider:
    """A running provider; ``issuer`` is its issuer URL (and base address)."""

    issuer: str
    process: subprocess.Popen[bytes]
    log: Path
    users: dict[str, dict[str, Any]] = field(default_factory=dict)

    def put_user(self, sub: str, claims: dict[str, Any]) -> None:
        """Set the claims the provider gives ``sub`` from the next sign-in on."""
        request = urllib.request.Request(
            f"{self.issuer}/users/{sub}",
            data=json.dumps(claims).encode(),
            method="PUT",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 204, answer.status
        self.users[sub] = claims

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def provider_start(venv: Path, log_dir: Path) -> MockProvider:
    """Start a provider on a free port and wait for its discovery document."""
    for _attempt in range(3):
        port = _free_port()
        log = log_dir / f"oidc-provider-{port}.log"
        with open(log, "wb") as out:
            command = [str(venv / "bin" / "oidc-provider-mock"), "--host", "127.0.0.1"]
            process = subprocess.Popen(
                [*command, "--port", str(port)],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "NO_COLOR": "1"},
            )
        provider = MockProvider(issuer=f"http://127.0.0.1:{port}", process=process, log=log)
        if _wait_for_discovery(provider):
            return provider
        provider.stop()
    raise RuntimeError(f"oidc-provider-mock did not start; see {log}:\n{log.read_text()[-2000:]}")


def _wait_for_discovery(provider: MockProvider) -> bool:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    url = f"{provider.issuer}/.well-known/openid-configuration"
    while time.monotonic() < deadline:
        if provider.process.poll() is not None:
            return False  # the port was taken in between, say
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return True
        except OSError:
            time.sleep(0.1)
    return False


def running_provider(tmp_dir: Path) -> Iterator[MockProvider]:
    """The body of a session fixture: a provider for this process (skips or fails without a
    3.12+ interpreter), stopped at the end."""
    python = interpreter_find()
    require_service(
        "oidc-provider-mock",
        python is not None,
        "no Python 3.12+ interpreter (set OIDC_MOCK_PYTHON, or put python3.12 on PATH)",
    )
    assert python is not None
    provider = provider_start(venv_ensure(python), tmp_dir)
    try:
        yield provider
    finally:
        provider.stop()


@pytest.fixture(scope="session")
def oidc_provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockProvider]:
    yield from running_provider(tmp_path_factory.mktemp("oidc-provider"))


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def authorize(authorization_url: str, sub: str, *, deny: bool = False) -> str:
    """Submit the provider's authorization form as ``sub`` (what a person does in the browser),
    or press its "Deny access"; the URL it sends the browser back to (the callback, with
    ``code`` and ``state``, or with ``error``)."""
    opener = urllib.request.build_opener(_NoRedirects)
    form = {"action": "deny"} if deny else {"sub": sub}
    request = urllib.request.Request(
        authorization_url, data=urlencode(form).encode(), method="POST"
    )
    try:
        opener.open(request, timeout=10)
    except urllib.error.HTTPError as answer:
        if answer.code in (302, 303):
            return str(answer.headers["Location"])
        raise
    raise AssertionError(f"the provider did not redirect back ({sys.exc_info()})")
