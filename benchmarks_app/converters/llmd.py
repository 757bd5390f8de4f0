"""llm-d "Benchmark Report" v0.2.x (`llm-d/llm-d-benchmark`, `llmdbenchmark/analysis/
benchmark_report/schema_v0_2*.py`), YAML or JSON: a tool-neutral report that llm-d fills from
vLLM bench, GuideLLM, AIPerf, inference-perf or InferenceMAX output.

Its rules in full: `docs/formats.md`, section "llm-d benchmark reports".
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import yaml

from benchmarks_app.artifacts import ArtifactError, BenchmarkArtifact
from benchmarks_app.converters.base import (
    UNKNOWN_LOAD,
    Load,
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

TOOL = "llm-d"
# contract metric -> Benchmark Report latency name
LATENCIES = {
    "ttft": "time_to_first_token",
    "tpot": "time_per_output_token",
    "itl": "inter_token_latency",
    "e2e": "request_latency",
}
STATS = ("mean", "p50", "p95", "p99")
PER_TOKEN_SUFFIX = "/token"
RATES = {"output_token_rate": "output_tokens_per_s", "request_rate": "requests_per_s"}
RATE_UNITS = {"output_token_rate": "tokens/s", "request_rate": "queries/s"}
ISO_DURATION = re.compile(
    r"^P(?:(?P<d>\d+(?:\.\d+)?)D)?(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?"
    r"(?:(?P<s>\d+(?:\.\d+)?)S)?)?$"
)
EXAMPLE_EID = "d9c5a5ddce6c2f885a9f8e6a6a6db0fb"  # run.eid of llm-d's br_v0_2_1_example.yaml
EXAMPLE_NOTE = (
    "This is llm-d's example Benchmark Report: its values are illustrative, not a measured run."
)


def sniff(data: bytes, filename: str) -> bool:
    head = head_text(data)
    if head.startswith(("{", "[")):
        return has_json_key(head, "request_performance") or (
            has_json_key(head, "scenario") and has_json_key(head, "observability")
        )
    return bool(
        re.search(r"^\s*request_performance:", head, re.MULTILINE)
        or (
            re.search(r"^results:", head, re.MULTILINE)
            and re.search(r"^\s*(observability|component_health):", head, re.MULTILINE)
        )
    )


def convert(data: bytes, *, filename: str) -> BenchmarkArtifact:
    """The file's first report (`convert_points` gives every one)."""
    return convert_points(data, filename=filename)[0]


def convert_points(data: bytes, *, filename: str) -> tuple[BenchmarkArtifact, ...]:
    """One artifact per Benchmark Report of the file (one stage each)."""
    reports = _load(data)
    points = []
    for report, where in reports:
        try:
            points.append(_report_point(require_object(report, "the Benchmark Report"), filename))
        except ArtifactError as error:
            if len(reports) == 1:
                raise
            raise ArtifactError(f"{where}: {error}") from None
    return tuple(points)


def _report_point(report: Mapping[str, Any], filename: str) -> BenchmarkArtifact:
    version = str(report.get("version") or "")
    if not version.startswith("0.2"):
        raise ArtifactError(
            f"the llm-d Benchmark Report has version {version or 'missing'!r}; expected 0.2.x"
        )
    results = require_object(report.get("results") or {}, "`results`")
    performance = require_object(
        results.get("request_performance") or {}, "`results.request_performance`"
    )
    aggregate = performance.get("aggregate")
    if not isinstance(aggregate, Mapping):
        raise ArtifactError("`results.request_performance.aggregate` is missing from the report")

    assumptions: list[str] = []
    reported = _latencies(aggregate.get("latency") or {})
    throughput = require_object(
        aggregate.get("throughput") or {}, "`results.request_performance.aggregate.throughput`"
    )
    for name, key in RATES.items():
        value = _rate(throughput.get(name), name)
        if value is not None:
            reported[key] = value
    if not reported:
        raise ArtifactError(
            "the Benchmark Report has no latency or throughput under "
            "`results.request_performance.aggregate`"
        )

    completed, failed = _requests(aggregate.get("requests"), assumptions)
    failures = failure_assumption(failed, completed)
    if failures:
        assumptions.append(failures)
    scenario = require_object(report.get("scenario") or {}, "`scenario`")
    load = _standardized(scenario.get("load"))
    model, metadata = _stack(scenario.get("stack"), assumptions)
    for key, field in (("input_len", "input_seq_len"), ("output_len", "output_seq_len")):
        length = load.get(field)
        if isinstance(length, Mapping) and length.get("value") is not None:
            value = to_float(length.get("value"), f"scenario.load.standardized.{field}.value")
            if value is not None:
                metadata[key] = f"{value:g}"
    utilization = _gpu_utilization(results.get("observability"))
    if utilization is not None:
        metadata["gpu_utilization_pct"] = f"{utilization:g}"

    source = str(load.get("tool") or "")
    if source and any(key.startswith(("tpot", "itl")) for key in reported):
        assumptions.append(
            f"TPOT and ITL were copied by llm-d from {source}'s own fields without reconciling "
            "definitions; they mean what they mean in that tool."
        )
    if _is_example(report, filename):
        assumptions.append(EXAMPLE_NOTE)

    found = report.get("run")
    run: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    point = _load_point(load)
    started, ended = _window(run, assumptions)
    return BenchmarkArtifact(
        tool=TOOL,
        tool_version=version,
        model=model,
        duration_s=_duration(run),
        completed_requests=completed,
        failed_requests=failed,
        request_rate=point.request_rate,
        max_concurrency=point.max_concurrency,
        reported=reported,
        metadata=metadata,
        assumptions=tuple(assumptions),
        label=point.label,
        load_known=point.known,
        started_at_s=started,
        ended_at_s=ended,
    )


