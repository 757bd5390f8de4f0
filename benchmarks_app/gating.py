"""The benchmark gate: compare a candidate run with a baseline, point by point along their
curves. One concern: the gate's decision and its figures.

Pure module (no Django).

Its rules in full: `docs/methods.md`, section "The benchmark gate".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from audit_app.costs.costing import (
    Deployment,
    ScalingMode,
    busy_only_usd_per_million,
    cost_on_profile,
)
from audit_app.lib.formatting import money_unit
from benchmarks_app.curves import (
    NO_SLO,
    CurvePoint,
    Load,
    Matching,
    PointPair,
    Slo,
    load_text,
    match_points,
    operating_point,
)
from benchmarks_app.hints import meta_flag, meta_for_side
from benchmarks_app.metrics import (
    ACCELERATOR_METRICS,
    METRIC_LABELS,
    SERVING_HOSTED,
    SERVING_SELF_HOSTED,
    RunFields,
    RunMetrics,
)

__all__ = [
    "BETTER",
    "COST_METRIC",
    "DEFAULT_TOLERANCES",
    "GateVerdict",
    "MetricCheck",
    "Side",
    "Slo",
    "point_usd_per_million",
    "single_point_side",
    "REQUIRED_METRICS",
    "ScalingMode",
    "Tolerances",
    "evaluate_gate",
    "parse_traffic_csv",
    "tolerances_with",
]

Verdict = Literal["pass", "fail", "invalid", "incomplete"]
Better = Literal["lower", "higher"]

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
    "error_rate_pct": "lower",
    COST_METRIC: "lower",
}
# Error rate is compared in percentage points, not percent of the baseline: by default the
# candidate may fail at most 0.5 points more of its requests.
POINTS_METRICS = frozenset({"error_rate_pct"})
DEFAULT_ALLOWED = {"error_rate_pct": 0.5}
REQUIRED_METRICS = (
    "output_tokens_per_gpu_hour",
    "gpu_utilization_pct",
    "decode_tokens_per_s",
    "ttft_p95_ms",
    "tpot_p95_ms",
    COST_METRIC,
)
# When a side is a hosted API the accelerator metrics are not applicable (never missing).
HOSTED_REQUIRED_METRICS = tuple(m for m in REQUIRED_METRICS if m not in ACCELERATOR_METRICS)


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
        return self.allowed_regression_pct.get(metric, DEFAULT_ALLOWED.get(metric, 0.0))


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
    point: str = ""  # where on the curve ("concurrency 64"); "" for two single-point runs
    delta_points: float | None = None  # candidate − baseline, for metrics compared in points
    # The regression this check was allowed: percent, or percentage points for POINTS_METRICS.
    allowed: float = 0.0


@dataclass(frozen=True, kw_only=True)
class GateVerdict:
    verdict: Verdict
    checks: tuple[MetricCheck, ...]
    confounders: tuple[str, ...]
    missing: tuple[str, ...]
    cost_per_million_tokens: Mapping[str, Decimal | None]  # side → $ on the chosen mode
    cost_by_mode: Mapping[str, Mapping[str, Decimal | None]]  # mode → side → $
    summary: str
    points: tuple[Mapping[str, Any], ...] = ()  # per matched point: load, lengths, checks
    unmatched: tuple[Mapping[str, Any], ...] = ()
    slo: Mapping[str, float | None] | None = None
    # side → {"load", "label", "output_tokens_per_s", "cost_per_million_tokens", …} or None
    operating_point: Mapping[str, Mapping[str, Any] | None] = field(default_factory=dict)
    not_applicable: tuple[str, ...] = ()
    serving: Mapping[str, str] = field(default_factory=dict)  # side → hosted / self-hosted
    curves: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Side:
    """One side of a gate: the run's fields and its curve of points."""

    fields: RunFields
    points: tuple[CurvePoint, ...]

    @property
    def serving(self) -> str:
        return SERVING_HOSTED if self.fields.hosted else SERVING_SELF_HOSTED


