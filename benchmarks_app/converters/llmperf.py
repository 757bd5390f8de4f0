"""LLMPerf (`ray-project/llmperf`, `token_benchmark_ray.py`): the `*_summary.json` or the
`*_individual_responses.json` of one run, and the post-processed leaderboard files of
ray-project/llmperf pull request 42 (a `*_cur_<N>.json` row, a concurrency sweep CSV).

Its rules in full: `docs/formats.md`, section "LLMPerf results".
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

from benchmarks_app.artifacts import ArtifactError, BenchmarkArtifact, PerRequest
from benchmarks_app.converters.base import (
    UNKNOWN_LOAD,
    Load,
    decode_text,
    failure_assumption,
    fmt,
    has_json_key,
    head_text,
    load_json,
    metadata_from,
    require_object,
    to_float,
    to_int,
)

TOOL = "llmperf"
# contract metric -> LLMPerf metric (seconds)
METRICS = {"ttft": "ttft_s", "e2e": "end_to_end_latency_s"}
STATS = {"mean": "mean", "p50": "quantiles_p50", "p95": "quantiles_p95", "p99": "quantiles_p99"}
LEADERBOARD_MARKER = "time_to_first_token_in_ms_(ttft)"
# contract key -> leaderboard key (milliseconds)
LEADERBOARD_TTFT = {
    "ttft_p50_ms": "time_to_first_token_in_ms_(ttft)_p50",
    "ttft_p95_ms": "time_to_first_token_in_ms_(ttft)_p95",
}
NOT_TPOT = (
    "LLMPerf's inter_token_latency_s includes TTFT (≈ end-to-end latency / output tokens), so it "
    "was not used as TPOT or ITL."
)
LEADERBOARD_NOTE = (
    "A post-processed LLMPerf leaderboard table (ray-project/llmperf pull request 42): TTFT p50 "
    "and p95 only; its inter_token_latency includes TTFT and was not used as TPOT or ITL."
)


def sniff(data: bytes, filename: str) -> bool:
    head = head_text(data)
    if LEADERBOARD_MARKER in head:
        return True
    if head.startswith("{"):
        return has_json_key(head, "results_num_completed_requests", "results_ttft_s_mean")
    if head.startswith("["):
        return has_json_key(head, "ttft_s", "end_to_end_latency_s")
    return False


def convert(data: bytes, *, filename: str) -> BenchmarkArtifact:
    """The file's first load point (`convert_points` gives every one)."""
    return convert_points(data, filename=filename)[0]


def convert_points(data: bytes, *, filename: str) -> tuple[BenchmarkArtifact, ...]:
    """One point for a summary, individual responses or leaderboard row; one per concurrency
    for the leaderboard's sweep CSV."""
    head = head_text(data)
    if LEADERBOARD_MARKER in head:
        if head.startswith("{"):
            return (_leaderboard_point(require_object(load_json(data), "the file")),)
        return _convert_sweep_csv(decode_text(data))
    document = load_json(data)
    if isinstance(document, list):
        return (_convert_individual(document),)
    return (_convert_summary(require_object(document, "the file")),)


# ---------------------------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------------------------