def _load_point(load: Mapping[str, Any]) -> Load:
    """`rate_qps` and `concurrency` (`.inf` = no cap) of the stage, labelled with the stage."""
    rate = to_float(load.get("rate_qps"), "load.rate_qps")
    concurrency = to_float(load.get("concurrency"), "load.concurrency")
    stage = to_int(load.get("stage"), "load.stage")
    if rate is None and concurrency is None:
        return UNKNOWN_LOAD if stage is None else Load(label=f"stage {stage}", known=False)
    finite = None if concurrency is None or math.isinf(concurrency) else int(concurrency)
    parts = [] if stage is None else [f"stage {stage}"]
    if rate is not None:
        parts.append(f"{rate_text(rate)} req/s")
    if finite is not None:
        parts.append(f"concurrency {finite}")
    elif rate is None:
        parts.append("unlimited rate")
    return Load(label=", ".join(parts), request_rate=rate, max_concurrency=finite)


def _window(run: Mapping[str, Any], assumptions: list[str]) -> tuple[float | None, float | None]:
    """`run.time.start` / `end` (ISO 8601) in epoch seconds; a time that cannot be read leaves
    the point without a window (said)."""
    time = run.get("time")
    if not isinstance(time, Mapping):
        return None, None
    bounds: list[float | None] = []
    for key in ("start", "end"):
        value = time.get(key)
        if value in (None, ""):
            bounds.append(None)
            continue
        found = epoch_seconds(value)
        if found is None:
            assumptions.append(no_window(f"run.time.{key}", value))
            return None, None
        bounds.append(found[0])
    return bounds[0], bounds[1]


def _load(data: bytes) -> list[tuple[Any, str]]:
    """Every report of the file with its place: a JSON object or list, or a YAML stream."""
    text = decode_text(data).lstrip()
    if text.startswith(("{", "[")):
        value = load_json(data)
        if isinstance(value, list) and value:
            return [(item, f"reports[{index}]") for index, item in enumerate(value)]
        return [(value, "")]
    try:
        documents = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or "unreadable"
        raise ArtifactError(f"not valid YAML{where}: {problem}") from None
    if not documents:
        raise ArtifactError("the file holds no llm-d Benchmark Report")
    return [(doc, f"document {index}") for index, doc in enumerate(documents, start=1)]


def _latencies(latency: Any) -> dict[str, float]:
    latency = require_object(latency, "`results.request_performance.aggregate.latency`")
    reported: dict[str, float] = {}
    for metric, name in LATENCIES.items():
        stats = latency.get(name)
        if stats is None:
            continue
        where = f"latency.{name}"
        stats = require_object(stats, f"`{where}`")
        unit = str(stats.get("units") or "")
        if unit.endswith(PER_TOKEN_SUFFIX):
            unit = unit[: -len(PER_TOKEN_SUFFIX)]
        scale = ms_per_unit(unit, f"{where}.units")
        for stat in STATS:
            value = to_float(stats.get(stat), f"{where}.{stat}")
            if value is not None:
                reported[f"{metric}_{stat}_ms"] = value * scale
    return reported


