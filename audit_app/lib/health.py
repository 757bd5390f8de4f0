"""Health checks for /healthz: can we reach the database and the Celery broker?"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import connection

from config.celery import app as celery_app

logger = logging.getLogger(__name__)

OK = "ok"


@dataclass(frozen=True, kw_only=True)
class HealthReport:
    database: str
    broker: str

    @property
    def healthy(self) -> bool:
        return self.database == OK and self.broker == OK

    def as_dict(self) -> dict[str, str]:
        return {"database": self.database, "broker": self.broker}


def check_database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any failure means "down"; the message says why
        logger.warning("health: database down: %s", exc)
        return f"down: {type(exc).__name__}"
    return OK


def check_broker(*, timeout_seconds: float = 2.0) -> str:
    try:
        with celery_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, timeout=timeout_seconds)
            # Opening a channel proves the transport answers, not only that a socket opened.
            conn.default_channel  # noqa: B018
    except Exception as exc:
        logger.warning("health: broker down: %s", exc)
        return f"down: {type(exc).__name__}"
    return OK


def health_report() -> HealthReport:
    return HealthReport(database=check_database(), broker=check_broker())
