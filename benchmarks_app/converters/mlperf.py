"""MLPerf Inference LoadGen `mlperf_log_summary.txt`: "key : value" text lines, latencies in **ns**.

Its rules in full: `docs/formats.md`, section "MLPerf Inference LoadGen summaries".
"""

from __future__ import annotations

import re

from benchmarks_app.artifacts import ArtifactError, BenchmarkArtifact
from benchmarks_app.converters.base import Load, decode_text, fmt, head_text, rate_text, to_float

TOOL = "mlperf"
MARKERS = ("MLPerf Results Summary", "SUT name")
NS_TO_MS = 1e-6

# contract metric -> the name LoadGen gives it in "Mean <name> (ns)" / "NN.NN percentile <name>"
LATENCIES = {
    "e2e": "latency",
    "ttft": "first token latency",
    "tpot": "time to output token",
}
PERCENTILES = {"p50": "50.00", "p95": "95.00", "p99": "99.00"}
TOKEN_RATE_KEYS = ("completed tokens per second", "tokens per second")
SAMPLE_RATE_KEYS = ("completed samples per second", "samples per second")
SCENARIOS = ("Server", "Interactive", "Offline", "SingleStream", "MultiStream")
LINE = re.compile(r"^\s*([^:]+?)\s*:\s*(.*?)\s*$")


def sniff(data: bytes, filename: str) -> bool:
    head = head_text(data)
    return any(marker in head for marker in MARKERS)


def convert(data: bytes, *, filename: str) -> BenchmarkArtifact:
    fields = _fields(decode_text(data))
    scenario = fields.get("scenario", "")
    if not scenario:
        raise ArtifactError("the MLPerf summary has no `Scenario :` line")
    result = fields.get("result is", "")
    if not result:
        raise ArtifactError("the MLPerf summary has no `Result is :` line")
    offline = scenario.lower() == "offline"

    reported = _rates(fields)
    latencies, missing_p95 = _latencies(fields, offline=offline)
    reported.update(latencies)
    assumptions = [
        f"MLPerf scenario {scenario}, mode {fields.get('mode', 'not stated')}; "
        f"LoadGen result {result}."
    ]
    if offline:
        assumptions.append(
            "Offline latency is that of the single query holding every sample, so it was not "
            "used as end-to-end request latency."
        )
    if missing_p95:
        assumptions.append(
            f"The file has no 95th percentile for {', '.join(missing_p95)}; MLPerf's p99 was "
            "kept as p99 and not used as p95."
        )
    target_qps = _float_field(fields, "target_qps")
    if target_qps is not None and offline:
        assumptions.append(
            f"Offline target_qps {fmt(target_qps)} only sizes the query; all samples are "
            "sent at once, so no request rate was asked for."
        )
    assumptions.extend(_test_parameter_assumptions(fields, offline=offline))
    model = _model_from(filename)
    assumptions.extend(_file_name_assumptions(filename, scenario=scenario, model=model))
    load = _load(scenario, _scenario_from(filename), target_qps)
    return BenchmarkArtifact(
        tool=TOOL,
        model=model,
        request_rate=load.request_rate,
        max_concurrency=load.max_concurrency,
        reported=reported,
        assumptions=tuple(assumptions),
        label=load.label,
        load_known=load.known,
    )


def _load(scenario: str, named: str, target_qps: float | None) -> Load:
    """The load of the run's scenario (see the module docstring); an Interactive run, which
    LoadGen writes as Server, keeps the name its file gives it."""
    shown = named if named.lower() == "interactive" and scenario.lower() == "server" else scenario
    kind = scenario.lower()
    if kind == "server" and target_qps is not None:
        return Load(label=f"{shown} {rate_text(target_qps)} req/s", request_rate=target_qps)
    if kind == "offline":
        return Load(label=f"{shown} (all samples at once)")
    if kind == "singlestream":
        return Load(label=shown, max_concurrency=1)
    return Load(label=shown, known=False)


