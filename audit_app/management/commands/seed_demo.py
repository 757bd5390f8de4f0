"""Load demo data for the embedded default: demo accounts, a month of realistic logs (one spend
anomaly of each cause planted in its last week), a benchmark sweep pair (H100 against
Trainium2) with its gate, and a few budgets.

Only with DEBUG on: the accounts have published passwords.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit_app.demo.benchmarks import DemoBenchmarks
from audit_app.demo.seed import demo_data_load, demo_users_ensure
from audit_app.derived import derived_refresh
from audit_app.lib.formatting import money
from audit_app.models import Budget


class Command(BaseCommand):
    help = (
        "Create one demo user per role, and (once) write a demo organisation's LiteLLM and "
        "OpenTelemetry logs and ingest them through the upload path, and a vLLM benchmark sweep "
        "pair imported as two runs with a gate over them. DEBUG only."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--days", type=int, default=30)
        parser.add_argument(
            "--workloads",
            type=int,
            default=None,
            help="How many of the demo workloads (default: all 13).",
        )
        parser.add_argument(
            "--scale", type=float, default=0.02, help="Traffic scale (1.0 is ~190k requests a day)."
        )
        parser.add_argument("--users-only", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.DEBUG:
            raise CommandError(
                "seed_demo creates accounts with published passwords, so it runs only with "
                "DJANGO_DEBUG=true."
            )
        if options["days"] < 1 or options["scale"] <= 0:
            raise CommandError("--days must be at least 1 and --scale above 0")
        accounts = demo_users_ensure()
        self.stdout.write("Demo accounts (DEBUG only; passwords are public):")
        for account in accounts:
            self.stdout.write(
                f"  {account.role:<9} username: {account.username:<9} password: {account.password}"
            )
        if options["users_only"]:
            return
        result = demo_data_load(
            days=options["days"],
            workloads=options["workloads"],
            scale=options["scale"],
            directory=Path(settings.VAR_DIR) / "demo",
        )
        # Classes and recommendations once everything is in (logs, the bill and its pools, the
        # benchmark runs that measure real-time moves), before the command returns.
        derived_refresh()
        if result.skipped:
            self.stdout.write("Demo data already loaded.")
            self._benchmarks(result.benchmarks)
            self._budgets(result.budgets)
            return
        for upload in result.uploads:
            unit = "billing lines" if upload.kind == upload.Kind.BILLING else "requests"
            self.stdout.write(
                f"Demo upload {upload.pk} {upload.original_name}: {upload.status}, "
                f"{upload.rows_accepted} {unit}"
            )
        if result.planted is not None:
            self.stdout.write(
                f"Planted for the reconciliation page: {result.planted.provider} "
                f"{result.planted.model} on {result.planted.day} is billed "
                f"{result.planted.factor} x its logged cost."
            )
        for planted in result.anomalies:
            self.stdout.write(f"Planted for the anomalies page: {planted.describe()}.")
        self._benchmarks(result.benchmarks)
        self._budgets(result.budgets)

    def _budgets(self, budgets: tuple[Budget, ...]) -> None:
        """The demo budgets this call created (nothing when they were there before)."""
        for budget in budgets:
            self.stdout.write(
                f"Demo budget {budget.pk} {budget.name}: "
                f"{money(budget.amount_usd)} a {budget.period}"
            )

    def _benchmarks(self, loaded: DemoBenchmarks | None) -> None:
        """The benchmark runs and gate this call loaded (nothing when they were there before)."""
        if loaded is None or loaded.gate is None:
            return
        for run in (loaded.baseline, loaded.candidate):
            if run is not None:
                self.stdout.write(
                    f"Demo benchmark run {run.pk} {run.name}: {run.points.count()} points"
                )
        gate = loaded.gate
        self.stdout.write(f"Demo gate {gate.pk}: {gate.verdict} - {gate.result.get('summary', '')}")
