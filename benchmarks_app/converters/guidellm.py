"""GuideLLM report: schema `metadata.version == 2` and the legacy `{"benchmarks": [...]}` (≤ v0.3),
as JSON or YAML.

A report holds one benchmark per strategy/rate; the first is converted and the count is stated
in the assumptions. Statistics are read from `metrics.<metric>.successful` (a distribution with
`mean`, `median`, `percentiles.p95`, `percentiles.p99`; legacy files have no `p50`, so the median
stands in):

- TTFT: `time_to_first_token_ms`.
- TPOT: `inter_token_latency_ms` = (last − first token) / (n − 1), which is DESIGN's TPOT. Never
  `time_per_output_token_ms`: it includes TTFT in current GuideLLM and divides by n in legacy.
- End-to-end: `request_latency`, in **seconds**.
- GuideLLM has no chunk-gap ITL, so the `itl_*` keys stay absent.
- Output tok/s and requests/s follow DESIGN §4.2: successful output tokens (requests) / benchmark
  `duration`. GuideLLM's own `output_tokens_per_second` is a time-weighted rate distribution and
  is quoted in an assumption only.

Per-request lists (`requests.successful`) are sampled by GuideLLM; they become `PerRequest` only
when they hold every successful request, otherwise percentiles would come from a sample.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from benchmarks_app.artifacts import ArtifactError, BenchmarkArtifact, PerRequest
from benchmarks_app.converters.base import (
    decode_text,
    fmt,
    has_json_key,
    head_text,
    load_json,
    relative_starts,
    require_object,
    to_float,
    to_int,
)

TOOL = "guidellm"
YAML_SUFFIXES = (".yaml", ".yml")

# contract metric -> (GuideLLM metric, ms per unit)
METRICS = {
    "ttft": ("time_to_first_token_ms", 1.0),
    "tpot": ("inter_token_latency_ms", 1.0),
    "e2e": ("request_latency", 1000.0),
}


def sniff(data: bytes, filename: str) -> bool:
    head = head_text(data)
    if head.startswith("{"):
        return has_json_key(head, "guidellm_version") or (
            has_json_key(head, "benchmarks") and "generative_benchmark" in head
        )
    if _is_yaml(filename) or head.startswith(("---", "benchmarks:", "metadata:")):
        return bool(re.search(r"^\s*guidellm_version:", head, re.MULTILINE)) or (
            bool(re.search(r"^benchmarks:", head, re.MULTILINE)) and "generative_benchmark" in head
        )
    return False


def convert(data: bytes, *, filename: str) -> BenchmarkArtifact:
    report = require_object(_load(data, filename), "the report")
    benchmarks = report.get("benchmarks")
    if not isinstance(benchmarks, list) or not benchmarks:
        raise ArtifactError("`benchmarks` is missing or empty: the report holds no benchmark")
    benchmark = require_object(benchmarks[0], "`benchmarks[0]`")
    metadata = _v2_metadata(report)
    metrics = benchmark.get("metrics")
    if not isinstance(metrics, Mapping):
        raise ArtifactError("`benchmarks[0].metrics` is missing")

    assumptions = []
    if len(benchmarks) > 1:
        strategies = ", ".join(_strategy_label(b) for b in benchmarks if isinstance(b, Mapping))
        assumptions.append(
            f"The report holds {len(benchmarks)} benchmarks ({strategies}); the first was "
            "converted."
        )
    # v2 keeps the totals under `metrics`, the legacy report beside them.
    totals = metrics.get("request_totals") or benchmark.get("request_totals") or {}
    totals = require_object(totals, "`request_totals`")
    completed = to_int(totals.get("successful"), "request_totals.successful")
    failed = to_int(totals.get("errored"), "request_totals.errored")
    duration = to_float(benchmark.get("duration"), "benchmarks[0].duration")

    reported = _reported_latencies(metrics)
    if "tpot_mean_ms" in reported:
        assumptions.append(
            "TPOT is GuideLLM's inter_token_latency_ms ((last − first token) / (n − 1)); its "
            "time_per_output_token_ms counts the first token differently and was not used."
        )
    total_output = _total_sum(metrics, "output_token_count")
    total_input = _total_sum(metrics, "prompt_token_count")
    if duration:
        if total_output is not None:
            reported["output_tokens_per_s"] = total_output / duration
            assumptions.append(_output_rate_assumption(metrics, total_output, duration))
        if completed is not None:
            reported["requests_per_s"] = completed / duration
    request_rate, max_concurrency = _load_shape(_strategy(benchmark))

    return BenchmarkArtifact(
        tool=TOOL,
        tool_version="" if metadata is None else str(metadata.get("guidellm_version") or ""),
        model=_model(report, benchmark),
        duration_s=duration,
        completed_requests=completed,
        failed_requests=failed,
        total_input_tokens=None if total_input is None else round(total_input),
        total_output_tokens=None if total_output is None else round(total_output),
        request_rate=request_rate,
        max_concurrency=max_concurrency,
        reported=reported,
        per_request=_per_request(benchmark, completed, assumptions),
        assumptions=tuple(assumptions),
    )


def _v2_metadata(report: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The `metadata` of a version 2 report; None for a legacy (unversioned) report. Any other
    version is refused."""
    found = report.get("metadata")
    metadata: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    version = metadata.get("version")
    if version is None:
        return None
    if version != 2:
        raise ArtifactError(
            f"`metadata.version` is {version!r}; this converter reads GuideLLM report version 2 "
            "and the legacy (unversioned) report"
        )
    return metadata


