"""llm-d Benchmark Report v0.2.1: llm-d's example document (illustrative values), detection of the
YAML and a JSON dump of it, several stage reports in one file, and unreadable files."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime

import pytest
import yaml

from benchmarks_app.artifacts import ArtifactError
from benchmarks_app.converters import convert, convert_points, detect_format
from tests.benchmarks_app.converters.files import real

approx = pytest.approx
NAME = "br_v0_2_1_example.yaml"
PATH = f"llm-d-benchmark/{NAME}"


def test_example_report() -> None:
    artifact = convert(real(PATH), filename=NAME)
    assert artifact.tool == "llm-d"
    assert artifact.tool_version == "0.2.1"  # version: 0.2.1
    assert artifact.model == "Qwen/Qwen3-0.6B"  # stack[0].standardized.model.name
    reported = artifact.reported
    # time_to_first_token (units: s): mean 0.0368578234128654 s × 1000 = 36.8578234128654 ms
    assert reported["ttft_mean_ms"] == approx(36.8578234128654)
    # p50 0.03622930939309299 s → 36.22930939309299 ms; p95 0.045246614259667695 s → 45.2466…
    assert reported["ttft_p50_ms"] == approx(36.22930939309299)
    assert reported["ttft_p95_ms"] == approx(45.246614259667695)
    # p99 0.05029489721637218 s → 50.29489721637218 ms
    assert reported["ttft_p99_ms"] == approx(50.29489721637218)
    # time_per_output_token / inter_token_latency (units: s/token): mean 0.0368578… s → ms
    assert reported["tpot_mean_ms"] == approx(36.8578234128654)
    assert reported["itl_mean_ms"] == approx(36.8578234128654)
    # request_latency (units: s): mean 0.0368578234128654 s → 36.8578234128654 ms
    assert reported["e2e_mean_ms"] == approx(36.8578234128654)
    assert "tpot_p95_ms" not in reported  # only a mean is given
    # output_token_rate mean 2262.448 tokens/s; request_rate mean 2262.448 queries/s
    assert reported["output_tokens_per_s"] == approx(2262.448)
    assert reported["requests_per_s"] == approx(2262.448)
    # requests: total 500, failures 0 → 500 completed
    assert (artifact.completed_requests, artifact.failed_requests) == (500, 0)
    # run.time.duration PT49.97206788184121S → 49.97206788184121 s
    assert artifact.duration_s == approx(49.97206788184121)
    assert artifact.request_rate == approx(10.0)  # load rate_qps
    assert artifact.max_concurrency is None  # concurrency: .inf
    # scenario.load.standardized.stage 3, rate_qps 10.0
    assert (artifact.label, artifact.load_known) == ("stage 3, 10 req/s", True)
    # run.time.start 2025-11-05T18:00:42Z, end 2025-11-05T18:17:03Z
    assert artifact.started_at_s == datetime(2025, 11, 5, 18, 0, 42, tzinfo=UTC).timestamp()
    assert artifact.ended_at_s == datetime(2025, 11, 5, 18, 17, 3, tzinfo=UTC).timestamp()
    assert artifact.metadata == {
        # accelerator count 8 per replica × replicas 2
        "num_gpus": "16",
        "gpu_type": "NVIDIA-H100-80GB-HBM3",
        # vllm-svc-0 aggregate gpu_utilization mean 76.0 (units: percent)
        "gpu_utilization_pct": "76",
        "input_len": "2148",
        "output_len": "1000",
    }
    text = " ".join(artifact.assumptions)
    assert "illustrative" in text
    assert "inference-perf" in text  # the tool whose TPOT/ITL llm-d copied


def test_json_form_and_fraction_units() -> None:
    report = yaml.safe_load(real(PATH))
    gpu = report["results"]["observability"]["components"][0]["aggregate"]["gpu_utilization"]
    gpu.update(mean=0.5, units="fraction")
    latency = report["results"]["request_performance"]["aggregate"]["latency"]
    latency["time_per_output_token"] = {"mean": 12.5, "p99": 20.0, "units": "ms/token"}
    data = json.dumps(report).encode()
    assert detect_format(data, "report.json") == "llm-d"
    artifact = convert(data, filename="report.json")
    assert artifact.metadata["gpu_utilization_pct"] == "50"  # 0.5 fraction × 100
    assert artifact.reported["tpot_mean_ms"] == approx(12.5)  # already ms/token
    assert artifact.reported["tpot_p99_ms"] == approx(20.0)


def test_detection() -> None:
    assert detect_format(real(PATH), NAME) == "llm-d"


def test_unknown_latency_unit_is_one_sentence() -> None:
    data = real(PATH).replace(b"units: s/token", b"units: fortnights/token", 1)
    with pytest.raises(ArtifactError) as error:
        convert(data, filename=NAME)
    assert str(error.value) == (
        "`latency.inter_token_latency.units` has unit 'fortnights'; expected ms, s, us or ns"
    )


def test_garbled_yaml_is_one_sentence() -> None:
    data = real(PATH)[:2000] + b"\n  - : [unclosed\n"
    with pytest.raises(ArtifactError, match=r"^not valid YAML at line \d+: "):
        convert(data, filename=NAME, format="llm-d")


def _stage(report: dict, stage: int, rate: float) -> dict:
    stage_report = copy.deepcopy(report)
    stage_report["scenario"]["load"]["standardized"].update(stage=stage, rate_qps=rate)
    return stage_report


def test_several_stage_reports_in_one_file_are_several_points() -> None:
    report = yaml.safe_load(real(PATH))
    stages = [_stage(report, 2, 8.0), _stage(report, 3, 10.0), _stage(report, 4, 12.0)]
    requests = stages[2]["results"]["request_performance"]["aggregate"]["requests"]
    requests.update(total=150, failures=49)
    stream = yaml.safe_dump_all(stages).encode()
    for data, name in ((stream, "stages.yaml"), (json.dumps(stages).encode(), "stages.json")):
        points = convert_points(data, filename=name)
        assert [p.label for p in points] == [
            "stage 2, 8 req/s",
            "stage 3, 10 req/s",
            "stage 4, 12 req/s",
        ]
        assert [p.request_rate for p in points] == [8.0, 10.0, 12.0]
        assert [(p.completed_requests, p.failed_requests) for p in points] == [
            (500, 0),
            (500, 0),
            (101, 49),  # 150 sent − 49 failed − 0 incomplete
        ]
        assert (
            "49 of 150 requests failed (32.7 %); latencies are over the 101 that completed."
            in points[2].assumptions
        )
        # Each point's TTFT p95 is the report's own: 0.045246614259667695 s → ms
        ttft = report["results"]["request_performance"]["aggregate"]["latency"]
        for point in points:
            assert point.reported["ttft_p95_ms"] == approx(
                ttft["time_to_first_token"]["p95"] * 1000
            )


def test_a_stage_report_that_cannot_be_read_names_its_place() -> None:
    report = yaml.safe_load(real(PATH))
    broken = _stage(report, 3, 10.0)
    broken["version"] = "0.1"
    stages = [_stage(report, 2, 8.0), broken]
    with pytest.raises(ArtifactError) as error:
        convert_points(yaml.safe_dump_all(stages).encode(), filename="stages.yaml")
    assert str(error.value) == (
        "document 2: the llm-d Benchmark Report has version '0.1'; expected 0.2.x"
    )
    with pytest.raises(ArtifactError) as error:
        convert_points(json.dumps(stages).encode(), filename="stages.json")
    assert str(error.value).startswith("reports[1]: the llm-d Benchmark Report has version")


def test_a_report_without_rate_or_concurrency_has_an_unknown_load() -> None:
    report = yaml.safe_load(real(PATH))
    standardized = report["scenario"]["load"]["standardized"]
    del standardized["rate_qps"], standardized["concurrency"]
    artifact = convert(json.dumps(report).encode(), filename="report.json")
    assert (artifact.label, artifact.load_known, artifact.request_rate) == ("stage 3", False, None)


def test_an_unreadable_run_time_leaves_the_point_without_a_window_and_says_so() -> None:
    data = real(PATH).replace(b"end: '2025-11-05T18:17:03Z'", b"end: 'soon'", 1)
    assert data != real(PATH)
    artifact = convert(data, filename=NAME)
    assert (artifact.started_at_s, artifact.ended_at_s) == (None, None)
    assert artifact.reported["ttft_p95_ms"] == approx(45.246614259667695)
    assert (
        "`run.time.end` is 'soon', not an ISO 8601 date-time, so the point has no time window."
        in artifact.assumptions
    )
