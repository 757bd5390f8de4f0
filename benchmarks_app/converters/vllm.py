"""vLLM `vllm bench serve --save-result` JSON (and the legacy `benchmark_serving.py` file).

Its rules in full: `docs/formats.md`, section "vLLM benchmark results".
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from benchmarks_app.artifacts import ArtifactError, BenchmarkArtifact, PerRequest
from benchmarks_app.converters.base import (
    JSON_LINES,
    UNKNOWN_LOAD,
    Load,
    decode_text,
    failure_assumption,
    fmt,
    has_json_key,
    head_text,
    json_error_sentence,
    json_or_lines,
    metadata_from,
    no_window,
    number_list,
    rate_text,
    relative_starts,
    require_object,
    to_float,
    to_int,
)

TOOL = "vllm"

# vLLM metric name -> contract metric name
METRICS = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2el": "e2e"}
# contract stat -> vLLM key prefixes, first found wins
STAT_PREFIXES = {"mean": ("mean",), "p50": ("median", "p50"), "p95": ("p95",), "p99": ("p99",)}

_NUMBER_VALUE = r'\s*:\s*(-?[0-9]|NaN|null|"inf")'


def sniff(data: bytes, filename: str) -> bool:
    head = head_text(data)
    if not head.startswith(("{", "[")):
        return False
    if has_json_key(head, "output_tput_per_gpu", "tput_per_gpu"):
        return True
    return bool(re.search(r'"(output_throughput|request_throughput)"' + _NUMBER_VALUE, head))


def convert(data: bytes, *, filename: str) -> BenchmarkArtifact:
    """The file's first result (`convert_points` gives every one)."""
    return convert_points(data, filename=filename)[0]


def convert_points(data: bytes, *, filename: str) -> tuple[BenchmarkArtifact, ...]:
    """One artifact per result of the file, in the file's order."""
    points = []
    for record, where in _load_results(data):
        try:
            if "output_tput_per_gpu" in record or "tput_per_gpu" in record:
                points.append(_convert_inferencex_row(record, []))
            else:
                points.append(_convert_result(record, []))
        except ArtifactError as error:
            if not where:
                raise
            raise ArtifactError(f"{where}: {error}") from None
    return tuple(points)


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------


def _load_results(data: bytes) -> list[tuple[Mapping[str, Any], str]]:
    """Every result of the file with its place ("" when the file is one result). A JSON list
    holds several (InferenceX concatenates its rows into `agg_bmk.json`); `--append-result`
    writes one JSON object per line."""
    text = decode_text(data)
    value = json_or_lines(text)
    if value is JSON_LINES:
        return _load_appended(text)
    if isinstance(value, list):
        if not value:
            raise ArtifactError("the file is an empty JSON list; expected a vLLM result object")
        if len(value) == 1:
            return [(require_object(value[0], "the first result"), "")]
        return [
            (require_object(item, f"`results[{index}]`"), f"results[{index}]")
            for index, item in enumerate(value)
        ]
    return [(require_object(value, "the file"), "")]


def _load_appended(text: str) -> list[tuple[Mapping[str, Any], str]]:
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append((require_object(json.loads(line), f"line {number}"), f"line {number}"))
        except RecursionError:
            raise ArtifactError(f"line {number}: not valid JSON: nested too deeply") from None
        except json.JSONDecodeError as error:
            raise ArtifactError(f"line {number}: {json_error_sentence(error, line)}") from None
    return records


def _load_point(record: Mapping[str, Any], concurrency_key: str) -> Load:
    """A result's load: `request_rate` (a number or "inf") and the concurrency."""
    rate = to_float(record.get("request_rate"), "request_rate")  # "inf" = unlimited
    concurrency = to_int(record.get(concurrency_key), concurrency_key)
    if rate is None and concurrency is None:
        return UNKNOWN_LOAD
    unlimited = rate is not None and math.isinf(rate)
    parts = []
    if rate is not None and not unlimited:
        parts.append(f"{rate_text(rate)} req/s")
    if concurrency is not None:
        parts.append(f"concurrency {concurrency}")
    return Load(
        label=", ".join(parts) or "unlimited rate",
        request_rate=None if unlimited else rate,
        max_concurrency=concurrency,
    )


