"""Tests for benchmarks_app.metrics; expected values are worked out by hand.

numpy's linear interpolation: for n sorted values v[0..n−1] the q-th percentile sits at position
k = (n − 1) × q / 100; with i = floor(k) and f = k − i it is v[i] + f × (v[i+1] − v[i]).

The five requests used throughout (TTFT ms, output tokens, TPOT ms → end-to-end ms):
  r0: TTFT 140, 11 tokens, TPOT 20 → e2e 140 + 10 × 20 =  340
  r1: TTFT 100, 21 tokens, TPOT 10 → e2e 100 + 20 × 10 =  300
  r2: TTFT 400,  1 token            → e2e 400 (no TPOT: only one output token)
  r3: TTFT 120,  6 tokens, TPOT 30 → e2e 120 +  5 × 30 =  270
  r4: TTFT 200, 51 tokens, TPOT 40 → e2e 200 + 50 × 40 = 2200
Output tokens 11 + 21 + 1 + 6 + 51 = 90 over a 10 s run.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from benchmarks_app.artifacts import BenchmarkArtifact, PerRequest, TelemetrySample
from benchmarks_app.metrics import (
    RunFields,
    compute_metrics,
    distribution,
    run_fields_from,
    timeline,
    tpot_per_request,
)

FIVE_REQUESTS = PerRequest(
    ttft_ms=(140.0, 100.0, 400.0, 120.0, 200.0),
    latency_ms=(340.0, 300.0, 400.0, 270.0, 2200.0),
    output_tokens=(11, 21, 1, 6, 51),
    itl_ms=(10.0, 20.0, 30.0, 40.0, 50.0, 60.0),
)
# The file's own summary, deliberately different: per-request arrays must win over it.
FILE_SUMMARY = {"ttft_p50_ms": 999.0, "ttft_p95_ms": 999.0, "tpot_p95_ms": 999.0}


def _artifact(**overrides: object) -> BenchmarkArtifact:
    values: dict[str, object] = {
        "tool": "vllm",
        "model": "meta-llama/Llama-3.1-8B-Instruct",
        "duration_s": 10.0,
        "total_output_tokens": 90,
        "per_request": FIVE_REQUESTS,
        "reported": FILE_SUMMARY,
    }
    values.update(overrides)
    return BenchmarkArtifact(**values)  # type: ignore[arg-type]


def _fields(**overrides: object) -> RunFields:
    values: dict[str, object] = {"model": "meta-llama/Llama-3.1-8B-Instruct", "num_gpus": 2}
    values.update(overrides)
    return RunFields(**values)  # type: ignore[arg-type]


# --- latency percentiles --------------------------------------------------------------------


def test_tpot_per_request_skips_single_token_requests() -> None:
    # (340 − 140) / 10 = 20, (300 − 100) / 20 = 10, r2 skipped, (270 − 120) / 5 = 30,
    # (2200 − 200) / 50 = 40.
    assert tpot_per_request(FIVE_REQUESTS) == [20.0, 10.0, 30.0, 40.0]


def test_percentiles_from_per_request_arrays() -> None:
    metrics = compute_metrics(_artifact(), _fields())
    # TTFT sorted 100, 120, 140, 200, 400 (n = 5).
    # p50: k = 4 × 0.5 = 2 → v[2] = 140.
    assert metrics.ttft_p50_ms == pytest.approx(140.0)
    # p95: k = 4 × 0.95 = 3.8 → 200 + 0.8 × (400 − 200) = 360.
    assert metrics.ttft_p95_ms == pytest.approx(360.0)
    # TPOT sorted 10, 20, 30, 40 (n = 4).
    # p50: k = 3 × 0.5 = 1.5 → 20 + 0.5 × (30 − 20) = 25.
    assert metrics.tpot_p50_ms == pytest.approx(25.0)
    # p95: k = 3 × 0.95 = 2.85 → 30 + 0.85 × (40 − 30) = 38.5.
    assert metrics.tpot_p95_ms == pytest.approx(38.5)
    # ITL pooled, sorted 10 … 60 (n = 6); p95: k = 5 × 0.95 = 4.75 → 50 + 0.75 × 10 = 57.5.
    assert metrics.itl_p95_ms == pytest.approx(57.5)
    # e2e sorted 270, 300, 340, 400, 2200; p95: k = 3.8 → 400 + 0.8 × (2200 − 400) = 1840.
    assert metrics.e2e_p95_ms == pytest.approx(1840.0)
    assert metrics.sources["ttft_p95_ms"] == "per-request arrays"
    assert metrics.sources["tpot_p95_ms"] == "per-request arrays"


def test_throughput_per_user_speed_and_per_gpu_hour() -> None:
    metrics = compute_metrics(_artifact(), _fields(num_gpus=2))
    # 90 tokens / 10 s = 9 tok/s.
    assert metrics.decode_tokens_per_s == pytest.approx(9.0)
    # 1000 / median TPOT 25 ms = 40 tok/s for one user.
    assert metrics.per_user_decode_tokens_per_s == pytest.approx(40.0)
    # 9 × 3600 / 2 GPUs = 16,200 output tokens per GPU-hour.
    assert metrics.output_tokens_per_gpu_hour == pytest.approx(16_200.0)
    assert metrics.sources["decode_tokens_per_s"] == "output tokens / duration"


def test_output_tokens_per_gpu_hour_at_realistic_scale() -> None:
    # 2,000 tok/s on 8 GPUs: 2000 × 3600 / 8 = 900,000 tokens per GPU-hour.
    artifact = _artifact(per_request=None, duration_s=100.0, total_output_tokens=200_000)
    metrics = compute_metrics(artifact, _fields(num_gpus=8))
    assert metrics.decode_tokens_per_s == pytest.approx(2000.0)
    assert metrics.output_tokens_per_gpu_hour == pytest.approx(900_000.0)


def test_output_tokens_per_gpu_hour_needs_the_gpu_count() -> None:
    metrics = compute_metrics(_artifact(), _fields(num_gpus=None))
    assert metrics.output_tokens_per_gpu_hour is None
    assert "--meta num_gpus=8" in metrics.missing["output_tokens_per_gpu_hour"]


def test_decode_falls_back_to_the_files_output_rate() -> None:
    artifact = _artifact(
        per_request=None, total_output_tokens=None, reported={"output_tokens_per_s": 221.5}
    )
    metrics = compute_metrics(artifact, _fields())
    assert metrics.decode_tokens_per_s == pytest.approx(221.5)
    assert metrics.sources["decode_tokens_per_s"] == "file's output tok/s"


def test_files_own_p50_and_p95_without_arrays() -> None:
    reported = {
        "ttft_p50_ms": 296.9,
        "ttft_p95_ms": 353.8,
        "tpot_p50_ms": 17.4,
        "tpot_p95_ms": 18.1,
    }
    metrics = compute_metrics(_artifact(per_request=None, reported=reported), _fields())
    assert metrics.ttft_p50_ms == 296.9
    assert metrics.ttft_p95_ms == 353.8
    assert metrics.tpot_p95_ms == 18.1
    assert metrics.sources["ttft_p95_ms"] == "file's own p95"
    assert metrics.sources["ttft_p50_ms"] == "file's own p50"
    # 1000 / 17.4 = 57.471…
    assert metrics.per_user_decode_tokens_per_s == pytest.approx(57.4712643678)


def test_p99_is_never_used_for_p95() -> None:
    # A vLLM file saved with the default --metric-percentiles 99: median and p99 only.
    reported = {
        "ttft_p50_ms": 296.9,
        "ttft_p99_ms": 585.9,
        "tpot_p50_ms": 17.4,
        "tpot_p99_ms": 18.5,
    }
    metrics = compute_metrics(_artifact(per_request=None, reported=reported), _fields())
    assert metrics.ttft_p95_ms is None
    assert metrics.tpot_p95_ms is None
    assert metrics.ttft_p50_ms == 296.9
    assert metrics.missing["ttft_p95_ms"].startswith(
        "p95 TTFT: save the vLLM result with --metric-percentiles 95 or with per-request arrays "
        "(--save-detailed)"
    )
    assert "p99 is never used" in metrics.missing["ttft_p95_ms"]
    assert metrics.missing["tpot_p95_ms"].startswith("p95 TPOT: ")
    assert "ttft_p95_ms" not in metrics.sources


# --- telemetry ------------------------------------------------------------------------------


def _sample(t: float, gpu: int, util: float | None, power: float | None) -> TelemetrySample:
    return TelemetrySample(timestamp_s=t, gpu_index=gpu, utilization_pct=util, power_w=power)


RUN_TELEMETRY = (
    # Before the run (t = 900): outside the window, must not count.
    _sample(900, 0, 0.0, 50.0),
    _sample(1000, 0, 80.0, 240.0),
    _sample(1000, 1, 70.0, 230.0),
    _sample(1005, 0, 90.0, 260.0),
    _sample(1005, 1, 60.0, 270.0),
)


def test_utilization_and_tokens_per_joule_from_telemetry() -> None:
    artifact = _artifact(telemetry=RUN_TELEMETRY)
    metrics = compute_metrics(
        artifact, _fields(gpu_utilization_pct=10.0), run_window_s=(1000.0, 1010.0)
    )
    # Utilization: (80 + 70 + 90 + 60) / 4 = 75 %; telemetry beats the stated 10 %.
    assert metrics.gpu_utilization_pct == pytest.approx(75.0)
    assert metrics.sources["gpu_utilization_pct"] == "telemetry"
    # Power: GPU 0 mean (240 + 260) / 2 = 250 W, GPU 1 mean (230 + 270) / 2 = 250 W → 500 W total,
    # 250 W per GPU. Tokens per joule = 90 tokens / (500 W × 10 s) = 0.018.
    assert metrics.power_w_per_gpu == pytest.approx(250.0)
    assert metrics.tokens_per_joule == pytest.approx(0.018)


def test_without_a_window_every_attached_sample_counts() -> None:
    metrics = compute_metrics(_artifact(telemetry=RUN_TELEMETRY), _fields())
    # (0 + 80 + 70 + 90 + 60) / 5 = 60 %.
    assert metrics.gpu_utilization_pct == pytest.approx(60.0)


def test_stated_utilization_without_telemetry() -> None:
    metrics = compute_metrics(_artifact(), _fields(gpu_utilization_pct=85.0, watts_per_gpu=700.0))
    assert metrics.gpu_utilization_pct == 85.0
    assert metrics.sources["gpu_utilization_pct"] == "stated"
    assert metrics.power_w_per_gpu == 700.0
    # A stated wattage is not a measurement: tokens per joule needs telemetry.
    assert metrics.tokens_per_joule is None
    assert "telemetry" in metrics.missing["tokens_per_joule"]


def test_no_telemetry_and_nothing_stated() -> None:
    metrics = compute_metrics(_artifact(), _fields())
    assert metrics.gpu_utilization_pct is None
    assert metrics.missing["gpu_utilization_pct"].startswith("GPU utilization: attach")
    assert "--meta gpu_utilization_pct=" in metrics.missing["gpu_utilization_pct"]


# --- run fields -----------------------------------------------------------------------------


def test_run_fields_metadata_then_overrides() -> None:
    artifact = _artifact(
        request_rate=None,
        max_concurrency=4,
        metadata={"quantization": "fp8", "num_gpus": "8", "usd_per_gpu_hour": "3.50"},
    )
    fields = run_fields_from(
        artifact, {"num_gpus": "4", "batch_size": "256", "container_image": "vllm:0.9"}
    )
    assert fields == RunFields(
        model="meta-llama/Llama-3.1-8B-Instruct",
        quantization="fp8",
        num_gpus=4,
        batch_size=256,
        usd_per_gpu_hour=Decimal("3.50"),
        concurrency=4,
    )


def test_run_fields_inf_request_rate_is_unlimited() -> None:
    fields = run_fields_from(_artifact(request_rate=10.0), {"request_rate": "inf"})
    assert fields.request_rate is None
    assert run_fields_from(_artifact(request_rate=10.0), {}).request_rate == 10.0


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("num_gpus", "eight", "num_gpus must be a whole number of at least 1, got 'eight'"),
        ("num_gpus", "0", "num_gpus must be a whole number of at least 1, got '0'"),
        ("batch_size", "2.5", "batch_size must be a whole number of at least 1, got '2.5'"),
        ("usd_per_gpu_hour", "cheap", "usd_per_gpu_hour must be an amount of at least 0"),
        ("gpu_utilization_pct", "120", "gpu_utilization_pct must be a number between 0 and 100"),
    ],
)
def test_run_fields_bad_numbers_name_the_key_and_value(key: str, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        run_fields_from(_artifact(), {key: value})


# --- chart helpers --------------------------------------------------------------------------


def test_timeline_spreads_tokens_from_first_token_to_end() -> None:
    per_request = PerRequest(
        start_s=(0.0, 1.0),
        ttft_ms=(0.0, 500.0),
        latency_ms=(2000.0, 1500.0),
        output_tokens=(20, 10),
    )
    result = timeline(_artifact(per_request=per_request), bucket_s=1.0)
    assert result is not None
    # Request 0: 20 tokens over 0–2 s → 10 in second 0, 10 in second 1.
    # Request 1: 10 tokens over 1.5–2.5 s → 5 in second 1, 5 in second 2.
    assert result.bucket_start_s == (0.0, 1.0, 2.0)
    assert result.output_tokens_per_s == pytest.approx((10.0, 15.0, 5.0))


def test_timeline_needs_start_times() -> None:
    assert timeline(_artifact()) is None


def test_distribution() -> None:
    result = distribution([100.0, 120.0, 140.0, 200.0, 400.0])
    assert result is not None
    # mean 960 / 5 = 192; p95 as above 360; p99: k = 3.96 → 200 + 0.96 × 200 = 392.
    assert (result.count, result.mean, result.minimum, result.maximum) == (5, 192.0, 100.0, 400.0)
    assert (result.p50, result.p95, result.p99) == pytest.approx((140.0, 360.0, 392.0))
    assert distribution([]) is None
