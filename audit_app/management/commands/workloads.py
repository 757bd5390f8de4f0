"""List workloads with their volume, tokens, spend and p95 latency."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit_app.lib import formatting
from audit_app.lib.query_params import ParameterError
from audit_app.models import Workload
from audit_app.reporting.filters import parse_filters
from audit_app.reporting.spend import spend_report, workload_list
from audit_app.workloads.services import class_summary


class Command(BaseCommand):
    help = (
        "Print workloads (the pages' default window, the 30 days ending on the last complete "
        "day with data, unless --start/--end) as a table or, with --json, a list; "
        "spend_usd = api_spend_usd + gpu_cost_usd."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--start", help="YYYY-MM-DD (default: 29 days before --end)")
        parser.add_argument("--end", help="YYYY-MM-DD (default: the last complete day with data)")

    def handle(self, *args: Any, **options: Any) -> None:
        params = {"start": options["start"] or "", "end": options["end"] or ""}
        try:
            filters = parse_filters(params)
        except ParameterError as exc:
            raise CommandError(str(exc)) from None
        stats = workload_list(filters)
        classes = {
            w.name: w
            for w in Workload.objects.filter(name__in=[s.name for s in stats]).select_related(
                "classification"
            )
        }
        rows = [
            {
                "name": s.name,
                "requests": s.requests,
                "input_tokens": s.input_tokens,
                "output_tokens": s.output_tokens,
                "spend_usd": _usd(s.spend_usd),
                "api_spend_usd": _usd(s.api_spend_usd),
                "gpu_cost_usd": _usd(s.gpu_cost_usd),
                "unpriced_requests": s.unpriced_requests,
                "p95_ttft_ms": formatting.metric(s.ttft.p95_ms),
                "p95_e2e_ms": formatting.metric(s.latency.p95_ms),
                "teams": s.teams,
                "models": s.models,
                **class_summary(classes.get(s.name)),
            }
            for s in stats
        ]
        if options["json"]:
            self.stdout.write(json.dumps(rows))
            return
        report = spend_report(filters)
        self.stdout.write(f"{'workload':<32} {'requests':>10} {'spend':>14} {'p95_e2e_ms':>11}")
        for row in rows:
            p95 = "" if row["p95_e2e_ms"] is None else formatting.count(row["p95_e2e_ms"])
            self.stdout.write(
                f"{row['name'][:32]:<32} {formatting.count(row['requests']):>10} "
                f"{formatting.money(row['spend_usd']):>14} {p95:>11}"
            )
        if report.idle_gpu_usd:
            self.stdout.write(
                f"{'(idle GPU, no workload)':<32} {'':>10} "
                f"{formatting.money(report.idle_gpu_usd):>14}"
            )
        self.stdout.write(f"{'total':<32} {'':>10} {formatting.money(report.total_usd):>14}")


def _usd(amount: Decimal) -> str:
    return str(amount.quantize(Decimal("0.000001")))
