"""llm-d Benchmark Report v0.2.1: llm-d's example document (illustrative values), detection of the
YAML and a JSON dump of it, and unreadable files."""

from __future__ import annotations

import json

import pytest
import yaml

from benchmarks_app.artifacts import ArtifactError
from benchmarks_app.converters import convert, detect_format
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