def single_point_side(fields: RunFields, metrics: RunMetrics) -> Side:
    """A run of one point (its load from the run fields)."""
    return Side(
        fields=fields,
        points=(
            CurvePoint(
                index=0,
                label="",
                load=Load(concurrency=fields.concurrency, request_rate=fields.request_rate),
                input_len=fields.input_len,
                output_len=fields.output_len,
                dataset=fields.dataset,
                metrics=metrics,
            ),
        ),
    )


def _side(value: Side | tuple[RunFields, RunMetrics]) -> Side:
    return value if isinstance(value, Side) else single_point_side(*value)


@dataclass(frozen=True, kw_only=True)
class _Pricing:
    """How a gate prices a point: traffic, serving mode, cold start and energy."""

    demand_per_hour: Sequence[int] | None
    mode: ScalingMode
    cold_start_seconds: float
    usd_per_kwh: Decimal | None


def evaluate_gate(
    *,
    baseline: Side | tuple[RunFields, RunMetrics],
    candidate: Side | tuple[RunFields, RunMetrics],
    tolerances: Tolerances = DEFAULT_TOLERANCES,
    demand_per_hour: Sequence[int] | None = None,
    mode: ScalingMode | str = ScalingMode.ALWAYS_ON,
    cold_start_seconds: float = 0.0,
    usd_per_kwh: Decimal | None = None,
    slo: Slo = NO_SLO,
) -> GateVerdict:
    """Compare `candidate` with `baseline`; see the module docstring for the order of decisions.

    `usd_per_kwh`, when given, prices energy on both sides; otherwise each run's own stated
    `usd_per_kwh` applies. Energy counts only for a side with a power figure.
    """
    if demand_per_hour is not None and sum(demand_per_hour) <= 0:
        raise ValueError("the traffic profile demands no output tokens; cost per 1M is undefined")
    sides = {"baseline": _side(baseline), "candidate": _side(candidate)}
    pricing = _Pricing(
        demand_per_hour=demand_per_hour,
        mode=ScalingMode(mode),
        cold_start_seconds=cold_start_seconds,
        usd_per_kwh=usd_per_kwh,
    )
    matching = match_points(sides["baseline"].points, sides["candidate"].points)
    required = _required(sides)
    names = _pair_names(matching)
    # Every point priced once, in every mode: the checks, the operating point and the chart
    # read these.
    prices: _Prices = {
        name: {p.index: _point_costs(side, p.metrics, pricing) for p in side.points}
        for name, side in sides.items()
    }
    results = [
        _point_result(pair, names[i], sides, prices, pricing, tolerances, required)
        for i, pair in enumerate(matching.pairs)
    ]
    confounders, half_stated = _confounders(sides, matching)
    if not matching.pairs:
        confounders.append(
            "no point of the candidate matches a point of the baseline by load and lengths"
        )
    missing = [*half_stated]
    for result in results:
        missing.extend(result.missing)
    operating = _operating(sides, slo, prices, pricing, tolerances)
    checks = tuple(c for r in results for c in r.checks) + operating.checks
    failed = [c for c in checks if not c.passed]
    verdict, summary = _decide(
        confounders=confounders,
        failed=failed,
        slo_failures=operating.failures,
        missing=missing,
        checks=checks,
        operating=operating,
        tolerances=tolerances,
        matching=matching,
        mode=pricing.mode,
    )
    return GateVerdict(
        verdict=verdict,
        checks=checks,
        confounders=tuple(confounders),
        missing=tuple(missing),
        cost_per_million_tokens=operating.cost,
        cost_by_mode=operating.cost_by_mode,
        summary=summary,
        points=tuple(r.described for r in results),
        unmatched=tuple({"side": side, **point.describe()} for side, point in matching.unmatched),
        slo=None if not slo.given else {"ttft_ms": slo.ttft_ms, "tpot_ms": slo.tpot_ms},
        operating_point=operating.described,
        not_applicable=_not_applicable(sides),
        serving={side: s.serving for side, s in sides.items()},
        curves={
            name: _curve(side, prices[name], pricing, slo, operating)
            for name, side in sides.items()
        },
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


def _deployment(fields: RunFields, metrics: RunMetrics, pricing: _Pricing) -> Deployment | None:
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
        cold_start_seconds=pricing.cold_start_seconds,
        watts_per_accelerator=metrics.power_w_per_gpu,
        usd_per_kwh=pricing.usd_per_kwh if pricing.usd_per_kwh is not None else fields.usd_per_kwh,
    )


