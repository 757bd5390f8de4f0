"""Re-price recommendations for asynchronous workloads and serving pools and print them."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from audit_app.lib.formatting import money
from audit_app.models import Recommendation
from audit_app.recommendations.plan import plan_read, plan_roles
from audit_app.recommendations.services import recommendations_refresh
from audit_app.reporting.selectors import recommendation_groups


class Command(BaseCommand):
    help = (
        "Recommend cheaper targets for asynchronous workloads and next steps for serving pools "
        "(--json for a JSON list; a pool's recommendation has `pool` set and `workload` null)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        recommendations_refresh()
        read = plan_read()
        roles = plan_roles(read)
        rows = []
        for group in recommendation_groups():
            for r in [group.leader, *group.alternatives, *group.closed]:
                if r is None:
                    continue
                rows.append(
                    {
                        "id": r.pk,
                        "workload": r.workload.name if r.workload else None,
                        "pool": r.pool.name if r.pool else None,
                        "target": r.target,
                        "target_kind": r.target_kind,
                        "current_monthly_usd": str(r.current_monthly_usd),
                        "projected_monthly_usd": str(r.projected_monthly_usd),
                        "savings_monthly_usd": str(r.savings_monthly_usd),
                        "assumptions": r.assumptions,
                        "confidence": r.confidence,
                        "status": r.status,
                        "leads": r.pk in roles and roles[r.pk].leads,
                        "alternative_to": roles[r.pk].alternative_to if r.pk in roles else None,
                        "rank": r.rank,
                        "computed_at": r.computed_at.isoformat() if r.computed_at else None,
                        "data_version": r.data_version,
                        "source_upload_ids": r.source_upload_ids,
                        "details": r.details,
                        "subject": group.name,
                    }
                )
        if options["json"]:
            self.stdout.write(json.dumps(rows))
            return
        status_labels = dict(Recommendation.Status.choices)
        for row in rows:
            marker = "" if row["leads"] else "  (not in the plan) "
            self.stdout.write(
                f"{marker}{row['subject']:<28} -> {row['target'][:48]:<48} "
                f"saves {money(row['savings_monthly_usd'])}/month ({status_labels[row['status']]})"
            )
        plan = read.plan
        self.stdout.write(
            f"savings plan: {money(plan.savings_monthly)}/month of {money(plan.spend_monthly)} "
            "(manage.py plan for its options)"
        )
