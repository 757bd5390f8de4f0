"""GuideLLM reports: the real v2 report (0.8.0.dev18, two constant-rate benchmarks), the legacy
v0.3 report as JSON and YAML, and the load / failure / TPOT / sampling rules of
`converters.guidellm`. Every benchmark of a report is one load point."""

from __future__ import annotations

import copy
import json

import pytest

from benchmarks_app.artifacts import ArtifactError, BenchmarkArtifact
from benchmarks_app.converters import convert, convert_points
from tests.benchmarks_app.converters.files import real

approx = pytest.approx
V2 = "guidellm/v2_report_guidellm-0.8.0.dev18.json"


def test_v2_report_first_benchmark() -> None:
    artifact = convert(real(V2), filename="benchmarks.json")
    assert artifact.tool == "guidellm"
    assert artifact.tool_version == "0.8.0.dev18"
    assert artifact.model == "e2e-mock-model"  # config.spec.backend.model
    assert artifact.completed_requests == 2  # metrics.request_totals.successful
    assert artifact.failed_requests == 0
    assert artifact.duration_s == approx(5.01964807510376)
    assert artifact.request_rate == 2.0  # constant strategy, rate 2.0
    assert artifact.max_concurrency is None  # strategy.max_concurrency 10240 is a process cap
    assert (artifact.label, artifact.load_known) == ("constant 2 req/s", True)
    assert (artifact.total_input_tokens, artifact.total_output_tokens) == (143, 16)
    # config.spec.data[0]: synthetic_text, prompt_tokens 32, output_tokens 8
    assert artifact.metadata == {"dataset": "synthetic", "input_len": "32", "output_len": "8"}
    # benchmarks[0].start_time / end_time (epoch seconds)
    assert (artifact.started_at_s, artifact.ended_at_s) == (1786678148.2526348, 1786678153.2722828)
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
    # docs/methods.md: 16 output tokens / 5.01964807510376 s = 3.1874745 tok/s (GuideLLM's own
    # time-weighted mean, 3.195, is only quoted).
    assert reported["output_tokens_per_s"] == approx(16 / 5.01964807510376)
    assert reported["requests_per_s"] == approx(2 / 5.01964807510376)
    assert "itl_mean_ms" not in reported  # GuideLLM has no chunk-gap ITL
    assert not any("first was converted" in sentence for sentence in artifact.assumptions)
    assert not any("failed" in sentence for sentence in artifact.assumptions)
    assert artifact.per_request is None  # requests.successful is empty (sampled out)


def test_v2_report_every_benchmark_is_a_point() -> None:
    points = convert_points(real(V2), filename="benchmarks.json")
    report = json.loads(real(V2))  # read independently of the converter
    assert len(points) == len(report["benchmarks"]) == 2
    assert [p.label for p in points] == ["constant 2 req/s", "constant 4 req/s"]
    assert [p.request_rate for p in points] == [2.0, 4.0]
    for point, benchmark in zip(points, report["benchmarks"], strict=True):
        metrics = benchmark["metrics"]
        assert point.load_known and point.max_concurrency is None
        assert point.request_rate == benchmark["config"]["strategy"]["rate"]
        assert point.completed_requests == metrics["request_totals"]["successful"] == 2
        assert point.failed_requests == metrics["request_totals"]["errored"] == 0
        assert point.started_at_s == benchmark["start_time"]
        assert point.ended_at_s == benchmark["end_time"]
        assert point.duration_s == benchmark["duration"]
        ttft = metrics["time_to_first_token_ms"]["successful"]
        assert point.reported["ttft_mean_ms"] == approx(ttft["mean"])
        assert point.reported["ttft_p99_ms"] == approx(ttft["percentiles"]["p99"])
        latency = metrics["request_latency"]["successful"]
        assert point.reported["e2e_p50_ms"] == approx(latency["percentiles"]["p50"] * 1000)
        tokens = metrics["output_token_count"]["successful"]["total_sum"]
        assert point.reported["output_tokens_per_s"] == approx(tokens / benchmark["duration"])
    # The second benchmark by hand: 9.78386402130127 ms mean TTFT, 16 tokens / 2.5186119079589844 s
    second = points[1]
    assert second.reported["ttft_mean_ms"] == approx(9.78386402130127)
    assert second.reported["output_tokens_per_s"] == approx(6.352707, rel=1e-6)
    assert second.ended_at_s - second.started_at_s == approx(2.5186119079589844, abs=1e-6)


def _check_legacy(artifact: BenchmarkArtifact) -> None:
    assert artifact.tool == "guidellm"
    assert artifact.tool_version == ""
    assert artifact.model == "example_model"  # worker.backend_model
    assert artifact.completed_requests == 46  # request_totals: 46 successful, 1 incomplete
    assert artifact.failed_requests == 0
    assert artifact.duration_s == approx(29.997201442718506)
    assert artifact.max_concurrency == 1  # synchronous strategy
    assert (artifact.label, artifact.load_known, artifact.request_rate) == (
        "synchronous",
        True,
        None,
    )
    # request_loader.data "prompt_tokens=256,output_tokens=128"
    assert artifact.metadata == {"dataset": "synthetic", "input_len": "256", "output_len": "128"}
    assert (artifact.started_at_s, artifact.ended_at_s) == (1749157168.1827004, 1749157198.1799018)
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


@pytest.mark.parametrize("suffix", ["json", "yaml"])
def test_legacy_report_is_one_synchronous_point(suffix: str) -> None:
    data = real(f"guidellm/legacy_v0.3_benchmarks_stripped.{suffix}")
    points = convert_points(data, filename=f"benchmarks_stripped.{suffix}")
    assert len(points) == 1  # the stripped report holds one benchmark of its 10-strategy sweep
    _check_legacy(points[0])


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


