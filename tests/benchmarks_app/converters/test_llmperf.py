"""LLMPerf: the real summary and individual responses of one run (Yi-1.5-34B on 4×A10G), the two
post-processed PR-42 files (a concurrency-4 row and a 1…64 concurrency sweep), and the hosted
providers' runs of the LLMPerf leaderboard (Llama-2 on Bedrock and Lepton, with failed requests)."""

from __future__ import annotations

import csv
import io
import json
import statistics

import pytest

from benchmarks_app.artifacts import ArtifactError
from benchmarks_app.converters import convert, convert_points
from tests.benchmarks_app.converters.files import real

approx = pytest.approx
RUN = "llmperf/vllm_Yi-1.5-34B-Chat_conc4_550_150"
SWEEP = "llmperf/vllm-01-ai_Yi-1.5-34B-Chat_sweep.csv"
HOSTED = "llmperf/hosted/{}_llama-2-{}-chat_{}.json"


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
    assert (artifact.label, artifact.load_known, artifact.request_rate) == (
        "concurrency 4",
        True,
        None,
    )
    # mean_input_tokens 550, mean_output_tokens 150: the lengths asked for
    assert artifact.metadata == {"input_len": "550", "output_len": "150"}
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
    # "timestamp": 1718208921 is written when the results are saved: the end of the window.
    assert artifact.ended_at_s == 1718208921.0
    assert artifact.started_at_s == approx(1718208921.0 - 246.65528844099936)
    assert not any("failed" in sentence for sentence in artifact.assumptions)


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
    assert (artifact.label, artifact.load_known) == ("", False)  # no load in the file


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
    assert artifact.assumptions[-1] == (
        "1 of 2 requests failed (50.0 %); latencies are over the 1 that completed."
    )


def test_individual_record_without_latency_names_the_record() -> None:
    records = [{"error_code": None, "ttft_s": 0.5, "number_output_tokens": 10}]
    with pytest.raises(ArtifactError, match="record 0: `end_to_end_latency_s`"):
        convert(json.dumps(records).encode(), filename="x_individual_responses.json")


def _sweep_columns() -> list[dict[str, str]]:
    """The sweep table read independently: one {metric: cell} per concurrency column."""
    rows = []
    for row in csv.reader(io.StringIO(real(SWEEP).decode())):
        if not row:
            break  # the first table only
        rows.append(row)
    return [{row[0]: row[column] for row in rows[1:]} for column in range(1, len(rows[0]))]


def test_the_leaderboard_sweep_gives_one_point_per_concurrency() -> None:
    points = convert_points(real(SWEEP), filename="vllm-01-ai_Yi-1.5-34B-Chat.csv")
    columns = _sweep_columns()
    assert len(points) == len(columns) == 7
    assert [p.label for p in points] == [f"concurrency {n}" for n in (1, 2, 4, 8, 16, 32, 64)]
    assert [p.max_concurrency for p in points] == [1, 2, 4, 8, 16, 32, 64]
    assert all(p.load_known and p.request_rate is None for p in points)
    assert [p.completed_requests for p in points] == [80, 100, 100, 104, 112, 128, 128]
    assert all(p.failed_requests == 0 for p in points)  # results_number_errors 0.0
    for point, column in zip(points, columns, strict=True):
        assert point.tool == "llmperf"
        qpm = float(column["requests_per_minute_(qpm)"])
        assert point.reported["ttft_p50_ms"] == float(
            column["time_to_first_token_in_ms_(ttft)_p50"]
        )
        assert point.reported["ttft_p95_ms"] == float(
            column["time_to_first_token_in_ms_(ttft)_p95"]
        )
        assert point.reported["requests_per_s"] == approx(qpm / 60)
        mean_output = float(column["mean_output_token_length"])
        assert point.reported["output_tokens_per_s"] == approx(qpm / 60 * mean_output)
        assert point.duration_s == approx(
            float(column["results_num_completed_requests"]) * 60 / qpm
        )
        assert not any(key.startswith(("tpot", "itl")) for key in point.reported)


def test_the_sweeps_concurrency_4_column_agrees_with_the_runs_own_summary() -> None:
    # A second method: the raw LLMPerf summary of the same run (concurrency 4).
    summary = json.loads(real(f"{RUN}_summary.json"))
    point = convert_points(real(SWEEP), filename="sweep.csv")[2]
    assert point.max_concurrency == summary["num_concurrent_requests"] == 4
    assert point.completed_requests == summary["results_num_completed_requests"] == 100
    # 24.32544640710275 / 60 × 159.18 = 64.5354 tok/s, the summary's mean output throughput
    assert point.reported["output_tokens_per_s"] == approx(
        summary["results_mean_output_throughput_token_per_s"], rel=1e-12
    )
    assert point.reported["ttft_p50_ms"] == approx(summary["results_ttft_s_quantiles_p50"] * 1000)


