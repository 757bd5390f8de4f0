"""Print the savings plan: the options it holds, its after-state and the options left out."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit_app.lib.formatting import money
from audit_app.lib.query_params import ParameterError
from audit_app.recommendations.plan import plan_as_dict, plan_read, plan_window


class Command(BaseCommand):
    help = (
        "The savings plan over the recommendations' window (or --start/--end): spend now, "
        "after the plan, savings split into open, in progress and realised, and each option "
        "with its evidence, or why it is out (--json: the API's answer)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--start", help="YYYY-MM-DD (default: the analysis window)")
        parser.add_argument("--end", help="YYYY-MM-DD")

    def handle(self, *args: Any, **options: Any) -> None:
        params = {"start": options["start"] or "", "end": options["end"] or ""}
        try:
            start, end = plan_window(params)
        except ParameterError as exc:
            raise CommandError(str(exc)) from None
        plan = plan_as_dict(plan_read(start=start, end=end))
        if options["json"]:
            self.stdout.write(json.dumps(plan))
            return
        usd = {key: money(value) for key, value in plan.items() if key.endswith("_usd")}
        self.stdout.write(
            f"Plan {plan['start']} to {plan['end']}: spend {usd['spend_monthly_usd']}/month, "
            f"after {usd['after_monthly_usd']}, saves {usd['savings_monthly_usd']} "
            f"(open {usd['open_monthly_usd']}, in progress {usd['in_progress_monthly_usd']}, "
            f"realised {usd['realised_monthly_usd']}; waiting for benchmarks "
            f"{usd['needs_benchmark_monthly_usd']})"
        )
        for row in plan["options"]:
            subject = row["workload"] or f"pool {row['from_pool']}"
            where = "in plan" if row["in_plan"] else f"out: {row['out_reason']}"
            self.stdout.write(
                f"  #{row['id']} {subject[:28]:<28} -> {row['target'][:48]:<48} "
                f"{money(row['savings_monthly_usd']):>13}/month [{row['evidence']}] {where}"
            )
