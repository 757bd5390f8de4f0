"""The demo's benchmark sweep pair and the gate over it.

Its rules in full: `docs/methods.md`, section "The demo's benchmark pair".
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
from django.db import transaction

from audit_app.demo.billing import catalog_instance
from benchmarks_app.models import BenchmarkRun, Gate
from benchmarks_app.services import benchmark_run_import, gate_evaluate

MODEL = "meta-llama/Llama-3.3-70B-Instruct"
CONCURRENCIES = (8, 16, 32, 64)
INPUT_LEN = 1024
OUTPUT_LEN = 256
REQUESTS_PER_POINT = 320
QUANTIZATION = "bf16"
SERVER_BATCH_SIZE = 64
DATASET = "random"
FILE_PREFIX = "demo-"  # as every demo file (`audit_app.demo.seed.DEMO_PREFIX`)

# The gate's SLO: a chat user waits at most a second for the first token (p95) and reads at
# ~17 tokens/s or faster (p95 TPOT 60 ms). Each side's operating point is its highest-throughput
# point inside it.
SLO_TTFT_MS = 1000.0
SLO_TPOT_MS = 60.0
# Allowed regression of the candidate at every matched point, in percent (error rate: the
# default 0.5 percentage points; cost per 1M output tokens: the default 0 %).
GATE_TOLERANCES: Mapping[str, float] = {
    # Medians of a few hundred requests move 2-3 % between repeated runs: 10 % is a real
    # slowdown.
    "ttft_p50_ms": 10.0,
    "tpot_p50_ms": 10.0,
    # A p95 of 320 requests moves ±10 % between runs; 25 % is the regression a team notices.
    # The SLO bounds the tails absolutely at the operating point.
    "ttft_p95_ms": 25.0,
    "tpot_p95_ms": 25.0,
    "itl_p95_ms": 25.0,
    "e2e_p95_ms": 25.0,
    "decode_tokens_per_s": 10.0,
    "per_user_decode_tokens_per_s": 10.0,
    # One H100 against one Trainium2 chip, 16 of which cost less an hour than the 8 H100s:
    # per-accelerator throughput halves by construction. The move is judged per dollar (the
    # cost check, no tolerance), so this check only guards against a collapse.
    "output_tokens_per_gpu_hour": 60.0,
    # nvidia-smi's utilization.gpu (a kernel was running) and neuron-monitor's NeuronCore
    # utilization are different counters: only a large drop says something.
    "gpu_utilization_pct": 10.0,
}

TTFT_SIGMA = 0.35  # log-sd of TTFT around its median
GAP_SIGMA = 0.10  # log-sd of one inter-token gap around its request's TPOT
POINT_GAP_S = 5  # between two points of a sweep (the client restarts)
TELEMETRY_MARGIN_S = 3  # telemetry runs this long before the first and after the last point
NVIDIA_SMI = "nvidia-smi"
NEURON_MONITOR = "neuron-monitor"
# Trn2 at the default logical NeuronCore config (LNC=2): 4 logical cores a chip, each two
# physical cores (neuron-monitor's `v3d` breakdown).
NEURONCORES_PER_DEVICE = 4
MODEL_PARAMETERS = 70.6e9  # Llama 3.3 70B: 2 FLOPs a parameter a token (prefill and decode)
NEURON_PID = 48_213  # the vLLM server's process; without NEURON_PROCESS_TAG its tag is the pid
PERF_COUNTER_BASE_S = 81_234.5  # vLLM's start times are time.perf_counter() readings


@dataclass(frozen=True, kw_only=True)
class ServerProfile:
    """One side of the sweep pair: the server, its price and the model of its latencies."""

    key: str  # in file names
    instance_type: str
    gpu_type: str
    run_name: str
    peak_output_tokens_per_s: float
    half_load_concurrency: float  # c_half: the concurrency at half the peak throughput
    ttft_ms_alone: float  # one prompt's prefill with nothing else running
    ttft_ms_per_request: float  # added per request in flight
    tail_sigma_alone: float  # log-sd of a request's slowdown factor, plus per request in flight
    tail_sigma_per_request: float
    sweep_start: datetime
    seed: int
    # Telemetry: which tool, and its utilization (and nvidia-smi's power) per concurrency
    # (utilization None: no telemetry file).
    telemetry: str = NVIDIA_SMI
    utilization_pct: Mapping[int, float] | None = None
    power_w: Mapping[int, float] | None = None
    idle_power_w: float = 0.0
    driver: str = ""
    # Run fields stated at import (`--meta`), beyond what the result files carry.
    meta: Mapping[str, str] | None = None

    def throughput(self, concurrency: int) -> float:
        return (
            self.peak_output_tokens_per_s * concurrency / (concurrency + self.half_load_concurrency)
        )

    def ttft_median_s(self, concurrency: int) -> float:
        return (self.ttft_ms_alone + self.ttft_ms_per_request * concurrency) / 1000

    def tail_sigma(self, concurrency: int) -> float:
        return self.tail_sigma_alone + self.tail_sigma_per_request * concurrency

    def price(self) -> tuple[Decimal, int]:
        """The catalog's USD per accelerator-hour and the accelerator count."""
        usd_per_hour, accelerators = catalog_instance(self.instance_type)
        return usd_per_hour / accelerators, accelerators

    def file_name(self, concurrency: int) -> str:
        return f"{FILE_PREFIX}vllm-llama-3.3-70b-{self.key}-c{concurrency}.json"

    def telemetry_name(self) -> str:
        if self.telemetry == NEURON_MONITOR:
            return f"{FILE_PREFIX}neuron-monitor-{self.key}.jsonl"
        return f"{FILE_PREFIX}nvidia-smi-{self.key}.csv"