def _reported_latencies(metrics: Mapping[str, Any]) -> dict[str, float]:
    """TTFT, TPOT and end-to-end mean, p50, p95 and p99 in ms, from each metric's successful
    distribution (the median stands in for a missing p50)."""
    reported = {}
    for metric, (name, scale) in METRICS.items():
        summary = _successful(metrics, name)
        if summary is None:
            continue
        percentiles = summary.get("percentiles") or {}
        values = {
            "mean": summary.get("mean"),
            "p50": percentiles.get("p50", summary.get("median")),
            "p95": percentiles.get("p95"),
            "p99": percentiles.get("p99"),
        }
        for stat, value in values.items():
            number = to_float(value, f"metrics.{name}.successful.{stat}")
            if number is not None:
                reported[f"{metric}_{stat}_ms"] = number * scale
    return reported


def _output_rate_assumption(
    metrics: Mapping[str, Any], total_output: float, duration: float
) -> str:
    """How output tok/s was computed, quoting GuideLLM's own time-weighted mean when present."""
    own = _successful(metrics, "output_tokens_per_second") or {}
    own_mean = to_float(own.get("mean"), "metrics.output_tokens_per_second.mean")
    quoted = f" (GuideLLM's time-weighted mean is {fmt(own_mean)})" if own_mean else ""
    return (
        f"Output tok/s = {fmt(total_output)} successful output tokens / "
        f"{fmt(duration)} s benchmark duration{quoted}."
    )


def _load_shape(strategy: Mapping[str, Any]) -> tuple[float | None, int | None]:
    """The request rate (constant or Poisson strategies) or the concurrency (concurrent,
    synchronous) the benchmark ran at."""
    kind = strategy.get("type_")
    if kind in ("constant", "poisson"):
        return to_float(strategy.get("rate"), "strategy.rate"), None
    if kind == "concurrent":
        return None, to_int(strategy.get("streams"), "strategy.streams")
    if kind == "synchronous":
        return None, 1
    return None, None


def _is_yaml(filename: str) -> bool:
    return filename.lower().endswith(YAML_SUFFIXES)


def _load(data: bytes, filename: str) -> Any:
    text = decode_text(data).lstrip()
    if text.startswith(("{", "[")):
        return load_json(data)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or "unreadable"
        raise ArtifactError(f"not valid YAML{where}: {problem}") from None


def _successful(metrics: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    summary = metrics.get(name)
    if not isinstance(summary, Mapping):
        return None
    successful = summary.get("successful")
    return successful if isinstance(successful, Mapping) else None


def _total_sum(metrics: Mapping[str, Any], name: str) -> float | None:
    summary = _successful(metrics, name)
    if summary is None:
        return None
    return to_float(summary.get("total_sum"), f"metrics.{name}.successful.total_sum")


def _strategy(benchmark: Mapping[str, Any]) -> Mapping[str, Any]:
    holder = benchmark.get("config") if "config" in benchmark else benchmark.get("args")
    strategy = holder.get("strategy") if isinstance(holder, Mapping) else None
    return strategy if isinstance(strategy, Mapping) else {}


def _strategy_label(benchmark: Mapping[str, Any]) -> str:
    strategy = _strategy(benchmark)
    kind = str(strategy.get("type_") or "unknown")
    rate = strategy.get("rate") or strategy.get("streams")
    return f"{kind}@{rate}" if rate is not None else kind


def _model(report: Mapping[str, Any], benchmark: Mapping[str, Any]) -> str:
    config = report.get("config")
    spec = config.get("spec") if isinstance(config, Mapping) else None
    backend = spec.get("backend") if isinstance(spec, Mapping) else None
    if isinstance(backend, Mapping) and backend.get("model"):
        return str(backend["model"])
    worker = benchmark.get("worker")  # legacy
    if isinstance(worker, Mapping) and worker.get("backend_model"):
        return str(worker["backend_model"])
    return ""


def _per_request(
    benchmark: Mapping[str, Any], completed: int | None, assumptions: list[str]
) -> PerRequest | None:
    requests = benchmark.get("requests")
    successful = requests.get("successful") if isinstance(requests, Mapping) else None
    if not isinstance(successful, list) or not successful:
        return None
    if completed is not None and len(successful) != completed:
        assumptions.append(
            f"GuideLLM kept {len(successful)} of {completed} successful requests (a sample), so "
            "the per-request lists were not used; percentiles are the report's own."
        )
        return None
    rows = [require_object(row, f"requests.successful[{i}]") for i, row in enumerate(successful)]
    start = to_float(benchmark.get("start_time"), "benchmarks[0].start_time")
    return PerRequest(
        ttft_ms=_column(rows, ("time_to_first_token_ms",), 1.0),
        latency_ms=_column(rows, ("request_latency",), 1000.0),
        output_tokens=tuple(round(v) for v in _column(rows, ("output_tokens",), 1.0)),
        input_tokens=tuple(round(v) for v in _column(rows, ("prompt_tokens",), 1.0)),
        start_s=_starts(rows, start),
    )


def _column(
    rows: Sequence[Mapping[str, Any]], keys: Sequence[str], scale: float
) -> tuple[float, ...]:
    values = []
    for index, row in enumerate(rows):
        key = next((k for k in keys if row.get(k) is not None), None)
        if key is None:
            return ()  # a column only counts when every request has it
        number = to_float(row[key], f"requests.successful[{index}].{key}")
        if number is None:
            return ()
        values.append(number * scale)
    return tuple(values)


def _starts(rows: Sequence[Mapping[str, Any]], start: float | None) -> tuple[float, ...]:
    starts = _column(rows, ("request_start_time", "start_time"), 1.0)
    if not starts:
        return ()
    if start is None:
        return relative_starts(starts)
    return tuple(value - start for value in starts)
