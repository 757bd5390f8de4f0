from __future__ import annotations

from django.apps import AppConfig


class AuditAppConfig(AppConfig):
    name = "audit_app"
    verbose_name = "Inference spend audit"

    def ready(self) -> None:
        from django.core.signals import request_finished, request_started
        from django.db.models.signals import post_delete, post_save

        from audit_app.lib import results_cache
        from audit_app.models import (
            HardwareTarget,
            PriceCard,
            ServingPool,
            ThroughputAssumption,
            Upload,
            Workload,
            WorkloadOverride,
        )

        # A change to what cached results and derived results (classes, recommendations, the
        # plan, alerts: audit_app.derived) are computed from is recorded in one place,
        # results_cache.data_changed, which also asks for the refresh once it commits: an
        # upload that lands or goes, a price card, a serving pool, a hardware entry, a
        # throughput assumption, a workload's SLO, an override.
        post_save.connect(_upload_saved, sender=Upload, dispatch_uid="results-upload")
        inputs = (PriceCard, ServingPool, HardwareTarget, ThroughputAssumption, WorkloadOverride)
        for model in (*inputs, Workload):
            post_save.connect(_changed, sender=model, dispatch_uid=f"results-{model.__name__}")
        for deleted in (Upload, *inputs, Workload):
            post_delete.connect(
                _changed, sender=deleted, dispatch_uid=f"results-d-{deleted.__name__}"
            )
        # A web request reads the data token once (results_cache, module docstring).
        request_started.connect(results_cache.request_started, dispatch_uid="results-request")
        request_finished.connect(results_cache.request_finished, dispatch_uid="results-request")


def _changed(**kwargs: object) -> None:
    from audit_app.lib.results_cache import data_changed

    data_changed()


def _upload_saved(instance: object, **kwargs: object) -> None:
    # Only landing changes what pages show; a new `queued` upload must not wait on the version
    # row while another upload's landing transaction holds it. A live stream's upload is saved
    # by every micro-batch landing, which moves the data version itself, on the refresh
    # throttle of live landings (`audit_app.ingestion.live.landing`); deleting one is a change
    # like any other (post_delete below).
    if getattr(instance, "stream_source", ""):
        return
    if getattr(instance, "status", None) == "succeeded":
        _changed()
