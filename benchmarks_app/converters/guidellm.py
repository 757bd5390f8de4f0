"""GuideLLM report: schema `metadata.version == 2` and the legacy `{"benchmarks": [...]}` (≤ v0.3),
as JSON or YAML.

Its rules in full: `docs/formats.md`, section "GuideLLM reports".
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from benchmarks_app.artifacts import ArtifactError, BenchmarkArtifact, PerRequest
from benchmarks_app.converters.base import (
    Load,
    decode_text,
    failure_assumption,
    fmt,
    has_json_key,
    head_text,
    load_json,
    rate_text,
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
# Synthetic data settings -> metadata keys (v2 `config.spec.data[]`, legacy `data` string).
LENGTH_KEYS = {"prompt_tokens": "input_len", "output_tokens": "output_len"}


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
    """The report's first benchmark (`convert_points` gives every one)."""
    return convert_points(data, filename=filename)[0]


def convert_points(data: bytes, *, filename: str) -> tuple[BenchmarkArtifact, ...]:
    """One artifact per benchmark of the report, in the report's order."""
    report = require_object(_load(data, filename), "the report")
    benchmarks = report.get("benchmarks")
    if not isinstance(benchmarks, list) or not benchmarks:
        raise ArtifactError("`benchmarks` is missing or empty: the report holds no benchmark")
    metadata = _v2_metadata(report)
    version = "" if metadata is None else str(metadata.get("guidellm_version") or "")
    return tuple(
        _point(
            report,
            require_object(benchmark, f"`benchmarks[{index}]`"),
            where=f"benchmarks[{index}]",
            version=version,
        )
        for index, benchmark in enumerate(benchmarks)
    )


