"""bench/gate.py: the vLLM files it writes read back as the points it means (checked against the
file's own arrays), and a small run of the whole benchmark (2,000 records a point) gates its
two curves through the command."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bench import gate as gate_bench
from benchmarks_app import converters, metrics


def test_a_point_reads_back_with_its_load_and_decode_rate() -> None:
    data = gate_bench.vllm_file(seed=1, speed=1.0, concurrency=16, requests=1_000)
    raw = json.loads(data)
    [artifact] = converters.convert_points(data, filename="baseline-c16.json")
    assert (artifact.max_concurrency, artifact.request_rate, artifact.completed_requests) == (
        16,
        None,
        1_000,
    )
    fields = metrics.run_fields_from(artifact, {})
    computed = metrics.compute_metrics(artifact, fields)
    # 16 requests in flight: the duration is the summed latencies over 16.
    duration = sum(raw["latencies"]) / 16
    assert raw["duration"] == pytest.approx(duration, rel=1e-12)
    assert computed.decode_tokens_per_s == pytest.approx(
        sum(raw["output_lens"]) / duration, rel=1e-12
    )
    assert computed.ttft_p95_ms == pytest.approx(np.percentile(raw["ttfts"], 95) * 1000)


def test_latencies_grow_with_concurrency_and_speed_divides_them() -> None:
    def median_ttft(concurrency: int, speed: float) -> float:
        data = gate_bench.vllm_file(seed=3, speed=speed, concurrency=concurrency, requests=500)
        return float(np.median(json.loads(data)["ttfts"]))

    assert median_ttft(1, 1.0) < median_ttft(32, 1.0) < median_ttft(128, 1.0)
    # The same draws, every latency divided by the speed (to the microsecond the file keeps).
    assert median_ttft(32, 1.1) == pytest.approx(median_ttft(32, 1.0) / 1.1, abs=2e-6)


def test_the_sweeps_are_eight_points_a_side(tmp_path: Path) -> None:
    sides, mib = gate_bench.write_sweeps(tmp_path, requests=10)
    assert sides["baseline"] == [f"baseline-c{c}.json" for c in gate_bench.CONCURRENCIES]
    assert len(sides["candidate"]) == 8 and len(set(gate_bench.CONCURRENCIES)) == 8
    assert mib == pytest.approx(
        sum(p.stat().st_size for p in tmp_path.iterdir()) / 16 / 2**20, rel=1e-9
    )


@pytest.mark.slow
def test_a_small_run_gates_the_two_curves(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BENCH_GATE_REQUESTS", "2000")
    # Its own SQLite file: the suite never touches the benchmark's PostgreSQL database.
    monkeypatch.setenv("BENCH_GATE_DATABASE_URL", f"sqlite:///{tmp_path / 'gate.sqlite3'}")
    lines = gate_bench.run()
    assert lines[0].startswith("gate: 2 curves x 8 points x 2,000 per-request records")
    assert lines[0].endswith(", SQLite")
    assert "--slo-ttft-ms 1000 --slo-tpot-ms 60 --json` end to end:" in lines[2]
    assert "target <= 3 s: met" in lines[2]
    assert "(import both sweeps, then gate) end to end:" in lines[3]
    # The candidate is 10 % faster everywhere at the same price: a pass at all 8 points.
    assert lines[5].startswith("gate:   verdict pass over 8 matched points; operating points")
