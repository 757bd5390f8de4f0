from __future__ import annotations

from typing import TYPE_CHECKING

from django.apps import AppConfig

if TYPE_CHECKING:
    from audit_app.recommendations.evidence import MeasuredPoint
    from audit_app.recommendations.pool_replicas import MeasuredThroughput


class BenchmarksAppConfig(AppConfig):
    name = "benchmarks_app"
    verbose_name = "Benchmark gate"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        # The audit app's pool recommendations prefer a measured throughput; it never imports
        # this app, so this app tells it where to read one...
        from audit_app.recommendations.pool_replicas import (
            measured_points_register,
            measured_throughput_register,
        )
        from benchmarks_app.models import BenchmarkRun

        measured_throughput_register(_measured_throughput)
        measured_points_register(_measured_points)
        # ...and that a run's fields changed (a new run lands with its upload, which says so).
        post_save.connect(_run_changed, sender=BenchmarkRun, dispatch_uid="results-run")
        post_delete.connect(_run_changed, sender=BenchmarkRun, dispatch_uid="results-d-run")


def _measured_throughput(*, model: str, hardware: str) -> MeasuredThroughput | None:
    """`benchmarks_app.selectors.measured_throughput`, imported on first use: the selectors
    bring numpy and the reporting selectors, which a process that never prices a pool (every
    manage.py command, a worker at start) need not load."""
    from benchmarks_app.selectors import measured_throughput

    return measured_throughput(model=model, hardware=hardware)


def _measured_points(*, model: str, hardware: str) -> list[MeasuredPoint]:
    from benchmarks_app.selectors import measured_points

    return measured_points(model=model, hardware=hardware)


def _run_changed(**kwargs: object) -> None:
    from audit_app.lib.results_cache import data_changed

    data_changed()