def test_the_leaderboard_row_is_one_point() -> None:
    name = "llmperf/vllm_Yi-1.5-34B-Chat_cur_4.json"
    points = convert_points(real(name), filename="01-ai_Yi-1.5-34B-Chat_cur_4.json")
    assert len(points) == 1
    point = points[0]
    assert (point.label, point.max_concurrency) == ("concurrency 4", 4)
    assert (point.completed_requests, point.failed_requests) == (100, 0)
    assert point.reported["ttft_p50_ms"] == approx(2035.751768499722)
    assert point.reported["ttft_p95_ms"] == approx(2235.427715849619)
    assert point.reported["output_tokens_per_s"] == approx(24.32544640710275 / 60 * 159.18)


def test_a_sweep_cell_that_cannot_be_read_names_its_column() -> None:
    data = real(SWEEP).replace(
        b"results_number_errors,0.0,0.0,0.0", b"results_number_errors,0.0,0.0,x"
    )
    with pytest.raises(ArtifactError) as error:
        convert_points(data, filename="sweep.csv")
    assert str(error.value) == (
        "column 4 of the sweep table: `results_number_errors` is 'x', not a number"
    )
    with pytest.raises(ArtifactError, match="^line 1: the LLMPerf sweep table needs a header"):
        convert_points(b",1,2\ntime_to_first_token_in_ms_(ttft)_p50,1,2\n", filename="x.csv")


# --- hosted providers (LLMPerf leaderboard raw data) ------------------------------------------


@pytest.mark.parametrize(
    ("provider", "size", "failed", "completed", "sentence"),
    [
        (
            "bedrock",
            "70b",
            49,
            101,
            "49 of 150 requests failed (32.7 %); latencies are over the 101 that completed.",
        ),
        (
            "bedrock",
            "13b",
            97,
            53,
            "97 of 150 requests failed (64.7 %); latencies are over the 53 that completed.",
        ),
        (
            "lepton",
            "70b",
            130,
            20,
            "130 of 150 requests failed (86.7 %); latencies are over the 20 that completed.",
        ),
    ],
)
def test_hosted_summaries_with_failed_requests(
    provider: str, size: str, failed: int, completed: int, sentence: str
) -> None:
    data = real(HOSTED.format(provider, size, "summary"))
    summary = json.loads(data)  # read independently of the converter
    points = convert_points(data, filename=f"{provider}_{size}.json")
    assert len(points) == 1
    point = points[0]
    assert (point.completed_requests, point.failed_requests) == (completed, failed)
    assert summary["results_number_errors"] == failed
    assert summary["results_num_requests_started"] == completed + failed == 150
    assert (point.label, point.max_concurrency) == ("concurrency 5", 5)
    assert point.metadata == {"input_len": "550", "output_len": "150"}
    assert sentence in point.assumptions
    # Latencies are LLMPerf's over the completed requests only, in ms.
    assert point.reported["ttft_mean_ms"] == approx(summary["results_ttft_s_mean"] * 1000)
    assert point.reported["e2e_p95_ms"] == approx(
        summary["results_end_to_end_latency_s_quantiles_p95"] * 1000
    )
    assert (
        point.reported["output_tokens_per_s"]
        == summary["results_mean_output_throughput_token_per_s"]
    )
    assert point.ended_at_s == summary["timestamp"]


def test_bedrock_and_lepton_serve_the_same_model_with_different_failure_rates() -> None:
    bedrock = convert(real(HOSTED.format("bedrock", "70b", "summary")), filename="b.json")
    lepton = convert(real(HOSTED.format("lepton", "70b", "summary")), filename="l.json")
    assert (bedrock.model, lepton.model) == ("meta.llama2-70b-chat-v1", "llama2-70b")
    # 49 / 150 vs 130 / 150
    assert bedrock.failed_requests / 150 == approx(0.32666666666666666)
    assert lepton.failed_requests / 150 == approx(0.8666666666666667)
    # By hand: Bedrock results_ttft_s_mean 0.40837363779203295 s → 408.37363779203295 ms
    assert bedrock.reported["ttft_mean_ms"] == approx(408.37363779203295)


def test_hosted_individual_responses_count_the_rate_limited_requests_as_failed() -> None:
    data = real(HOSTED.format("lepton", "70b", "individual_responses"))
    records = json.loads(data)
    artifact = convert(data, filename="lepton_70b_individual_responses.json")
    errored = [r for r in records if r["error_code"] is not None]
    assert {r["error_code"] for r in errored} == {429}  # rate limited, error_msg empty
    assert (artifact.completed_requests, artifact.failed_requests) == (20, 130)
    assert len(errored) == 130 and len(records) == 150
    assert artifact.assumptions[-1] == (
        "130 of 150 requests failed (86.7 %); latencies are over the 20 that completed."
    )
    completed = [r for r in records if r["error_code"] is None]
    assert artifact.per_request.ttft_ms == approx([r["ttft_s"] * 1000 for r in completed])
    # A second method: the provider's own summary of the same run agrees on the mean TTFT.
    summary = json.loads(real(HOSTED.format("lepton", "70b", "summary")))
    assert statistics.fmean(artifact.per_request.ttft_ms) == approx(
        summary["results_ttft_s_mean"] * 1000, rel=1e-9
    )
    assert sum(artifact.per_request.output_tokens) == round(
        summary["results_number_output_tokens_mean"] * summary["results_num_completed_requests"]
    )
