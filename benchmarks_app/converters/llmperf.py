"""LLMPerf (`ray-project/llmperf`, `token_benchmark_ray.py`): the `*_summary.json` or the
`*_individual_responses.json` of one run — either file is accepted.

Summary (flattened, all durations in **seconds**): `results_ttft_s_*` → ttft,
`results_end_to_end_latency_s_*` → e2e (`_mean` and `_quantiles_p50/p95/p99`),
`results_mean_output_throughput_token_per_s` → output tok/s (Σ output tokens / wall time),
`results_num_completed_requests_per_min` / 60 → requests/s, `results_num_completed_requests`,
`results_number_errors`, `num_concurrent_requests`, `model`, `version`, and `--metadata` keys at
top level. The wall time is not written; it is derived from the completed count and the
per-minute rate, and the token totals from the per-request means (the means are over completed
requests).

Individual responses: a list of `{ttft_s, end_to_end_latency_s, number_output_tokens,
number_input_tokens, inter_token_latency_s, error_code}` → `PerRequest` (errored records are
counted as failed and left out). It has no timestamps and no wall time, so no throughput.

LLMPerf's `inter_token_latency_s` is Σ(gaps including TTFT) / output tokens ≈ end-to-end / n: it
is neither DESIGN's TPOT nor a chunk-gap ITL, so it is never reported as either. With the
individual responses, TPOT can be computed per request from TTFT, latency and token count.

The PR-42 leaderboard files (`*_cur_<N>.json`, the transposed sweep CSV) are post-processed, not
LLMPerf output, and are refused with a sentence saying which file to upload instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchmarks_app.artifacts import ArtifactError, BenchmarkArtifact, PerRequest
from benchmarks_app.converters.base import (
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
NOT_TPOT = (
    "LLMPerf's inter_token_latency_s includes TTFT (≈ end-to-end latency / output tokens), so it "
    "was not used as TPOT or ITL."
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
    if LEADERBOARD_MARKER in head_text(data):
        raise ArtifactError(
            "this is a post-processed LLMPerf leaderboard row or sweep table (PR 42 tooling), "
            "not LLMPerf output; upload the run's _summary.json or _individual_responses.json"
        )
    document = load_json(data)
    if isinstance(document, list):
        return _convert_individual(document)
    return _convert_summary(require_object(document, "the file"))


def _convert_summary(summary: Mapping[str, Any]) -> BenchmarkArtifact:
    completed = to_int(
        summary.get("results_num_completed_requests"), "results_num_completed_requests"
    )
    if completed is None:
        raise ArtifactError("`results_num_completed_requests` is missing from the LLMPerf summary")
    reported: dict[str, float] = {}
    for metric, name in METRICS.items():
        for stat, suffix in STATS.items():
            key = f"results_{name}_{suffix}"
            value = to_float(summary.get(key), key)
            if value is not None:
                reported[f"{metric}_{stat}_ms"] = value * 1000.0
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
    mean_output = to_float(
        summary.get("results_number_output_tokens_mean"), "results_number_output_tokens_mean"
    )
    mean_input = to_float(
        summary.get("results_number_input_tokens_mean"), "results_number_input_tokens_mean"
    )
    return BenchmarkArtifact(
        tool=TOOL,
        tool_version=str(summary.get("version") or ""),
        model=str(summary.get("model") or ""),
        duration_s=duration,
        completed_requests=completed,
        failed_requests=to_int(summary.get("results_number_errors"), "results_number_errors"),
        total_input_tokens=None if mean_input is None else round(mean_input * completed),
        total_output_tokens=None if mean_output is None else round(mean_output * completed),
        max_concurrency=to_int(summary.get("num_concurrent_requests"), "num_concurrent_requests"),
        reported=reported,
        metadata=metadata_from(summary),
        assumptions=tuple(assumptions),
    )


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
        assumptions=(
            NOT_TPOT,
            "Individual responses carry no wall time, so there is no tok/s; upload the run's "
            "_summary.json for throughput.",
        ),
    )