def hosted_usd_per_million(fields: RunFields, metrics: RunMetrics) -> Decimal | None:
    """A hosted API's cost per 1M output tokens over the run's own token mix:
    (input tokens × input price + output tokens × output price) / output tokens (prices per 1M)."""
    price_in, price_out = fields.usd_per_million_input, fields.usd_per_million_output
    tokens_in, tokens_out = metrics.total_input_tokens, metrics.total_output_tokens
    if price_in is None or price_out is None or not tokens_out:
        return None
    if tokens_in is None:
        if price_in != 0:
            return None
        tokens_in = 0
    return (Decimal(tokens_in) * price_in + Decimal(tokens_out) * price_out) / Decimal(tokens_out)


def point_usd_per_million(
    fields: RunFields,
    metrics: RunMetrics,
    *,
    usd_per_kwh: Decimal | None = None,
    cold_start_seconds: float = 0.0,
) -> Decimal | None:
    """A point's cost per 1M output tokens with no traffic profile: a hosted API's per-token
    prices over the point's token mix, or a self-hosted run's accelerators fully busy at the
    point's decode tok/s (the busy-only figure, with energy when known). None when a price, an
    accelerator count or a rate is missing. The run page and the gate both use this one."""
    if fields.hosted:
        return hosted_usd_per_million(fields, metrics)
    deployment = _deployment(
        fields,
        metrics,
        _Pricing(
            demand_per_hour=None,
            mode=ScalingMode.ALWAYS_ON,
            cold_start_seconds=cold_start_seconds,
            usd_per_kwh=usd_per_kwh,
        ),
    )
    return None if deployment is None else busy_only_usd_per_million(deployment)


# side → point index → serving mode → $ per 1M output tokens (None: not priceable)
_Prices = dict[str, dict[int, dict[str, Decimal | None]]]


def _point_costs(side: Side, metrics: RunMetrics, pricing: _Pricing) -> dict[str, Decimal | None]:
    """Cost per 1M output tokens of one point in every serving mode (a hosted API's is the
    same in all of them)."""
    if side.fields.hosted:
        hosted = hosted_usd_per_million(side.fields, metrics)
        return {m.value: hosted for m in ScalingMode}
    if pricing.demand_per_hour is None:
        busy = point_usd_per_million(
            side.fields,
            metrics,
            usd_per_kwh=pricing.usd_per_kwh,
            cold_start_seconds=pricing.cold_start_seconds,
        )
        return {m.value: busy for m in ScalingMode}
    deployment = _deployment(side.fields, metrics, pricing)
    if deployment is None:
        return {m.value: None for m in ScalingMode}
    return {
        m.value: cost_on_profile(
            deployment=deployment, demand_per_hour=pricing.demand_per_hour, mode=m
        ).usd_per_million_tokens
        for m in ScalingMode
    }


