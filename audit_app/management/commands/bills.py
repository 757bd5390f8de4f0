"""Print the bills as they stand over current charges (restated exports resolved)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from audit_app.costs.bills import bills_summary


def _money(amounts: dict[str, str]) -> str:
    return ", ".join(f"{currency} {amount}" for currency, amount in amounts.items()) or "-"


class Command(BaseCommand):
    help = (
        "Billed and effective cost per currency over current charges, and each billing period "
        "with the uploads that count for it (several for a split export) and the uploads "
        "they superseded."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")

    def handle(self, *args: Any, **options: Any) -> None:
        data = bills_summary().as_json()
        if options["json"]:
            self.stdout.write(json.dumps(data))
            return
        if not data["periods"]:
            self.stdout.write("No billing export has landed.")
            return
        self.stdout.write(f"billed:    {_money(data['billed_cost'])}")
        if data["scheduled_cost"]:
            self.stdout.write(
                f"scheduled: {_money(data['scheduled_cost'])} (of billed, dated after the last "
                "complete day)"
            )
        self.stdout.write(f"effective: {_money(data['effective_cost'])}")
        self.stdout.write("")
        self.stdout.write(
            f"{'provider':<10} {'account':<24} {'period':<24} {'basis':<9} "
            f"{'billed':<28} {'upload':>6}  superseded"
        )
        for period in data["periods"]:
            superseded = " ".join(str(pk) for pk in period["superseded_upload_ids"]) or "-"
            counting = ",".join(str(pk) for pk in period["upload_ids"])  # several: a split export
            span = f"{period['period_start']}..{period['period_end']}"
            self.stdout.write(
                f"{period['provider'][:10]:<10} {period['account'][-24:]:<24} {span:<24} "
                f"{period['cost_basis']:<9} {_money(period['billed_cost'])[:28]:<28} "
                f"{counting:>6}  {superseded}"
            )
