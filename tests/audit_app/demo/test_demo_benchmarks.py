"""The demo's benchmark sweep pair (H100 against Trainium2) and its gate: what the seed loads,
checked against the files it wrote, read here on their own (json / csv / json lines), and the
hardware catalog's prices."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from audit_app.costs.catalog import CATALOG_PATH
from audit_app.demo.benchmarks import (
    BASELINE,
    CANDIDATE,
    CONCURRENCIES,
    GATE_TOLERANCES,
    demo_benchmarks_load,
    write_side,
)
from audit_app.models import Upload
from benchmarks_app.models import BenchmarkRun, Gate

CONCURRENCY_LOADS = [{"concurrency": c} for c in (8, 16, 32, 64)]


def _catalog_price(instance: str) -> tuple[Decimal, int]:
    """$/hour and accelerator count of an instance, read from the catalog CSV here."""
    with CATALOG_PATH.open(newline="", encoding="utf-8") as handle:
        row = next(r for r in csv.DictReader(handle) if r["name"] == instance)
    return Decimal(row["usd_per_hour"]), int(row["accelerator_count"])


def _result(directory: Path, name: str) -> dict[str, Any]:
    return json.loads((directory / name).read_text(encoding="utf-8"))


def _decode(result: dict[str, Any]) -> float:
    """Output tokens / duration, from the file's per-request output lengths."""
    return sum(result["output_lens"]) / result["duration"]


def _p95_tpot_ms(result: dict[str, Any]) -> float:
    """p95 over requests of (sum of the request's inter-token gaps) / (output tokens − 1)."""
    tpots = [
        sum(gaps) * 1000 / (tokens - 1)
        for gaps, tokens in zip(result["itls"], result["output_lens"], strict=True)
    ]
    return float(np.percentile(tpots, 95))


def _usd_per_million(instance: str, decode: float) -> float:
    usd_per_hour, _ = _catalog_price(instance)
    return float(usd_per_hour) / (decode * 3600) * 1_000_000


@pytest.fixture
def loaded(db: Any, tmp_path: Path) -> Any:
    return demo_benchmarks_load(directory=tmp_path)


def test_two_runs_of_four_points_at_the_sweep_loads(loaded: Any, tmp_path: Path) -> None:
    assert not loaded.skipped
    for run, profile, gpus in ((loaded.baseline, BASELINE, 8), (loaded.candidate, CANDIDATE, 16)):
        points = list(run.points.order_by("index"))
        assert [p.load for p in points] == CONCURRENCY_LOADS
        assert {(p.input_len, p.output_len, p.dataset) for p in points} == {(1024, 256, "random")}
        assert [p.upload.original_name for p in points] == [
            f"demo-vllm-llama-3.3-70b-{profile.key}-c{c}.json" for c in (8, 16, 32, 64)
        ]
        assert all((tmp_path / p.upload.original_name).is_file() for p in points)
        usd_per_hour, accelerators = _catalog_price(profile.instance_type)
        assert accelerators == gpus
        assert run.model == "meta-llama/Llama-3.3-70B-Instruct"
        assert run.fields["num_gpus"] == gpus
        assert Decimal(run.fields["usd_per_gpu_hour"]) == usd_per_hour / gpus
        assert (run.fields["quantization"], run.fields["batch_size"]) == ("bf16", 64)
    assert Decimal(loaded.baseline.fields["usd_per_gpu_hour"]) == Decimal("12.29")  # 98.32 / 8
    # The H100 sweep carries nvidia-smi telemetry, the Trainium2 sweep neuron-monitor's; no
    # utilization is stated, and neuron-monitor gives no power.
    assert loaded.baseline.telemetry_upload.original_name == "demo-nvidia-smi-h100x8.csv"
    assert loaded.candidate.telemetry_upload.original_name == "demo-neuron-monitor-trn2x16.jsonl"
    for run in (loaded.baseline, loaded.candidate):
        assert run.fields["gpu_utilization_pct"] is None
        for point in run.points.all():
            assert point.metrics["sources"]["gpu_utilization_pct"] == "telemetry"
            assert point.metrics["error_rate_pct"] == 0.0
    assert {p.metrics["power_w_per_gpu"] is None for p in loaded.candidate.points.all()} == {True}


