"""Print every budget with what it has spent in its period, its forecast and its status."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit_app.budgets.status import budget_statuses
from audit_app.lib.query_params import ParameterError, date_param


def _usd(amount: Decimal) -> str:
    return str(amount.quantize(Decimal("0.000001")))


class Command(BaseCommand):
    help = (
        "Print budgets (as a table or, with --json, a list): spent in the period holding "
        "--as-of (default: the last complete day with data; never counted past the last "
        "complete day), the previous period's same days and whole total, the period's "
        "forecast and the status ok | warning | forecast_over | over."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true")
        parser.add_argument(
            "--as-of",
            help="YYYY-MM-DD: the last day counted (default: the last complete day with data)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            as_of = date_param({"as_of": options["as_of"] or ""}, "as_of")
        except ParameterError as exc:
            raise CommandError(str(exc)) from None
        statuses = budget_statuses(as_of)
        rows = [
            {
                "id": s.budget_id,
                "name": s.name,
                "scope": {"kind": s.scope_kind, "value": s.scope_value},
                "period": s.period,
                "amount_usd": str(s.amount_usd),
                "as_of": s.as_of.isoformat(),
                "actual_usd": _usd(s.actual_usd),
                "previous_same_days_usd": _usd(s.previous_same_days_usd),
                "previous_period_usd": _usd(s.previous_period_usd),
                "forecast_usd": _usd(s.forecast_usd),
                "status": s.status,
            }
            for s in statuses
        ]
        if options["json"]:
            self.stdout.write(json.dumps(rows))
            return
        self.stdout.write(
            f"{'budget':<28} {'scope':<24} {'amount_usd':>14} {'actual_usd':>14} "
            f"{'forecast_usd':>14} status"
        )
        for s in statuses:
            scope = s.scope_kind + (f":{s.scope_value}" if s.scope_value else "")
            self.stdout.write(
                f"{s.name[:28]:<28} {scope[:24]:<24} {s.amount_usd!s:>14} "
                f"{_usd(s.actual_usd):>14} {_usd(s.forecast_usd):>14} {s.status}"
            )
