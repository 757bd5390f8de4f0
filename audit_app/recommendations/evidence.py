"""What a move of real-time traffic needs to count: a measured point within the workload's
latency, and the `manage.py gate` line whose run would give it one (pure: no Django).

A real-time workload tolerates its own observed p95 TTFT and TPOT; a latency SLO a manager sets
on it replaces the TTFT bound. A benchmark run of the model on the target meets them at its
*operating point*: the highest-throughput point whose p95 TTFT and TPOT are both within.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class MeasuredPoint:
    """One point of a benchmark run of a model on an accelerator (or a hosted provider): its
    output tokens/s on one replica and its p95 latencies."""

    run_id: int
    run_name: str
    point: int  # from 1
    load: str  # "concurrency 32"
    tokens_per_second: float
    accelerators: int
    p95_ttft_ms: float | None
    p95_tpot_ms: float | None

    def sentence(self) -> str:
        return (
            f"run {self.run_id} point {self.point} ({self.load}) has p95 TTFT "
            f"{self.p95_ttft_ms or 0:,.0f} ms and p95 TPOT {self.p95_tpot_ms or 0:,.1f} ms"
        )


@dataclass(frozen=True, kw_only=True)
class LatencyBounds:
    """What a real-time workload tolerates: its observed p95s (or its SLO for TTFT)."""

    workload: str
    ttft_ms: float | None
    tpot_ms: float | None
    slo: bool = False

    def sentence(self) -> str:
        parts = []
        if self.ttft_ms is not None:
            what = "latency SLO" if self.slo else "p95 TTFT"
            parts.append(f"{what} {self.ttft_ms:,.0f} ms")
        if self.tpot_ms is not None:
            parts.append(f"p95 TPOT {self.tpot_ms:,.1f} ms")
        return f"{self.workload}'s {' and '.join(parts) or 'latency (none observed)'}"


def unbounded(workload: str) -> LatencyBounds:
    return LatencyBounds(workload=workload, ttft_ms=None, tpot_ms=None)


def _within(value: float | None, bound: float | None) -> bool:
    return bound is None or (value is not None and value <= bound)


def operating_point(points: Sequence[MeasuredPoint], bounds: LatencyBounds) -> MeasuredPoint | None:
    """The highest-throughput point whose p95 TTFT and TPOT are within ``bounds``; None when
    none is, or when the workload has no latency to compare with."""
    if bounds.ttft_ms is None and bounds.tpot_ms is None:
        return None
    fitting = [
        p
        for p in points
        if _within(p.p95_ttft_ms, bounds.ttft_ms) and _within(p.p95_tpot_ms, bounds.tpot_ms)
    ]
    return max(fitting, key=lambda p: (p.tokens_per_second, -p.run_id), default=None)


def gate_command(
    *,
    bounds: LatencyBounds,
    model: str,
    hardware: str = "",
    accelerators: int | None = None,
    baseline: int | None = None,
    hosted_provider: str = "",
) -> str:
    """The `manage.py gate` line whose passing run gives a real-time move its evidence: the
    workload's current run (or a file) against a run of ``model`` on the target, judged by the
    workload's bounds and priced on its traffic."""
    meta = [f"--meta-candidate model={model}"]
    if hosted_provider:
        meta += ["--meta-candidate serving=hosted", f"--meta-candidate provider={hosted_provider}"]
    else:
        meta.append(f"--meta-candidate gpu_type='{hardware}'")
        if accelerators:
            meta.append(f"--meta-candidate num_gpus={accelerators}")
    slo = []
    if bounds.ttft_ms is not None:
        slo.append(f"--slo-ttft-ms {bounds.ttft_ms:.0f}")
    if bounds.tpot_ms is not None:
        slo.append(f"--slo-tpot-ms {bounds.tpot_ms:.1f}")
    return " ".join(
        [
            "manage.py gate",
            f"--baseline {baseline if baseline is not None else 'BASELINE.json'}",
            "--candidate CANDIDATE.json",
            *meta,
            *slo,
            f"--traffic-workload {bounds.workload}",
        ]
    )
