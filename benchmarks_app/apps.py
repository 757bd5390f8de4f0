from __future__ import annotations

from django.apps import AppConfig


class BenchmarksAppConfig(AppConfig):
    name = "benchmarks_app"
    verbose_name = "Benchmark gate"
