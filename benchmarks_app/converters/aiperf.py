"""AIPerf `profile_export_aiperf.json` / `.csv` and GenAI-Perf `profile_export_genai_perf.json` /
`.csv` (AIPerf's JSON was designed to mimic GenAI-Perf's, so one module reads both).

Its rules in full: `docs/formats.md`, section "AIPerf and GenAI-Perf exports".
"""

from __future__ import annotations

import csv
import io
import re
import statistics
from collections.abc import Mapping
from typing import Any

from benchmarks_app.artifacts import ArtifactError, BenchmarkArtifact
from benchmarks_app.converters.base import (
    UNKNOWN_LOAD,
    Load,
    ToolConverter,
    check_per_second,
    decode_text,
    epoch_seconds,
    failure_assumption,
    has_json_key,
    head_text,
    load_json,
    ms_per_unit,
    no_window,
    rate_text,
    require_object,
    to_float,
    to_int,
)

AIPERF = "aiperf"
GENAI_PERF_TOOL = "genai-perf"

# tool metric -> contract metric (latency distributions)
LATENCY_METRICS = {
    "time_to_first_token": "ttft",
    "inter_token_latency": "tpot",
    "inter_chunk_latency": "itl",
    "request_latency": "e2e",
}
STATS = {"mean": "avg", "p50": "p50", "p95": "p95", "p99": "p99"}
RATES = {"output_token_throughput": "output_tokens_per_s", "request_throughput": "requests_per_s"}
SHAPE_KEYS = (
    "request_latency",
    "time_to_first_token",
    "request_throughput",
    "output_token_throughput",
)
_METRIC_OBJECT = re.compile(r'"(' + "|".join(SHAPE_KEYS) + r')"\s*:\s*\{')
_DISPLAY_NAME = re.compile(r"^(?P<name>.*?)\s*\((?P<unit>[^()]*)\)\s*$")


def sniff(data: bytes, filename: str) -> bool:
    """An AIPerf or GenAI-Perf aggregate export, JSON or CSV."""
    head = head_text(data)
    if head.startswith("{"):
        return bool(_METRIC_OBJECT.search(head))
    first = head.split("\n", 1)[0].strip().lower().replace(" ", "")
    return first.startswith("metric,avg,")


def sniff_genai_perf(data: bytes, filename: str) -> bool:
    return sniff(data, filename) and _tool(head_text(data), filename) == GENAI_PERF_TOOL


def convert(data: bytes, *, filename: str) -> BenchmarkArtifact:
    return _convert(data, filename=filename, tool=_tool(head_text(data), filename))


def convert_genai_perf(data: bytes, *, filename: str) -> BenchmarkArtifact:
    return _convert(data, filename=filename, tool=GENAI_PERF_TOOL)


GENAI_PERF = ToolConverter(name=GENAI_PERF_TOOL, sniff=sniff_genai_perf, convert=convert_genai_perf)


def _tool(head: str, filename: str) -> str:
    name = filename.lower()
    if "aiperf" in name or has_json_key(head, "aiperf_version"):
        return AIPERF
    if "genai_perf" in name or "genai-perf" in name or has_json_key(head, "perf_analyzer"):
        return GENAI_PERF_TOOL
    # GenAI-Perf's CSV puts p99 first; AIPerf's follows STAT_KEYS (p1, p5, …).
    first = head.split("\n", 1)[0].strip().lower().replace(" ", "")
    if first.startswith("metric,avg,min,max,p99"):
        return GENAI_PERF_TOOL
    return AIPERF


# ---------------------------------------------------------------------------------------------
# Reading into one table: metric -> {"unit": …, "avg": …, "p50": …}
# ---------------------------------------------------------------------------------------------


def _convert(data: bytes, *, filename: str, tool: str) -> BenchmarkArtifact:
    head = head_text(data)
    export: Mapping[str, Any]
    table: Mapping[str, Mapping[str, Any]]
    if head.startswith("{"):
        export = require_object(load_json(data), "the file")
        table = {
            name: value
            for name, value in export.items()
            if isinstance(value, Mapping) and name not in ("input_config", "telemetry_stats")
        }
    elif head.lower().startswith("metric"):
        export = {}
        table = _read_csv(decode_text(data))
    else:
        raise ArtifactError(
            f"not a {tool} export: expected a JSON object of metrics or a CSV starting with "
            "`Metric,avg,…`"
        )
    if not any(name in table for name in (*LATENCY_METRICS, *RATES)):
        raise ArtifactError(
            "no request_latency, time_to_first_token or output_token_throughput metric found"
        )
    return _artifact(tool, export, table)


