"""Re-price recommendations for asynchronous workloads and print them."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from audit_app.models import Recommendation
from audit_app.services.recommendations import recommendations_refresh


class Command(BaseCommand):
    help = "Recommend cheaper targets for asynchronous workloads (--json for a JSON list)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        recommendations_refresh()
        rows = [
            {
                "id": r.pk,
                "workload": r.workload.name,
                "target": r.target,
                "target_kind": r.target_kind,
                "current_monthly_usd": str(r.current_monthly_usd),
                "projected_monthly_usd": str(r.projected_monthly_usd),
                "savings_monthly_usd": str(r.savings_monthly_usd),
                "assumptions": r.assumptions,
                "confidence": r.confidence,
                "status": r.status,
            }
            for r in Recommendation.objects.select_related("workload")
        ]
        if options["json"]:
            self.stdout.write(json.dumps(rows))
            return
        for row in rows:
            self.stdout.write(
                f"{row['workload']:<28} -> {row['target'][:48]:<48} "
                f"saves ${row['savings_monthly_usd']}/month ({row['status']})"
            )
