"""MLPerf Inference LoadGen `mlperf_log_summary.txt`: the three real llama2-70b-99 summaries
(8×MI300X submission sample: Server, Interactive, Offline), detection, and unreadable files."""

from __future__ import annotations

import pytest

from benchmarks_app.artifacts import ArtifactError
from benchmarks_app.converters import convert, detect_format
from tests.benchmarks_app.converters.files import real

approx = pytest.approx
SERVER = "llama2-70b-99_Server_mlperf_log_summary.txt"
INTERACTIVE = "llama2-70b-99_Interactive_mlperf_log_summary.txt"
OFFLINE = "llama2-70b-99_Offline_mlperf_log_summary.txt"


def test_server() -> None:
    artifact = convert(real(f"mlperf/{SERVER}"), filename=SERVER)
    assert artifact.tool == "mlperf"
    assert artifact.model == "llama2-70b-99"  # from the file name; the summary names none
    reported = artifact.reported
    assert reported["output_tokens_per_s"] == approx(24593.77)  # Completed tokens per second
    assert reported["requests_per_s"] == approx(81.68)  # Completed samples per second
    # Mean First Token latency (ns) 918456323 × 1e-6 = 918.456323 ms
    assert reported["ttft_mean_ms"] == approx(918.456323)
    # 50.00 percentile first token latency (ns) 875073063 → 875.073063 ms
    assert reported["ttft_p50_ms"] == approx(875.073063)
    # 95.00 percentile first token latency (ns) 1588066947 → 1588.066947 ms
    assert reported["ttft_p95_ms"] == approx(1588.066947)
    # 99.00 percentile first token latency (ns) 1914647645 → 1914.647645 ms (p99, not p95)
    assert reported["ttft_p99_ms"] == approx(1914.647645)
    # Mean Time to Output Token (ns) 144594078 → 144.594078 ms
    assert reported["tpot_mean_ms"] == approx(144.594078)
    # 99.00 percentile time to output token (ns) 193380124 → 193.380124 ms
    assert reported["tpot_p99_ms"] == approx(193.380124)
    assert reported["tpot_p95_ms"] == approx(169.650352)  # 169650352 ns
    # Mean latency (ns) 43579602295 → 43579.602295 ms; 99.00 percentile 136069232834 ns
    assert reported["e2e_mean_ms"] == approx(43579.602295)
    assert reported["e2e_p99_ms"] == approx(136069.232834)
    assert artifact.request_rate == approx(83.5)  # target_qps
    assert (artifact.label, artifact.load_known, artifact.max_concurrency) == (
        "Server 83.5 req/s",
        True,
        None,
    )
    # The summary counts no requests and has no wall-clock times.
    assert (artifact.completed_requests, artifact.failed_requests) == (None, None)
    assert (artifact.started_at_s, artifact.ended_at_s) == (None, None)
    text = " ".join(artifact.assumptions)
    assert "scenario Server" in text and "result VALID" in text
    # ttft_latency (ns) 2000000000 → 2,000 ms; tpot_latency (ns) 200000000 → 200 ms
    assert "p99 TTFT ≤ 2,000 ms, p99 TPOT ≤ 200 ms" in text
    assert "no 95th percentile" not in text  # this file has the 95.00 percentile lines


def test_interactive() -> None:
    artifact = convert(real(f"mlperf/{INTERACTIVE}"), filename=INTERACTIVE)
    reported = artifact.reported
    assert reported["output_tokens_per_s"] == approx(8840.42)
    assert reported["requests_per_s"] == approx(29.41)
    # 99.00 percentile first token latency (ns) 435976100 → 435.9761 ms
    assert reported["ttft_p99_ms"] == approx(435.9761)
    # 99.00 percentile time to output token (ns) 39507635 → 39.507635 ms
    assert reported["tpot_p99_ms"] == approx(39.507635)
    # Mean First Token latency (ns) 201330486 → 201.330486 ms
    assert reported["ttft_mean_ms"] == approx(201.330486)
    assert artifact.request_rate == approx(29.5)  # target_qps : 29.5
    # LoadGen writes scenario Server; the point keeps the name its file gives it.
    assert (artifact.label, artifact.load_known) == ("Interactive 29.5 req/s", True)
    text = " ".join(artifact.assumptions)
    # ttft_latency (ns) 450000000 → 450 ms; tpot_latency (ns) 40000000 → 40 ms
    assert "p99 TTFT ≤ 450 ms, p99 TPOT ≤ 40 ms" in text
    assert "The file name says Interactive but LoadGen wrote scenario Server" in text


