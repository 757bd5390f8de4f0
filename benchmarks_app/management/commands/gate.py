"""Gate a candidate run against a baseline; exits 0 only on pass (for CI pipelines).

Each side is a stored run's id or one or more result files imported together as one curve;
`--meta-baseline` / `--meta-candidate` state run fields (on a run id they complete the stored
run, recorded in the audit trail). `--slo-ttft-ms` / `--slo-tpot-ms` pick each side's operating
point.

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
from benchmarks_app.forms import SCALING_MODES, meta_from_pairs, tolerances_from_pairs
from benchmarks_app.hints import SIDES, meta_option
from benchmarks_app.models import BenchmarkRun, Gate
from benchmarks_app.services import (
    GateLinkRefused,
    GateRefused,
    RunRefused,
    benchmark_run_import_path,
    benchmark_run_update,
    gate_evaluate,
)

# The option each of the service's input fields came from.
OPTIONS = {
    "traffic_csv": "--traffic",
    "traffic_workload": "--traffic-workload",
    "slo_ttft_ms": "--slo-ttft-ms",
    "slo_tpot_ms": "--slo-tpot-ms",
    "tolerances": "--tolerance",
}


def _run(references: list[str], meta_pairs: list[str] | None, option: str) -> BenchmarkRun:
    """A stored run by id (``--meta`` completes its fields, recorded in the audit trail), or the
    files at ``references`` imported together as a new run (one curve)."""
    try:
        meta = meta_from_pairs(meta_pairs)
        ids = [r for r in references if r.isdigit() and not Path(r).exists()]
        if not ids:
            return benchmark_run_import_path(paths=[Path(r) for r in references], meta=meta)
        if len(references) > 1:
            raise CommandError(
                f"{option}: give one run id, or result files to import as one run, not both "
                f"({' '.join(references)})"
            )
        run = BenchmarkRun.objects.filter(pk=int(ids[0])).first()
        if run is None:
            raise CommandError(f"{option}: no benchmark run with id {ids[0]}")
        if meta:
            run = benchmark_run_update(run=run, changes=meta)
        return run
    except RunRefused as exc:
        raise CommandError(f"{option}: {exc}") from None


class Command(BaseCommand):
    help = "Compare --candidate with --baseline (paths or run ids); exit 0 only on pass."

    def add_arguments(self, parser: CommandParser) -> None:
        for side in SIDES:
            parser.add_argument(
                f"--{side}",
                required=True,
                nargs="+",
                metavar="ID|PATH",
                help=f"The {side}: a stored run's id, or one or more result files imported "
                "together as one run (a sweep).",
            )
            parser.add_argument(
                meta_option(side),
                action="append",
                metavar="KEY=VALUE",
                help=f"Run fields of the {side} (num_gpus=8, usd_per_gpu_hour=4, "
                "provider=together, serving=hosted, usd_per_million_output=0.9, …); on a run "
                "id they complete the stored run (recorded in the audit trail).",
            )
        parser.add_argument(
            "--slo-ttft-ms",
            type=float,
            metavar="MS",
            help="p95 TTFT limit: each side's operating point is its highest-throughput point "
            "within the SLO, and its cost per 1M output tokens is the headline comparison.",
        )
        parser.add_argument("--slo-tpot-ms", type=float, metavar="MS", help="p95 TPOT limit.")
        parser.add_argument(
            "--tolerance",
            action="append",
            metavar="METRIC=PERCENT",
            help="Allowed regression of a metric (tpot_p95_ms=25, decode_tokens_per_s=10, …; "
            "error_rate_pct in percentage points); default 0 %%, error rate 0.5 points.",
        )
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
        baseline = _run(options["baseline"], options["meta_baseline"], "--baseline")
        candidate = _run(options["candidate"], options["meta_candidate"], "--candidate")
        try:
            tolerances = tolerances_from_pairs(options["tolerance"] or [])
        except ValueError as exc:
            raise CommandError(f"--tolerance: {exc}") from None
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
                slo_ttft_ms=options["slo_ttft_ms"],
                slo_tpot_ms=options["slo_tpot_ms"],
                tolerances=tolerances or None,
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
            for heading, key in (
                ("unmatched point", "unmatched"),
                ("missing", "missing"),
                ("not applicable", "not_applicable"),
            ):
                for item in gate.result.get(key) or []:
                    text = item if isinstance(item, str) else f"{item['side']} {item['label']}"
                    self.stdout.write(f"  {heading}: {text}")
        self.stdout.flush()