BASELINE = ServerProfile(
    key="h100x8",
    instance_type="p5.48xlarge",
    gpu_type="NVIDIA H100 80GB HBM3",
    run_name="Demo: Llama 3.3 70B on 8 × H100 (p5.48xlarge), concurrency 8-64",
    peak_output_tokens_per_s=2300.0,
    half_load_concurrency=28.0,
    ttft_ms_alone=70.0,
    ttft_ms_per_request=3.5,
    tail_sigma_alone=0.05,
    tail_sigma_per_request=0.0021,
    sweep_start=datetime(2026, 11, 16, 14, 0, tzinfo=UTC),
    seed=1501,
    utilization_pct={8: 86.0, 16: 91.0, 32: 95.0, 64: 97.0},
    power_w={8: 390.0, 16: 450.0, 32: 520.0, 64: 590.0},
    idle_power_w=118.0,
    driver="550.90.07",
)
CANDIDATE = ServerProfile(
    key="trn2x16",
    instance_type="trn2.48xlarge",
    gpu_type="AWS Trainium2",
    run_name="Demo: Llama 3.3 70B on 16 × Trainium2 (trn2.48xlarge), concurrency 8-64",
    peak_output_tokens_per_s=1877.0,
    half_load_concurrency=8.8,
    ttft_ms_alone=74.0,
    ttft_ms_per_request=3.6,
    tail_sigma_alone=0.05,
    tail_sigma_per_request=0.0045,
    sweep_start=datetime(2026, 11, 17, 10, 0, tzinfo=UTC),
    seed=1502,
    # NeuronCore utilization levels off from 32, as the throughput does.
    telemetry=NEURON_MONITOR,
    utilization_pct={8: 85.0, 16: 90.0, 32: 93.0, 64: 94.0},
)


# --- one point: a vLLM result file ----------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SweepPoint:
    concurrency: int
    started_at: datetime
    duration_s: float
    result: dict[str, Any]  # the vLLM result JSON

    @property
    def ended_at(self) -> datetime:
        return self.started_at + timedelta(seconds=self.duration_s)


def _closed_loop(latencies_s: np.ndarray, concurrency: int) -> tuple[np.ndarray, float]:
    """Start times (s from the first) of requests kept `concurrency` in flight, and when the
    last one ends."""
    free = [0.0] * concurrency
    starts = np.empty(len(latencies_s))
    for index, latency in enumerate(latencies_s):
        start = heapq.heappop(free)
        starts[index] = start
        heapq.heappush(free, start + float(latency))
    return starts, max(free)