def _cost_how(fields: RunFields, metrics: RunMetrics, side: str) -> str:
    """Why one side's cost per 1M output tokens is missing, naming the gate's flags for it."""
    needs = []
    if fields.hosted:
        if fields.usd_per_million_input is None or fields.usd_per_million_output is None:
            needs.append(
                f"state the API's prices ({meta_flag('usd_per_million_input', '0.90', side)} "
                f"{meta_flag('usd_per_million_output', '0.90', side)}) or add a price card for "
                f"{fields.provider or 'the provider'} / {fields.model}"
            )
        if not metrics.total_output_tokens:
            needs.append("the file records no output tokens")
        elif metrics.total_input_tokens is None:
            needs.append("the file records no input tokens")
        return f"{LABELS[COST_METRIC]}: {'; '.join(needs)}"
    if fields.usd_per_gpu_hour is None:
        needs.append(f"state usd_per_gpu_hour ({meta_flag('usd_per_gpu_hour', '4.00', side)})")
    if not fields.num_gpus:
        needs.append(f"state num_gpus ({meta_flag('num_gpus', '8', side)})")
    if metrics.decode_tokens_per_s is None:
        needs.append(metrics.missing.get("decode_tokens_per_s", "needs decode tok/s"))
    elif not metrics.decode_tokens_per_s > 0:
        needs.append("decode tok/s is 0")
    return f"{LABELS[COST_METRIC]}: {'; '.join(needs)}"


# --- one matched point ----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _PointResult:
    checks: tuple[MetricCheck, ...]
    missing: tuple[str, ...]
    described: Mapping[str, Any]


def _required(sides: Mapping[str, Side]) -> tuple[str, ...]:
    if any(side.fields.hosted for side in sides.values()):
        return HOSTED_REQUIRED_METRICS
    return REQUIRED_METRICS


def _compared(sides: Mapping[str, Side]) -> tuple[str, ...]:
    """The metrics compared: accelerator ones only when both sides run their own accelerators."""
    if any(side.fields.hosted for side in sides.values()):
        return tuple(m for m in BETTER if m not in ACCELERATOR_METRICS)
    return tuple(BETTER)


def _pair_names(matching: Matching) -> list[str]:
    """How each matched point is named in sentences: "" for two single-point runs, its load
    ("concurrency 64"), with its lengths only when two matched points share a load."""
    if matching.single:
        return [""]
    loads = [p.candidate.load.text() if p.candidate.load else "" for p in matching.pairs]
    return [
        pair.where() if not load or loads.count(load) > 1 else load
        for pair, load in zip(matching.pairs, loads, strict=True)
    ]


def _point_result(
    pair: PointPair,
    where: str,
    sides: Mapping[str, Side],
    prices: _Prices,
    pricing: _Pricing,
    tolerances: Tolerances,
    required: Sequence[str],
) -> _PointResult:
    values: dict[str, dict[str, Any]] = {}
    costs: dict[str, dict[str, Decimal | None]] = {}
    missing: list[str] = []
    for side_name, point in (("baseline", pair.baseline), ("candidate", pair.candidate)):
        side, metrics = sides[side_name], point.metrics
        costs[side_name] = prices[side_name][point.index]
        values[side_name] = {m: getattr(metrics, m) for m in BETTER if m != COST_METRIC}
        values[side_name][COST_METRIC] = costs[side_name][pricing.mode.value]
        for metric in required:
            if values[side_name][metric] is None:
                how = meta_for_side(metrics.missing.get(metric) or "", side_name) or (
                    _cost_how(side.fields, metrics, side_name)
                    if metric == COST_METRIC
                    else f"{LABELS[metric]}: not in the file"
                )
                at = f" at {where}" if where else ""
                missing.append(f"{side_name} run is missing{at} {how}")
    for label, stating in pair.half_stated:
        other = "candidate" if stating == "baseline" else "baseline"
        missing.append(
            f"{other} run is missing {label} at {pair.where()}: stated on the {stating} only; "
            f"state it on the {other}"
        )
    checks = tuple(
        _check(metric, base, cand, tolerances, point=where)
        for metric in _compared(sides)
        if (base := values["baseline"][metric]) is not None
        and (cand := values["candidate"][metric]) is not None
    )
    described = {
        **pair.candidate.describe(),
        "where": where or pair.where(),
        "baseline_point": pair.baseline.index,
        "candidate_point": pair.candidate.index,
        "cost_per_million_tokens": {s: costs[s][pricing.mode.value] for s in costs},
        "checks": checks,
    }
    return _PointResult(checks=checks, missing=tuple(missing), described=described)


