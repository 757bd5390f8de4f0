"""The Celery application.

Configuration comes from Django settings (names prefixed ``CELERY_``), so the same environment
variables drive the web process and the workers.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")

app = Celery("inference_spend_audit")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