def _requests(profile: ServerProfile, concurrency: int) -> tuple[np.ndarray, np.ndarray]:
    """Per request: TTFT and the 255 inter-token gaps, in seconds (rounded to the µs, as the
    file keeps them)."""
    rng = np.random.default_rng([profile.seed, concurrency])
    n = REQUESTS_PER_POINT
    ttfts = rng.lognormal(np.log(profile.ttft_median_s(concurrency)), TTFT_SIGMA, n)
    mean_latency_s = concurrency * OUTPUT_LEN / profile.throughput(concurrency)  # Little's law
    mean_tpot_s = (mean_latency_s - float(ttfts.mean())) / (OUTPUT_LEN - 1)
    sigma = profile.tail_sigma(concurrency)
    slowdown = rng.lognormal(-(sigma**2) / 2, sigma, n)
    noise = rng.lognormal(-(GAP_SIGMA**2) / 2, GAP_SIGMA, (n, OUTPUT_LEN - 1))
    gaps = np.round(mean_tpot_s * slowdown[:, None] * noise, 6)
    return np.round(ttfts, 6), gaps


def _stats(name: str, values_ms: np.ndarray) -> dict[str, float]:
    """vLLM's summary of one metric: mean, median, std, p95 and p99, in ms."""
    p95, p99 = np.percentile(values_ms, [95, 99])
    return {
        f"mean_{name}_ms": float(values_ms.mean()),
        f"median_{name}_ms": float(np.median(values_ms)),
        f"std_{name}_ms": float(values_ms.std()),
        f"p95_{name}_ms": float(p95),
        f"p99_{name}_ms": float(p99),
    }


def sweep_point(profile: ServerProfile, concurrency: int, *, started_at: datetime) -> SweepPoint:
    """One point of a side's sweep, as `vllm bench serve` saves it."""
    ttfts, gaps = _requests(profile, concurrency)
    latencies = ttfts + gaps.sum(axis=1)
    starts, duration = _closed_loop(latencies, concurrency)
    duration = round(duration, 6)
    usd_per_accelerator_hour, accelerators = profile.price()
    n = REQUESTS_PER_POINT
    total_input, total_output = n * INPUT_LEN, n * OUTPUT_LEN
    saved_at = started_at + timedelta(seconds=int(np.ceil(duration)))
    result: dict[str, Any] = {
        "date": saved_at.strftime("%Y%m%d-%H%M%S"),
        "endpoint_type": "vllm",
        "backend": "vllm",
        "label": None,
        "model_id": MODEL,
        "tokenizer_id": MODEL,
        "num_prompts": n,
        # --metadata: the run fields no tool records
        "instance_type": profile.instance_type,
        "quantization": QUANTIZATION,
        "batch_size": str(SERVER_BATCH_SIZE),
        "num_gpus": str(accelerators),
        "gpu_type": profile.gpu_type,
        "usd_per_gpu_hour": str(usd_per_accelerator_hour),
        "dataset": DATASET,
        "input_len": str(INPUT_LEN),
        "output_len": str(OUTPUT_LEN),
        "request_rate": "inf",
        "burstiness": 1.0,
        "max_concurrency": concurrency,
        "duration": duration,
        "completed": n,
        "failed": 0,
        "total_input_tokens": total_input,
        "total_output_tokens": total_output,
        "request_throughput": n / duration,
        "request_goodput": None,
        "output_throughput": total_output / duration,
        "total_token_throughput": (total_input + total_output) / duration,
        "input_lens": [INPUT_LEN] * n,
        "output_lens": [OUTPUT_LEN] * n,
        "ttfts": ttfts.tolist(),
        "itls": gaps.tolist(),
        "start_times": np.round(PERF_COUNTER_BASE_S + starts, 6).tolist(),
        "errors": [""] * n,
        **_stats("ttft", ttfts * 1000),
        **_stats("tpot", (latencies - ttfts) / (OUTPUT_LEN - 1) * 1000),
        **_stats("itl", gaps.ravel() * 1000),
        **_stats("e2el", latencies * 1000),
    }
    return SweepPoint(
        concurrency=concurrency, started_at=started_at, duration_s=duration, result=result
    )


def sweep(profile: ServerProfile) -> list[SweepPoint]:
    """The side's points, run one after another from its `sweep_start`."""
    points = []
    started_at = profile.sweep_start
    for concurrency in CONCURRENCIES:
        point = sweep_point(profile, concurrency, started_at=started_at)
        points.append(point)
        started_at += timedelta(seconds=int(np.ceil(point.duration_s)) + POINT_GAP_S)
    return points


