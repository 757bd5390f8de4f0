"""Small vLLM result files with round numbers, for runs of two load points (concurrency 4 and
16) whose figures can be worked out by hand: decode tok/s = total output tokens / duration,
output tokens per GPU-hour = decode tok/s × 3600 / 4 GPUs, busy-only cost per 1M output tokens
= $2.50 × 4 GPUs / (decode tok/s × 3600) × 1e6.

Baseline: concurrency 4, 10 s, 101 completed and 49 failed (32.7 %), 20,200 output tokens
(2,020 tok/s), p95 TTFT 250 ms, p95 TPOT 20 ms; concurrency 16, 20 s, 200 completed,
80,000 output tokens (4,000 tok/s), p95 TTFT 600 ms, p95 TPOT 40 ms.

Candidate: concurrency 4, 10 s, 100 completed and 50 failed (33.3 %), 20,000 output tokens
(2,000 tok/s), p95 TTFT 250 ms, p95 TPOT 20 ms; concurrency 16, 20 s, 200 completed,
96,000 output tokens (4,800 tok/s), p95 TTFT 500 ms, p95 TPOT 30 ms.
"""

from __future__ import annotations

import io
import json
from typing import Any

from benchmarks_app.models import BenchmarkRun
from benchmarks_app.services import benchmark_run_import

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
INPUT_LEN, OUTPUT_LEN = 1000, 200
# (concurrency, duration s, completed, failed, output tokens, p95 TTFT ms, p95 TPOT ms)
BASELINE_POINTS = ((4, 10, 101, 49, 20_200, 250, 20), (16, 20, 200, 0, 80_000, 600, 40))
CANDIDATE_POINTS = ((4, 10, 100, 50, 20_000, 250, 20), (16, 20, 200, 0, 96_000, 500, 30))
SELF_HOSTED = {"num_gpus": "4", "usd_per_gpu_hour": "2.50", "gpu_utilization_pct": "80"}
HOSTED = {
    "serving": "hosted",
    "provider": "together_ai",
    "usd_per_million_input": "0.50",
    "usd_per_million_output": "1.50",
}


def vllm_result(
    concurrency: int,
    duration: float,
    completed: int,
    failed: int,
    output_tokens: int,
    ttft_p95_ms: float,
    tpot_p95_ms: float,
    *,
    model: str = MODEL,
) -> bytes:
    """A `vllm bench serve --save-result` file without per-request arrays."""
    record: dict[str, Any] = {
        "backend": "openai-chat",
        "model_id": model,
        "input_len": str(INPUT_LEN),
        "output_len": str(OUTPUT_LEN),
        "request_rate": "inf",
        "max_concurrency": concurrency,
        "duration": duration,
        "completed": completed,
        "failed": failed,
        "total_input_tokens": completed * INPUT_LEN,
        "total_output_tokens": output_tokens,
        "output_throughput": output_tokens / duration,
        "p95_ttft_ms": ttft_p95_ms,
        "p95_tpot_ms": tpot_p95_ms,
    }
    return json.dumps(record).encode()


def point_files(
    points: tuple[tuple[Any, ...], ...], *, prefix: str, model: str = MODEL
) -> list[tuple[bytes, str]]:
    return [(vllm_result(*point, model=model), f"{prefix}_conc{point[0]}.json") for point in points]


def import_curve(
    points: tuple[tuple[Any, ...], ...] = BASELINE_POINTS,
    *,
    prefix: str = "baseline",
    meta: dict[str, str] | None = None,
    name: str = "",
    model: str = MODEL,
) -> BenchmarkRun:
    """A run of one vLLM file per point, imported as one curve."""
    return benchmark_run_import(
        files=[
            (io.BytesIO(data), filename)
            for data, filename in point_files(points, prefix=prefix, model=model)
        ],
        meta=SELF_HOSTED if meta is None else meta,
        name=name or prefix,
    )
