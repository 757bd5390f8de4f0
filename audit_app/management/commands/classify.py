"""Classify every workload with traffic in the last 30 days, then refresh recommendations."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from audit_app.recommendations.services import recommendations_refresh
from audit_app.workloads.services import workloads_classify


class Command(BaseCommand):
    help = "Classify workloads (real-time / async / unknown) and re-price recommendations."

    def handle(self, *args: Any, **options: Any) -> None:
        results = workloads_classify()
        for c in results:
            self.stdout.write(
                f"{c.workload.name:<32} {c.workload_class:<9} {c.confidence:.2f}  "
                f"{c.evidence[0] if c.evidence else ''}"
            )
        recommendations = recommendations_refresh()
        self.stdout.write(
            f"{len(results)} workloads classified; {len(recommendations)} recommendations."
        )