# --- telemetry ------------------------------------------------------------------------------


def nvidia_smi_csv(profile: ServerProfile, points: list[SweepPoint]) -> str:
    """`nvidia-smi ... --format=csv -l 1` over the sweep: one row per GPU a second, busy during
    a point at that concurrency's utilization and power, idle between points."""
    if profile.telemetry != NVIDIA_SMI or profile.utilization_pct is None or not profile.power_w:
        raise ValueError(f"{profile.key} has no nvidia-smi telemetry to write")
    _, gpus = profile.price()
    rng = np.random.default_rng([profile.seed, 0])
    first = points[0].started_at - timedelta(seconds=TELEMETRY_MARGIN_S)
    last = points[-1].ended_at + timedelta(seconds=TELEMETRY_MARGIN_S)
    lines = ["timestamp, index, name, driver_version, utilization.gpu [%], power.draw [W]"]
    moment = first
    while moment <= last:
        active = next((p for p in points if p.started_at <= moment <= p.ended_at), None)
        stamp = moment.strftime("%Y/%m/%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"
        for gpu in range(gpus):
            if active is None:
                utilization, power = 0.0, rng.normal(profile.idle_power_w, 3.0)
            else:
                utilization = min(
                    100.0, rng.normal(profile.utilization_pct[active.concurrency], 1.5)
                )
                power = rng.normal(profile.power_w[active.concurrency], 12.0)
            lines.append(
                f"{stamp}, {gpu}, {profile.gpu_type}, {profile.driver}, "
                f"{round(utilization)} %, {power:.2f} W"
            )
        moment += timedelta(seconds=1)
    return "\n".join(lines) + "\n"


def neuron_monitor_jsonl(profile: ServerProfile, points: list[SweepPoint]) -> str:
    """neuron-monitor's reports over the sweep, each stamped by jq when it was read (`timestamp`,
    seconds since the epoch), one a line. The monitored application is the vLLM server, with
    `monitor.conf` = `{"period": "1s", "neuron_runtimes": [{"tag_filter": ".*", "metrics":
    [{"type": "neuroncore_counters"}]}]}`.

    A report covers the `period` before it (a little over the 1 s asked for, as neuron-monitor
    measures it). A NeuronCore's utilization is the point's level times the share of the period
    a point was running, with noise, as the mean of its two physical cores (`v3d`); `flops` is
    2 × the model's parameters × the point's tokens/s (prompt and output) over the cores, times
    that share."""
    if profile.telemetry != NEURON_MONITOR or profile.utilization_pct is None:
        raise ValueError(f"{profile.key} has no neuron-monitor telemetry to write")
    _, devices = profile.price()
    cores = devices * NEURONCORES_PER_DEVICE
    rng = np.random.default_rng([profile.seed, 0])
    moment = (points[0].started_at - timedelta(seconds=TELEMETRY_MARGIN_S)).timestamp()
    last = (points[-1].ended_at + timedelta(seconds=TELEMETRY_MARGIN_S)).timestamp()
    static = _neuron_static(profile, devices)
    lines = []
    while moment < last:
        period = 1.0 + float(rng.uniform(0.0001, 0.0012))
        moment += period
        point, share = _busy_share(points, moment - period, moment)
        if point is None:
            halves = np.zeros((cores, 2))
            flops = 0
        else:
            level = profile.utilization_pct[point.concurrency]
            halves = np.clip(rng.normal(level, 2.0, (cores, 2)) * share, 0.0, 100.0).round(2)
            tokens_per_s = point.result["total_token_throughput"]
            flops = round(2 * MODEL_PARAMETERS * tokens_per_s * share / cores)
        in_use = {
            str(core): {
                "neuroncore_utilization": round(float(halves[core].mean()), 3),
                "flops": flops,
                "v3d": {
                    f"nc_v3.{2 * core + half}": {
                        "neuroncore_utilization": float(halves[core, half])
                    }
                    for half in (0, 1)
                },
            }
            for core in range(cores)
        }
        counters = {"period": round(period, 9), "neuroncores_in_use": in_use, "error": ""}
        runtime = {
            "pid": NEURON_PID,
            "neuron_runtime_tag": str(NEURON_PID),
            "error": "",
            "report": {"neuroncore_counters": counters},
        }
        report = {"timestamp": round(moment, 6), "neuron_runtime_data": [runtime], **static}
        lines.append(json.dumps(report, separators=(",", ":")))
    return "\n".join(lines) + "\n"


def _busy_share(
    points: list[SweepPoint], start_s: float, end_s: float
) -> tuple[SweepPoint | None, float]:
    """The point running during (start_s, end_s] and the share of that time it ran (None, 0.0
    between points; the points are seconds apart, so a period meets one at most)."""
    for point in points:
        overlap = min(end_s, point.ended_at.timestamp()) - max(
            start_s, point.started_at.timestamp()
        )
        if overlap > 0:
            return point, overlap / (end_s - start_s)
    return None, 0.0


def _neuron_static(profile: ServerProfile, devices: int) -> dict[str, Any]:
    """The `instance_info` and `neuron_hardware_info` every report carries (placeholder ids, as
    in the neuron-monitor user guide)."""
    return {
        "instance_info": {
            "instance_name": "",
            "instance_id": "i-0011223344556677a",
            "instance_type": profile.instance_type,
            "instance_availability_zone": "us-east-2b",
            "instance_availability_zone_id": "use2-az2",
            "instance_region": "us-east-2",
            "ami_id": "ami-0011223344556677b",
            "subnet_id": "subnet-112233ee",
            "error": "",
        },
        "neuron_hardware_info": {
            "neuron_device_type": "trainium2",
            "neuroncore_version": "v3d",
            "neuron_device_count": devices,
            "neuron_device_memory_size": 96 * 1024**3,
            "neuroncore_per_device_count": NEURONCORES_PER_DEVICE,
            "logical_neuroncore_config": 2,
            "error": "",
        },
    }


# --- files, import and gate -----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SideFiles:
    results: list[Path]  # one vLLM result file per point, in CONCURRENCIES order
    telemetry: Path | None


def write_side(profile: ServerProfile, directory: Path) -> SideFiles:
    """Write the side's result files (and its telemetry file, when it has one) to `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    points = sweep(profile)
    results = []
    for point in points:
        path = directory / profile.file_name(point.concurrency)
        path.write_text(json.dumps(point.result), encoding="utf-8")
        results.append(path)
    telemetry = None
    if profile.utilization_pct is not None:
        telemetry = directory / profile.telemetry_name()
        write = neuron_monitor_jsonl if profile.telemetry == NEURON_MONITOR else nvidia_smi_csv
        telemetry.write_text(write(profile, points), encoding="utf-8")
    return SideFiles(results=results, telemetry=telemetry)


def _import_side(profile: ServerProfile, files: SideFiles) -> BenchmarkRun:
    with ExitStack() as opened:
        results = [(opened.enter_context(path.open("rb")), path.name) for path in files.results]
        telemetry = None
        if files.telemetry is not None:
            telemetry = (opened.enter_context(files.telemetry.open("rb")), files.telemetry.name)
        return benchmark_run_import(
            files=results, meta=dict(profile.meta or {}), name=profile.run_name, telemetry=telemetry
        )


@dataclass(frozen=True, kw_only=True)
class DemoBenchmarks:
    skipped: bool  # the sweep pair was already loaded
    baseline: BenchmarkRun | None = None
    candidate: BenchmarkRun | None = None
    gate: Gate | None = None


def demo_benchmarks_load(*, directory: Path) -> DemoBenchmarks:
    """Write the sweep pair's files to `directory`, import each side as one run and record the
    gate. Runs once: later calls find the baseline's first file among the runs and do nothing."""
    first_file = BASELINE.file_name(CONCURRENCIES[0])
    if BenchmarkRun.objects.filter(upload__original_name=first_file).exists():
        return DemoBenchmarks(skipped=True)
    baseline_files = write_side(BASELINE, directory)
    candidate_files = write_side(CANDIDATE, directory)
    with transaction.atomic():
        baseline = _import_side(BASELINE, baseline_files)
        candidate = _import_side(CANDIDATE, candidate_files)
        gate = gate_evaluate(
            baseline=baseline,
            candidate=candidate,
            tolerances=GATE_TOLERANCES,
            slo_ttft_ms=SLO_TTFT_MS,
            slo_tpot_ms=SLO_TPOT_MS,
        )
    return DemoBenchmarks(skipped=False, baseline=baseline, candidate=candidate, gate=gate)
