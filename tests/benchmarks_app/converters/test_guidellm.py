"""GuideLLM reports: the real v2 report (0.8.0.dev18), the legacy v0.3 report as JSON and YAML,
and the TPOT / sampling / selection rules of `converters.guidellm`."""

from __future__ import annotations

import json

import pytest

from benchmarks_app.artifacts import ArtifactError, BenchmarkArtifact
from benchmarks_app.converters import convert
from tests.benchmarks_app.converters.files import real

approx = pytest.approx


def test_v2_report_first_benchmark() -> None:
    artifact = convert(
        real("guidellm/v2_report_guidellm-0.8.0.dev18.json"), filename="benchmarks.json"
    )
    assert artifact.tool == "guidellm"
    assert artifact.tool_version == "0.8.0.dev18"
    assert artifact.model == "e2e-mock-model"  # config.spec.backend.model
    assert artifact.completed_requests == 2  # metrics.request_totals.successful
    assert artifact.failed_requests == 0
    assert artifact.duration_s == approx(5.01964807510376)
    assert artifact.request_rate == 2.0  # constant strategy, rate 2.0
    assert (artifact.total_input_tokens, artifact.total_output_tokens) == (143, 16)
    reported = artifact.reported
    # metrics.time_to_first_token_ms.successful: mean / percentiles.p50 / p95 (ms already)
    assert reported["ttft_mean_ms"] == approx(11.481165885925293)
    assert reported["ttft_p50_ms"] == approx(11.276006698608398)
    assert reported["ttft_p95_ms"] == approx(11.686325073242188)
    # TPOT = inter_token_latency_ms (mean 1.1508…), NOT time_per_output_token_ms (mean 2.4421…,
    # which includes TTFT).
    assert reported["tpot_mean_ms"] == approx(1.1508464813232422)
    assert reported["tpot_p95_ms"] == approx(1.2557165963309151)
    # request_latency is seconds: 0.01978909969329834 s × 1000 = 19.78909969329834 ms
    assert reported["e2e_mean_ms"] == approx(19.78909969329834)
    assert reported["e2e_p95_ms"] == approx(20.308971405029297)
    # DESIGN 4.2: 16 output tokens / 5.01964807510376 s = 3.1874745 tok/s (GuideLLM's own
    # time-weighted mean, 3.195, is only quoted).
    assert reported["output_tokens_per_s"] == approx(16 / 5.01964807510376)
    assert reported["requests_per_s"] == approx(2 / 5.01964807510376)
    assert "itl_mean_ms" not in reported  # GuideLLM has no chunk-gap ITL
    assert artifact.assumptions[0] == (
        "The report holds 2 benchmarks (constant@2.0, constant@4.0); the first was converted."
    )
    assert artifact.per_request is None  # requests.successful is empty (sampled out)


def _check_legacy(artifact: BenchmarkArtifact) -> None:
    assert artifact.tool == "guidellm"
    assert artifact.tool_version == ""
    assert artifact.model == "example_model"  # worker.backend_model
    assert artifact.completed_requests == 46  # request_totals: 46 successful, 1 incomplete
    assert artifact.failed_requests == 0
    assert artifact.duration_s == approx(29.997201442718506)
    assert artifact.max_concurrency == 1  # synchronous strategy
    assert (artifact.total_input_tokens, artifact.total_output_tokens) == (11827, 5888)
    reported = artifact.reported
    assert reported["ttft_mean_ms"] == approx(16.792535781860348)
    # The legacy distribution has no p50: the median (16.38054847717285) stands in.
    assert reported["ttft_p50_ms"] == approx(16.38054847717285)
    assert reported["ttft_p95_ms"] == approx(19.00935173034668)
    assert reported["ttft_p99_ms"] == approx(21.281957626342773)
    # inter_token_latency_ms (4.9416…) = (last − first)/(n − 1); the legacy
    # time_per_output_token_ms (4.9030…) divides by n and is not used.
    assert reported["tpot_mean_ms"] == approx(4.941609043733832)
    assert reported["tpot_p95_ms"] == approx(5.032650129062923)
    # request_latency 0.6444743664368339 s → 644.4743664368339 ms; p95 0.656728982925415 s
    assert reported["e2e_mean_ms"] == approx(644.4743664368339)
    assert reported["e2e_p95_ms"] == approx(656.728982925415)
    # 5888 tokens / 29.997201442718506 s = 196.285 tok/s
    assert reported["output_tokens_per_s"] == approx(196.28497715840248)
    # One request sample kept of 46: not used as per-request arrays.
    assert artifact.per_request is None
    assert any("kept 1 of 46" in sentence for sentence in artifact.assumptions)


