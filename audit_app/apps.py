from __future__ import annotations

from django.apps import AppConfig


class AuditAppConfig(AppConfig):
    name = "audit_app"
    verbose_name = "Inference spend audit"

    def ready(self) -> None:
        # Registers the OpenAPI description of token auth with drf-spectacular.
        from audit_app.api import schema  # noqa: F401
