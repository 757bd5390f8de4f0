"""Latency histograms: accuracy against numpy, and cost relative to sorting the raw values."""

from __future__ import annotations

import time

import numpy as np

from audit_app.ingestion.histograms import LatencyHistogram

REQUESTS = 1_000_000
CHUNKS = 10


def run() -> list[str]:
    rng = np.random.default_rng(7)
    values = rng.lognormal(mean=6.0, sigma=1.0, size=REQUESTS)
    chunks = np.array_split(values, CHUNKS)

    started = time.perf_counter()
    merged = LatencyHistogram.merge_all(LatencyHistogram.from_values(c) for c in chunks)
    p_hist = merged.percentiles((0.5, 0.95, 0.99))
    hist_seconds = time.perf_counter() - started

    started = time.perf_counter()
    p_numpy = np.percentile(values, [50, 95, 99])
    numpy_seconds = time.perf_counter() - started

    errors = [
        abs(p_hist[q] - exact) / exact for q, exact in zip((0.5, 0.95, 0.99), p_numpy, strict=True)
    ]
    stored = len(merged.to_json()["index"])
    return [
        f"histograms: {REQUESTS:,} latencies in {CHUNKS} chunks merged; "
        f"max relative error of p50/p95/p99 vs numpy = {max(errors) * 100:.3f} % (target <= 1 %)",
        f"histograms: build+merge+read time / numpy percentile time = "
        f"{hist_seconds / numpy_seconds:.2f}x; {stored} occupied bins stored",
    ]