def test_legacy_report_json() -> None:
    data = real("guidellm/legacy_v0.3_benchmarks_stripped.json")
    _check_legacy(convert(data, filename="benchmarks_stripped.json"))


def test_legacy_report_yaml() -> None:
    data = real("guidellm/legacy_v0.3_benchmarks_stripped.yaml")
    _check_legacy(convert(data, filename="benchmarks_stripped.yaml"))


def _report(successful: list[dict], totals: int) -> bytes:
    metric = {"successful": {"mean": 10.0, "median": 9.0, "percentiles": {"p95": 20.0}}}
    benchmark = {
        "type_": "generative_benchmark",
        "start_time": 1000.0,
        "duration": 4.0,
        "config": {"strategy": {"type_": "concurrent", "streams": 8}},
        "metrics": {
            "request_totals": {"successful": totals, "errored": 1},
            "time_to_first_token_ms": metric,
            "output_token_count": {"successful": {"total_sum": 40.0}},
        },
        "requests": {"successful": successful, "errored": [], "incomplete": []},
    }
    return json.dumps({"metadata": {"version": 2}, "benchmarks": [benchmark]}).encode()


def test_complete_request_lists_become_per_request_arrays() -> None:
    rows = [
        {
            "time_to_first_token_ms": 50.0,
            "request_latency": 0.5,
            "output_tokens": 20,
            "prompt_tokens": 100,
            "request_start_time": 1000.5,
        },
        {
            "time_to_first_token_ms": 70.0,
            "request_latency": 0.9,
            "output_tokens": 20,
            "prompt_tokens": 120,
            "request_start_time": 1001.0,
        },
    ]
    artifact = convert(_report(rows, 2), filename="benchmarks.json")
    per_request = artifact.per_request
    assert per_request.ttft_ms == (50.0, 70.0)
    assert per_request.latency_ms == (500.0, 900.0)  # seconds × 1000
    assert per_request.output_tokens == (20, 20)
    assert per_request.input_tokens == (100, 120)
    assert per_request.start_s == (0.5, 1.0)  # relative to the benchmark's start_time 1000.0
    assert artifact.max_concurrency == 8  # concurrent strategy, 8 streams
    assert artifact.failed_requests == 1
    assert artifact.reported["output_tokens_per_s"] == 10.0  # 40 tokens / 4 s


def test_other_report_version_is_refused() -> None:
    data = json.dumps({"metadata": {"version": 3, "guidellm_version": "9"}, "benchmarks": [{}]})
    with pytest.raises(ArtifactError, match="`metadata.version` is 3"):
        convert(data.encode(), filename="benchmarks.json")


def test_empty_benchmarks_is_refused() -> None:
    data = json.dumps({"metadata": {"version": 2, "guidellm_version": "0.8"}, "benchmarks": []})
    with pytest.raises(ArtifactError, match="`benchmarks` is missing or empty"):
        convert(data.encode(), filename="benchmarks.json")


def test_broken_yaml_names_the_line() -> None:
    data = b"benchmarks:\n- type_: generative_benchmark\n  metrics: [unclosed\n"
    with pytest.raises(ArtifactError, match="not valid YAML at line"):
        convert(data, filename="benchmarks.yaml")
