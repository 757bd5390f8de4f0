"""Format detection over every real and hand-made file, the registry, and forced formats."""

from __future__ import annotations

import pytest

from benchmarks_app.artifacts import ArtifactError
from benchmarks_app.converters import CONVERTERS, DETECTION_ORDER, convert, detect_format
from tests.benchmarks_app.converters.files import NEURON_MONITOR_REAL, REAL, local, real

DETECTION_TABLE = [
    # (folder, file, expected format)
    ("real", "vllm/inferencex_kimik2.5_1k1k_int4_vllm_tp8_conc4_mi355x.json", "vllm"),
    ("real", "vllm/inferencex_multinode_gpt-oss-120b_conc4_gpus16_ctx8_gen8.json", "vllm"),
    ("real", "vllm/inferencex_multinode_gpt-oss-120b_conc8_gpus16_ctx8_gen8.json", "vllm"),
    ("real", "vllm/inferencex_multinode_gpt-oss-120b_conc32_gpus16_ctx8_gen8.json", "vllm"),
    ("real", "inferencex/agg_kimik2.5_1k1k_int4_vllm_tp8_conc4_mi355x.json", "vllm"),
    ("real", "inferencex/slo_variant_glm5_fp8_vllm_tp8_isl1024_osl128_conc4.json", "vllm"),
    ("real", "guidellm/v2_report_guidellm-0.8.0.dev18.json", "guidellm"),
    ("real", "guidellm/legacy_v0.3_benchmarks_stripped.json", "guidellm"),
    ("real", "guidellm/legacy_v0.3_benchmarks_stripped.yaml", "guidellm"),
    ("real", "aiperf/audit_baseline-chat_bare_profile_export_aiperf.json", "aiperf"),
    ("real", "aiperf/SYNTHETIC_operator_ui_fixture_c128_profile_export_aiperf.json", "aiperf"),
    ("real", "llmperf/vllm_Yi-1.5-34B-Chat_conc4_550_150_summary.json", "llmperf"),
    ("real", "llmperf/vllm_Yi-1.5-34B-Chat_conc4_550_150_individual_responses.json", "llmperf"),
    ("real", "llmperf/hosted/bedrock_llama-2-70b-chat_summary.json", "llmperf"),
    ("real", "llmperf/hosted/lepton_llama-2-70b-chat_individual_responses.json", "llmperf"),
    # PR-42 leaderboard files: a concurrency-4 row and a sweep table.
    ("real", "llmperf/vllm_Yi-1.5-34B-Chat_cur_4.json", "llmperf"),
    ("real", "llmperf/vllm-01-ai_Yi-1.5-34B-Chat_sweep.csv", "llmperf"),
    ("real", "mlperf/llama2-70b-99_Server_mlperf_log_summary.txt", "mlperf"),
    ("real", "llm-d-benchmark/br_v0_2_1_example.yaml", "llm-d"),
    # neuron-monitor's reports carry `"completed"` counts (execution_stats), like a vLLM result.
    ("real", NEURON_MONITOR_REAL, "telemetry"),
    ("local", "vllm_current_5_requests.json", "vllm"),
    ("local", "vllm_baseline.json", "vllm"),
    ("local", "vllm_candidate.json", "vllm"),
    ("local", "profile_export_genai_perf.csv", "genai-perf"),
    ("local", "nvidia_smi.csv", "telemetry"),
    ("local", "dcgm_exporter.prom", "telemetry"),
    ("local", "neuron_monitor.jsonl", "telemetry"),
]


@pytest.mark.parametrize(("folder", "name", "expected"), DETECTION_TABLE)
def test_detection_table(folder: str, name: str, expected: str) -> None:
    data = real(name) if folder == "real" else local(name)
    assert detect_format(data, name.rsplit("/", 1)[-1]) == expected


def test_unsupported_files_are_refused_with_what_was_expected() -> None:
    with pytest.raises(ArtifactError) as error:
        detect_format(b"Some other tool's report\nthroughput = 12\n", "report.txt")
    message = str(error.value)
    assert message.startswith("the file is not a recognised benchmark result: expected a vLLM")
    assert "GuideLLM" in message and "LLMPerf" in message and "nvidia-smi" in message


