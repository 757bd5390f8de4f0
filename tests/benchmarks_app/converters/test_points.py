"""Every real fixture as load points: how many points the file gives, each point's label and load,
its completed / failed requests, and one metric per point checked against the file's own number
read here independently of the converter (json / yaml / csv / a regex over the text)."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from benchmarks_app.artifacts import BenchmarkArtifact
from benchmarks_app.converters import convert, convert_points
from tests.benchmarks_app.converters.files import NEURON_MONITOR_REAL, REAL, real

approx = pytest.approx


@dataclass(frozen=True)
class Case:
    """One real file: its points as (label, load_known, request_rate, max_concurrency, completed,
    failed), and `metric` of each point against `expected(file bytes)` (one value per point)."""

    path: str
    points: list[tuple[str, bool, float | None, int | None, int | None, int | None]]
    metric: Callable[[BenchmarkArtifact], float | None]
    expected: Callable[[bytes], list[float]]


def reported(key: str) -> Callable[[BenchmarkArtifact], float | None]:
    return lambda point: point.reported.get(key)


def from_json(read: Callable[[Any], list[float]]) -> Callable[[bytes], list[float]]:
    return lambda data: read(json.loads(data))


def guidellm_ttft_means(report: Any) -> list[float]:
    return [b["metrics"]["time_to_first_token_ms"]["successful"]["mean"] for b in report]


def completed_output_tokens(records: Any) -> list[float]:
    return [sum(r["number_output_tokens"] for r in records if r["error_code"] is None)]


def sweep_ttft_p50(data: bytes) -> list[float]:
    for row in csv.reader(io.StringIO(data.decode())):
        if row and row[0] == "time_to_first_token_in_ms_(ttft)_p50":
            return [float(cell) for cell in row[1:]]
    raise AssertionError("no TTFT p50 line in the sweep")


def mlperf_line(name: str) -> Callable[[bytes], list[float]]:
    def read(data: bytes) -> list[float]:
        match = re.search(rf"^{re.escape(name)}\s*:\s*([0-9.]+)\s*$", data.decode(), re.MULTILINE)
        assert match, name
        return [float(match.group(1))]

    return read


def hosted(provider: str, size: str) -> str:
    return f"llmperf/hosted/{provider}_llama-2-{size}-chat_summary.json"


def summary_ttft_mean(summary: Any) -> list[float]:
    return [summary["results_ttft_s_mean"] * 1000]


GPT_OSS = "vllm/inferencex_multinode_gpt-oss-120b_conc{}_gpus16_ctx8_gen8.json"
CASES = [
    Case(
        "vllm/inferencex_kimik2.5_1k1k_int4_vllm_tp8_conc4_mi355x.json",
        [("concurrency 4", True, None, 4, 40, 0)],
        reported("output_tokens_per_s"),
        from_json(lambda d: [d["output_throughput"]]),
    ),
    *(
        Case(
            GPT_OSS.format(n),
            [(f"concurrency {n}", True, None, n, 10 * n, 0)],
            reported("e2e_p99_ms"),
            from_json(lambda d: [d["p99_e2el_ms"]]),
        )
        for n in (4, 8, 32)
    ),
    Case(
        "inferencex/agg_kimik2.5_1k1k_int4_vllm_tp8_conc4_mi355x.json",
        [("concurrency 4", True, None, 4, None, None)],
        reported("ttft_p50_ms"),
        from_json(lambda d: [d["median_ttft"] * 1000]),
    ),
    Case(
        "inferencex/slo_variant_glm5_fp8_vllm_tp8_isl1024_osl128_conc4.json",
        [("concurrency 4", True, None, 4, 40, 0)],
        reported("e2e_p99_ms"),
        from_json(lambda d: [d["p99_e2el"] * 1000]),
    ),
    Case(
        "guidellm/v2_report_guidellm-0.8.0.dev18.json",
        [("constant 2 req/s", True, 2.0, None, 2, 0), ("constant 4 req/s", True, 4.0, None, 2, 0)],
        reported("ttft_mean_ms"),
        from_json(lambda d: guidellm_ttft_means(d["benchmarks"])),
    ),
    Case(
        "guidellm/legacy_v0.3_benchmarks_stripped.json",
        [("synchronous", True, None, 1, 46, 0)],
        reported("ttft_mean_ms"),
        from_json(lambda d: guidellm_ttft_means(d["benchmarks"])),
    ),
    Case(
        "guidellm/legacy_v0.3_benchmarks_stripped.yaml",
        [("synchronous", True, None, 1, 46, 0)],
        reported("ttft_mean_ms"),
        lambda data: guidellm_ttft_means(yaml.safe_load(data)["benchmarks"]),
    ),
    Case(
        "aiperf/audit_baseline-chat_bare_profile_export_aiperf.json",
        [("concurrency 4", True, None, 4, 64, 0)],
        reported("e2e_p95_ms"),
        from_json(lambda d: [d["request_latency"]["p95"]]),
    ),
    Case(
        "aiperf/SYNTHETIC_operator_ui_fixture_c128_profile_export_aiperf.json",
        [("concurrency 128", True, None, 128, None, None)],
        reported("ttft_p99_ms"),
        from_json(lambda d: [d["time_to_first_token"]["p99"]]),
    ),
    Case(
        "llmperf/vllm_Yi-1.5-34B-Chat_conc4_550_150_summary.json",
        [("concurrency 4", True, None, 4, 100, 0)],
        reported("ttft_mean_ms"),
        from_json(summary_ttft_mean),
    ),
    Case(
        "llmperf/vllm_Yi-1.5-34B-Chat_conc4_550_150_individual_responses.json",
        [("", False, None, None, 100, 0)],
        lambda point: point.total_output_tokens,
        from_json(completed_output_tokens),
    ),
    Case(
        "llmperf/vllm_Yi-1.5-34B-Chat_cur_4.json",
        [("concurrency 4", True, None, 4, 100, 0)],
        reported("ttft_p50_ms"),
        from_json(lambda d: [d["time_to_first_token_in_ms_(ttft)_p50"]]),
    ),
    Case(
        "llmperf/vllm-01-ai_Yi-1.5-34B-Chat_sweep.csv",
        [
            (f"concurrency {n}", True, None, n, completed, 0)
            for n, completed in zip(
                (1, 2, 4, 8, 16, 32, 64), (80, 100, 100, 104, 112, 128, 128), strict=True
            )
        ],
        reported("ttft_p50_ms"),
        sweep_ttft_p50,
    ),
    Case(
        hosted("bedrock", "70b"),
        [("concurrency 5", True, None, 5, 101, 49)],
        reported("ttft_mean_ms"),
        from_json(summary_ttft_mean),
    ),
    Case(
        hosted("bedrock", "13b"),
        [("concurrency 5", True, None, 5, 53, 97)],
        reported("ttft_mean_ms"),
        from_json(summary_ttft_mean),
    ),
    Case(
        hosted("lepton", "70b"),
        [("concurrency 5", True, None, 5, 20, 130)],
        reported("ttft_mean_ms"),
        from_json(summary_ttft_mean),
    ),
    Case(
        "llmperf/hosted/lepton_llama-2-70b-chat_individual_responses.json",
        [("", False, None, None, 20, 130)],
        lambda point: point.total_output_tokens,
        from_json(completed_output_tokens),
    ),
    Case(
        "mlperf/llama2-70b-99_Server_mlperf_log_summary.txt",
        [("Server 83.5 req/s", True, 83.5, None, None, None)],
        reported("output_tokens_per_s"),
        mlperf_line("Completed tokens per second"),
    ),
    Case(
        "mlperf/llama2-70b-99_Interactive_mlperf_log_summary.txt",
        [("Interactive 29.5 req/s", True, 29.5, None, None, None)],
        reported("requests_per_s"),
        mlperf_line("Completed samples per second"),
    ),
    Case(
        "mlperf/llama2-70b-99_Offline_mlperf_log_summary.txt",
        [("Offline (all samples at once)", True, None, None, None, None)],
        reported("output_tokens_per_s"),
        mlperf_line("Tokens per second"),
    ),
    Case(
        "llm-d-benchmark/br_v0_2_1_example.yaml",
        [("stage 3, 10 req/s", True, 10.0, None, 500, 0)],
        reported("ttft_p95_ms"),
        lambda data: [
            yaml.safe_load(data)["results"]["request_performance"]["aggregate"]["latency"][
                "time_to_first_token"
            ]["p95"]
            * 1000
        ],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.path for case in CASES])
def test_real_file_points(case: Case) -> None:
    data = real(case.path)
    name = case.path.rsplit("/", 1)[-1]
    points = convert_points(data, filename=name)
    assert len(points) == len(case.points)
    assert [
        (
            p.label,
            p.load_known,
            p.request_rate,
            p.max_concurrency,
            p.completed_requests,
            p.failed_requests,
        )
        for p in points
    ] == case.points
    expected = case.expected(data)
    assert len(expected) == len(points)
    for point, value in zip(points, expected, strict=True):
        assert case.metric(point) == approx(value, rel=1e-9)
    assert convert(data, filename=name) == points[0]  # convert gives the first point


def test_every_real_benchmark_file_has_a_case() -> None:
    files = {
        path.relative_to(REAL).as_posix()
        for path in REAL.rglob("*")
        if path.is_file() and path.name != "SOURCES.md"
    }
    assert files == {case.path for case in CASES} | {NEURON_MONITOR_REAL}