def _convert_summary(summary: Mapping[str, Any]) -> BenchmarkArtifact:
    completed = to_int(
        summary.get("results_num_completed_requests"), "results_num_completed_requests"
    )
    if completed is None:
        raise ArtifactError("`results_num_completed_requests` is missing from the LLMPerf summary")
    reported = _summary_latencies(summary)
    throughput = to_float(
        summary.get("results_mean_output_throughput_token_per_s"),
        "results_mean_output_throughput_token_per_s",
    )
    if throughput is not None:
        reported["output_tokens_per_s"] = throughput
    per_minute = to_float(
        summary.get("results_num_completed_requests_per_min"),
        "results_num_completed_requests_per_min",
    )
    assumptions = [NOT_TPOT]
    duration = None
    if per_minute:
        reported["requests_per_s"] = per_minute / 60.0
        duration = completed * 60.0 / per_minute
        assumptions.append(
            f"Duration {fmt(duration)} s = {completed} completed requests / "
            f"{fmt(per_minute)} per minute (the summary does not write it)."
        )
    failed = _summary_failures(summary)
    failures = failure_assumption(failed, completed)
    if failures:
        assumptions.append(failures)
    mean_output = to_float(
        summary.get("results_number_output_tokens_mean"), "results_number_output_tokens_mean"
    )
    mean_input = to_float(
        summary.get("results_number_input_tokens_mean"), "results_number_input_tokens_mean"
    )
    ended = to_float(summary.get("timestamp"), "timestamp")
    load = _concurrency_load(summary.get("num_concurrent_requests"), "num_concurrent_requests")
    return BenchmarkArtifact(
        tool=TOOL,
        tool_version=str(summary.get("version") or ""),
        model=str(summary.get("model") or ""),
        duration_s=duration,
        completed_requests=completed,
        failed_requests=failed,
        total_input_tokens=None if mean_input is None else round(mean_input * completed),
        total_output_tokens=None if mean_output is None else round(mean_output * completed),
        max_concurrency=load.max_concurrency,
        reported=reported,
        metadata={**metadata_from(summary), **_configured_lengths(summary)},
        assumptions=tuple(assumptions),
        label=load.label,
        load_known=load.known,
        started_at_s=None if ended is None or duration is None else ended - duration,
        ended_at_s=ended,
    )


def _summary_latencies(summary: Mapping[str, Any]) -> dict[str, float]:
    reported: dict[str, float] = {}
    for metric, name in METRICS.items():
        for stat, suffix in STATS.items():
            key = f"results_{name}_{suffix}"
            value = to_float(summary.get(key), key)
            if value is not None:
                reported[f"{metric}_{stat}_ms"] = value * 1000.0
    return reported


def _summary_failures(summary: Mapping[str, Any]) -> int | None:
    """`results_number_errors`, else the error rate × the requests started."""
    errors = to_int(summary.get("results_number_errors"), "results_number_errors")
    if errors is not None:
        return errors
    rate = to_float(summary.get("results_error_rate"), "results_error_rate")
    started = to_int(summary.get("results_num_requests_started"), "results_num_requests_started")
    if rate is None or started is None:
        return None
    return round(rate * started)


def _concurrency_load(value: Any, field: str) -> Load:
    concurrency = to_int(value, field)
    if concurrency is None:
        return UNKNOWN_LOAD
    return Load(label=f"concurrency {concurrency}", max_concurrency=concurrency)


def _configured_lengths(summary: Mapping[str, Any]) -> dict[str, str]:
    """The asked-for mean input / output lengths (`--mean-input-tokens`, `--mean-output-tokens`)."""
    lengths = {}
    for key, name in (("input_len", "mean_input_tokens"), ("output_len", "mean_output_tokens")):
        value = to_float(summary.get(name), name)
        if value is not None:
            lengths[key] = f"{value:g}"
    return lengths


# ---------------------------------------------------------------------------------------------
# Individual responses
# ---------------------------------------------------------------------------------------------


def _convert_individual(records: list[Any]) -> BenchmarkArtifact:
    if not records:
        raise ArtifactError("the individual responses list is empty")
    ttft_ms, latency_ms, output_tokens, input_tokens = [], [], [], []
    failed = 0
    for index, raw in enumerate(records):
        record = require_object(raw, f"record {index}")
        if record.get("error_code") not in (None, "", 0) or record.get("error_msg"):
            failed += 1
            continue
        where = f"record {index}"
        latency = to_float(record.get("end_to_end_latency_s"), f"{where} end_to_end_latency_s")
        outputs = to_int(record.get("number_output_tokens"), f"{where} number_output_tokens")
        if latency is None or outputs is None:
            raise ArtifactError(
                f"{where}: `end_to_end_latency_s` and `number_output_tokens` are required"
            )
        ttft = to_float(record.get("ttft_s"), f"{where} ttft_s")
        inputs = to_int(record.get("number_input_tokens"), f"{where} number_input_tokens")
        latency_ms.append(latency * 1000.0)
        output_tokens.append(outputs)
        if ttft is not None:
            ttft_ms.append(ttft * 1000.0)
        if inputs is not None:
            input_tokens.append(inputs)
    completed = len(latency_ms)
    assumptions = [
        NOT_TPOT,
        "Individual responses carry no wall time, so there is no tok/s; upload the run's "
        "_summary.json for throughput.",
    ]
    failures = failure_assumption(failed, completed)
    if failures:
        assumptions.append(failures)
    return BenchmarkArtifact(
        tool=TOOL,
        completed_requests=completed,
        failed_requests=failed,
        total_input_tokens=sum(input_tokens) if len(input_tokens) == completed else None,
        total_output_tokens=sum(output_tokens),
        per_request=PerRequest(
            ttft_ms=tuple(ttft_ms) if len(ttft_ms) == completed else (),
            latency_ms=tuple(latency_ms),
            output_tokens=tuple(output_tokens),
            input_tokens=tuple(input_tokens) if len(input_tokens) == completed else (),
        ),
        assumptions=tuple(assumptions),
        load_known=False,
    )