def test_offline() -> None:
    artifact = convert(real(f"mlperf/{OFFLINE}"), filename=OFFLINE)
    assert artifact.model == "llama2-70b-99"
    # Offline headline lines: "Tokens per second: 27803.9", "Samples per second: 92.1544".
    assert artifact.reported == {
        "output_tokens_per_s": approx(27803.9),
        "requests_per_s": approx(92.1544),
    }
    assert artifact.request_rate is None  # target_qps 93 only sizes the single query
    # Every sample at once: an unlimited rate, a known load.
    assert (artifact.label, artifact.load_known, artifact.max_concurrency) == (
        "Offline (all samples at once)",
        True,
        None,
    )
    text = " ".join(artifact.assumptions)
    assert "scenario Offline" in text and "result VALID" in text
    assert "not used as end-to-end request latency" in text


def test_p99_without_p95_stays_p99_and_says_so() -> None:
    data = (
        b"MLPerf Results Summary\nSUT name : X\nScenario : Server\nMode : PerformanceOnly\n"
        b"Completed tokens per second: 100\nResult is : INVALID\n"
        b"Mean First Token latency (ns) : 500000000\n"
        b"99.00 percentile first token latency (ns) : 2500000000\n"
        b"99.00 percentile time to output token (ns) : 250000000\n"
    )
    artifact = convert(data, filename="mlperf_log_summary.txt")
    # 2500000000 ns → 2500 ms; 250000000 ns → 250 ms
    assert artifact.reported["ttft_p99_ms"] == approx(2500.0)
    assert artifact.reported["tpot_p99_ms"] == approx(250.0)
    assert "ttft_p95_ms" not in artifact.reported and "tpot_p95_ms" not in artifact.reported
    text = " ".join(artifact.assumptions)
    assert "result INVALID" in text
    assert "no 95th percentile for TTFT, TPOT" in text and "not used as p95" in text
    assert artifact.model == ""
    # A Server run without target_qps: the load is not recorded.
    assert (artifact.label, artifact.load_known, artifact.request_rate) == ("Server", False, None)


def test_single_stream_is_one_query_at_a_time() -> None:
    data = (
        b"MLPerf Results Summary\nSUT name : X\nScenario : SingleStream\nMode : PerformanceOnly\n"
        b"Samples per second: 2.5\nResult is : VALID\n"
    )
    artifact = convert(data, filename="mlperf_log_summary.txt")
    assert (artifact.label, artifact.load_known, artifact.max_concurrency) == (
        "SingleStream",
        True,
        1,
    )


@pytest.mark.parametrize("name", [SERVER, INTERACTIVE, OFFLINE])
def test_detection(name: str) -> None:
    assert detect_format(real(f"mlperf/{name}"), name) == "mlperf"


def test_garbled_value_is_one_sentence() -> None:
    data = real(f"mlperf/{SERVER}").replace(b"24593.77", b"24x93.77", 1)
    with pytest.raises(ArtifactError) as error:
        convert(data, filename=SERVER)
    assert str(error.value) == "`completed tokens per second` is '24x93.77', not a number"


def test_summary_without_scenario_is_refused() -> None:
    with pytest.raises(ArtifactError, match=r"^the MLPerf summary has no `Scenario :` line$"):
        convert(b"MLPerf Results Summary\nSUT name : X\n", filename="mlperf_log_summary.txt")