@pytest.mark.parametrize(
    ("data", "filename", "expected"),
    [
        (b'{"time_to_first_token": {"unit": "ms", "avg": 1}}', "x.json", "aiperf"),
        (
            b'{"time_to_first_token": {"unit": "ms", "avg": 1}}',
            "profile_export_genai_perf.json",
            "genai-perf",
        ),
        (
            b'{"input_config": {"perf_analyzer": {}}, "request_latency": {"unit": "ms"}}',
            "x.json",
            "genai-perf",
        ),
        (b"Metric,avg,min,max,p1,p5\nRequest Latency (ms),1,1,1,1,1\n", "x.csv", "aiperf"),
        (b"Metric,avg,min,max,p99,p95\nRequest Latency (ms),1,1,1,1,1\n", "x.csv", "genai-perf"),
        (b'{"benchmarks": [{"type_": "generative_benchmark"}]}', "x.json", "guidellm"),
        (b'[{"ttft_s": 1.0, "end_to_end_latency_s": 2.0}]', "x.json", "llmperf"),
        (b'{"duration": 1.0, "completed": 1, "output_throughput": 3.5}', "x.json", "vllm"),
        (b'[{"hw": "h100", "output_tput_per_gpu": 10.0}]', "agg_bmk.json", "vllm"),
        (b"timestamp, index, power.draw [W]\n", "x.csv", "telemetry"),
        (b'[{"timestamp": 1, "neuron_runtime_data": []}]', "x.json", "telemetry"),
        # A vLLM result that merely mentions the name in a value is still a vLLM result.
        (
            b'{"duration": 1.0, "completed": 1, "output_throughput": 3.5, '
            b'"label": "neuron_runtime_data"}',
            "x.json",
            "vllm",
        ),
    ],
)
def test_detection_of_small_inline_files(data: bytes, filename: str, expected: str) -> None:
    assert detect_format(data, filename) == expected


def test_registry_lists_every_tool_with_the_same_two_functions() -> None:
    assert set(CONVERTERS) == {
        *("vllm", "guidellm", "aiperf", "genai-perf", "llmperf", "telemetry", "mlperf", "llm-d")
    }
    assert set(DETECTION_ORDER) == set(CONVERTERS)
    for converter in CONVERTERS.values():
        assert callable(converter.sniff) and callable(converter.convert)


def test_real_fixture_folder_is_in_the_repository() -> None:
    assert REAL.is_dir(), f"{REAL} is missing: the real-fixture tests cannot run without it"


@pytest.mark.parametrize(
    ("name", "forced", "actual"),
    [
        ("aiperf/audit_baseline-chat_bare_profile_export_aiperf.json", "vllm", "aiperf"),
        ("vllm/inferencex_kimik2.5_1k1k_int4_vllm_tp8_conc4_mi355x.json", "guidellm", "vllm"),
        ("guidellm/v2_report_guidellm-0.8.0.dev18.json", "llmperf", "guidellm"),
        ("llmperf/vllm_Yi-1.5-34B-Chat_conc4_550_150_summary.json", "aiperf", "llmperf"),
        ("vllm/inferencex_kimik2.5_1k1k_int4_vllm_tp8_conc4_mi355x.json", "genai-perf", "vllm"),
    ],
)
def test_forced_format_on_another_tools_file_is_refused(
    name: str, forced: str, actual: str
) -> None:
    with pytest.raises(ArtifactError) as error:
        convert(real(name), filename=name, format=forced)
    assert str(error.value) == f"the file is not {forced} output (it looks like {actual})"


def test_forced_format_that_matches_converts() -> None:
    data = real("vllm/inferencex_kimik2.5_1k1k_int4_vllm_tp8_conc4_mi355x.json")
    assert convert(data, filename="x.json", format="vllm").tool == "vllm"


def test_unknown_format_name_is_refused() -> None:
    with pytest.raises(ArtifactError, match="unknown benchmark format 'nosuch'; expected one of"):
        convert(b"{}", filename="x.json", format="nosuch")