def _read_csv(text: str) -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = {}
    header: list[str] | None = None
    for line_number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        cells = [cell.strip() for cell in row]
        if not any(cells):
            header = None
            continue
        if cells[0].lower() == "metric":
            header = [cell.lower() for cell in cells]
            continue
        if header is None or "gpu" in header:
            continue  # telemetry sections and titles are not read here
        if len(cells) > len(header):
            raise ArtifactError(
                f"line {line_number}: {len(cells)} cells under a {len(header)}-column header "
                "(a number with a thousands separator must be quoted)"
            )
        name, unit = _split_display_name(cells[0])
        entry: dict[str, Any] = {"unit": unit}
        for column, cell in zip(header[1:], cells[1:], strict=False):
            entry["avg" if column == "value" else column] = cell
        table[name] = entry
    if not table:
        raise ArtifactError("line 1: the CSV has no metric rows under a `Metric,…` header")
    return table


def _split_display_name(cell: str) -> tuple[str, str | None]:
    """Split a display name: `Time To First Token (ms)` -> ("time_to_first_token", "ms")."""
    match = _DISPLAY_NAME.match(cell)
    name, unit = (match["name"], match["unit"]) if match else (cell, None)
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_"), unit


# ---------------------------------------------------------------------------------------------
# Table -> artifact
# ---------------------------------------------------------------------------------------------


def _artifact(tool: str, export: Mapping[str, Any], table: Mapping[str, Any]) -> BenchmarkArtifact:
    assumptions: list[str] = []
    reported = _reported(tool, table, assumptions)
    found = export.get("input_config")
    config: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    completed = _single_int(table, "request_count")
    failed = _failures(export, table)
    failures = failure_assumption(failed, completed)
    if failures:
        assumptions.append(failures)
    metadata = _data_metadata(config)
    utilization = _gpu_utilization(export.get("telemetry_stats"))
    if utilization is not None:
        metadata["gpu_utilization_pct"] = f"{utilization:.2f}"
    load = _load(config, assumptions)
    started, ended = _window(export, assumptions)
    return BenchmarkArtifact(
        tool=tool,
        tool_version=str(export.get("aiperf_version") or ""),
        model=_model(config),
        duration_s=_duration_s(table),
        completed_requests=completed,
        failed_requests=failed,
        total_input_tokens=_single_int(table, "total_isl"),
        total_output_tokens=_single_int(table, "total_osl", "total_output_tokens"),
        request_rate=load.request_rate,
        max_concurrency=load.max_concurrency,
        reported=reported,
        metadata=metadata,
        assumptions=tuple(assumptions),
        label=load.label,
        load_known=load.known,
        started_at_s=started,
        ended_at_s=ended,
    )


def _reported(tool: str, table: Mapping[str, Any], assumptions: list[str]) -> dict[str, float]:
    """The latency statistics in ms and the two rates per second."""
    reported: dict[str, float] = {}
    unitless = []
    for name, metric in LATENCY_METRICS.items():
        entry = table.get(name)
        if not isinstance(entry, Mapping):
            continue
        unit = entry.get("unit")
        if unit in (None, ""):
            unitless.append(name)
            scale = 1.0
        else:
            scale = ms_per_unit(unit, f"{name}.unit")
        for stat, key in STATS.items():
            value = to_float(entry.get(key), f"{name}.{key}")
            if value is not None:
                reported[f"{metric}_{stat}_ms"] = value * scale
    if unitless:
        assumptions.append(
            f"{', '.join(unitless)} had no unit; read as milliseconds, the tool's display unit."
        )
    if "ttft_mean_ms" not in reported:
        assumptions.append(
            "The file has no time_to_first_token (a non-streaming run?), so TTFT and TPOT are "
            "absent."
        )
    elif "tpot_mean_ms" in reported:
        assumptions.append(
            f"TPOT is {tool}'s inter_token_latency ((latency − TTFT) / (output tokens − 1))."
        )
    for name, key in RATES.items():
        entry = table.get(name)
        if not isinstance(entry, Mapping):
            continue
        if entry.get("unit"):
            check_per_second(entry["unit"], f"{name}.unit")
        value = to_float(entry.get("avg"), f"{name}.avg")
        if value is not None:
            reported[key] = value
    return reported


