"""Gate a candidate run against a baseline; exits 0 only on pass (for CI pipelines).

With --recommendation the gate verifies that recommendation when the runs match it
(`benchmarks_app.matching`); when they do not, the gate is still recorded and printed, and the
command fails with the same sentence the page and the API show.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit_app.models import Recommendation
from benchmarks_app import gating
from benchmarks_app.management.commands.benchmark_import import import_path, parse_meta
from benchmarks_app.models import BenchmarkRun, Gate
from benchmarks_app.services import GateLinkRefused, RunRefused, gate_evaluate, workload_traffic


def _run(reference: str, meta: dict[str, str]) -> BenchmarkRun:
    if reference.isdigit() and not Path(reference).exists():
        run = BenchmarkRun.objects.filter(pk=int(reference)).first()
        if run is None:
            raise CommandError(f"no benchmark run with id {reference}")
        return run
    return import_path(reference, meta=meta)


class Command(BaseCommand):
    help = "Compare --candidate with --baseline (paths or run ids); exit 0 only on pass."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--baseline", required=True)
        parser.add_argument("--candidate", required=True)
        parser.add_argument("--meta-baseline", action="append", metavar="KEY=VALUE")
        parser.add_argument("--meta-candidate", action="append", metavar="KEY=VALUE")
        parser.add_argument("--traffic", help="CSV with hour,output_tokens")
        parser.add_argument(
            "--traffic-workload",
            metavar="NAME",
            help="Price both runs on this workload's last 30 days of traffic.",
        )
        parser.add_argument(
            "--mode", default="always_on", choices=["always_on", "autoscale", "scale_to_zero"]
        )
        parser.add_argument("--cold-start-seconds", type=float, default=0.0)
        parser.add_argument(
            "--recommendation",
            type=int,
            metavar="ID",
            help="Verify this recommendation (approved for a pilot) on a pass, fail it on a fail.",
        )
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        recommendation = None
        if options["recommendation"] is not None:
            recommendation = Recommendation.objects.filter(pk=options["recommendation"]).first()
            if recommendation is None:
                raise CommandError(f"no recommendation with id {options['recommendation']}")
        baseline = _run(options["baseline"], parse_meta(options["meta_baseline"]))
        candidate = _run(options["candidate"], parse_meta(options["meta_candidate"]))
        traffic = None
        if options["traffic"]:
            try:
                traffic = gating.parse_traffic_csv(Path(options["traffic"]).read_text())
            except (OSError, ValueError) as exc:
                raise CommandError(f"--traffic: {exc}") from None
        source = options["traffic"] or ""
        if options["traffic_workload"]:
            try:
                traffic, source = workload_traffic(options["traffic_workload"])
            except RunRefused as exc:
                raise CommandError(f"--traffic-workload: {exc}") from None
        try:
            gate = gate_evaluate(
                baseline=baseline,
                candidate=candidate,
                mode=options["mode"],
                cold_start_seconds=options["cold_start_seconds"],
                traffic=traffic,
                traffic_source=source,
                recommendation=recommendation,
            )
        except GateLinkRefused as exc:
            self._report(exc.gate, json_output=options["json"])
            raise CommandError(str(exc)) from None
        self._report(gate, json_output=options["json"])
        if gate.verdict != "pass":
            sys.exit(1)

    def _report(self, gate: Gate, *, json_output: bool) -> None:
        if json_output:
            self.stdout.write(
                json.dumps(
                    {
                        "gate_id": gate.pk,
                        "baseline_run": gate.baseline_id,
                        "candidate_run": gate.candidate_id,
                        **gate.result,
                    }
                )
            )
        else:
            self.stdout.write(
                f"gate {gate.pk}: {gate.verdict.upper()} - {gate.result.get('summary', '')}"
            )
        self.stdout.flush()