def _window(
    record: Mapping[str, Any], duration: float | None, assumptions: list[str]
) -> tuple[float | None, float | None]:
    """(start, end) in epoch seconds from `date` (the save time, "%Y%m%d-%H%M%S", local time
    without a zone: read as UTC, as nvidia-smi timestamps are) and the duration; (None, None)
    when either is missing, or when `date` cannot be read (said)."""
    date = record.get("date")
    if not isinstance(date, str) or not date.strip() or duration is None:
        return None, None
    try:
        saved = datetime.strptime(date.strip(), "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        assumptions.append(no_window("date", date, "a YYYYMMDD-HHMMSS time"))
        return None, None
    ended = saved.timestamp()
    return ended - duration, ended


def _stat_value(record: Mapping[str, Any], key: str, scale: float) -> float | None:
    value = to_float(record.get(key), key)
    return None if value is None else value * scale


# ---------------------------------------------------------------------------------------------
# The result file
# ---------------------------------------------------------------------------------------------


def _convert_result(record: Mapping[str, Any], assumptions: list[str]) -> BenchmarkArtifact:
    for required in ("duration", "completed"):
        if required not in record:
            raise ArtifactError(
                f"`{required}` is missing: every vLLM bench serve result has it "
                "(is this the .pytorch.json sidecar or another tool's file?)"
            )
    completed = to_int(record["completed"], "completed")
    reported = _latency_stats(record, assumptions)
    for key, source in (
        ("output_tokens_per_s", "output_throughput"),
        ("requests_per_s", "request_throughput"),
    ):
        value = to_float(record.get(source), source)
        if value is not None:
            reported[key] = value

    per_request = _per_request(record, completed, assumptions)
    if per_request is None or not per_request.ttft_ms:
        missing = [m for m in ("ttft", "tpot") if f"{m}_p95_ms" not in reported]
        if missing:
            assumptions.append(
                f"No p95 for {' and '.join(m.upper() for m in missing)} in the file and no "
                "per-request `ttfts` (run with --metric-percentiles 95,99 or --save-detailed)."
            )

    failed = _failed(record, completed, assumptions)
    failures = failure_assumption(failed, completed)
    if failures:
        assumptions.append(failures)
    duration = to_float(record["duration"], "duration")
    started, ended = _window(record, duration, assumptions)
    load = _load_point(record, "max_concurrency")
    return BenchmarkArtifact(
        tool=TOOL,
        tool_version=str(record.get("vllm_version") or ""),
        model=str(record.get("model_id") or record.get("model") or ""),
        duration_s=duration,
        completed_requests=completed,
        failed_requests=failed,
        total_input_tokens=to_int(record.get("total_input_tokens"), "total_input_tokens"),
        total_output_tokens=to_int(record.get("total_output_tokens"), "total_output_tokens"),
        reported=reported,
        per_request=per_request,
        metadata=metadata_from(record),
        assumptions=tuple(assumptions),
        label=load.label,
        load_known=load.known,
        request_rate=load.request_rate,
        max_concurrency=load.max_concurrency,
        started_at_s=started,
        ended_at_s=ended,
    )


def _failed(record: Mapping[str, Any], completed: int | None, assumptions: list[str]) -> int | None:
    if "failed" in record:
        return to_int(record["failed"], "failed")
    prompts = to_int(record.get("num_prompts"), "num_prompts")
    if prompts is None or completed is None or prompts < completed:
        return None
    assumptions.append(
        f"Failed requests = num_prompts {prompts} − completed {completed} (the legacy file has "
        "no `failed`)."
    )
    return prompts - completed


def _latency_stats(record: Mapping[str, Any], assumptions: list[str]) -> dict[str, float]:
    """`mean_ttft_ms` etc.; keys without `_ms` (InferenceX SLO variant) are seconds."""
    reported: dict[str, float] = {}
    seconds_keys = []
    for vllm_metric, metric in METRICS.items():
        for stat, prefixes in STAT_PREFIXES.items():
            for prefix in prefixes:
                value = _stat_value(record, f"{prefix}_{vllm_metric}_ms", 1.0)
                if value is None:
                    value = _stat_value(record, f"{prefix}_{vllm_metric}", 1000.0)
                    if value is not None:
                        seconds_keys.append(f"{prefix}_{vllm_metric}")
                if value is not None:
                    reported[f"{metric}_{stat}_ms"] = value
                    break
    if seconds_keys:
        assumptions.append(
            f"Latency statistics without a _ms suffix ({', '.join(seconds_keys)}) were read as "
            "seconds, as InferenceX's vLLM client variants write them."
        )
    return reported


# ---------------------------------------------------------------------------------------------
# Per-request arrays
# ---------------------------------------------------------------------------------------------


def _per_request(
    record: Mapping[str, Any], completed: int | None, assumptions: list[str]
) -> PerRequest | None:
    names = ("ttfts", "latencies", "itls", "input_lens", "output_lens", "start_times")
    for name in names:
        if record.get(name) is not None and not isinstance(record[name], list):
            raise ArtifactError(f"`{name}` is not a list")
    if not any(isinstance(record.get(name), list) and record[name] for name in names):
        return None
    success = _success_mask(record)

    def aligned(name: str) -> list[Any] | None:
        values = record.get(name)
        if not isinstance(values, list) or not values:
            return None
        if completed is None or len(values) == completed:
            return values
        if success is not None and len(values) == len(success):
            return [value for value, ok in zip(values, success, strict=True) if ok]
        assumptions.append(
            f"`{name}` has {len(values)} entries for {completed} completed requests and no "
            "aligned `errors` list, so it was not used."
        )
        return None

    ttfts = aligned("ttfts")
    latencies = aligned("latencies")
    input_lens = aligned("input_lens")
    output_lens = aligned("output_lens")
    starts = aligned("start_times")
    ttft_ms = _seconds_to_ms(record, ttfts, "ttfts", "median_ttft_ms", assumptions)
    latency_ms = _seconds_to_ms(record, latencies, "latencies", "median_e2el_ms", assumptions)
    itl_ms = _itls_ms(record, completed, success)
    if not latency_ms and ttft_ms and itl_ms and _itls_per_request(record):
        latency_ms = _latencies_from_itls(record, ttft_ms, completed, success)
        if latency_ms:
            assumptions.append(
                "Per-request end-to-end latencies were rebuilt as TTFT + the sum of the "
                "request's `itls` (the file has no `latencies` array)."
            )
    per_request = PerRequest(
        ttft_ms=tuple(ttft_ms),
        latency_ms=tuple(latency_ms),
        output_tokens=_ints(output_lens, "output_lens"),
        input_tokens=_ints(input_lens, "input_lens"),
        itl_ms=tuple(itl_ms),
        start_s=relative_starts(number_list(starts, "start_times")) if starts else (),
    )
    lengths = {
        name: len(values)
        for name, values in (
            ("ttfts", per_request.ttft_ms),
            ("latencies", per_request.latency_ms),
            ("output_lens", per_request.output_tokens),
            ("input_lens", per_request.input_tokens),
            ("start_times", per_request.start_s),
        )
        if values
    }
    if len(set(lengths.values())) > 1:
        listed = ", ".join(f"{name} {length}" for name, length in lengths.items())
        raise ArtifactError(f"the per-request arrays have different lengths: {listed}")
    return per_request


def _success_mask(record: Mapping[str, Any]) -> list[bool] | None:
    """One flag per request from `errors` (empty string = success), when it is per request."""
    errors = record.get("errors")
    if not isinstance(errors, list) or not errors:
        return None
    mask = [not error for error in errors]
    failed, completed = record.get("failed"), record.get("completed")
    if isinstance(failed, int) and mask.count(False) != failed:
        return None
    if isinstance(completed, int) and mask.count(True) != completed:
        return None
    return mask


def _seconds_to_ms(
    record: Mapping[str, Any],
    values: list[Any] | None,
    name: str,
    median_key: str,
    assumptions: list[str],
) -> list[float]:
    """vLLM saves per-request times in seconds; a fork that saved ms is caught by the median."""
    if not values:
        return []
    seconds = number_list(values, name)
    median_ms = to_float(record.get(median_key), median_key)
    if median_ms:
        ratio = statistics.median(seconds) / median_ms
        if 0.5 < ratio < 2:
            assumptions.append(
                f"`{name}` matches `{median_key}` without conversion, so it was read as "
                "milliseconds (vLLM itself saves seconds)."
            )
            return seconds
    return [value * 1000.0 for value in seconds]


def _itls_per_request(record: Mapping[str, Any]) -> bool:
    itls = record.get("itls")
    return isinstance(itls, list) and any(isinstance(item, list) for item in itls)


def _itls_ms(
    record: Mapping[str, Any], completed: int | None, success: list[bool] | None
) -> list[float]:
    itls = record.get("itls")
    if not isinstance(itls, list) or not itls:
        return []
    if not _itls_per_request(record):  # already flattened (some forks)
        return [value * 1000.0 for value in number_list(itls, "itls")]
    per_request = itls
    if success is not None and len(itls) == len(success) and len(itls) != completed:
        per_request = [gaps for gaps, ok in zip(itls, success, strict=True) if ok]
    gaps_ms: list[float] = []
    for index, gaps in enumerate(per_request):
        gaps_ms.extend(value * 1000.0 for value in number_list(gaps, f"itls[{index}]"))
    return gaps_ms


def _latencies_from_itls(
    record: Mapping[str, Any],
    ttft_ms: Sequence[float],
    completed: int | None,
    success: list[bool] | None,
) -> list[float]:
    itls = record["itls"]
    if success is not None and len(itls) == len(success) and len(itls) != completed:
        itls = [gaps for gaps, ok in zip(itls, success, strict=True) if ok]
    if len(itls) != len(ttft_ms):
        return []
    return [
        ttft + sum(number_list(gaps, f"itls[{index}]")) * 1000.0
        for index, (ttft, gaps) in enumerate(zip(ttft_ms, itls, strict=True))
    ]


def _ints(values: list[Any] | None, name: str) -> tuple[int, ...]:
    if not values:
        return ()
    return tuple(int(value) for value in number_list(values, name))


# ---------------------------------------------------------------------------------------------
# InferenceX aggregated row
# ---------------------------------------------------------------------------------------------


def _convert_inferencex_row(record: Mapping[str, Any], assumptions: list[str]) -> BenchmarkArtifact:
    if "output_tput_per_gpu" not in record:
        raise ArtifactError(
            "`output_tput_per_gpu` is missing from the InferenceX row (`tput_per_gpu` counts "
            "input and output tokens, so output tok/s cannot be derived from it)"
        )
    reported = _latency_stats(record, [])
    assumptions.append(
        "InferenceX aggregated row: latencies without _ms were read as seconds "
        "(utils/process_result.py converts them from the vLLM client's ms)."
    )
    per_gpu = to_float(record["output_tput_per_gpu"], "output_tput_per_gpu")
    num_gpus, decode_gpus = _inferencex_gpus(record)
    if per_gpu is not None and decode_gpus:
        reported["output_tokens_per_s"] = per_gpu * decode_gpus
        assumptions.append(
            f"Output tok/s = output_tput_per_gpu {fmt(per_gpu)} × {decode_gpus} "
            f"{'decode ' if record.get('is_multinode') else ''}GPUs; the row has no duration, "
            "request count or per-request arrays."
        )
    metadata = {
        key: str(record[source])
        for key, source in (
            ("quantization", "precision"),
            ("gpu_type", "hw"),
            ("container_image", "image"),
            ("input_len", "isl"),
            ("output_len", "osl"),
        )
        if record.get(source) not in (None, "")
    }
    if num_gpus:
        metadata["num_gpus"] = str(num_gpus)
    framework = record.get("framework")
    if framework and framework != TOOL:
        assumptions.append(f"The server was {framework}; the client was InferenceX's vLLM one.")
    load = _load_point(record, "conc")
    return BenchmarkArtifact(
        tool=TOOL,
        model=str(record.get("model") or ""),
        reported=reported,
        metadata=metadata,
        assumptions=tuple(assumptions),
        label=load.label,
        load_known=load.known,
        request_rate=load.request_rate,
        max_concurrency=load.max_concurrency,
    )


def _inferencex_gpus(record: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """(all GPUs, GPUs whose output `output_tput_per_gpu` divides), per process_result.py."""
    if record.get("is_multinode"):
        prefill = to_int(record.get("num_prefill_gpu"), "num_prefill_gpu")
        decode = to_int(record.get("num_decode_gpu"), "num_decode_gpu")
        if decode is None:
            raise ArtifactError("`num_decode_gpu` is missing from the multinode InferenceX row")
        return (prefill or 0) + decode, decode
    tp = to_int(record.get("tp"), "tp")
    if tp is None:
        raise ArtifactError("`tp` is missing from the InferenceX row (needed for the GPU count)")
    gpus = (
        tp
        * (to_int(record.get("pp"), "pp") or 1)
        * (to_int(record.get("pcp_size"), "pcp_size") or 1)
    )
    return gpus, gpus