def _rate(stats: Any, name: str) -> float | None:
    if stats is None:
        return None
    where = f"throughput.{name}"
    stats = require_object(stats, f"`{where}`")
    unit = str(stats.get("units") or "")
    if unit != RATE_UNITS[name]:
        raise ArtifactError(f"`{where}.units` is {unit!r}; expected {RATE_UNITS[name]!r}")
    return to_float(stats.get("mean"), f"{where}.mean")


def _requests(requests: Any, assumptions: list[str]) -> tuple[int | None, int | None]:
    if not isinstance(requests, Mapping):
        return None, None
    total = to_int(requests.get("total"), "requests.total")
    failures = to_int(requests.get("failures"), "requests.failures")
    incomplete = to_int(requests.get("incomplete"), "requests.incomplete")
    if total is None:
        return None, failures
    completed = total - (failures or 0) - (incomplete or 0)
    assumptions.append(
        f"Completed requests {completed} = {total} sent − {failures or 0} failed − "
        f"{incomplete or 0} incomplete."
    )
    return completed, failures


def _standardized(section: Any) -> Mapping[str, Any]:
    if not isinstance(section, Mapping):
        return {}
    standardized = section.get("standardized")
    return standardized if isinstance(standardized, Mapping) else {}


def _stack(stack: Any, assumptions: list[str]) -> tuple[str, dict[str, str]]:
    """The model and accelerators of the inference engines in `scenario.stack`."""
    models: list[str] = []
    gpu_types: list[str] = []
    gpus = 0
    parts = []
    for index, component in enumerate(stack if isinstance(stack, list) else []):
        standardized = _standardized(component)
        if standardized.get("kind") != "inference_engine":
            continue
        model = standardized.get("model")
        if isinstance(model, Mapping) and model.get("name"):
            models.append(str(model["name"]))
        accelerator = standardized.get("accelerator")
        if not isinstance(accelerator, Mapping):
            continue
        count = to_int(accelerator.get("count"), f"stack[{index}].accelerator.count")
        replicas = to_int(standardized.get("replicas"), f"stack[{index}].replicas") or 1
        if count:
            gpus += count * replicas
            parts.append(f"{count} × {replicas} replicas")
        if accelerator.get("model"):
            gpu_types.append(str(accelerator["model"]))
    metadata: dict[str, str] = {}
    if gpus:
        metadata["num_gpus"] = str(gpus)
        assumptions.append(
            f"num_gpus {gpus} = accelerators per replica × replicas ({' + '.join(parts)})."
        )
    if gpu_types:
        metadata["gpu_type"] = ", ".join(dict.fromkeys(gpu_types))
    return ", ".join(dict.fromkeys(models)), metadata


def _gpu_utilization(observability: Any) -> float | None:
    if not isinstance(observability, Mapping):
        return None
    values = []
    for index, component in enumerate(observability.get("components") or []):
        aggregate = component.get("aggregate") if isinstance(component, Mapping) else None
        stats = aggregate.get("gpu_utilization") if isinstance(aggregate, Mapping) else None
        if not isinstance(stats, Mapping):
            continue
        where = f"observability.components[{index}].aggregate.gpu_utilization"
        value = to_float(stats.get("mean"), f"{where}.mean")
        if value is None:
            continue
        unit = str(stats.get("units") or "")
        if unit == "fraction":
            value *= 100.0
        elif unit != "percent":
            raise ArtifactError(f"`{where}.units` is {unit!r}; expected percent or fraction")
        values.append(value)
    return sum(values) / len(values) if values else None


def _duration(run: Mapping[str, Any]) -> float | None:
    time = run.get("time")
    if not isinstance(time, Mapping) or not time.get("duration"):
        return None
    text = str(time["duration"]).strip()
    match = ISO_DURATION.match(text)
    if not match or not any(match.groupdict().values()):
        raise ArtifactError(f"`run.time.duration` is {text!r}, not an ISO 8601 duration")
    scale = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
    return sum(float(value) * scale[key] for key, value in match.groupdict().items() if value)


def _is_example(report: Mapping[str, Any], filename: str) -> bool:
    """llm-d's published example (`br_v0_2_1_example.yaml`): by its file name or its run id."""
    run = report.get("run")
    return "example" in filename.lower() or (
        isinstance(run, Mapping) and run.get("eid") == EXAMPLE_EID
    )
