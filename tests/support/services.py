"""Detect the real services tests may use, and decide between skipping and failing."""

from __future__ import annotations

import os
import shutil
import socket
from urllib.parse import urlparse

import pytest

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


def services_required() -> bool:
    return os.environ.get("REQUIRE_SERVICES", "").strip().lower() in {"1", "true", "yes"}


def require_service(name: str, available: bool, reason: str) -> None:
    """Skip (on a laptop) or fail (with REQUIRE_SERVICES=1) when a service is missing."""
    if available:
        return
    message = f"{name} unavailable: {reason}"
    if services_required():
        pytest.fail(f"REQUIRE_SERVICES=1 but {message}", pytrace=False)
    pytest.skip(message)


def database_is_postgresql() -> bool:
    from django.db import connection

    return connection.vendor == "postgresql"


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def redis_broker_url() -> str | None:
    url = os.environ.get("CELERY_BROKER_URL", "")
    if not url.startswith(("redis://", "rediss://")):
        return None
    parsed = urlparse(url)
    if not _port_open(parsed.hostname or "127.0.0.1", parsed.port or 6379):
        return None
    return url


def chromium_path() -> str | None:
    configured = os.environ.get("CHROMIUM_PATH")
    if configured and os.access(configured, os.X_OK):
        return configured
    for candidate in CHROMIUM_CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("chromium")
