"""What a benchmark converter hands over: one tool's result file, in the units of `docs/methods.md`.

Pure module (no Django). Converters (`benchmarks_app/converters/`) read a tool's file and return
a `BenchmarkArtifact`; `benchmarks_app/metrics.py` turns an artifact plus the run's own fields
into `RunMetrics`; `benchmarks_app/gating.py` compares two runs. All times are milliseconds,
all rates per second, token counts are output tokens unless named otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


class ArtifactError(Exception):
    """The file cannot be read as this tool's result: one clear sentence, no traceback."""


@dataclass(frozen=True, kw_only=True)
class PerRequest:
    """Per-request arrays, aligned by index (one entry per completed request).

    ttft_ms: time to first token; latency_ms: end-to-end; output_tokens / input_tokens: lengths;
    itl_ms: inter-token gaps pooled over all requests (not aligned); start_s: request send times
    relative to the run's start, when the tool records them (for tokens/s over time).
    """

    ttft_ms: tuple[float, ...] = ()
    latency_ms: tuple[float, ...] = ()
    output_tokens: tuple[int, ...] = ()
    input_tokens: tuple[int, ...] = ()
    itl_ms: tuple[float, ...] = ()
    start_s: tuple[float, ...] = ()


@dataclass(frozen=True, kw_only=True)
class TelemetrySample:
    """One accelerator sample (nvidia-smi / DCGM / neuron-monitor), seconds since the epoch."""

    timestamp_s: float
    gpu_index: int
    utilization_pct: float | None = None
    power_w: float | None = None


@dataclass(frozen=True, kw_only=True)
class BenchmarkArtifact:
    """One tool's result, converted. `reported` holds the tool's own summary statistics already
    converted to the definitions of `docs/methods.md` and milliseconds, under these keys
    (absent = not in file):

    ttft_mean_ms, ttft_p50_ms, ttft_p95_ms, ttft_p99_ms,
    tpot_mean_ms, tpot_p50_ms, tpot_p95_ms, tpot_p99_ms   (TPOT excluding the first token),
    itl_mean_ms, itl_p50_ms, itl_p95_ms, itl_p99_ms,
    e2e_mean_ms, e2e_p50_ms, e2e_p95_ms, e2e_p99_ms,
    output_tokens_per_s (system decode tok/s), requests_per_s.

    `metadata` holds run fields the file carries (vLLM `--metadata` keys at top level, etc.):
    model_hash, quantization, batch_size, num_gpus, gpu_type, usd_per_gpu_hour,
    gpu_utilization_pct, container_image, driver, operator, dataset, input_len, output_len.
    `assumptions` are sentences shown on the run page (e.g. "latencies had no unit; read as
    seconds because the key has no _ms suffix").
    """

    tool: str  # vllm, guidellm, aiperf, genai-perf, llmperf, telemetry
    tool_version: str = ""
    model: str = ""
    duration_s: float | None = None
    completed_requests: int | None = None
    failed_requests: int | None = None
    total_input_tokens: int | None = None
    total_output_tokens: int | None = None
    request_rate: float | None = None  # requests/s asked for (None = unlimited)
    max_concurrency: int | None = None
    reported: Mapping[str, float] = field(default_factory=dict)
    per_request: PerRequest | None = None
    telemetry: tuple[TelemetrySample, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict)
    assumptions: tuple[str, ...] = ()
    # One load point of a curve (a sweep is several artifacts, see `convert_points`):
    # `label` names the point as the tool does ("constant 4.0 req/s", "concurrency 64");
    # `load_known` is False when the file records neither a request rate nor a concurrency
    # (request_rate None with load_known True means an unlimited rate); `started_at_s` /
    # `ended_at_s` (epoch seconds) keep only this point's telemetry samples when a sweep shares
    # one telemetry file. Configured input / output lengths and the dataset of the point go in
    # `metadata` (input_len, output_len, dataset).
    label: str = ""
    load_known: bool = True
    started_at_s: float | None = None
    ended_at_s: float | None = None