def test_the_gate_passes_at_the_slo_with_the_candidate_cheaper(loaded: Any, tmp_path: Path) -> None:
    gate = loaded.gate
    assert (gate.baseline, gate.candidate) == (loaded.baseline, loaded.candidate)
    assert gate.verdict == Gate.Verdict.PASS, gate.result["summary"]
    assert gate.inputs["slo"] == {"ttft_ms": 1000.0, "tpot_ms": 60.0}
    assert gate.inputs["tolerances"] == dict(GATE_TOLERANCES)
    assert gate.result["confounders"] == [] and gate.result["missing"] == []
    assert len(gate.result["points"]) == 4 and gate.result["unmatched"] == []
    assert all(check["passed"] for check in gate.result["checks"])
    operating = gate.result["operating_point"]
    assert operating["baseline"]["load"] == {"concurrency": 64}
    # The candidate's p95 TPOT at 64 is over the SLO (the baseline's is not), so its operating
    # point is 32: worked out here from the files' inter-token gaps.
    assert operating["candidate"]["load"] == {"concurrency": 32}
    base_64 = _result(tmp_path, BASELINE.file_name(64))
    cand_64 = _result(tmp_path, CANDIDATE.file_name(64))
    assert _p95_tpot_ms(base_64) <= 60 < _p95_tpot_ms(cand_64)
    assert _p95_tpot_ms(cand_64) > _p95_tpot_ms(base_64) * 1.10  # a real regression, tolerated
    at_64 = next(p for p in gate.result["points"] if p["load"] == {"concurrency": 64})
    tpot = next(c for c in at_64["checks"] if c["metric"] == "tpot_p95_ms")
    assert tpot["baseline"] == pytest.approx(_p95_tpot_ms(base_64), rel=1e-9)
    assert tpot["candidate"] == pytest.approx(_p95_tpot_ms(cand_64), rel=1e-9)

    # Decode tok/s and the busy-only cost per 1M output tokens at each operating point, by hand.
    base_decode = _decode(base_64)
    cand_decode = _decode(_result(tmp_path, CANDIDATE.file_name(32)))
    assert operating["baseline"]["output_tokens_per_s"] == pytest.approx(base_decode, rel=1e-12)
    assert operating["candidate"]["output_tokens_per_s"] == pytest.approx(cand_decode, rel=1e-12)
    base_cost = _usd_per_million("p5.48xlarge", base_decode)
    cand_cost = _usd_per_million("trn2.48xlarge", cand_decode)
    costs = gate.result["cost_per_million_tokens"]
    assert float(costs["baseline"]) == pytest.approx(base_cost, rel=1e-9)
    assert float(costs["candidate"]) == pytest.approx(cand_cost, rel=1e-9)
    assert cand_cost < base_cost * 0.95  # more than 5 % cheaper at the SLO


def test_one_point_matches_its_file(loaded: Any, tmp_path: Path) -> None:
    """The candidate at concurrency 16, every compared figure worked out from its file."""
    result = _result(tmp_path, CANDIDATE.file_name(16))
    point = loaded.candidate.points.get(index=1)
    ttft_ms = np.array(result["ttfts"]) * 1000
    e2e_ms = ttft_ms + np.array([sum(gaps) for gaps in result["itls"]]) * 1000
    tpot_ms = (e2e_ms - ttft_ms) / 255
    decode = 320 * 256 / result["duration"]
    expected = {
        "decode_tokens_per_s": decode,
        "output_tokens_per_gpu_hour": decode * 3600 / 16,
        "ttft_p95_ms": np.percentile(ttft_ms, 95),
        "tpot_p50_ms": np.median(tpot_ms),
        "tpot_p95_ms": np.percentile(tpot_ms, 95),
        "per_user_decode_tokens_per_s": 1000 / np.median(tpot_ms),
        "e2e_p95_ms": np.percentile(e2e_ms, 95),
        "itl_p95_ms": np.percentile(np.concatenate(result["itls"]) * 1000, 95),
    }
    for metric, value in expected.items():
        assert point.metrics[metric] == pytest.approx(float(value), rel=1e-9), metric
    at_16 = next(p for p in loaded.gate.result["points"] if p["load"] == {"concurrency": 16})
    decode_check = next(c for c in at_16["checks"] if c["metric"] == "decode_tokens_per_s")
    assert decode_check["candidate"] == pytest.approx(decode, rel=1e-12)


