from __future__ import annotations

from django.apps import AppConfig


class AuditAppConfig(AppConfig):
    name = "audit_app"
    verbose_name = "Inference spend audit"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        # Registers the OpenAPI description of token auth with drf-spectacular.
        from audit_app.api import schema  # noqa: F401
        from audit_app.models import PriceCard, ServingPool, Upload

        # Cached results (audit_app.results_cache) start a new data version when what they are
        # computed from changes: an upload that lands or goes, a price card, a serving pool.
        post_save.connect(_upload_saved, sender=Upload, dispatch_uid="results-upload")
        for model in (PriceCard, ServingPool):
            post_save.connect(_changed, sender=model, dispatch_uid=f"results-{model.__name__}")
        for model in (Upload, PriceCard, ServingPool):
            post_delete.connect(_changed, sender=model, dispatch_uid=f"results-d-{model.__name__}")


def _changed(**kwargs: object) -> None:
    from audit_app.results_cache import data_changed

    data_changed()


def _upload_saved(instance: object, **kwargs: object) -> None:
    # Only landing changes what pages show; a new `queued` upload must not wait on the version
    # row while another upload's landing transaction holds it.
    if getattr(instance, "status", None) == "succeeded":
        _changed()