def _failures(export: Mapping[str, Any], table: Mapping[str, Any]) -> int | None:
    """`error_request_count`, else the sum of `error_summary[].count` (an empty summary = 0)."""
    failed = _single_int(table, "error_request_count")
    summary = export.get("error_summary")
    if failed is not None or not isinstance(summary, list):
        return failed
    total = 0
    for index, item in enumerate(summary):
        entry = require_object(item, f"`error_summary[{index}]`")
        count = to_int(entry.get("count"), f"error_summary[{index}].count")
        if count is None:
            raise ArtifactError(f"`error_summary[{index}].count` is missing")
        total += count
    return total


def _load(config: Mapping[str, Any], assumptions: list[str]) -> Load:
    """The load from the export's input config: AIPerf ≥ 0.8 `phases` (the profiling ones), else
    `loadgen` / `runtime` (AIPerf), `perf_analyzer.stimulus` or the top level (GenAI-Perf)."""
    phases = config.get("phases")
    if isinstance(phases, list):
        profiling = [
            (index, phase)
            for index, phase in enumerate(phases)
            if isinstance(phase, Mapping) and (phase.get("kind") or phase.get("name")) != "warmup"
        ]
        if len(profiling) > 1:
            assumptions.append(
                f"The run has {len(profiling)} profiling phases; the load of the first is shown."
            )
        if profiling:
            index, phase = profiling[0]
            return _phase_load(phase, f"input_config.phases[{index}]")
    for path in (("loadgen",), ("runtime",), ("perf_analyzer", "stimulus"), ()):
        holder: Any = config
        for part in path:
            holder = holder.get(part) if isinstance(holder, Mapping) else None
        if not isinstance(holder, Mapping):
            continue
        where = ".".join(("input_config", *path))
        rate = to_float(holder.get("request_rate"), f"{where}.request_rate")
        concurrency = to_int(holder.get("concurrency"), f"{where}.concurrency")
        if rate is not None:
            mode = str(holder.get("request_rate_mode") or "").lower()
            label = f"{mode} {rate_text(rate)} req/s" if mode else f"{rate_text(rate)} req/s"
            return Load(label=label, request_rate=rate, max_concurrency=concurrency)
        if concurrency is not None:
            return Load(label=f"concurrency {concurrency}", max_concurrency=concurrency)
    return UNKNOWN_LOAD


def _phase_load(phase: Mapping[str, Any], where: str) -> Load:
    """One AIPerf phase: `concurrency` type → its concurrency; poisson / gamma / constant /
    user_centric → `rate` req/s (`concurrency` is then a cap); fixed_schedule replays a trace."""
    kind = str(phase.get("type") or "")
    concurrency = to_int(phase.get("concurrency"), f"{where}.concurrency")
    if kind == "concurrency":
        concurrency = 1 if concurrency is None else concurrency  # AIPerf's default
        return Load(label=f"concurrency {concurrency}", max_concurrency=concurrency)
    rate = to_float(phase.get("rate"), f"{where}.rate")
    if rate is not None:
        label = f"{kind.replace('_', ' ')} {rate_text(rate)} req/s".strip()
        return Load(label=label, request_rate=rate, max_concurrency=concurrency)
    return Load(label=kind.replace("_", " "), known=False, max_concurrency=concurrency)


