"""Import a benchmark artifact as a run: `benchmark_import PATH [--format F] [--meta K=V ...]`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit_app.formats import BENCHMARK_FORMATS
from benchmarks_app.services import RunRefused, benchmark_run_import


def parse_meta(pairs: list[str] | None) -> dict[str, str]:
    meta: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise CommandError(f"--meta expects KEY=VALUE, got {pair!r}")
        meta[key.strip()] = value.strip()
    return meta


class Command(BaseCommand):
    help = "Import a vLLM / GuideLLM / AIPerf / GenAI-Perf / LLMPerf result as a benchmark run."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path")
        parser.add_argument("--format", default="auto", choices=BENCHMARK_FORMATS)
        parser.add_argument(
            "--meta",
            action="append",
            metavar="KEY=VALUE",
            help="Run fields no tool records (model_hash, quantization, "
            "batch_size, num_gpus, gpu_type, usd_per_gpu_hour, ...).",
        )
        parser.add_argument("--telemetry", help="GPU telemetry CSV (nvidia-smi or DCGM).")
        parser.add_argument("--name", default="")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        run = import_path(
            options["path"],
            fmt=options["format"],
            meta=parse_meta(options["meta"]),
            name=options["name"],
            telemetry=options["telemetry"],
        )
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "run_id": run.pk,
                        "tool": run.tool,
                        "model": run.model,
                        "metrics": run.metrics,
                        "fields": run.fields,
                        "assumptions": run.assumptions,
                    }
                )
            )
        else:
            self.stdout.write(f"run {run.pk}: {run.tool} {run.model}")


def import_path(
    path_text: str,
    *,
    fmt: str = "auto",
    meta: dict[str, str] | None = None,
    name: str = "",
    telemetry: str | None = None,
) -> Any:
    path = Path(path_text)
    if not path.is_file():
        raise CommandError(f"{path}: no such file")
    try:
        with open(path, "rb") as source:
            if telemetry:
                with open(telemetry, "rb") as samples:
                    return benchmark_run_import(
                        source=source,
                        filename=path.name,
                        format=fmt,
                        meta=meta,
                        name=name,
                        telemetry=(samples, Path(telemetry).name),
                    )
            return benchmark_run_import(
                source=source, filename=path.name, format=fmt, meta=meta, name=name
            )
    except (RunRefused, OSError) as exc:
        raise CommandError(str(exc)) from None