# ---------------------------------------------------------------------------------------------
# Leaderboard row and sweep CSV (PR 42 tooling)
# ---------------------------------------------------------------------------------------------


def _convert_sweep_csv(text: str) -> tuple[BenchmarkArtifact, ...]:
    """One point per column of the transposed sweep table; a cell that cannot be read names its
    column."""
    block = []  # the first table; the PR's files repeat a p75-only copy after a blank line
    for row in csv.reader(io.StringIO(text)):
        if not any(cell.strip() for cell in row):
            break
        block.append(row)
    columns = len(block[0]) - 1 if block else 0
    table = {row[0].strip(): row[1:] for row in block[1:] if row[0].strip()}
    if columns < 1 or "concurrency" not in table:
        raise ArtifactError(
            "line 1: the LLMPerf sweep table needs a header of concurrencies and a "
            "`concurrency` line"
        )
    points = []
    for column in range(columns):
        cells = {key: values[column] for key, values in table.items() if column < len(values)}
        try:
            points.append(_leaderboard_point(cells))
        except ArtifactError as error:
            raise ArtifactError(f"column {column + 2} of the sweep table: {error}") from None
    return tuple(points)


def _leaderboard_point(row: Mapping[str, Any]) -> BenchmarkArtifact:
    """One concurrency of a leaderboard row or sweep column (see the module docstring)."""

    def number(key: str) -> float | None:
        return to_float(row.get(key), key)

    completed = to_int(row.get("results_num_completed_requests"), "results_num_completed_requests")
    failed = to_int(row.get("results_number_errors"), "results_number_errors")
    per_minute = number("requests_per_minute_(qpm)")
    mean_output = number("mean_output_token_length")
    reported: dict[str, float] = {}
    for key, name in LEADERBOARD_TTFT.items():
        value = number(name)
        if value is not None:
            reported[key] = value
    assumptions = [LEADERBOARD_NOTE]
    duration = None
    if per_minute:
        reported["requests_per_s"] = per_minute / 60.0
        if mean_output is not None:
            reported["output_tokens_per_s"] = per_minute / 60.0 * mean_output
            assumptions.append(
                f"Output tok/s = {fmt(per_minute)} requests per minute / 60 × "
                f"{fmt(mean_output)} mean output tokens (the table has no throughput)."
            )
        if completed is not None:
            duration = completed * 60.0 / per_minute
    failures = failure_assumption(failed, completed)
    if failures:
        assumptions.append(failures)
    load = _concurrency_load(row.get("concurrency"), "concurrency")
    return BenchmarkArtifact(
        tool=TOOL,
        duration_s=duration,
        completed_requests=completed,
        failed_requests=failed,
        total_input_tokens=_total(number("mean_input_token_length"), completed),
        total_output_tokens=_total(mean_output, completed),
        max_concurrency=load.max_concurrency,
        reported=reported,
        assumptions=tuple(assumptions),
        label=load.label,
        load_known=load.known,
    )


def _total(mean: float | None, count: int | None) -> int | None:
    return None if mean is None or count is None else round(mean * count)
