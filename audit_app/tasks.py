"""Celery tasks. Thin: each takes ids, loads objects and calls a service."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="audit_app.ping")
def ping() -> str:
    """Proves a worker is consuming: returns "pong"."""
    return "pong"
