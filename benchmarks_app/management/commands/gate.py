"""Gate a candidate run against a baseline; exits 0 only on pass (for CI pipelines)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmarks_app import gating
from benchmarks_app.management.commands.benchmark_import import import_path, parse_meta
from benchmarks_app.models import BenchmarkRun
from benchmarks_app.services import RunRefused, gate_evaluate, workload_traffic


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
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
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
        gate = gate_evaluate(
            baseline=baseline,
            candidate=candidate,
            mode=options["mode"],
            cold_start_seconds=options["cold_start_seconds"],
            traffic=traffic,
            traffic_source=source,
        )
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "gate_id": gate.pk,
                        "baseline_run": baseline.pk,
                        "candidate_run": candidate.pk,
                        **gate.result,
                    }
                )
            )
        else:
            self.stdout.write(
                f"gate {gate.pk}: {gate.verdict.upper()} - {gate.result.get('summary', '')}"
            )
        self.stdout.flush()
        if gate.verdict != "pass":
            sys.exit(1)