# --- operating point ------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Operating:
    points: Mapping[str, CurvePoint | None]
    cost: Mapping[str, Decimal | None]
    cost_by_mode: Mapping[str, Mapping[str, Decimal | None]]
    checks: tuple[MetricCheck, ...]
    failures: tuple[str, ...]  # sides with no point inside the SLO
    described: Mapping[str, Mapping[str, Any] | None]
    slo: Slo


def _operating(
    sides: Mapping[str, Side],
    slo: Slo,
    prices: _Prices,
    pricing: _Pricing,
    tolerances: Tolerances,
) -> _Operating:
    """Each side's operating point and its cost; with an SLO, the cost at the operating points
    is checked too, and a side with no point inside the SLO is a failure."""
    chosen = {name: operating_point(side.points, slo) for name, side in sides.items()}
    cost_by_mode: dict[str, dict[str, Decimal | None]] = {m.value: {} for m in ScalingMode}
    described: dict[str, Mapping[str, Any] | None] = {}
    failures = []
    for name, point in chosen.items():
        costs = (
            prices[name][point.index] if point is not None else {m.value: None for m in ScalingMode}
        )
        for mode, value in costs.items():
            cost_by_mode[mode][name] = value
        if point is None:
            described[name] = None
            if slo.given:
                failures.append(f"the {name} has no measured point inside the SLO ({slo.text()})")
            continue
        described[name] = {
            **point.describe(),
            "output_tokens_per_s": point.metrics.decode_tokens_per_s,
            "ttft_p95_ms": point.metrics.ttft_p95_ms,
            "tpot_p95_ms": point.metrics.tpot_p95_ms,
            "cost_per_million_tokens": costs[pricing.mode.value],
        }
    cost = {name: cost_by_mode[pricing.mode.value].get(name) for name in sides}
    checks: tuple[MetricCheck, ...] = ()
    if slo.given and None not in cost.values():
        base, cand = cost["baseline"], cost["candidate"]
        assert base is not None and cand is not None
        checks = (_check(COST_METRIC, base, cand, tolerances, point="the operating point"),)
    return _Operating(
        points=chosen,
        cost=cost,
        cost_by_mode=cost_by_mode,
        checks=checks,
        failures=tuple(failures),
        described=described,
        slo=slo,
    )


def _curve(
    side: Side,
    costs: Mapping[int, Mapping[str, Decimal | None]],
    pricing: _Pricing,
    slo: Slo,
    operating: _Operating,
) -> tuple[Mapping[str, Any], ...]:
    """Each point of a side for the Pareto chart: output tok/s per accelerator (self-hosted) and
    per dollar (from the cost), interactivity = 1000 / p95 TPOT, the SLO and operating point."""
    rows = []
    for point in side.points:
        metrics = point.metrics
        cost = costs[point.index][pricing.mode.value]
        decode, tpot = metrics.decode_tokens_per_s, metrics.tpot_p95_ms
        gpus = side.fields.num_gpus if not side.fields.hosted else None
        rows.append(
            {
                **point.describe(),
                "output_tokens_per_s": decode,
                "per_accelerator": decode / gpus if decode is not None and gpus else None,
                "tokens_per_dollar": float(Decimal(1_000_000) / cost) if cost else None,
                "interactivity": 1000 / tpot if tpot else None,
                "ttft_p95_ms": metrics.ttft_p95_ms,
                "tpot_p95_ms": tpot,
                "cost_per_million_tokens": cost,
                "meets_slo": slo.met_by(metrics) if slo.given else None,
                "operating": any(p is not None and p is point for p in operating.points.values()),
            }
        )
    return tuple(rows)


