"""LLMPerf: the real summary and individual responses of one run (Yi-1.5-34B on 4×A10G), and the
two post-processed PR-42 files, which are refused."""

from __future__ import annotations

import json

import pytest

from benchmarks_app.artifacts import ArtifactError
from benchmarks_app.converters import convert
from tests.benchmarks_app.converters.files import real

approx = pytest.approx
RUN = "llmperf/vllm_Yi-1.5-34B-Chat_conc4_550_150"


def test_summary() -> None:
    artifact = convert(
        real(f"{RUN}_summary.json"), filename="01-ai-Yi-1-5-34B-Chat_550_150_summary.json"
    )
    assert artifact.tool == "llmperf"
    assert artifact.tool_version == "2023-08-31"
    assert artifact.model == "01-ai/Yi-1.5-34B-Chat"
    assert artifact.completed_requests == 100
    assert artifact.failed_requests == 0
    assert artifact.max_concurrency == 4  # num_concurrent_requests
    reported = artifact.reported
    # results_ttft_s_mean 1.7137107673198806 s × 1000 = 1713.7107673198806 ms
    assert reported["ttft_mean_ms"] == approx(1713.7107673198806)
    # results_ttft_s_quantiles_p50 2.035751768499722 s → 2035.751768499722 ms
    assert reported["ttft_p50_ms"] == approx(2035.751768499722)
    # results_ttft_s_quantiles_p95 2.2354277158496187 s → 2235.4277158496187 ms
    assert reported["ttft_p95_ms"] == approx(2235.4277158496187)
    assert reported["ttft_p99_ms"] == approx(2246.308106680317)
    # results_end_to_end_latency_s_quantiles_p95 9.661221329599448 s → 9661.221329599448 ms
    assert reported["e2e_p95_ms"] == approx(9661.221329599448)
    assert reported["e2e_mean_ms"] == approx(9475.706080719974)
    assert reported["output_tokens_per_s"] == approx(64.53540931804359)
    # results_num_completed_requests_per_min 24.32544640710275 / 60 = 0.40542 req/s
    assert reported["requests_per_s"] == approx(24.32544640710275 / 60)
    # inter_token_latency_s (0.0596 s ≈ e2e / n, includes TTFT) is neither TPOT nor ITL.
    assert not any(key.startswith(("tpot", "itl")) for key in reported)
    # Derived: 100 requests × 60 / 24.32544640710275 per min = 246.655 s;
    # 159.18 mean output tokens × 100 = 15918; 550 × 100 = 55000.
    assert artifact.duration_s == approx(246.65528844099936)
    assert (artifact.total_input_tokens, artifact.total_output_tokens) == (55000, 15918)
    assert artifact.per_request is None


def test_individual_responses() -> None:
    artifact = convert(
        real(f"{RUN}_individual_responses.json"),
        filename="01-ai-Yi-1-5-34B-Chat_550_150_individual_responses.json",
    )
    assert artifact.tool == "llmperf"
    assert artifact.completed_requests == 100
    assert artifact.failed_requests == 0
    per_request = artifact.per_request
    assert len(per_request.ttft_ms) == len(per_request.latency_ms) == 100
    # First record: ttft_s 2.165774205001071, end_to_end_latency_s 9.478942657000516,
    # number_output_tokens 157, number_input_tokens 550.
    assert per_request.ttft_ms[0] == approx(2165.774205001071)
    assert per_request.latency_ms[0] == approx(9478.942657000516)
    assert per_request.output_tokens[0] == 157
    assert per_request.input_tokens[0] == 550
    # Last record: ttft_s 0.5891366790001484 → 589.1366790001484 ms
    assert per_request.ttft_ms[-1] == approx(589.1366790001484)
    assert per_request.itl_ms == () and per_request.start_s == ()
    # Σ number_output_tokens = 15918, the same total as the summary's 159.18 × 100.
    assert artifact.total_output_tokens == 15918
    assert artifact.total_input_tokens == 55000
    assert artifact.reported == {}
    assert artifact.duration_s is None


def test_individual_responses_skip_errored_records() -> None:
    records = [
        {
            "error_code": None,
            "error_msg": "",
            "ttft_s": 0.5,
            "end_to_end_latency_s": 2.0,
            "number_output_tokens": 10,
            "number_input_tokens": 20,
        },
        {
            "error_code": 500,
            "error_msg": "Internal Server Error",
            "ttft_s": 0,
            "end_to_end_latency_s": 0,
            "number_output_tokens": 0,
            "number_input_tokens": 20,
        },
    ]
    artifact = convert(json.dumps(records).encode(), filename="x_individual_responses.json")
    assert (artifact.completed_requests, artifact.failed_requests) == (1, 1)
    assert artifact.per_request.latency_ms == (2000.0,)


def test_individual_record_without_latency_names_the_record() -> None:
    records = [{"error_code": None, "ttft_s": 0.5, "number_output_tokens": 10}]
    with pytest.raises(ArtifactError, match="record 0: `end_to_end_latency_s`"):
        convert(json.dumps(records).encode(), filename="x_individual_responses.json")


@pytest.mark.parametrize(
    "name",
    ["llmperf/vllm_Yi-1.5-34B-Chat_cur_4.json", "llmperf/vllm-01-ai_Yi-1.5-34B-Chat_sweep.csv"],
)
def test_post_processed_leaderboard_files_are_refused(name: str) -> None:
    with pytest.raises(ArtifactError, match="post-processed LLMPerf leaderboard"):
        convert(real(name), filename=name)