def _benchmark(strategy: dict, successful: int, errored: int, start: float) -> dict:
    """A v2 benchmark: TTFT mean 10 ms, 40 output tokens over 4 s, `successful` / `errored`."""
    return {
        "type_": "generative_benchmark",
        "start_time": start,
        "end_time": start + 4.0,
        "duration": 4.0,
        "config": {"strategy": strategy, "profile": {"max_concurrency": None}},
        "metrics": {
            "request_totals": {"successful": successful, "errored": errored},
            "time_to_first_token_ms": {"successful": {"mean": 10.0, "median": 9.0}},
            "output_token_count": {"successful": {"total_sum": 40.0}},
        },
    }


def _sweep(*benchmarks: dict) -> bytes:
    return json.dumps({"metadata": {"version": 2}, "benchmarks": list(benchmarks)}).encode()


def test_a_sweep_gives_one_point_per_strategy_with_its_load_and_failures() -> None:
    data = _sweep(
        _benchmark({"type_": "synchronous"}, 10, 0, 1000.0),
        _benchmark({"type_": "throughput", "max_concurrency": 10240}, 150, 0, 1010.0),
        _benchmark({"type_": "concurrent", "streams": 64}, 101, 49, 1020.0),
        _benchmark({"type_": "constant", "rate": 4.0}, 20, 0, 1030.0),
        _benchmark({"type_": "poisson", "rate": 2.5}, 3, 1, 1040.0),
    )
    points = convert_points(data, filename="sweep.json")
    assert [p.label for p in points] == [
        "synchronous",
        "throughput",
        "concurrency 64",
        "constant 4 req/s",
        "poisson 2.5 req/s",
    ]
    assert [p.max_concurrency for p in points] == [1, None, 64, None, None]
    # throughput = unlimited rate with a known load; 10240 is the scheduler's process limit.
    assert [p.request_rate for p in points] == [None, None, None, 4.0, 2.5]
    assert all(p.load_known for p in points)
    assert [(p.completed_requests, p.failed_requests) for p in points] == [
        (10, 0),
        (150, 0),
        (101, 49),
        (20, 0),
        (3, 1),
    ]
    assert [p.started_at_s for p in points] == [1000.0, 1010.0, 1020.0, 1030.0, 1040.0]
    assert [p.ended_at_s for p in points] == [1004.0, 1014.0, 1024.0, 1034.0, 1044.0]
    # 49 / 150 = 32.666… % → 32.7 %; 1 / 4 = 25.0 %
    assert "49 of 150 requests failed (32.7 %); latencies are over the 101 that completed." in (
        points[2].assumptions
    )
    assert "1 of 4 requests failed (25.0 %); latencies are over the 3 that completed." in (
        points[4].assumptions
    )
    assert not any("failed" in s for p in points[:2] for s in p.assumptions)
    # requests/s = successful / duration: 101 / 4 s
    assert points[2].reported["requests_per_s"] == 25.25


def test_throughput_takes_the_users_concurrency_cap_from_the_profile() -> None:
    benchmark = _benchmark({"type_": "throughput", "max_concurrency": 10240}, 5, 0, 0.0)
    benchmark["config"]["profile"]["max_concurrency"] = 256
    point = convert(_sweep(benchmark), filename="x.json")
    assert (point.label, point.max_concurrency, point.request_rate) == ("throughput", 256, None)
    assert point.load_known


def test_legacy_throughput_reads_the_strategys_own_cap_and_the_scheduler_counts() -> None:
    legacy = json.loads(real("guidellm/legacy_v0.3_benchmarks_stripped.json"))
    benchmark = legacy["benchmarks"][0]
    benchmark["args"]["strategy"] = {"type_": "throughput", "max_concurrency": 32}
    del benchmark["request_totals"]  # the scheduler's run_stats.requests_made stands in
    point = convert(json.dumps(legacy).encode(), filename="benchmarks.json")
    assert (point.label, point.max_concurrency) == ("throughput", 32)
    # run_stats.requests_made: successful 1, errored 0 in the stripped file
    assert (point.completed_requests, point.failed_requests) == (1, 0)


def test_an_unknown_strategy_is_a_point_of_unknown_load() -> None:
    point = convert(_sweep(_benchmark({}, 5, 0, 0.0)), filename="x.json")
    assert (point.label, point.load_known, point.request_rate, point.max_concurrency) == (
        "",
        False,
        None,
        None,
    )


def test_a_benchmark_that_cannot_be_read_names_its_index() -> None:
    report = json.loads(real(V2))
    third = copy.deepcopy(report["benchmarks"][1])
    del third["metrics"]
    report["benchmarks"].append(third)
    with pytest.raises(ArtifactError) as error:
        convert_points(json.dumps(report).encode(), filename="benchmarks.json")
    assert str(error.value) == "`benchmarks[2].metrics` is missing"

    report["benchmarks"][2] = copy.deepcopy(report["benchmarks"][0])
    report["benchmarks"][2]["metrics"]["request_latency"]["successful"]["mean"] = "slow"
    with pytest.raises(ArtifactError) as error:
        convert_points(json.dumps(report).encode(), filename="benchmarks.json")
    assert str(error.value) == (
        "`benchmarks[2].metrics.request_latency.successful.mean` is 'slow', not a number"
    )

    report["benchmarks"][2]["metrics"]["request_latency"]["successful"]["mean"] = 0.02
    report["benchmarks"][2]["config"]["strategy"] = {"type_": "concurrent"}
    with pytest.raises(ArtifactError) as error:
        convert_points(json.dumps(report).encode(), filename="benchmarks.json")
    assert str(error.value) == (
        "`benchmarks[2].config.strategy.streams` is missing from the concurrent strategy"
    )