def _rates(fields: dict[str, str]) -> dict[str, float]:
    """The headline output tok/s and requests/s; a summary with neither is refused."""
    reported: dict[str, float] = {}
    tokens_per_s = _first(fields, TOKEN_RATE_KEYS)
    if tokens_per_s is not None:
        reported["output_tokens_per_s"] = tokens_per_s
    samples_per_s = _first(fields, SAMPLE_RATE_KEYS)
    if samples_per_s is not None:
        reported["requests_per_s"] = samples_per_s
    if not reported:
        raise ArtifactError(
            "the MLPerf summary has no `Completed tokens per second` / `Tokens per second` "
            "or `Samples per second` line"
        )
    return reported


def _latencies(fields: dict[str, str], *, offline: bool) -> tuple[dict[str, float], list[str]]:
    """Mean and 50/95/99 percentiles of each latency in ms (no e2e in Offline), and the metrics
    that have some statistics but no 95th percentile."""
    reported: dict[str, float] = {}
    missing_p95 = []
    for metric, name in LATENCIES.items():
        if metric == "e2e" and offline:
            continue
        stats = {"mean": _ns_field(fields, f"mean {name} (ns)")}
        for stat, percent in PERCENTILES.items():
            stats[stat] = _ns_field(fields, f"{percent} percentile {name} (ns)")
        found = {stat: value for stat, value in stats.items() if value is not None}
        for stat, value in found.items():
            reported[f"{metric}_{stat}_ms"] = value
        if found and "p95" not in found:
            missing_p95.append(metric.upper())
    return reported, missing_p95


def _test_parameter_assumptions(fields: dict[str, str], *, offline: bool) -> list[str]:
    """The run's latency constraints (not in Offline) and minimum duration, as assumptions."""
    assumptions = []
    constraints = []
    for metric in ("ttft", "tpot"):
        limit = _ns_field(fields, f"{metric}_latency (ns)")
        if limit:  # 0 means "no constraint" in LoadGen
            constraints.append(f"p99 {metric.upper()} ≤ {fmt(limit)} ms")
    if constraints and not offline:
        assumptions.append(
            f"MLPerf latency constraints of this run: {', '.join(constraints)} "
            "(a VALID result met them)."
        )
    min_duration = _float_field(fields, "min_duration (ms)")
    if min_duration:
        assumptions.append(f"MLPerf minimum duration {fmt(min_duration / 1000.0)} s.")
    return assumptions


def _file_name_assumptions(filename: str, *, scenario: str, model: str) -> list[str]:
    """What the file name told: a scenario LoadGen contradicts, the model the summary lacks."""
    assumptions = []
    named = _scenario_from(filename)
    if named and named.lower() != scenario.lower():
        assumptions.append(
            f"The file name says {named} but LoadGen wrote scenario {scenario} "
            "(Interactive runs as Server with tighter latency constraints)."
        )
    if model:
        assumptions.append(f"Model {model} read from the file name (the summary names none).")
    return assumptions


def _fields(text: str) -> dict[str, str]:
    """Every "key : value" line, keys lower-cased with runs of spaces collapsed; first wins."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        match = LINE.match(line)
        if not match:
            continue
        key = " ".join(match.group(1).lower().split())
        fields.setdefault(key, match.group(2))
    return fields


def _float_field(fields: dict[str, str], key: str) -> float | None:
    return to_float(fields.get(key), key)


def _ns_field(fields: dict[str, str], key: str) -> float | None:
    value = _float_field(fields, key)
    return None if value is None else value * NS_TO_MS


def _first(fields: dict[str, str], keys: tuple[str, ...]) -> float | None:
    for key in keys:
        value = _float_field(fields, key)
        if value is not None:
            return value
    return None


def _scenario_from(filename: str) -> str:
    parts = re.split(r"[\\/_]", filename)
    return next((part for part in parts if part in SCENARIOS), "")


def _model_from(filename: str) -> str:
    """`llama2-70b-99_Server_mlperf_log_summary.txt` or `…/llama2-70b-99/Server/…` → model."""
    parts = [part for part in re.split(r"[\\/]", filename) if part]
    name = parts[-1] if parts else ""
    for scenario in SCENARIOS:
        marker = f"_{scenario}_"
        if marker in name:
            return name.split(marker, 1)[0]
    for index, part in enumerate(parts[1:], start=1):
        if part in SCENARIOS:
            return parts[index - 1]
    return ""