def _point(
    report: Mapping[str, Any], benchmark: Mapping[str, Any], *, where: str, version: str
) -> BenchmarkArtifact:
    """One benchmark (one strategy / rate) of the report as one load point."""
    metrics = benchmark.get("metrics")
    if not isinstance(metrics, Mapping):
        raise ArtifactError(f"`{where}.metrics` is missing")
    completed, failed = _request_counts(benchmark, metrics, where)
    duration = to_float(benchmark.get("duration"), f"{where}.duration")

    assumptions = []
    reported = _reported_latencies(metrics, f"{where}.metrics")
    if "tpot_mean_ms" in reported:
        assumptions.append(
            "TPOT is GuideLLM's inter_token_latency_ms ((last − first token) / (n − 1)); its "
            "time_per_output_token_ms counts the first token differently and was not used."
        )
    total_output = _total_sum(metrics, "output_token_count", f"{where}.metrics")
    total_input = _total_sum(metrics, "prompt_token_count", f"{where}.metrics")
    if duration:
        if total_output is not None:
            reported["output_tokens_per_s"] = total_output / duration
            assumptions.append(_output_rate_assumption(metrics, total_output, duration, where))
        if completed is not None:
            reported["requests_per_s"] = completed / duration
    failures = failure_assumption(failed, completed)
    if failures:
        assumptions.append(failures)
    load = _load_shape(benchmark, where)

    return BenchmarkArtifact(
        tool=TOOL,
        tool_version=version,
        model=_model(report, benchmark),
        duration_s=duration,
        completed_requests=completed,
        failed_requests=failed,
        total_input_tokens=None if total_input is None else round(total_input),
        total_output_tokens=None if total_output is None else round(total_output),
        request_rate=load.request_rate,
        max_concurrency=load.max_concurrency,
        reported=reported,
        per_request=_per_request(benchmark, completed, assumptions, where),
        metadata=_data_metadata(report, benchmark),
        assumptions=tuple(assumptions),
        label=load.label,
        load_known=load.known,
        started_at_s=to_float(benchmark.get("start_time"), f"{where}.start_time"),
        ended_at_s=to_float(benchmark.get("end_time"), f"{where}.end_time"),
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


def _request_counts(
    benchmark: Mapping[str, Any], metrics: Mapping[str, Any], where: str
) -> tuple[int | None, int | None]:
    """(successful, errored) requests of one benchmark: `request_totals` (under `metrics` in v2,
    beside them in the legacy report), else the scheduler's `requests_made`."""
    candidates = (
        (metrics, "request_totals", f"{where}.metrics.request_totals"),
        (benchmark, "request_totals", f"{where}.request_totals"),
        (benchmark.get("scheduler_metrics"), "requests_made", f"{where}.scheduler_metrics"),
        (benchmark.get("run_stats"), "requests_made", f"{where}.run_stats"),
    )
    for holder, key, field in candidates:
        if isinstance(holder, Mapping) and holder.get(key) is not None:
            if key == "requests_made":
                field = f"{field}.requests_made"
            totals = require_object(holder[key], f"`{field}`")
            return (
                to_int(totals.get("successful"), f"{field}.successful"),
                to_int(totals.get("errored"), f"{field}.errored"),
            )
    return None, None


def _reported_latencies(metrics: Mapping[str, Any], where: str) -> dict[str, float]:
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
            number = to_float(value, f"{where}.{name}.successful.{stat}")
            if number is not None:
                reported[f"{metric}_{stat}_ms"] = number * scale
    return reported


def _output_rate_assumption(
    metrics: Mapping[str, Any], total_output: float, duration: float, where: str
) -> str:
    """How output tok/s was computed, quoting GuideLLM's own time-weighted mean when present."""
    own = _successful(metrics, "output_tokens_per_second") or {}
    own_mean = to_float(own.get("mean"), f"{where}.metrics.output_tokens_per_second.mean")
    quoted = f" (GuideLLM's time-weighted mean is {fmt(own_mean)})" if own_mean else ""
    return (
        f"Output tok/s = {fmt(total_output)} successful output tokens / "
        f"{fmt(duration)} s benchmark duration{quoted}."
    )


def _load_shape(benchmark: Mapping[str, Any], where: str) -> Load:
    """The load of one benchmark, from its strategy (see the module docstring)."""
    strategy = _strategy(benchmark)
    kind = str(strategy.get("type_") or "")
    field = f"{where}.{'config' if 'config' in benchmark else 'args'}.strategy"
    if kind == "synchronous":
        return Load(label="synchronous", max_concurrency=1)
    if kind == "concurrent":
        streams = to_int(strategy.get("streams"), f"{field}.streams")
        if streams is None:
            raise ArtifactError(f"`{field}.streams` is missing from the concurrent strategy")
        return Load(label=f"concurrency {streams}", max_concurrency=streams)
    if kind == "throughput":
        return Load(label="throughput", max_concurrency=_throughput_cap(benchmark, strategy, field))
    if kind in ("constant", "poisson"):
        rate = to_float(strategy.get("rate"), f"{field}.rate")
        if rate is None:
            raise ArtifactError(f"`{field}.rate` is missing from the {kind} strategy")
        return Load(label=f"{kind} {rate_text(rate)} req/s", request_rate=rate)
    return Load(label=kind, known=False)


def _throughput_cap(
    benchmark: Mapping[str, Any], strategy: Mapping[str, Any], field: str
) -> int | None:
    """The concurrency cap the user set on a throughput benchmark. In v2 the strategy's own
    `max_concurrency` is filled with the scheduler's process limit, so only the profile's is the
    user's; the legacy strategy holds the user's value itself."""
    config = benchmark.get("config")
    if isinstance(config, Mapping):
        profile = config.get("profile")
        cap = profile.get("max_concurrency") if isinstance(profile, Mapping) else None
        return to_int(cap, field.replace(".strategy", ".profile.max_concurrency"))
    return to_int(strategy.get("max_concurrency"), f"{field}.max_concurrency")


def _data_metadata(report: Mapping[str, Any], benchmark: Mapping[str, Any]) -> dict[str, str]:
    """`dataset`, `input_len`, `output_len` from the run's data settings: v2
    `config.spec.data[0]` (`kind` synthetic_text with `prompt_tokens` / `output_tokens`), legacy
    `request_loader.data` ("prompt_tokens=256,output_tokens=128", a JSON object, or a data set
    name or path)."""
    config = report.get("config")
    spec = config.get("spec") if isinstance(config, Mapping) else None
    data = spec.get("data") if isinstance(spec, Mapping) else None
    if isinstance(data, list) and data and isinstance(data[0], Mapping):
        first = data[0]
        kind = str(first.get("kind") or "")
        if kind.startswith("synthetic"):
            return {"dataset": "synthetic", **_lengths(first)}
        name = first.get("path") or first.get("name") or first.get("data")
        return {"dataset": str(name)} if name else {}
    loader = benchmark.get("request_loader")
    text = loader.get("data") if isinstance(loader, Mapping) else None
    if not isinstance(text, str) or not text.strip():
        return {}
    settings = _synthetic_settings(text.strip())
    if settings is None:
        return {"dataset": text.strip()}
    return {"dataset": "synthetic", **_lengths(settings)}


def _synthetic_settings(text: str) -> Mapping[str, Any] | None:
    """GuideLLM's synthetic data string ("key=value,…" or a JSON object), or None when the
    text names a data set instead."""
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, Mapping) and "prompt_tokens" in value else None
    pairs = [part.split("=", 1) for part in text.split(",")]
    if not all(len(pair) == 2 for pair in pairs):
        return None
    settings = {key.strip(): value.strip() for key, value in pairs}
    return settings if "prompt_tokens" in settings else None


