"""Which real services this run uses. Under REQUIRE_SERVICES=1 (CI) each must be present."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection


def test_database_is_postgresql_when_configured(postgres_db: Any) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        version = cursor.fetchone()[0]
    assert int(version.split(".")[0]) >= 13


@pytest.mark.redis
def test_redis_answers(redis_url: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url, socket_timeout=2)
    assert client.ping() is True


def test_chromium_is_found(chromium: str) -> None:
    import subprocess

    out = subprocess.run([chromium, "--version"], capture_output=True, text=True, timeout=30)
    assert "Chromium" in out.stdout