def _not_applicable(sides: Mapping[str, Side]) -> tuple[str, ...]:
    out = []
    for name, side in sides.items():
        if side.fields.hosted:
            labels = _join([LABELS[m] for m in ACCELERATOR_METRICS])
            out.append(f"{labels}: not applicable on the {name} (a hosted API)")
    if len(out) == 1:
        self_hosted = next(n for n, s in sides.items() if not s.fields.hosted)
        out.append(
            f"the {self_hosted}'s accelerator metrics are shown but not compared: the other "
            "side has no accelerators of its own"
        )
    return tuple(out)


# --- decision -------------------------------------------------------------------------------


def _decide(
    *,
    confounders: Sequence[str],
    failed: Sequence[MetricCheck],
    slo_failures: Sequence[str],
    missing: Sequence[str],
    checks: Sequence[MetricCheck],
    operating: _Operating,
    tolerances: Tolerances,
    matching: Matching,
    mode: ScalingMode,
) -> tuple[Verdict, str]:
    """Invalid, then fail (a regression anywhere, or no point inside the SLO: a missing figure
    cannot rescue a regression), then incomplete, then pass."""
    if confounders:
        return "invalid", (
            f"Invalid: the runs differ in {_join([_confounder_name(c) for c in confounders])}, "
            "so the comparison would not isolate the change."
        )
    missing_text = (
        f"{len(missing)} required value(s) missing ({_join([_short_missing(m) for m in missing])})"
    )
    if failed or slo_failures:
        reasons = [*slo_failures, *(_regression(check, tolerances) for check in failed)]
        summary = "Fail: " + "; ".join(reasons) + "."
        if missing:
            summary += f" Also {missing_text}."
        return "fail", summary
    if missing:
        return "incomplete", f"Incomplete: {missing_text}."
    cost = operating.cost
    where = ""
    if not matching.single:
        where = f" at {len(matching.pairs)} matched point(s)"
    summary = f"Pass: all {len(checks)} checked metrics within tolerance{where}"
    if operating.slo.given:
        points = operating.described
        summary += (
            f"; at the SLO ({operating.slo.text()}) the operating points are "
            f"{_op_text(points.get('baseline'))} → {_op_text(points.get('candidate'))}, "
            f"cost per 1M output tokens {_money(cost['baseline'])} → {_money(cost['candidate'])}."
        )
    else:
        summary += (
            f"; cost per 1M output tokens {_money(cost['baseline'])} → "
            f"{_money(cost['candidate'])} ({mode.label})."
        )
    return "pass", summary


def _op_text(described: Mapping[str, Any] | None) -> str:
    if not described:
        return "none"
    return load_text(described.get("load"), str(described.get("label") or "a point"))


# --- checks and confounders -----------------------------------------------------------------


def _check(
    metric: str,
    baseline: float | Decimal,
    candidate: float | Decimal,
    tolerances: Tolerances,
    *,
    point: str = "",
) -> MetricCheck:
    better = tolerances.better[metric]
    # Decimal arithmetic on the printed values: a candidate exactly 5 % worse passes a 5 %
    # tolerance instead of failing on a binary rounding error.
    base, cand = Decimal(str(baseline)), Decimal(str(candidate))
    allowed = Decimal(str(tolerances.allowed(metric)))
    delta = None if base == 0 else (cand - base) / abs(base) * 100
    delta_points = None
    if metric in POINTS_METRICS:
        delta_points = cand - base
        regression = delta_points if better == "lower" else -delta_points
        passed = regression <= allowed
    elif delta is None:
        passed = cand <= 0 if better == "lower" else cand >= 0
    else:
        regression = delta if better == "lower" else -delta
        passed = regression <= allowed
    return MetricCheck(
        metric=metric,
        baseline=baseline,
        candidate=candidate,
        delta_pct=None if delta is None else float(delta),
        better=better,
        passed=passed,
        point=point,
        delta_points=None if delta_points is None else float(delta_points),
        allowed=float(allowed),
    )