def test_latencies_grow_and_throughput_saturates_with_concurrency(tmp_path: Path) -> None:
    for profile in (BASELINE, CANDIDATE):
        files = write_side(profile, tmp_path / profile.key)
        results = [json.loads(path.read_text()) for path in files.results]
        assert [r["max_concurrency"] for r in results] == list(CONCURRENCIES)
        assert [r["completed"] for r in results] == [320] * 4
        decode = [_decode(r) for r in results]
        median_tpot = [np.median([sum(g) / 255 for g in r["itls"]]) for r in results]
        median_ttft = [np.median(r["ttfts"]) for r in results]
        assert decode == sorted(decode) and median_tpot == sorted(median_tpot), profile.key
        assert median_ttft == sorted(median_ttft), profile.key
        # Each doubling of concurrency gains less throughput than the one before.
        gains = [b / a for a, b in zip(decode, decode[1:], strict=False)]
        assert gains == sorted(gains, reverse=True), (profile.key, gains)


def _utc(text: str, layout: str) -> datetime:
    """nvidia-smi and vLLM write times without a zone; the demo writes them in UTC."""
    return datetime.strptime(text, layout).replace(tzinfo=UTC)


def _window(result: dict[str, Any]) -> tuple[float, float]:
    """A point's time window in epoch seconds: `date` is when vLLM saved the file (its end)."""
    ended = _utc(result["date"], "%Y%m%d-%H%M%S").timestamp()
    return ended - result["duration"], ended


def _neuron_reports(path: Path) -> list[tuple[float, list[float]]]:
    """Each neuron-monitor line's timestamp and its logical NeuronCores' utilization."""
    reports = []
    for line in path.read_text().splitlines():
        report = json.loads(line)
        (runtime,) = report["neuron_runtime_data"]
        cores = runtime["report"]["neuroncore_counters"]["neuroncores_in_use"]
        reports.append(
            (report["timestamp"], [core["neuroncore_utilization"] for core in cores.values()])
        )
    return reports


def _nvidia_smi_rows(path: Path) -> list[tuple[datetime, dict[str, str]]]:
    with path.open(newline="") as handle:
        return [
            (_utc(r["timestamp"], "%Y/%m/%d %H:%M:%S.%f"), r)
            for r in csv.DictReader(handle, skipinitialspace=True)
        ]


def test_each_point_has_the_utilization_its_telemetry_reports(loaded: Any, tmp_path: Path) -> None:
    """Per point: the mean of the samples inside its window, from the CSV (each GPU a second)
    and from neuron-monitor's reports (each NeuronCore a report); the gate compares the two and
    allows a 10 % drop."""
    smi = _nvidia_smi_rows(tmp_path / BASELINE.telemetry_name())
    neuron = _neuron_reports(tmp_path / CANDIDATE.telemetry_name())
    at = {tuple(p["load"].items()): p for p in loaded.gate.result["points"]}
    for index, concurrency in enumerate(CONCURRENCIES):
        start, end = _window(_result(tmp_path, BASELINE.file_name(concurrency)))
        base = np.mean(
            [
                float(r["utilization.gpu [%]"].rstrip(" %"))
                for moment, r in smi
                if start <= moment.timestamp() <= end
            ]
        )
        start, end = _window(_result(tmp_path, CANDIDATE.file_name(concurrency)))
        inside = [values for stamp, values in neuron if start <= stamp <= end]
        assert all(len(values) == 64 for values in inside)
        cand = np.mean(np.concatenate(inside))
        candidate_point = loaded.candidate.points.get(index=index)
        assert candidate_point.metrics["gpu_utilization_pct"] == pytest.approx(cand, rel=1e-9)
        check = next(
            c
            for c in at[(("concurrency", concurrency),)]["checks"]
            if c["metric"] == "gpu_utilization_pct"
        )
        assert check["baseline"] == pytest.approx(base, rel=1e-9)
        assert check["candidate"] == pytest.approx(cand, rel=1e-9)
        assert check["passed"] == (cand >= base * 0.9), concurrency
        assert 75 < cand < base, concurrency  # busy, and a little under the H100s each time


