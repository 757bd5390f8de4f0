"""Tests for benchmarks_app.gating; expected values are worked out by hand.

Unless a test says otherwise both runs serve the same model, quantization, batch size and traffic
shape on 8 GPUs at $4/GPU-hour. The baseline decodes T = 2,000 tok/s, so one replica makes
2000 × 3600 = 7.2M tokens for 8 × $4 = $32 an hour: $32 / 7.2M × 1e6 = $4.444… per 1M tokens.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest

from audit_app.costs.costing import ScalingMode
from benchmarks_app.gating import (
    Tolerances,
    evaluate_gate,
    parse_traffic_csv,
    tolerances_with,
)
from benchmarks_app.metrics import RunFields, RunMetrics

NANO = Decimal("0.000000001")

FIELDS = RunFields(
    model="meta-llama/Llama-3.1-70B-Instruct",
    model_hash="",
    quantization="fp8",
    batch_size=256,
    num_gpus=8,
    gpu_type="H100",
    usd_per_gpu_hour=Decimal("4"),
    dataset="sharegpt",
    input_len=1024,
    output_len=128,
    request_rate=None,
    concurrency=64,
)
METRICS = RunMetrics(
    ttft_p50_ms=100.0,
    ttft_p95_ms=200.0,
    tpot_p50_ms=20.0,
    tpot_p95_ms=30.0,
    itl_p95_ms=35.0,
    e2e_p95_ms=4000.0,
    decode_tokens_per_s=2000.0,
    per_user_decode_tokens_per_s=50.0,
    output_tokens_per_gpu_hour=900_000.0,  # 2000 × 3600 / 8
    gpu_utilization_pct=80.0,
    tokens_per_joule=0.5,
)
# Better on every metric: faster, more tokens, busier GPUs.
IMPROVED = RunMetrics(
    ttft_p50_ms=90.0,
    ttft_p95_ms=180.0,
    tpot_p50_ms=10.0,
    tpot_p95_ms=15.0,
    itl_p95_ms=20.0,
    e2e_p95_ms=2000.0,
    decode_tokens_per_s=4000.0,
    per_user_decode_tokens_per_s=100.0,
    output_tokens_per_gpu_hour=1_800_000.0,  # 4000 × 3600 / 8
    gpu_utilization_pct=90.0,
    tokens_per_joule=1.0,
)


def _run(
    fields: dict[str, object] | None = None, metrics: dict[str, object] | None = None
) -> tuple[RunFields, RunMetrics]:
    return (
        dataclasses.replace(FIELDS, **(fields or {})),
        dataclasses.replace(METRICS, **(metrics or {})),
    )


def _nano(value: Decimal | None) -> Decimal | None:
    return None if value is None else value.quantize(NANO)


# --- pass and fail --------------------------------------------------------------------------


def test_pass_when_everything_improves() -> None:
    verdict = evaluate_gate(baseline=_run(), candidate=(FIELDS, IMPROVED))
    assert verdict.verdict == "pass"
    assert verdict.confounders == ()
    assert verdict.missing == ()
    # 11 metrics + cost per 1M tokens, all present on both sides.
    assert len(verdict.checks) == 12
    assert all(check.passed for check in verdict.checks)
    ttft = next(c for c in verdict.checks if c.metric == "ttft_p95_ms")
    # (180 − 200) / 200 = −10 %.
    assert (ttft.baseline, ttft.candidate, ttft.delta_pct, ttft.better) == (
        200.0,
        180.0,
        -10.0,
        "lower",
    )
    # Baseline $32 / 7.2M × 1e6 = 4.444…; candidate $32 / 14.4M × 1e6 = 2.222….
    assert _nano(verdict.cost_per_million_tokens["baseline"]) == Decimal("4.444444444")
    assert _nano(verdict.cost_per_million_tokens["candidate"]) == Decimal("2.222222222")
    assert verdict.summary.startswith("Pass: all 12 checked metrics within tolerance")


def test_fail_names_the_regressed_metric() -> None:
    # p95 TTFT 200 → 210 ms: (210 − 200) / 200 = +5 %, worse for a latency.
    verdict = evaluate_gate(baseline=_run(), candidate=_run(metrics={"ttft_p95_ms": 210.0}))
    assert verdict.verdict == "fail"
    failed = [c for c in verdict.checks if not c.passed]
    assert [(c.metric, c.delta_pct) for c in failed] == [("ttft_p95_ms", 5.0)]
    assert verdict.summary == "Fail: p95 TTFT +5.0 % (allowed 0 %)."


@pytest.mark.parametrize(
    ("candidate_ttft", "allowed_pct", "expected"),
    [
        (208.0, 5.0, "pass"),  # +4 %, within 5 %
        (210.0, 5.0, "pass"),  # +5 %, exactly at the tolerance
        (212.0, 5.0, "fail"),  # +6 %
        (202.0, 0.0, "fail"),  # +1 % with the default 0 %
    ],
)
def test_tolerance(candidate_ttft: float, allowed_pct: float, expected: str) -> None:
    verdict = evaluate_gate(
        baseline=_run(),
        candidate=_run(metrics={"ttft_p95_ms": candidate_ttft}),
        tolerances=tolerances_with({"ttft_p95_ms": allowed_pct}),
    )
    assert verdict.verdict == expected


def test_higher_is_better_metric_regressing() -> None:
    # Decode tok/s 2000 → 1900 (−5 %) also raises the cost: $32 / (1900 × 3600) × 1e6 = 4.678…
    # (+5.26 %) and lowers output tokens per GPU-hour.
    verdict = evaluate_gate(
        baseline=_run(),
        candidate=_run(
            metrics={"decode_tokens_per_s": 1900.0, "output_tokens_per_gpu_hour": 855_000.0}
        ),
    )
    assert verdict.verdict == "fail"
    failed = {c.metric: c for c in verdict.checks if not c.passed}
    assert set(failed) == {
        "decode_tokens_per_s",
        "output_tokens_per_gpu_hour",
        "usd_per_million_tokens",
    }
    assert failed["decode_tokens_per_s"].delta_pct == pytest.approx(-5.0)
    assert failed["decode_tokens_per_s"].better == "higher"
    # (4.678… − 4.444…) / 4.444… = 2000 / 1900 − 1 = 5.263… %.
    assert failed["usd_per_million_tokens"].delta_pct == pytest.approx(5.2631578947)


def test_cost_per_million_is_a_checked_metric() -> None:
    # Same throughput at $5/GPU-hour: $40 / 7.2M × 1e6 = 5.555…, +25 %; nothing else changes.
    verdict = evaluate_gate(
        baseline=_run(), candidate=_run(fields={"usd_per_gpu_hour": Decimal("5")})
    )
    assert verdict.verdict == "fail"
    failed = [c for c in verdict.checks if not c.passed]
    assert [c.metric for c in failed] == ["usd_per_million_tokens"]
    assert failed[0].delta_pct == pytest.approx(25.0)
    assert _nano(failed[0].candidate) == Decimal("5.555555556")  # type: ignore[arg-type]
    assert "cost per 1M output tokens +25.0 % (allowed 0 %)" in verdict.summary


# --- invalid --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "baseline", "candidate", "sentence"),
    [
        (
            "model",
            "meta-llama/Llama-3.1-70B-Instruct",
            "meta-llama/Llama-3.3-70B-Instruct",
            "model differs: baseline meta-llama/Llama-3.1-70B-Instruct, "
            "candidate meta-llama/Llama-3.3-70B-Instruct",
        ),
        ("model_hash", "a1b2c3", "d4e5f6", "model hash differs: baseline a1b2c3, candidate d4e5f6"),
        ("quantization", "fp8", "int4", "quantization differs: baseline fp8, candidate int4"),
        ("batch_size", 256, 128, "server batch size differs: baseline 256, candidate 128"),
        ("dataset", "sharegpt", "random", "dataset differs: baseline sharegpt, candidate random"),
        ("input_len", 1024, 2048, "input length differs: baseline 1024, candidate 2048"),
        ("output_len", 128, 1024, "output length differs: baseline 128, candidate 1024"),
        ("request_rate", None, 10.0, "request rate differs: baseline unlimited, candidate 10"),
        ("concurrency", 64, 32, "concurrency differs: baseline 64, candidate 32"),
    ],
)
def test_invalid_for_each_confounder(
    field: str, baseline: object, candidate: object, sentence: str
) -> None:
    verdict = evaluate_gate(
        baseline=_run(fields={field: baseline}),
        candidate=(dataclasses.replace(FIELDS, **{field: candidate}), IMPROVED),
    )
    assert verdict.verdict == "invalid"
    assert verdict.confounders == (sentence,)


def test_every_confounder_is_listed() -> None:
    verdict = evaluate_gate(
        baseline=_run(),
        candidate=_run(fields={"quantization": "int4", "dataset": "random"}),
    )
    assert verdict.confounders == (
        "quantization differs: baseline fp8, candidate int4",
        "dataset differs: baseline sharegpt, candidate random",
    )
    assert verdict.summary.startswith("Invalid: the runs differ in quantization and dataset")


def test_model_hash_is_compared_only_when_both_have_one() -> None:
    verdict = evaluate_gate(baseline=_run(fields={"model_hash": "a1b2c3"}), candidate=_run())
    assert verdict.confounders == ()
    assert verdict.verdict == "pass"


def test_case_and_spaces_do_not_make_a_confounder() -> None:
    verdict = evaluate_gate(baseline=_run(), candidate=_run(fields={"quantization": " FP8"}))
    assert verdict.confounders == ()


def test_invalid_comes_before_incomplete() -> None:
    verdict = evaluate_gate(
        baseline=_run(),
        candidate=_run(fields={"quantization": "int4"}, metrics={"ttft_p95_ms": None}),
    )
    assert verdict.verdict == "invalid"
    # The missing metric is still reported for the page.
    assert len(verdict.missing) == 1


# --- incomplete -----------------------------------------------------------------------------

TTFT_HOW = (
    "p95 TTFT: save the vLLM result with --metric-percentiles 95 or with per-request arrays "
    "(--save-detailed)"
)


def test_incomplete_names_the_metric_the_side_and_how() -> None:
    verdict = evaluate_gate(
        baseline=_run(),
        candidate=_run(metrics={"ttft_p95_ms": None, "missing": {"ttft_p95_ms": TTFT_HOW}}),
    )
    assert verdict.verdict == "incomplete"
    assert verdict.missing == (f"candidate run is missing {TTFT_HOW}",)
    assert verdict.summary == "Incomplete: 1 required value(s) missing (p95 TTFT on the candidate)."
    assert "ttft_p95_ms" not in {c.metric for c in verdict.checks}


def test_incomplete_without_price_or_utilization() -> None:
    utilization_how = "GPU utilization: attach accelerator telemetry for the run"
    verdict = evaluate_gate(
        baseline=_run(
            metrics={
                "gpu_utilization_pct": None,
                "missing": {"gpu_utilization_pct": utilization_how},
            }
        ),
        candidate=_run(fields={"usd_per_gpu_hour": None}),
    )
    assert verdict.verdict == "incomplete"
    assert verdict.missing == (
        f"baseline run is missing {utilization_how}",
        "candidate run is missing cost per 1M output tokens: state usd_per_gpu_hour "
        "(--meta-candidate usd_per_gpu_hour=4.00)",
    )
    assert verdict.cost_per_million_tokens["candidate"] is None


def test_a_missing_figure_cannot_rescue_a_regression() -> None:
    # "Reject if any metric regresses": p95 TTFT doubled (200 → 400 ms) fails the gate even
    # though the candidate's p95 TPOT is missing; the missing one is listed too.
    verdict = evaluate_gate(
        baseline=_run(),
        candidate=_run(metrics={"tpot_p95_ms": None, "ttft_p95_ms": 400.0}),
    )
    assert verdict.verdict == "fail"
    assert [c.metric for c in verdict.checks if not c.passed] == ["ttft_p95_ms"]
    assert verdict.summary.startswith("Fail: p95 TTFT +100.0 % (allowed 0 %). Also 1 required")
    assert "p95 TPOT on the candidate" in verdict.summary


@pytest.mark.parametrize(
    ("field", "value", "option"),
    [
        ("quantization", "int4", "quantization"),
        ("model_hash", "", None),
        ("batch_size", 64, "batch_size"),
    ],
)
def test_a_field_stated_on_one_side_only_is_incomplete(
    field: str, value: object, option: str | None
) -> None:
    # Baseline states nothing; the candidate states the field. The model hash is compared only
    # when both runs carry one, so it is never a gap.
    base_fields = {field: "" if isinstance(value, str) else None}
    verdict = evaluate_gate(
        baseline=_run(fields=base_fields), candidate=_run(fields={field: value or "abc"})
    )
    if option is None:
        assert verdict.verdict == "pass"
        return
    assert verdict.verdict == "incomplete"
    (sentence,) = verdict.missing
    label = {"quantization": "quantization", "batch_size": "server batch size"}[field]
    assert sentence.startswith(f"baseline run is missing {label}: the candidate states {value}")
    assert sentence.endswith(f"state it on the baseline (--meta-baseline {option}=…)")


# --- cost per 1M tokens ---------------------------------------------------------------------


def test_default_profile_prices_each_side_busy_only() -> None:
    # Baseline: P × G / (T × 3600) × 1e6 = 4 × 8 / 7.2M × 1e6 = 4.444….
    # Candidate: T = 1,000 tok/s on G = 4 at P = $2.50: 2.5 × 4 / 3.6M × 1e6 = 2.777….
    candidate = _run(
        fields={"num_gpus": 4, "usd_per_gpu_hour": Decimal("2.50")},
        metrics={"decode_tokens_per_s": 1000.0},
    )
    verdict = evaluate_gate(baseline=_run(), candidate=candidate)
    assert _nano(verdict.cost_per_million_tokens["baseline"]) == Decimal("4.444444444")
    assert _nano(verdict.cost_per_million_tokens["candidate"]) == Decimal("2.777777778")
    # Fully busy: no idle replica in any mode, so every mode gives the same figure.
    for mode in ScalingMode:
        assert _nano(verdict.cost_by_mode[mode.value]["baseline"]) == Decimal("4.444444444")
        assert _nano(verdict.cost_by_mode[mode.value]["candidate"]) == Decimal("2.777777778")


def test_energy_adds_to_the_price_of_an_accelerator_hour() -> None:
    # 600 W / 1000 / η 0.6 × $0.10/kWh = $0.10 per GPU-hour on top of $4:
    # 4.10 × 8 / 7.2M × 1e6 = 32.8 / 7.2 = 4.555….
    verdict = evaluate_gate(
        baseline=_run(metrics={"power_w_per_gpu": 600.0}),
        candidate=_run(),
        usd_per_kwh=Decimal("0.10"),
    )
    assert _nano(verdict.cost_per_million_tokens["baseline"]) == Decimal("4.555555556")
    # The candidate has no power figure, so no energy term.
    assert _nano(verdict.cost_per_million_tokens["candidate"]) == Decimal("4.444444444")


# Four hours: idle, 7.2M, 3.6M, idle tokens: 10.8M in all.
# Baseline T = 1,000 tok/s (3.6M per replica-hour), G = 8, P = $4 → $32 per replica-hour:
#   R_h = [0, 2, 1, 0].
# Candidate T = 2,000 tok/s (7.2M per replica-hour), G = 4, P = $6 → $24 per replica-hour:
#   R_h = [0, 1, 1, 0].
# Cold start 360 s = 0.1 replica-hour per replica added between consecutive hours.
PROFILE = [0, 7_200_000, 3_600_000, 0]
SMALL_PROFILE_COSTS = {
    # Autoscale: baseline [1, 2, 1, 1] = 5 + one added × 0.1 = 5.1 rh × $32 = $163.2 / 10.8M;
    # candidate [1, 1, 1, 1] = 4 rh × $24 = $96 / 10.8M.
    "autoscale": (Decimal("15.111111111"), Decimal("8.888888889")),
    # Always on: baseline max 2 every hour = 8 rh × $32 = $256 / 10.8M; candidate 4 × $24 = $96.
    "always_on": (Decimal("23.703703704"), Decimal("8.888888889")),
    # Scale to zero: baseline [0, 2, 1, 0] = 3 + two added × 0.1 = 3.2 rh × $32 = $102.4;
    # candidate [0, 1, 1, 0] = 2 + 0.1 = 2.1 rh × $24 = $50.4.
    "scale_to_zero": (Decimal("9.481481481"), Decimal("4.666666667")),
}


def test_small_profile_prices_both_sides_on_the_same_demand() -> None:
    baseline = _run(
        metrics={"decode_tokens_per_s": 1000.0, "output_tokens_per_gpu_hour": 450_000.0}
    )
    candidate = _run(
        fields={"num_gpus": 4, "usd_per_gpu_hour": Decimal("6")},
        metrics={"decode_tokens_per_s": 2000.0, "output_tokens_per_gpu_hour": 1_800_000.0},
    )
    verdict = evaluate_gate(
        baseline=baseline,
        candidate=candidate,
        demand_per_hour=PROFILE,
        mode=ScalingMode.AUTOSCALE,
        cold_start_seconds=360.0,
    )
    assert verdict.verdict == "pass"
    assert {side: _nano(v) for side, v in verdict.cost_per_million_tokens.items()} == {
        "baseline": Decimal("15.111111111"),
        "candidate": Decimal("8.888888889"),
    }
    for mode, (baseline_cost, candidate_cost) in SMALL_PROFILE_COSTS.items():
        assert _nano(verdict.cost_by_mode[mode]["baseline"]) == baseline_cost
        assert _nano(verdict.cost_by_mode[mode]["candidate"]) == candidate_cost


def test_a_profile_with_no_tokens_is_refused() -> None:
    with pytest.raises(ValueError, match="demands no output tokens"):
        evaluate_gate(baseline=_run(), candidate=_run(), demand_per_hour=[0, 0])


def test_unknown_metric_in_tolerances_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown metric.*ttft_p99_ms"):
        Tolerances(allowed_regression_pct={"ttft_p99_ms": 5.0})


# --- traffic CSV ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hour,output_tokens\n0,100\n1,0\n2,7200000\n", [100, 0, 7_200_000]),
        ("0,100\n\n1,200\n", [100, 200]),  # no header, blank line skipped
        (
            "hour,output_tokens\r\n2025-06-01T00:00Z, 5\r\n2025-06-01T01:00Z,6\r\n",
            [5, 6],
        ),
    ],
)
def test_parse_traffic_csv(text: str, expected: list[int]) -> None:
    assert parse_traffic_csv(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hour,output_tokens\n0,100\n1,abc\n", "line 3: output_tokens must be a whole number"),
        ("0,-5\n", "line 1: output_tokens must be a whole number ≥ 0, got '-5'"),
        ("0,1.5\n", "line 1: output_tokens must be a whole number ≥ 0, got '1.5'"),
        ("0,100\n1,2,3\n", "line 2: expected 'hour,output_tokens', got '1,2,3'"),
        ("0,100\n0,200\n", "line 2: hour '0' already given on line 1"),
        ("hour,output_tokens\n", "the traffic CSV has no rows"),
        ("", "the traffic CSV has no rows"),
    ],
)
def test_parse_traffic_csv_bad_lines(text: str, message: str) -> None:
    with pytest.raises(ValueError) as error:
        parse_traffic_csv(text)
    assert str(error.value).startswith(message)