# (field, label, compare only when both runs state it); the load and lengths of two
# single-point runs are compared as fields too, those of curves point by point.
_RUN_CONFOUNDERS: tuple[tuple[str, str, bool], ...] = (
    ("compared_model", "model", False),
    ("model_hash", "model hash", True),
    ("quantization", "quantization", False),
    ("batch_size", "server batch size", False),
    ("dataset", "dataset", False),
)
_POINT_CONFOUNDERS: tuple[tuple[str, str, bool], ...] = (
    ("input_len", "input length", False),
    ("output_len", "output length", False),
    ("request_rate", "request rate", False),
    ("concurrency", "concurrency", False),
)


def _confounders(sides: Mapping[str, Side], matching: Matching) -> tuple[list[str], list[str]]:
    """Sentences for fields whose stated values differ (invalid), and for fields stated on one
    side only (incomplete, naming the side to fill). The model hash is compared only when both
    runs have one; a hosted side has no server batch size to state."""
    baseline, candidate = sides["baseline"].fields, sides["candidate"].fields
    fields = list(_RUN_CONFOUNDERS)
    if baseline.hosted or candidate.hosted:
        fields = [f for f in fields if f[0] != "batch_size"]
    if matching.single:
        fields += _POINT_CONFOUNDERS
    differ, half = [], []
    for name, label, only_when_both in fields:
        base, cand = getattr(baseline, name), getattr(candidate, name)
        base_stated, cand_stated = _stated(name, base), _stated(name, cand)
        if base_stated != cand_stated:
            if not only_when_both:
                stating = "baseline" if base_stated else "candidate"
                other = "candidate" if base_stated else "baseline"
                half.append(
                    f"{other} run is missing {label}: the {stating} states "
                    f"{_shown(name, base if base_stated else cand)}, the {other} does not; "
                    f"state it on the {other} "
                    f"({meta_flag(name.removeprefix('compared_'), '…', other)})"
                )
            continue
        if not base_stated or _same(base, cand):
            continue
        differ.append(
            f"{label} differs: baseline {_shown(name, base)}, candidate {_shown(name, cand)}"
        )
    return differ, half


def _stated(name: str, value: object) -> bool:
    if name == "request_rate":
        return True  # None is a stated unlimited rate
    return value is not None and value != ""


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


def _confounder_name(sentence: str) -> str:
    if " differs" in sentence:
        return sentence.split(" differs")[0]
    return "the points they measured (no load in common)"


def _short_missing(sentence: str) -> str:
    # "candidate run is missing p95 TTFT: save …" → "p95 TTFT on the candidate"
    side, _, rest = sentence.partition(" run is missing ")
    return f"{rest.split(':')[0]} on the {side}"


def _regression(check: MetricCheck, tolerances: Tolerances) -> str:
    label = LABELS[check.metric]
    at = f"at {check.point}: " if check.point else ""
    if check.metric in POINTS_METRICS and check.delta_points is not None:
        allowed_points = f"{tolerances.allowed(check.metric):g} points"
        return f"{at}{label} {check.delta_points:+.1f} points (allowed {allowed_points})"
    allowed = f"{tolerances.allowed(check.metric):g} %"
    if check.delta_pct is None:
        return f"{at}{label} went from 0 to {check.candidate} (allowed {allowed})"
    return f"{at}{label} {check.delta_pct:+.1f} % (allowed {allowed})"


def _money(value: Decimal | None) -> str:
    """As every page shows a price: `$20.04`, `$0.075` (`audit_app.lib.formatting`)."""
    return "?" if value is None else money_unit(value)