def _lengths(settings: Mapping[str, Any]) -> dict[str, str]:
    lengths = {}
    for key, name in LENGTH_KEYS.items():
        value = settings.get(key)
        if value not in (None, ""):
            lengths[name] = str(value)
    return lengths


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


def _total_sum(metrics: Mapping[str, Any], name: str, where: str) -> float | None:
    summary = _successful(metrics, name)
    if summary is None:
        return None
    return to_float(summary.get("total_sum"), f"{where}.{name}.successful.total_sum")


def _strategy(benchmark: Mapping[str, Any]) -> Mapping[str, Any]:
    holder = benchmark.get("config") if "config" in benchmark else benchmark.get("args")
    strategy = holder.get("strategy") if isinstance(holder, Mapping) else None
    return strategy if isinstance(strategy, Mapping) else {}


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
    benchmark: Mapping[str, Any], completed: int | None, assumptions: list[str], where: str
) -> PerRequest | None:
    """The point's own successful requests, when GuideLLM kept every one of them."""
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
    field = f"{where}.requests.successful"
    rows = [require_object(row, f"`{field}[{i}]`") for i, row in enumerate(successful)]
    start = to_float(benchmark.get("start_time"), f"{where}.start_time")
    return PerRequest(
        ttft_ms=_column(rows, ("time_to_first_token_ms",), 1.0, field),
        latency_ms=_column(rows, ("request_latency",), 1000.0, field),
        output_tokens=tuple(round(v) for v in _column(rows, ("output_tokens",), 1.0, field)),
        input_tokens=tuple(round(v) for v in _column(rows, ("prompt_tokens",), 1.0, field)),
        start_s=_starts(rows, start, field),
    )


def _column(
    rows: Sequence[Mapping[str, Any]], keys: Sequence[str], scale: float, field: str
) -> tuple[float, ...]:
    values = []
    for index, row in enumerate(rows):
        key = next((k for k in keys if row.get(k) is not None), None)
        if key is None:
            return ()  # a column only counts when every request has it
        number = to_float(row[key], f"{field}[{index}].{key}")
        if number is None:
            return ()
        values.append(number * scale)
    return tuple(values)


def _starts(
    rows: Sequence[Mapping[str, Any]], start: float | None, field: str
) -> tuple[float, ...]:
    starts = _column(rows, ("request_start_time", "start_time"), 1.0, field)
    if not starts:
        return ()
    if start is None:
        return relative_starts(starts)
    return tuple(value - start for value in starts)
