"""Import benchmark artifacts as one run (a curve of load points):
`benchmark_import PATH [PATH ...] [--format F] [--meta K=V ...]`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit_app.ingestion.formats import BENCHMARK_FORMATS
from benchmarks_app.forms import meta_from_pairs
from benchmarks_app.runs import RunRefused, benchmark_run_import_path, run_points


class Command(BaseCommand):
    help = "Import a vLLM / GuideLLM / AIPerf / GenAI-Perf / LLMPerf result as a benchmark run."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "paths",
            nargs="+",
            metavar="PATH",
            help="One result file, or several (a sweep: AIPerf folders, one LLMPerf summary per "
            "concurrency) imported together as one run.",
        )
        parser.add_argument("--format", default="auto", choices=BENCHMARK_FORMATS)
        parser.add_argument(
            "--meta",
            action="append",
            metavar="KEY=VALUE",
            help="Run fields no tool records (model_hash, quantization, "
            "batch_size, num_gpus, gpu_type, usd_per_gpu_hour, ...).",
        )
        parser.add_argument(
            "--telemetry",
            help="Accelerator telemetry: nvidia-smi CSV, DCGM text or neuron-monitor JSON.",
        )
        parser.add_argument("--name", default="")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            run = benchmark_run_import_path(
                paths=[Path(p) for p in options["paths"]],
                format=options["format"],
                meta=meta_from_pairs(options["meta"]),
                name=options["name"],
                telemetry=Path(options["telemetry"]) if options["telemetry"] else None,
            )
        except RunRefused as exc:
            raise CommandError(str(exc)) from None
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "run_id": run.pk,
                        "tool": run.tool,
                        "model": run.model,
                        "points": [
                            {
                                "index": p.index,
                                "label": p.label,
                                "load": p.load,
                                "input_len": p.input_len,
                                "output_len": p.output_len,
                                "metrics": p.metrics,
                            }
                            for p in run_points(run)
                        ],
                        "fields": run.fields,
                        "assumptions": run.assumptions,
                    }
                )
            )
        else:
            count = run.points.count()
            self.stdout.write(
                f"run {run.pk}: {run.tool} {run.model}, {count} point{'s' if count != 1 else ''}"
            )
