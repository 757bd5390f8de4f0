"""Gate speed: two vLLM results with 100k per-request records each, from bytes to verdict."""

from __future__ import annotations

import json
import time

import numpy as np

from benchmarks_app import converters, gating, metrics

REQUESTS = 100_000
META = {
    "model_hash": "abc",
    "quantization": "fp8",
    "batch_size": "256",
    "num_gpus": "8",
    "gpu_type": "H100",
    "usd_per_gpu_hour": "4.00",
    "dataset": "sharegpt",
    "input_len": "1024",
    "output_len": "256",
    "gpu_utilization_pct": "80",
}


def _vllm_file(seed: int, speed: float) -> bytes:
    rng = np.random.default_rng(seed)
    outputs = rng.integers(16, 512, REQUESTS)
    ttft = rng.lognormal(-1.5, 0.3, REQUESTS) / speed  # seconds
    tpot = rng.lognormal(-3.5, 0.2, REQUESTS) / speed
    latency = ttft + tpot * (outputs - 1)
    duration = float(latency.sum() / 256)
    body = {
        "backend": "vllm",
        "model_id": "meta-llama/Llama-3.3-70B-Instruct",
        "date": "20261129",
        "duration": duration,
        "completed": REQUESTS,
        "total_input_tokens": REQUESTS * 1024,
        "total_output_tokens": int(outputs.sum()),
        "request_throughput": REQUESTS / duration,
        "output_throughput": float(outputs.sum()) / duration,
        "max_concurrency": 256,
        "mean_ttft_ms": float(ttft.mean() * 1000),
        "median_ttft_ms": float(np.median(ttft) * 1000),
        "ttfts": ttft.tolist(),
        "latencies": latency.tolist(),
        "output_lens": outputs.tolist(),
        "input_lens": [1024] * REQUESTS,
        "itls": [],
        **META,
    }
    return json.dumps(body).encode()


def run() -> list[str]:
    baseline_bytes, candidate_bytes = _vllm_file(1, 1.0), _vllm_file(2, 1.1)
    started = time.perf_counter()
    sides = []
    for data, name in ((baseline_bytes, "baseline.json"), (candidate_bytes, "candidate.json")):
        artifact = converters.convert(data, filename=name, format="vllm")
        fields = metrics.run_fields_from(artifact, {})
        sides.append((fields, metrics.compute_metrics(artifact, fields)))
    verdict = gating.evaluate_gate(baseline=sides[0], candidate=sides[1])
    seconds = time.perf_counter() - started
    return [
        f"gate: 2 vLLM results x {REQUESTS:,} per-request records, bytes to verdict "
        f"({verdict.verdict}) in {seconds:.2f} s (target <= 2 s)"
    ]