def _data_metadata(config: Mapping[str, Any]) -> dict[str, str]:
    """`dataset`, `input_len`, `output_len` from the data settings: AIPerf ≥ 0.8 `datasets[0]`
    (synthetic `prompts.isl` / `osl`, a file `path`, a public `dataset`), older AIPerf
    `input.prompt.input_tokens.mean` / `output_tokens.mean`, `input.public_dataset` / `file`,
    GenAI-Perf `synthetic_input_tokens_mean` / `output_tokens_mean` (−1 = not set)."""
    datasets = config.get("datasets")
    if isinstance(datasets, list) and datasets and isinstance(datasets[0], Mapping):
        first = datasets[0]
        if first.get("type") == "synthetic":
            prompts = first.get("prompts")
            prompts = prompts if isinstance(prompts, Mapping) else {}
            lengths = {
                "input_len": _mean_length(prompts.get("isl"), "datasets[0].prompts.isl"),
                "output_len": _mean_length(prompts.get("osl"), "datasets[0].prompts.osl"),
            }
            return {"dataset": "synthetic", **{k: v for k, v in lengths.items() if v}}
        name = first.get("path") or first.get("dataset")
        return {"dataset": str(name)} if name else {}
    section = config.get("input")
    section = section if isinstance(section, Mapping) else {}
    prompt = section.get("prompt")
    prompt = prompt if isinstance(prompt, Mapping) else {}
    found = {
        "dataset": section.get("public_dataset")
        or section.get("file")
        or config.get("input_dataset"),
        "input_len": _mean_length(prompt.get("input_tokens"), "input.prompt.input_tokens")
        or _mean_length(config.get("synthetic_input_tokens_mean"), "synthetic_input_tokens_mean"),
        "output_len": _mean_length(prompt.get("output_tokens"), "input.prompt.output_tokens")
        or _mean_length(config.get("output_tokens_mean"), "output_tokens_mean"),
    }
    return {key: str(value) for key, value in found.items() if value}


def _mean_length(value: Any, field: str) -> str | None:
    """A configured token length: a number or `{"mean": …}`; None when absent or not set (< 0)."""
    if isinstance(value, Mapping):
        value, field = value.get("mean"), f"{field}.mean"
    number = to_float(value, field)
    return None if number is None or number < 0 else f"{number:g}"


def _window(export: Mapping[str, Any], assumptions: list[str]) -> tuple[float | None, float | None]:
    """`start_time` / `end_time` in epoch seconds. AIPerf writes them without a time zone (the
    machine's local time); those are read as UTC, as nvidia-smi timestamps are, and said. A time
    that cannot be read leaves the point without a window, said too."""
    times: list[float | None] = []
    naive = False
    for key in ("start_time", "end_time"):
        value = export.get(key)
        if value in (None, ""):
            times.append(None)
            continue
        found = epoch_seconds(value)
        if found is None:
            assumptions.append(no_window(key, value))
            return None, None
        times.append(found[0])
        naive = naive or not found[1]
    if naive:
        assumptions.append(
            "start_time / end_time carry no time zone (AIPerf writes the machine's local time); "
            "they were read as UTC."
        )
    return times[0], times[1]


def _single_int(table: Mapping[str, Any], *names: str) -> int | None:
    for name in names:
        entry = table.get(name)
        if isinstance(entry, Mapping):
            value = to_float(entry.get("avg"), f"{name}.avg")
            if value is not None:
                return round(value)
    return None


def _duration_s(table: Mapping[str, Any]) -> float | None:
    entry = table.get("benchmark_duration")
    if not isinstance(entry, Mapping):
        return None
    value = to_float(entry.get("avg"), "benchmark_duration.avg")
    if value is None:
        return None
    return value * ms_per_unit(entry.get("unit") or "s", "benchmark_duration.unit") / 1000.0


def _model(config: Mapping[str, Any]) -> str:
    models = config.get("models")  # AIPerf ≥ 0.8: {"items": [{"name": …}]}
    if isinstance(models, Mapping) and isinstance(models.get("items"), list) and models["items"]:
        first = models["items"][0]
        if isinstance(first, Mapping) and first.get("name"):
            return str(first["name"])
    endpoint = config.get("endpoint")
    for holder in (config, endpoint if isinstance(endpoint, Mapping) else {}):
        names = holder.get("model_names")
        if isinstance(names, list) and names:
            return str(names[0])
    return ""


def _gpu_utilization(telemetry: Any) -> float | None:
    if not isinstance(telemetry, Mapping):
        return None
    utilization = telemetry.get("gpu_utilization")
    if not isinstance(utilization, Mapping):
        return None
    # Two layouts are seen: {"avg": {"gpu0": …}, …} and {"gpu0": {"avg": …}, …}.
    by_stat = utilization.get("avg")
    if isinstance(by_stat, Mapping):
        per_gpu = dict(by_stat)
    else:
        per_gpu = {
            gpu: stats.get("avg")
            for gpu, stats in utilization.items()
            if gpu != "unit" and isinstance(stats, Mapping)
        }
    averages = [
        value
        for gpu, raw in per_gpu.items()
        if (value := to_float(raw, f"telemetry_stats.gpu_utilization.{gpu}")) is not None
    ]
    return statistics.fmean(averages) if averages else None
