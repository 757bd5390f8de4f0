from __future__ import annotations

from django.apps import AppConfig


class BenchmarksAppConfig(AppConfig):
    name = "benchmarks_app"
    verbose_name = "Benchmark gate"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        # The audit app's pool recommendations prefer a measured throughput; it never imports
        # this app, so this app tells it where to read one...
        from audit_app.recommendations.pool_replicas import measured_throughput_register
        from benchmarks_app.models import BenchmarkRun
        from benchmarks_app.selectors import measured_throughput

        measured_throughput_register(measured_throughput)
        # ...and that a run's fields changed (a new run lands with its upload, which says so).
        post_save.connect(_run_changed, sender=BenchmarkRun, dispatch_uid="results-run")
        post_delete.connect(_run_changed, sender=BenchmarkRun, dispatch_uid="results-d-run")


def _run_changed(**kwargs: object) -> None:
    from audit_app.lib.results_cache import data_changed
    from audit_app.reporting.derived import derived_refresh_request

    data_changed()
    derived_refresh_request()
