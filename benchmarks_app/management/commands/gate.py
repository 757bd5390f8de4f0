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
from benchmarks_app.forms import SCALING_MODES, meta_from_pairs
from benchmarks_app.models import BenchmarkRun, Gate
from benchmarks_app.services import (
    GateLinkRefused,
    GateRefused,
    RunRefused,
    benchmark_run_import_path,
    gate_evaluate,
)

# The option each of the service's input fields came from.
OPTIONS = {"traffic_csv": "--traffic", "traffic_workload": "--traffic-workload"}


def _run(reference: str, meta_pairs: list[str] | None) -> BenchmarkRun:
    """A run by id, or the file at ``reference`` imported as a new run."""
    if reference.isdigit() and not Path(reference).exists():
        run = BenchmarkRun.objects.filter(pk=int(reference)).first()
        if run is None:
            raise CommandError(f"no benchmark run with id {reference}")
        return run
    try:
        return benchmark_run_import_path(path=Path(reference), meta=meta_from_pairs(meta_pairs))
    except RunRefused as exc:
        raise CommandError(str(exc)) from None


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
        parser.add_argument("--mode", default=SCALING_MODES[0], choices=SCALING_MODES)
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
        baseline = _run(options["baseline"], options["meta_baseline"])
        candidate = _run(options["candidate"], options["meta_candidate"])
        traffic_csv = ""
        if options["traffic"]:
            try:
                traffic_csv = Path(options["traffic"]).read_text()
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"--traffic: {exc}") from None
        try:
            gate = gate_evaluate(
                baseline=baseline,
                candidate=candidate,
                mode=options["mode"],
                cold_start_seconds=options["cold_start_seconds"],
                traffic_csv=traffic_csv,
                traffic_csv_name=options["traffic"] or "",
                traffic_workload=options["traffic_workload"] or "",
                recommendation=recommendation,
            )
        except GateRefused as exc:
            raise CommandError(f"{OPTIONS.get(exc.field, '--' + exc.field)}: {exc}") from None
        except GateLinkRefused as exc:
            self._report(exc.gate, json_output=options["json"])
            raise CommandError(str(exc)) from None
        self._report(gate, json_output=options["json"])
        if gate.verdict != Gate.Verdict.PASS:
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
