"""Gates over real public artifacts no one here wrote (tests/fixtures/real/benchmarks, see its
SOURCES.md): a GuideLLM sweep report, an InferenceX sweep of three vLLM files, and two hosted
providers' LLMPerf runs of Llama 2 70B. Each reaches pass or fail with the reasons a reader of
the files would give; every figure below is read from the files in the test itself.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from benchmarks_app.models import BenchmarkRun
from benchmarks_app.runs import benchmark_run_import_path
from benchmarks_app.services import gate_evaluate
from tests.support.paths import FIXTURES_DIR

pytestmark = pytest.mark.django_db

REAL = FIXTURES_DIR / "real" / "benchmarks"
GUIDELLM = REAL / "guidellm" / "v2_report_guidellm-0.8.0.dev18.json"
GPT_OSS = [
    REAL / "vllm" / f"inferencex_multinode_gpt-oss-120b_conc{c}_gpus16_ctx8_gen8.json"
    for c in (4, 8, 32)
]
HOSTED = REAL / "llmperf" / "hosted"
SELF_HOSTED = {"num_gpus": "1", "usd_per_gpu_hour": "2.00", "gpu_utilization_pct": "80"}


def _run(*paths: Path, **meta: str) -> BenchmarkRun:
    return benchmark_run_import_path(paths=list(paths), meta=meta)


def test_a_guidellm_sweep_keeps_every_benchmark_and_gates_point_by_point() -> None:
    report = json.loads(GUIDELLM.read_text())
    rates = [b["config"]["strategy"]["rate"] for b in report["benchmarks"]]
    baseline = _run(GUIDELLM, **SELF_HOSTED)
    assert [p.load for p in baseline.points.order_by("index")] == [
        {"request_rate": rate} for rate in rates
    ]
    # The same results on accelerators 10 % dearer: the cost per 1M output tokens is 10 % higher
    # at every rate, and nothing else moves.
    candidate = _run(GUIDELLM, **{**SELF_HOSTED, "usd_per_gpu_hour": "2.20"})
    gate = gate_evaluate(baseline=baseline, candidate=candidate)
    assert gate.verdict == "fail"
    expected = "; ".join(
        f"at {rate:g} req/s: cost per 1M output tokens +10.0 % (allowed 0 %)" for rate in rates
    )
    assert gate.result["summary"] == f"Fail: {expected}."
    # Compared with itself, every check holds at every point: a pass.
    same = gate_evaluate(baseline=baseline, candidate=baseline)
    assert same.verdict == "pass"
    assert len(same.result["points"]) == len(rates)


def test_several_vllm_files_make_one_sweep_and_its_gaps_are_named() -> None:
    sweep = [json.loads(path.read_text()) for path in GPT_OSS]
    run = _run(*GPT_OSS, **{**SELF_HOSTED, "num_gpus": "16"})
    points = list(run.points.order_by("index"))
    assert [p.load for p in points] == [{"concurrency": s["max_concurrency"]} for s in sweep]
    for point, data in zip(points, sweep, strict=True):
        by_hand = data["total_output_tokens"] / data["duration"]
        assert point.metrics["decode_tokens_per_s"] == pytest.approx(by_hand, rel=1e-12)
    # InferenceX keeps mean, median and p99 latencies, never a p95: against itself the sweep
    # is incomplete, and each gap names the point and the side.
    gate = gate_evaluate(baseline=run, candidate=run)
    assert gate.verdict == "incomplete"
    assert "baseline run is missing at concurrency 4 p95 TTFT" in gate.result["missing"][0]
    # A candidate 25 % dearer fails on cost at every concurrency even so: a missing figure
    # cannot rescue a regression.
    dearer = _run(*GPT_OSS, **{**SELF_HOSTED, "num_gpus": "16", "usd_per_gpu_hour": "2.50"})
    failed = gate_evaluate(baseline=run, candidate=dearer)
    assert failed.verdict == "fail"
    for data in sweep:
        assert (
            f"at concurrency {data['max_concurrency']}: cost per 1M output tokens +25.0 %"
            in failed.result["summary"]
        )


def _summary(name: str) -> dict[str, object]:
    return json.loads((HOSTED / f"{name}_summary.json").read_text())


def test_two_hosted_providers_of_llama_2_70b_fail_on_errors_and_ttft() -> None:
    bedrock, lepton = _summary("bedrock_llama-2-70b-chat"), _summary("lepton_llama-2-70b-chat")
    # The providers spell the model differently; the canonical model matches them.
    common = {"canonical_model": "llama-2-70b-chat", "usd_per_million_input": "1.00"}
    baseline = _run(
        HOSTED / "bedrock_llama-2-70b-chat_summary.json",
        provider="bedrock",
        usd_per_million_output="1.00",
        **common,
    )
    candidate = _run(
        HOSTED / "lepton_llama-2-70b-chat_summary.json",
        provider="lepton",
        usd_per_million_output="0.80",
        **common,
    )
    first = baseline.points.get().metrics
    assert (first["completed_requests"], first["failed_requests"]) == (
        bedrock["results_num_completed_requests"],
        bedrock["results_number_errors"],
    )
    gate = gate_evaluate(baseline=baseline, candidate=candidate)
    assert gate.verdict == "fail"
    assert gate.result["serving"] == {"baseline": "hosted", "candidate": "hosted"}
    checks = {c["metric"]: c for c in gate.result["checks"]}
    # Error rate: 49 / 150 → 130 / 150 failed, +54.0 points.
    errors = lambda s: s["results_number_errors"] / s["results_num_requests_started"] * 100  # noqa: E731
    assert checks["error_rate_pct"]["delta_points"] == pytest.approx(
        errors(lepton) - errors(bedrock)
    )
    # p95 TTFT: 542.1 ms → 1,011.6 ms, +86.6 %.
    ttft = lambda s: s["results_ttft_s_quantiles_p95"] * 1000  # noqa: E731
    assert checks["ttft_p95_ms"]["delta_pct"] == pytest.approx(
        (ttft(lepton) / ttft(bedrock) - 1) * 100
    )
    summary = gate.result["summary"]
    assert "error rate +54.0 points (allowed 0.5 points)" in summary
    assert "p95 TTFT +86.6 %" in summary
    # Accelerator metrics are not applicable on an API, never missing.
    assert not any("GPU" in m for m in gate.result["missing"])
    assert gate.result["not_applicable"][0].endswith(
        "not applicable on the baseline (a hosted API)"
    )


def test_hosted_per_request_records_are_priced_on_their_token_mix_and_say_what_is_missing() -> None:
    # Lepton's individual responses: 20 completed of 150, each with its TTFT, latency and token
    # counts but no start time, so no duration: decode tok/s cannot be worked out and the gate
    # of a price cut is incomplete saying so, with both costs computed from the token mix.
    responses = json.loads(
        (HOSTED / "lepton_llama-2-70b-chat_individual_responses.json").read_text()
    )
    completed = [r for r in responses if not r.get("error_code")]
    tokens_in = sum(r["number_input_tokens"] for r in completed)
    tokens_out = sum(r["number_output_tokens"] for r in completed)
    path = HOSTED / "lepton_llama-2-70b-chat_individual_responses.json"
    prices = {"provider": "lepton", "usd_per_million_input": "1.00"}
    baseline = _run(path, usd_per_million_output="1.00", **prices)
    candidate = _run(path, usd_per_million_output="0.50", **prices)
    gate = gate_evaluate(baseline=baseline, candidate=candidate)
    assert gate.verdict == "incomplete"
    assert gate.result["summary"] == (
        "Incomplete: 2 required value(s) missing (decode tok/s on the baseline and decode tok/s "
        "on the candidate)."
    )
    cost = gate.result["cost_per_million_tokens"]
    assert Decimal(cost["baseline"]) == (Decimal(tokens_in) + Decimal(tokens_out)) / Decimal(
        tokens_out
    )
    assert Decimal(cost["candidate"]) == (
        Decimal(tokens_in) + Decimal(tokens_out) * Decimal("0.5")
    ) / Decimal(tokens_out)
    assert baseline.points.get().metrics["failed_requests"] == len(responses) - len(completed)
