"""Print a month's statements per team, or send them to the team owners."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit_app.lib.errors import DomainError
from audit_app.statements.allocation import Method
from audit_app.statements.delivery import statements_send
from audit_app.statements.rows import statement_json, usd
from audit_app.statements.services import month_statement, parse_month, policy_uniform


class Command(BaseCommand):
    help = (
        "Print each team's statement for --month YYYY-MM (default: the last month with data "
        "that is over): direct spend, allocated shared cost, total, volumes and unit costs. "
        "--policy applies one method to every pool instead of the stored policy; --send emails "
        "each team owner the month's statement (once per owner and month)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--month", help="YYYY-MM")
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--policy", choices=[m.value for m in Method])
        parser.add_argument("--owner", default="", help="the owner team for --policy owner")
        parser.add_argument("--send", action="store_true", help="email the team owners")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            first = parse_month(options["month"])
            if options["send"]:
                for outcome in statements_send(month=first):
                    self.stdout.write(f"{outcome.team} → {outcome.target}: {outcome.outcome}")
                return
            policy = (
                policy_uniform(options["policy"], owner=options["owner"])
                if options["policy"]
                else None
            )
            statement = month_statement(first, policy=policy)
        except DomainError as exc:
            raise CommandError(str(exc)) from None
        if options["json"]:
            self.stdout.write(json.dumps(statement_json(statement)))
            return
        self.stdout.write(f"{statement.label}, policy {statement.policy.default.method}")
        self.stdout.write(
            f"{'team':<32} {'direct_usd':>14} {'allocated_usd':>14} {'total_usd':>14}"
        )
        for team in statement.teams:
            bill = team.bill
            self.stdout.write(
                f"{bill.team[:32]:<32} {usd(bill.direct_usd)!s:>14} "
                f"{usd(bill.allocated_usd)!s:>14} {usd(bill.total_usd)!s:>14}"
            )
        self.stdout.write(f"{'total':<32} {'':>14} {'':>14} {usd(statement.total_usd)!s:>14}")