def test_telemetry_covers_every_point_of_the_h100_sweep(tmp_path: Path) -> None:
    files = write_side(BASELINE, tmp_path)
    assert files.telemetry is not None
    rows = _nvidia_smi_rows(files.telemetry)
    assert {r["index"] for _, r in rows} == {str(gpu) for gpu in range(8)}
    first, last = min(t for t, _ in rows), max(t for t, _ in rows)
    assert first < BASELINE.sweep_start
    for path in files.results:
        result = json.loads(path.read_text())
        ended = _utc(result["date"], "%Y%m%d-%H%M%S")  # saved when the point ended
        started = ended - timedelta(seconds=result["duration"])
        assert first < started and ended < last, path.name
        busy = [
            float(r["utilization.gpu [%]"].rstrip(" %"))
            for moment, r in rows
            if started <= moment <= ended - timedelta(seconds=1)
        ]
        assert len(busy) >= 8 * int(result["duration"] - 1) and min(busy) > 50, path.name
    # The files are the same bytes on every seed (a fixed numpy seed per side and point).
    again = write_side(BASELINE, tmp_path / "again")
    assert [p.read_bytes() for p in again.results] == [p.read_bytes() for p in files.results]


def test_loading_twice_does_not_duplicate(loaded: Any, tmp_path: Path) -> None:
    uploads = Upload.objects.count()
    again = demo_benchmarks_load(directory=tmp_path)
    assert again.skipped and again.gate is None
    assert BenchmarkRun.objects.count() == 2
    assert Gate.objects.count() == 1
    assert Upload.objects.count() == uploads == 10  # 8 result files and 2 telemetry files


def test_telemetry_covers_every_point_of_the_trainium2_sweep(tmp_path: Path) -> None:
    files = write_side(CANDIDATE, tmp_path)
    assert files.telemetry is not None
    lines = [json.loads(line) for line in files.telemetry.read_text().splitlines()]
    stamps = [line["timestamp"] for line in lines]
    assert stamps == sorted(stamps)
    # One report a period of just over a second, its `period` the gap since the last one.
    periods = [
        line["neuron_runtime_data"][0]["report"]["neuroncore_counters"]["period"] for line in lines
    ]
    assert all(1.0 < period < 1.002 for period in periods)
    assert np.diff(stamps) == pytest.approx(periods[1:], abs=2e-6)
    hardware = lines[0]["neuron_hardware_info"]
    assert (hardware["neuron_device_count"], hardware["neuroncore_per_device_count"]) == (16, 4)
    for line in lines:
        cores = line["neuron_runtime_data"][0]["report"]["neuroncore_counters"][
            "neuroncores_in_use"
        ]
        assert list(cores) == [str(core) for core in range(64)]
        for core in cores.values():  # a logical core is the mean of its two physical ones
            halves = [half["neuroncore_utilization"] for half in core["v3d"].values()]
            assert core["neuroncore_utilization"] == pytest.approx(np.mean(halves), abs=5e-4)
    reports = _neuron_reports(files.telemetry)
    assert reports[0][0] < CANDIDATE.sweep_start.timestamp()
    for path in files.results:
        start, end = _window(json.loads(path.read_text()))
        assert reports[0][0] < start and end < reports[-1][0], path.name
        # Reports wholly inside the point (their period too) are busy on every core.
        busy = [min(values) for stamp, values in reports if start + 1.01 <= stamp <= end - 1]
        assert len(busy) >= int(end - start) - 3 and min(busy) > 60, path.name
    idle = [max(values) for stamp, values in reports if stamp < CANDIDATE.sweep_start.timestamp()]
    assert idle and max(idle) == 0.0
    again = write_side(CANDIDATE, tmp_path / "again")
    assert again.telemetry is not None
    assert again.telemetry.read_bytes() == files.telemetry.read_bytes()
