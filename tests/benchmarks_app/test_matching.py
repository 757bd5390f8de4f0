"""What a gate's runs must match to verify a recommendation (pure rule, no database)."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import pytest

from audit_app.models import Recommendation
from benchmarks_app.matching import (
    APPROVED,
    GATEABLE_KIND,
    GateRuns,
    Mismatch,
    RecommendationTerms,
    accelerator_matches,
    link_mismatches,
    model_key,
    target_hardware,
)

TERMS = RecommendationTerms(
    id=7,
    status="pilot_approved",
    target_kind="dedicated_hardware",
    target="p5.48xlarge (NVIDIA H100 80GB), scale to zero",
    workload="evals",
    period_start=date(2026, 11, 1),
    period_end=date(2026, 11, 30),
    workload_models=("meta-llama/Llama-3.1-70B-Instruct",),
)
RUNS = GateRuns(
    baseline_model="meta-llama/Llama-3.1-70B-Instruct",
    candidate_model="meta-llama/Llama-3.1-70B-Instruct",
    candidate_gpu_type="H100",
)


def test_the_constants_are_the_models_values() -> None:
    assert APPROVED == Recommendation.Status.PILOT_APPROVED
    assert GATEABLE_KIND == Recommendation.TargetKind.DEDICATED_HARDWARE


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b-instruct"),
        ("  Llama-3.1-70B-Instruct ", "llama-3.1-70b-instruct"),
        ("together_ai/meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b-instruct"),
        ("openai/gpt-4o-mini", "gpt-4o-mini"),
        ("GPT-4o-mini", "gpt-4o-mini"),
        ("meta-llama/Llama-3.1-70B-Instruct-FP8", "llama-3.1-70b-instruct-fp8"),
        ("", ""),
    ],
)
def test_model_key(name: str, key: str) -> None:
    assert model_key(name) == key


@pytest.mark.parametrize(
    ("target", "hardware"),
    [
        ("p5.48xlarge (NVIDIA H100 80GB), scale to zero", "NVIDIA H100 80GB"),
        ("p5.48xlarge (Capacity Block) (NVIDIA H100 80GB), scale to zero", "NVIDIA H100 80GB"),
        ("H100 pool", "H100 pool"),
    ],
)
def test_target_hardware(target: str, hardware: str) -> None:
    assert target_hardware(target) == hardware


@pytest.mark.parametrize(
    ("gpu_type", "hardware", "matches"),
    [
        ("H100", "NVIDIA H100 80GB", True),
        ("h100-80gb", "NVIDIA H100 80GB", True),
        ("NVIDIA H100 80GB", "NVIDIA H100 80GB", True),
        ("nvidia h100", "NVIDIA H100 80GB", True),
        ("A100", "NVIDIA A100 40GB", True),
        ("A100 80GB", "NVIDIA A100 40GB", False),
        ("H100 SXM", "NVIDIA H100 80GB", False),
        ("H200", "NVIDIA H100 80GB", False),
        ("NVIDIA", "NVIDIA H100 80GB", False),  # a vendor alone names no accelerator
        ("", "NVIDIA H100 80GB", False),
    ],
)
def test_accelerator_matches(gpu_type: str, hardware: str, matches: bool) -> None:
    assert accelerator_matches(gpu_type=gpu_type, hardware=hardware) is matches


def test_matching_runs_may_verify_an_approved_hardware_recommendation() -> None:
    assert link_mismatches(recommendation=TERMS, runs=RUNS) == ()


def test_any_of_the_workloads_models_matches_whatever_its_prefix() -> None:
    terms = replace(TERMS, workload_models=("gpt-4o-mini", "together_ai/llama-3.1-70b-instruct"))
    assert link_mismatches(recommendation=terms, runs=RUNS) == ()


@pytest.mark.parametrize("status", ["proposed", "rejected", "verified", "gate_failed"])
def test_only_an_approved_recommendation_may_be_gated(status: str) -> None:
    # Even with runs that match nothing: the status alone refuses the link.
    runs = replace(RUNS, candidate_model="other", candidate_gpu_type="")
    assert link_mismatches(recommendation=replace(TERMS, status=status), runs=runs) == (
        Mismatch(
            field="status",
            expected=("pilot_approved",),
            actual=status,
            sentence=f"Recommendation 7 is {status}, not pilot_approved: a gate verifies only "
            "a recommendation a manager approved for a pilot.",
        ),
    )


@pytest.mark.parametrize(
    ("kind", "target"),
    [
        ("batch_api", "openai batch API, gpt-4o"),
        ("cheaper_provider", "together Llama 3.1 70B"),
        ("pool_rightsize", "h100-pool: 1 × p5.48xlarge (NVIDIA H100 80GB) always on"),
    ],
)
def test_api_targets_cannot_be_gated(kind: str, target: str) -> None:
    terms = replace(TERMS, target_kind=kind, target=target)
    assert link_mismatches(recommendation=terms, runs=RUNS) == (
        Mismatch(
            field="target_kind",
            expected=("dedicated_hardware", "pool_consolidate"),
            actual=kind,
            sentence=f"Recommendation 7 targets {kind} ({target}): a benchmark run records "
            "neither the API tier nor the provider it measured, so a gate verifies only "
            "dedicated_hardware and pool_consolidate recommendations.",
        ),
    )


def test_every_mismatching_run_field_is_named() -> None:
    runs = GateRuns(
        baseline_model="Qwen/Qwen2.5-72B-Instruct",
        candidate_model="meta-llama/Llama-3.1-8B-Instruct",
        candidate_gpu_type="A100",
    )
    terms = replace(TERMS, workload_models=("openai/gpt-4o", "meta-llama/Llama-3.1-70B-Instruct"))
    assert link_mismatches(recommendation=terms, runs=runs) == (
        Mismatch(
            field="baseline.model",
            expected=("meta-llama/Llama-3.1-8B-Instruct",),
            actual="Qwen/Qwen2.5-72B-Instruct",
            sentence="The baseline run's model 'Qwen/Qwen2.5-72B-Instruct' is not the "
            "candidate's 'meta-llama/Llama-3.1-8B-Instruct'.",
        ),
        Mismatch(
            field="candidate.model",
            expected=("meta-llama/Llama-3.1-70B-Instruct", "openai/gpt-4o"),
            actual="meta-llama/Llama-3.1-8B-Instruct",
            sentence="The candidate run's model 'meta-llama/Llama-3.1-8B-Instruct' is not the "
            "workload's: workload 'evals' used 'meta-llama/Llama-3.1-70B-Instruct', "
            "'openai/gpt-4o' from 2026-11-01 to 2026-11-30.",
        ),
        Mismatch(
            field="candidate.gpu_type",
            expected=("NVIDIA H100 80GB",),
            actual="A100",
            sentence="The candidate run's gpu_type 'A100' is not the recommendation's hardware "
            "'NVIDIA H100 80GB'.",
        ),
    )


def test_a_workload_without_traffic_in_the_period_matches_no_model() -> None:
    terms = replace(TERMS, workload_models=())
    assert link_mismatches(recommendation=terms, runs=RUNS) == (
        Mismatch(
            field="candidate.model",
            expected=(),
            actual="meta-llama/Llama-3.1-70B-Instruct",
            sentence="The candidate run's model 'meta-llama/Llama-3.1-70B-Instruct' is not the "
            "workload's: workload 'evals' has no traffic from 2026-11-01 to 2026-11-30 to "
            "compare with.",
        ),
    )


def test_a_candidate_must_state_its_accelerator() -> None:
    runs = replace(RUNS, candidate_gpu_type=" ")
    assert link_mismatches(recommendation=TERMS, runs=runs) == (
        Mismatch(
            field="candidate.gpu_type",
            expected=("NVIDIA H100 80GB",),
            actual=" ",
            sentence="The candidate run's gpu_type is not stated; it must be the "
            "recommendation's hardware 'NVIDIA H100 80GB'.",
        ),
    )
