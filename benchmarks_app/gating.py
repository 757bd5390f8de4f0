"""The benchmark gate: compare a candidate run with a baseline (DESIGN.md §3.7, §4.3).

Pure module (no Django). `evaluate_gate` decides in this order and stops at the first that holds:

1. `invalid` — a confounder differs: model (model hash when both runs have one), quantization,
   server batch size, traffic shape (dataset, input / output length, request rate, concurrency).
   Each difference is one sentence naming the field and both values.
2. `incomplete` — a required metric is missing on either side: output tokens per GPU-hour, GPU
   utilization, decode tok/s, p95 TTFT, p95 TPOT, cost per 1M output tokens. Each names the
   side and how to supply it.
3. `fail` — a checked metric (every metric both runs have, cost per 1M tokens included) regresses
   beyond its tolerance (default 0 %).
4. `pass` otherwise.

The verdict still carries every check, confounder, missing metric and cost it could work out,
so a page can show all of them whatever the verdict.

Cost per 1M output tokens uses `audit_app.costs.costing`, one replica per side = that run's
accelerators at its decode tok/s and price, both sides priced on the same traffic profile:

- `demand_per_hour` given (a workload's last 30 days, an uploaded CSV): both sides serve exactly
  that demand, so replica rounding, idle hours and cold starts count as they would in production.
- Default, "always busy": demand grows with capacity on each side, so every replica is fully
  busy and the cost is the busy-only figure `P × G / (T × 3600) × 1e6` (+ energy) of each run,
  the same in every scaling mode. Pricing both on one fixed demand, the baseline's T × 3600 an
  hour, was rejected: on a one-hour profile the candidate pays for whole replicas, so a candidate
  2 % slower would need a second replica and look twice as dear, and one twice as fast would run
  half idle and look no cheaper. The busy-only figure is what that demand tends to as it grows,
  where replica rounding no longer matters.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

from audit_app.costs.costing import (
    Deployment,
    ScalingMode,
    busy_only_usd_per_million,
    cost_on_profile,
)
from benchmarks_app.metrics import METRIC_LABELS, RunFields, RunMetrics

__all__ = [
    "BETTER",
    "COST_METRIC",
    "DEFAULT_TOLERANCES",
    "GateVerdict",
    "MetricCheck",
    "REQUIRED_METRICS",
    "ScalingMode",
    "Tolerances",
    "evaluate_gate",
    "parse_traffic_csv",
    "tolerances_with",
]

Verdict = Literal["pass", "fail", "invalid", "incomplete"]
Better = Literal["lower", "higher"]
SIDES = ("baseline", "candidate")

COST_METRIC = "usd_per_million_tokens"
LABELS: Mapping[str, str] = {**METRIC_LABELS, COST_METRIC: "cost per 1M output tokens"}

# Every metric the gate compares, in the order checks are listed, and which way is better.
BETTER: Mapping[str, Better] = {
    "ttft_p50_ms": "lower",
    "ttft_p95_ms": "lower",
    "tpot_p50_ms": "lower",
    "tpot_p95_ms": "lower",
    "itl_p95_ms": "lower",
    "e2e_p95_ms": "lower",
    "decode_tokens_per_s": "higher",
    "per_user_decode_tokens_per_s": "higher",
    "output_tokens_per_gpu_hour": "higher",
    "gpu_utilization_pct": "higher",
    "tokens_per_joule": "higher",
    COST_METRIC: "lower",
}
REQUIRED_METRICS = (
    "output_tokens_per_gpu_hour",
    "gpu_utilization_pct",
    "decode_tokens_per_s",
    "ttft_p95_ms",
    "tpot_p95_ms",
    COST_METRIC,
)


@dataclass(frozen=True, kw_only=True)
class Tolerances:
    """Allowed regression per metric in percent (absent = 0) and which direction is better."""

    allowed_regression_pct: dict[str, float] = field(default_factory=dict)
    better: dict[str, Better] = field(default_factory=lambda: dict(BETTER))

    def __post_init__(self) -> None:
        unknown = sorted(set(self.allowed_regression_pct) - set(BETTER))
        if unknown:
            raise ValueError(
                f"unknown metric(s) in tolerances: {', '.join(unknown)}; known: {', '.join(BETTER)}"
            )
        for metric, pct in self.allowed_regression_pct.items():
            if not (isinstance(pct, int | float) and math.isfinite(pct) and pct >= 0):
                raise ValueError(f"tolerance for {metric} must be a percentage ≥ 0, got {pct!r}")
        for metric in BETTER:
            if self.better.get(metric) not in ("lower", "higher"):
                raise ValueError(f"better for {metric} must be 'lower' or 'higher'")

    def allowed(self, metric: str) -> float:
        return self.allowed_regression_pct.get(metric, 0.0)


DEFAULT_TOLERANCES = Tolerances()


def tolerances_with(allowed_regression_pct: Mapping[str, float]) -> Tolerances:
    """Default directions with these allowed regressions (metric → percent)."""
    return Tolerances(
        allowed_regression_pct={
            metric: float(pct) for metric, pct in allowed_regression_pct.items()
        }
    )


@dataclass(frozen=True, kw_only=True)
class MetricCheck:
    metric: str
    baseline: float | Decimal
    candidate: float | Decimal
    delta_pct: float | None  # (candidate − baseline) / baseline × 100; None when baseline is 0
    better: Better
    passed: bool


@dataclass(frozen=True, kw_only=True)
class GateVerdict:
    verdict: Verdict
    checks: tuple[MetricCheck, ...]
    confounders: tuple[str, ...]
    missing: tuple[str, ...]
    cost_per_million_tokens: Mapping[str, Decimal | None]  # side → $ on the chosen mode
    cost_by_mode: Mapping[str, Mapping[str, Decimal | None]]  # mode → side → $
    summary: str


def evaluate_gate(
    *,
    baseline: tuple[RunFields, RunMetrics],
    candidate: tuple[RunFields, RunMetrics],
    tolerances: Tolerances = DEFAULT_TOLERANCES,
    demand_per_hour: Sequence[int] | None = None,
    mode: ScalingMode | str = ScalingMode.ALWAYS_ON,
    cold_start_seconds: float = 0.0,
    usd_per_kwh: Decimal | None = None,
) -> GateVerdict:
    """Compare `candidate` with `baseline`; see the module docstring for the order of decisions.

    `usd_per_kwh`, when given, prices energy on both sides; otherwise each run's own stated
    `usd_per_kwh` applies. Energy counts only for a side with a power figure.
    """
    mode = ScalingMode(mode)
    if demand_per_hour is not None and sum(demand_per_hour) <= 0:
        raise ValueError("the traffic profile demands no output tokens; cost per 1M is undefined")
    runs = {"baseline": baseline, "candidate": candidate}

    cost_by_mode: dict[str, dict[str, Decimal | None]] = {m.value: {} for m in ScalingMode}
    missing: list[str] = []
    values: dict[str, dict[str, float | Decimal | None]] = {}
    for side, (fields, metrics) in runs.items():
        deployment = _deployment(fields, metrics, cold_start_seconds, usd_per_kwh)
        for scaling in ScalingMode:
            cost_by_mode[scaling.value][side] = _usd_per_million(
                deployment, demand_per_hour, scaling
            )
        values[side] = {
            metric: getattr(metrics, metric) for metric in BETTER if metric != COST_METRIC
        }
        values[side][COST_METRIC] = cost_by_mode[mode.value][side]
        for metric in REQUIRED_METRICS:
            if values[side][metric] is None:
                how = metrics.missing.get(metric) or _cost_how(fields, metrics)
                missing.append(f"{side} run is missing {how}")

    checks = tuple(
        _check(metric, base, cand, tolerances)
        for metric in BETTER
        if (base := values["baseline"][metric]) is not None
        and (cand := values["candidate"][metric]) is not None
    )
    confounders = _confounders(baseline[0], candidate[0])
    failed = [check for check in checks if not check.passed]

    verdict: Verdict
    if confounders:
        verdict = "invalid"
        summary = (
            f"Invalid: the runs differ in {_join([c.split(' differs')[0] for c in confounders])}, "
            "so the comparison would not isolate the change."
        )
    elif missing:
        verdict = "incomplete"
        summary = (
            f"Incomplete: {len(missing)} required metric value(s) missing "
            f"({_join([_short_missing(m) for m in missing])})."
        )
    elif failed:
        verdict = "fail"
        summary = "Fail: " + _join([_regression(check, tolerances) for check in failed]) + "."
    else:
        verdict = "pass"
        cost = cost_by_mode[mode.value]
        summary = (
            f"Pass: all {len(checks)} checked metrics within tolerance; cost per 1M output tokens "
            f"${_money(cost['baseline'])} → ${_money(cost['candidate'])} ({mode.value})."
        )
    return GateVerdict(
        verdict=verdict,
        checks=checks,
        confounders=tuple(confounders),
        missing=tuple(missing),
        cost_per_million_tokens=dict(cost_by_mode[mode.value]),
        cost_by_mode=cost_by_mode,
        summary=summary,
    )


def parse_traffic_csv(text: str) -> list[int]:
    """Output tokens per hour from a CSV `hour,output_tokens`, rows in time order.

    The header row is optional; blank lines are skipped; `hour` is a label (an index or a
    timestamp) that must not repeat. A bad line raises ValueError naming its line number.
    """
    demand: list[int] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        cells = [cell.strip() for cell in line.split(",")]
        if not demand and not seen and [c.lower() for c in cells] == ["hour", "output_tokens"]:
            continue
        if len(cells) != 2 or not cells[0]:
            raise ValueError(f"line {number}: expected 'hour,output_tokens', got {line.strip()!r}")
        hour, tokens = cells
        if not tokens.isdigit():
            raise ValueError(
                f"line {number}: output_tokens must be a whole number ≥ 0, got {tokens!r}"
            )
        if hour in seen:
            raise ValueError(f"line {number}: hour {hour!r} already given on line {seen[hour]}")
        seen[hour] = number
        demand.append(int(tokens))
    if not demand:
        raise ValueError("the traffic CSV has no rows; expected lines of 'hour,output_tokens'")
    return demand


# --- cost -----------------------------------------------------------------------------------


def _deployment(
    fields: RunFields,
    metrics: RunMetrics,
    cold_start_seconds: float,
    usd_per_kwh: Decimal | None,
) -> Deployment | None:
    """One replica of the run, or None when the run lacks a price, a GPU count or a rate."""
    tokens_per_second = metrics.decode_tokens_per_s
    if (
        fields.usd_per_gpu_hour is None
        or not fields.num_gpus
        or tokens_per_second is None
        or not tokens_per_second > 0
    ):
        return None
    return Deployment(
        tokens_per_second=tokens_per_second,
        accelerators_per_replica=fields.num_gpus,
        usd_per_accelerator_hour=fields.usd_per_gpu_hour,
        cold_start_seconds=cold_start_seconds,
        watts_per_accelerator=metrics.power_w_per_gpu,
        usd_per_kwh=usd_per_kwh if usd_per_kwh is not None else fields.usd_per_kwh,
    )


def _usd_per_million(
    deployment: Deployment | None, demand_per_hour: Sequence[int] | None, mode: ScalingMode
) -> Decimal | None:
    if deployment is None:
        return None
    if demand_per_hour is None:
        return busy_only_usd_per_million(deployment)
    return cost_on_profile(
        deployment=deployment, demand_per_hour=demand_per_hour, mode=mode
    ).usd_per_million_tokens


def _cost_how(fields: RunFields, metrics: RunMetrics) -> str:
    needs = []
    if fields.usd_per_gpu_hour is None:
        needs.append("state usd_per_gpu_hour (--meta usd_per_gpu_hour=4.00)")
    if not fields.num_gpus:
        needs.append("state num_gpus (--meta num_gpus=8)")
    if metrics.decode_tokens_per_s is None:
        needs.append(metrics.missing.get("decode_tokens_per_s", "needs decode tok/s"))
    elif not metrics.decode_tokens_per_s > 0:
        needs.append("decode tok/s is 0")
    return f"{LABELS[COST_METRIC]}: {'; '.join(needs)}"


# --- checks and confounders -----------------------------------------------------------------


def _check(
    metric: str,
    baseline: float | Decimal,
    candidate: float | Decimal,
    tolerances: Tolerances,
) -> MetricCheck:
    better = tolerances.better[metric]
    # Decimal arithmetic on the printed values: a candidate exactly 5 % worse passes a 5 %
    # tolerance instead of failing on a binary rounding error.
    base, cand = Decimal(str(baseline)), Decimal(str(candidate))
    if base == 0:
        delta = None
        passed = cand <= 0 if better == "lower" else cand >= 0
    else:
        delta = (cand - base) / abs(base) * 100
        regression = delta if better == "lower" else -delta
        passed = regression <= Decimal(str(tolerances.allowed(metric)))
    return MetricCheck(
        metric=metric,
        baseline=baseline,
        candidate=candidate,
        delta_pct=None if delta is None else float(delta),
        better=better,
        passed=passed,
    )


# (field, label, compare only when both runs state it)
_CONFOUNDERS: tuple[tuple[str, str, bool], ...] = (
    ("model", "model", False),
    ("model_hash", "model hash", True),
    ("quantization", "quantization", False),
    ("batch_size", "server batch size", False),
    ("dataset", "dataset", False),
    ("input_len", "input length", False),
    ("output_len", "output length", False),
    ("request_rate", "request rate", False),
    ("concurrency", "concurrency", False),
)


def _confounders(baseline: RunFields, candidate: RunFields) -> list[str]:
    """One sentence per field that differs. A field stated on one side only differs too: the
    gate cannot tell the runs match (except the model hash, compared only when both have one)."""
    sentences = []
    for name, label, only_when_both in _CONFOUNDERS:
        base, cand = getattr(baseline, name), getattr(candidate, name)
        if only_when_both and not (base and cand):
            continue
        if _same(base, cand):
            continue
        sentences.append(
            f"{label} differs: baseline {_shown(name, base)}, candidate {_shown(name, cand)}"
        )
    return sentences


def _same(base: object, cand: object) -> bool:
    if isinstance(base, str) and isinstance(cand, str):
        return base.strip().casefold() == cand.strip().casefold()
    if isinstance(base, float) and isinstance(cand, float):
        return math.isclose(base, cand, rel_tol=1e-9)
    return base == cand


def _shown(name: str, value: object) -> str:
    if value is None and name == "request_rate":
        return "unlimited"
    if value is None or value == "":
        return "not stated"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


# --- sentences ------------------------------------------------------------------------------


def _join(parts: Sequence[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def _short_missing(sentence: str) -> str:
    # "candidate run is missing p95 TTFT: save …" → "p95 TTFT on the candidate"
    side, _, rest = sentence.partition(" run is missing ")
    return f"{rest.split(':')[0]} on the {side}"


def _regression(check: MetricCheck, tolerances: Tolerances) -> str:
    label = LABELS[check.metric]
    allowed = f"{tolerances.allowed(check.metric):g} %"
    if check.delta_pct is None:
        return f"{label} went from 0 to {check.candidate} (allowed {allowed})"
    worse = "higher" if check.better == "lower" else "lower"
    return f"{label} {abs(check.delta_pct):.1f} % {worse} (allowed {allowed})"


def _money(value: Decimal | None) -> str:
    return "?" if value is None else f"{value:.4f}"
