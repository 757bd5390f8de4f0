"""The gate over curves: points matched by load and lengths, a regression at any
point fails naming it, the operating point under an SLO, hosted API sides, error rate.

Every expected figure is worked out by hand in the comment beside it. Unless a test says
otherwise both sides serve the same model on 8 GPUs at $4/GPU-hour, so a point decoding T tok/s
costs 4 × 8 / (T × 3600) × 1e6 per 1M output tokens (busy only).
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest

from benchmarks_app.curves import (
    CurveError,
    CurvePoint,
    Load,
    Slo,
    check_duplicates,
    match_points,
    operating_point,
)
from benchmarks_app.gating import Side, evaluate_gate
from benchmarks_app.metrics import RunFields, RunMetrics

NANO = Decimal("0.000000001")
FIELDS = RunFields(
    model="meta-llama/Llama-3.1-70B-Instruct",
    quantization="bf16",
    batch_size=256,
    num_gpus=8,
    gpu_type="H100",
    usd_per_gpu_hour=Decimal("4"),
)
HOSTED = RunFields(
    model="meta-llama/Llama-3.1-70B-Instruct",
    provider="together",
    usd_per_million_input=Decimal("0.88"),
    usd_per_million_output=Decimal("0.88"),
)


def _metrics(decode: float, ttft: float, tpot: float, **extra: object) -> RunMetrics:
    values: dict[str, object] = {
        "ttft_p50_ms": 100.0,
        "ttft_p95_ms": ttft,
        "tpot_p50_ms": 10.0,
        "tpot_p95_ms": tpot,
        "decode_tokens_per_s": decode,
        "output_tokens_per_gpu_hour": decode * 3600 / 8,
        "gpu_utilization_pct": 80.0,
        **extra,
    }
    return RunMetrics(**values)  # type: ignore[arg-type]


def _point(index: int, concurrency: int | None, metrics: RunMetrics, **kw: object) -> CurvePoint:
    load = None if concurrency is None else Load(concurrency=concurrency)
    return CurvePoint(
        index=index,
        label=f"c{concurrency}",
        load=load,
        metrics=metrics,
        **kw,  # type: ignore[arg-type]
    )


def _curve(*rows: tuple[int | None, float, float, float], fields: RunFields = FIELDS) -> Side:
    return Side(
        fields=fields,
        points=tuple(
            _point(i, c, _metrics(decode, ttft, tpot))
            for i, (c, decode, ttft, tpot) in enumerate(rows)
        ),
    )


BASELINE = _curve((8, 1000.0, 200.0, 20.0), (16, 1800.0, 300.0, 35.0), (32, 2600.0, 600.0, 70.0))


def _nano(value: object) -> Decimal:
    assert isinstance(value, Decimal)
    return value.quantize(NANO)


# --- matching ------------------------------------------------------------------------------


def test_points_match_by_load_and_the_rest_are_listed() -> None:
    candidate = _curve(
        (16, 1900.0, 290.0, 34.0), (8, 1100.0, 190.0, 19.0), (64, 3000.0, 900.0, 90.0)
    )
    matching = match_points(BASELINE.points, candidate.points)
    pairs = [(p.baseline.load, p.candidate.load) for p in matching.pairs]
    assert pairs == [(Load(concurrency=8),) * 2, (Load(concurrency=16),) * 2]
    assert [(side, p.label) for side, p in matching.unmatched] == [
        ("baseline", "c32"),
        ("candidate", "c64"),
    ]


def test_a_point_without_a_load_is_never_matched() -> None:
    candidate = _curve((None, 1000.0, 200.0, 20.0), (8, 1000.0, 200.0, 20.0))
    matching = match_points(BASELINE.points, candidate.points)
    assert [p.candidate.index for p in matching.pairs] == [1]
    assert ("candidate", candidate.points[0]) in matching.unmatched


def test_lengths_that_differ_do_not_match_and_one_sided_lengths_are_reported() -> None:
    base = (_point(0, 8, _metrics(1, 1, 1), input_len=1024, output_len=128),)
    other = (_point(0, 8, _metrics(1, 1, 1), input_len=2048, output_len=128),)
    unstated = (_point(0, 8, _metrics(1, 1, 1), output_len=128),)
    both = (*base, _point(1, 16, _metrics(1, 1, 1)))
    assert match_points(both, (*other, _point(1, 32, _metrics(1, 1, 1)))).pairs == ()
    pair = match_points(both, (*unstated, _point(1, 32, _metrics(1, 1, 1)))).pairs[0]
    assert pair.half_stated == (("input length", "baseline"),)


def test_duplicate_points_are_refused_naming_both() -> None:
    points = (
        _point(0, 8, _metrics(1, 1, 1), source="a.json"),
        _point(1, 8, _metrics(2, 2, 2), source="b.json"),
    )
    with pytest.raises(CurveError) as refused:
        check_duplicates(points)
    assert str(refused.value) == (
        "duplicate point at concurrency 8: point 1 (c8) of a.json and point 2 (c8) of b.json "
        "measure the same load; import one of them"
    )


# --- the gate, point by point ---------------------------------------------------------------


def test_a_regression_at_one_point_fails_naming_the_point() -> None:
    # At concurrency 16 the candidate's p95 TPOT is 35 → 41.37 ms: +18.2 %.
    candidate = _curve(
        (8, 1000.0, 200.0, 20.0), (16, 1800.0, 300.0, 41.37), (32, 2600.0, 600.0, 70.0)
    )
    verdict = evaluate_gate(baseline=BASELINE, candidate=candidate)
    assert verdict.verdict == "fail"
    assert verdict.summary == "Fail: at concurrency 16: p95 TPOT +18.2 % (allowed 0 %)."
    assert [p["where"] for p in verdict.points] == [
        "concurrency 8",
        "concurrency 16",
        "concurrency 32",
    ]
    failed = [c for c in verdict.checks if not c.passed]
    assert [(c.point, c.metric) for c in failed] == [("concurrency 16", "tpot_p95_ms")]


def test_a_gate_with_no_matched_point_is_invalid() -> None:
    candidate = _curve((64, 1000.0, 200.0, 20.0), (128, 1000.0, 200.0, 20.0))
    verdict = evaluate_gate(baseline=BASELINE, candidate=candidate)
    assert verdict.verdict == "invalid"
    assert verdict.points == ()
    assert len(verdict.unmatched) == 5


def test_missing_at_a_point_names_the_point() -> None:
    candidate = dataclasses.replace(
        BASELINE,
        points=(
            BASELINE.points[0],
            dataclasses.replace(
                BASELINE.points[1],
                metrics=dataclasses.replace(BASELINE.points[1].metrics, tpot_p95_ms=None),
            ),
            BASELINE.points[2],
        ),
    )
    verdict = evaluate_gate(baseline=BASELINE, candidate=candidate)
    assert verdict.verdict == "incomplete"
    assert verdict.missing == (
        "candidate run is missing at concurrency 16 p95 TPOT: not in the file",
    )


# --- the operating point at the SLO ---------------------------------------------------------


def test_the_operating_point_is_the_fastest_measured_point_inside_the_slo() -> None:
    slo = Slo(ttft_ms=500, tpot_ms=50)
    # c32 decodes most but its p95 TPOT 70 ms > 50: the operating point is c16.
    assert operating_point(BASELINE.points, slo) is BASELINE.points[1]
    assert operating_point(BASELINE.points) is BASELINE.points[2]  # no SLO: the fastest
    assert operating_point(BASELINE.points, Slo(tpot_ms=10)) is None


def test_cost_at_the_slo_is_the_headline_and_a_cheaper_operating_point_passes() -> None:
    # The candidate meets p95 TPOT ≤ 50 ms up to c32 (48 ms at 3,000 tok/s), the baseline only
    # up to c16 (1,800 tok/s). Costs: baseline 32 / (1,800 × 3,600) × 1e6 = $4.938271605,
    # candidate 32 / (3,000 × 3,600) × 1e6 = $2.962962963.
    candidate = _curve(
        (8, 1000.0, 190.0, 19.0), (16, 1800.0, 290.0, 33.0), (32, 3000.0, 450.0, 48.0)
    )
    verdict = evaluate_gate(
        baseline=BASELINE, candidate=candidate, slo=Slo(ttft_ms=1000, tpot_ms=50)
    )
    assert verdict.verdict == "pass"
    assert _nano(verdict.cost_per_million_tokens["baseline"]) == Decimal("4.938271605")
    assert _nano(verdict.cost_per_million_tokens["candidate"]) == Decimal("2.962962963")
    op = verdict.operating_point
    assert op["baseline"] is not None and op["baseline"]["load"] == {"concurrency": 16}
    assert op["candidate"] is not None and op["candidate"]["load"] == {"concurrency": 32}
    assert verdict.slo == {"ttft_ms": 1000, "tpot_ms": 50}
    assert "operating points are concurrency 16 → concurrency 32" in verdict.summary
    # The SLO cost check: (2.962962963 − 4.938271605) / 4.938271605 = −40 %.
    (slo_check,) = [c for c in verdict.checks if c.point == "the operating point"]
    assert slo_check.delta_pct == pytest.approx(-40.0)
    # The Pareto rows: interactivity = 1000 / p95 TPOT; per accelerator = tok/s / 8.
    rows = verdict.curves["candidate"]
    assert [r["interactivity"] for r in rows] == pytest.approx([1000 / 19, 1000 / 33, 1000 / 48])
    assert [r["per_accelerator"] for r in rows] == pytest.approx([125.0, 225.0, 375.0])
    assert [r["operating"] for r in rows] == [False, False, True]
    assert [r["meets_slo"] for r in verdict.curves["baseline"]] == [True, True, False]


def test_a_side_with_no_point_inside_the_slo_fails_saying_so() -> None:
    verdict = evaluate_gate(baseline=BASELINE, candidate=BASELINE, slo=Slo(tpot_ms=15))
    assert verdict.verdict == "fail"
    assert verdict.summary == (
        "Fail: the baseline has no measured point inside the SLO (p95 TPOT ≤ 15 ms); "
        "the candidate has no measured point inside the SLO (p95 TPOT ≤ 15 ms)."
    )


def test_a_bad_slo_is_refused() -> None:
    with pytest.raises(ValueError, match="slo tpot_ms must be a number of milliseconds above 0"):
        Slo(tpot_ms=0)


# --- hosted sides ---------------------------------------------------------------------------


def _hosted(fields: RunFields, *rows: tuple[int, float, float, float, int, int, int]) -> Side:
    """(concurrency, decode, p95 TTFT, p95 TPOT, input tokens, output tokens, failed)."""
    return Side(
        fields=fields,
        points=tuple(
            _point(
                i,
                c,
                RunMetrics(
                    ttft_p95_ms=ttft,
                    tpot_p95_ms=tpot,
                    decode_tokens_per_s=decode,
                    total_input_tokens=tokens_in,
                    total_output_tokens=tokens_out,
                    completed_requests=150 - failed,
                    failed_requests=failed,
                    error_rate_pct=failed / 150 * 100,
                ),
            )
            for i, (c, decode, ttft, tpot, tokens_in, tokens_out, failed) in enumerate(rows)
        ),
    )


def test_two_hosted_providers_reach_a_verdict_priced_on_their_token_mix() -> None:
    # Together at $0.88 / $0.88: (82,500 × 0.88 + 22,500 × 0.88) / 22,500 = $4.106666667 per 1M.
    # Other at $0.60 in / $0.90 out: (82,500 × 0.6 + 22,500 × 0.9) / 22,500 = $3.1 per 1M.
    other = dataclasses.replace(
        HOSTED,
        provider="fireworks",
        usd_per_million_input=Decimal("0.60"),
        usd_per_million_output=Decimal("0.90"),
    )
    baseline = _hosted(HOSTED, (4, 120.0, 400.0, 25.0, 82_500, 22_500, 0))
    candidate = _hosted(other, (4, 130.0, 380.0, 24.0, 82_500, 22_500, 0))
    verdict = evaluate_gate(baseline=baseline, candidate=candidate)
    assert verdict.verdict == "pass"
    assert _nano(verdict.cost_per_million_tokens["baseline"]) == Decimal("4.106666667")
    assert _nano(verdict.cost_per_million_tokens["candidate"]) == Decimal("3.100000000")
    assert verdict.serving == {"baseline": "hosted", "candidate": "hosted"}
    assert verdict.missing == ()
    assert not {"gpu_utilization_pct", "output_tokens_per_gpu_hour"} & {
        c.metric for c in verdict.checks
    }
    assert verdict.not_applicable[0].startswith("output tokens per GPU-hour, GPU utilization")
    # Tokens per dollar on the Pareto chart: 1e6 / $3.10.
    assert verdict.curves["candidate"][0]["tokens_per_dollar"] == pytest.approx(1e6 / 3.1)


def test_failed_requests_fail_the_gate_on_error_rate_even_with_faster_survivors() -> None:
    # 49 of 150 failed: 32.67 % vs 0 %, +32.7 points, beyond the default 0.5 points.
    baseline = _hosted(HOSTED, (4, 120.0, 400.0, 25.0, 82_500, 22_500, 0))
    candidate = _hosted(HOSTED, (4, 150.0, 300.0, 20.0, 55_550, 15_150, 49))
    verdict = evaluate_gate(baseline=baseline, candidate=candidate)
    assert verdict.verdict == "fail"
    (failed,) = [c for c in verdict.checks if not c.passed]
    assert failed.metric == "error_rate_pct"
    assert failed.delta_points == pytest.approx(49 / 150 * 100)
    assert verdict.summary == "Fail: error rate +32.7 points (allowed 0.5 points)."


def test_half_a_point_more_errors_is_within_the_default_tolerance() -> None:
    # 0.5 points exactly: 1 of 200 failed (0.5 %) against 0 failed.
    baseline = _hosted(HOSTED, (4, 120.0, 400.0, 25.0, 82_500, 22_500, 0))
    point = baseline.points[0]
    worse = dataclasses.replace(
        point, metrics=dataclasses.replace(point.metrics, error_rate_pct=0.5, failed_requests=1)
    )
    verdict = evaluate_gate(
        baseline=baseline, candidate=dataclasses.replace(baseline, points=(worse,))
    )
    assert verdict.verdict == "pass"


def test_self_hosted_against_hosted_compares_what_both_have() -> None:
    # Self-hosted at 2,000 tok/s: 32 / 7.2M × 1e6 = $4.444444444; the API $4.106666667.
    baseline = Side(
        fields=FIELDS,
        points=(
            _point(
                0,
                4,
                _metrics(2000.0, 400.0, 25.0, total_input_tokens=1, total_output_tokens=1),
            ),
        ),
    )
    candidate = _hosted(HOSTED, (4, 120.0, 390.0, 25.0, 82_500, 22_500, 0))
    verdict = evaluate_gate(baseline=baseline, candidate=candidate)
    # Decode tok/s of one API client stream is far below a whole 8-GPU server: a fail, named.
    assert verdict.verdict == "fail"
    assert "decode tok/s -94.0 %" in verdict.summary
    assert _nano(verdict.cost_per_million_tokens["candidate"]) == Decimal("4.106666667")
    assert "gpu_utilization_pct" not in {c.metric for c in verdict.checks}
    # Quantization is stated on the self-hosted side only: the API side is asked to state it;
    # a hosted API has no server batch size to state.
    assert verdict.missing == (
        "candidate run is missing quantization: the baseline states bf16, the candidate does "
        "not; state it on the candidate (--meta-candidate quantization=…)",
    )
    assert "server batch size" not in " ".join(verdict.missing + verdict.confounders)


def test_a_hosted_side_without_prices_is_incomplete_saying_how() -> None:
    unpriced = dataclasses.replace(HOSTED, usd_per_million_input=None, usd_per_million_output=None)
    baseline = _hosted(HOSTED, (4, 120.0, 400.0, 25.0, 82_500, 22_500, 0))
    candidate = _hosted(unpriced, (4, 120.0, 400.0, 25.0, 82_500, 22_500, 0))
    verdict = evaluate_gate(baseline=baseline, candidate=candidate)
    assert verdict.verdict == "incomplete"
    (sentence,) = verdict.missing
    assert sentence.startswith(
        "candidate run is missing cost per 1M output tokens: state the API's prices"
    )
    assert "price card for together / meta-llama/Llama-3.1-70B-Instruct" in sentence


def test_canonical_model_matches_providers_that_spell_the_model_differently() -> None:
    fireworks = dataclasses.replace(
        HOSTED, provider="fireworks", model="accounts/fireworks/models/llama-v3p1-70b-instruct"
    )
    baseline = _hosted(HOSTED, (4, 120.0, 400.0, 25.0, 82_500, 22_500, 0))
    differ = evaluate_gate(
        baseline=baseline, candidate=_hosted(fireworks, (4, 120.0, 400.0, 25.0, 82_500, 22_500, 0))
    )
    assert differ.verdict == "invalid"
    canonical = "llama-3.1-70b-instruct"
    same = evaluate_gate(
        baseline=_hosted(
            dataclasses.replace(HOSTED, canonical_model=canonical),
            (4, 120.0, 400.0, 25.0, 82_500, 22_500, 0),
        ),
        candidate=_hosted(
            dataclasses.replace(fireworks, canonical_model=canonical),
            (4, 120.0, 400.0, 25.0, 82_500, 22_500, 0),
        ),
    )
    assert same.verdict == "pass"
