"""Files that cannot be read: one ArtifactError sentence naming the field or line, never a
traceback."""

from __future__ import annotations

import json

import pytest

from benchmarks_app.artifacts import ArtifactError
from benchmarks_app.converters import convert
from tests.benchmarks_app.converters.files import local, real

REAL_JSON = [
    "vllm/inferencex_kimik2.5_1k1k_int4_vllm_tp8_conc4_mi355x.json",
    "inferencex/slo_variant_glm5_fp8_vllm_tp8_isl1024_osl128_conc4.json",
    "guidellm/v2_report_guidellm-0.8.0.dev18.json",
    "guidellm/legacy_v0.3_benchmarks_stripped.json",
    "aiperf/audit_baseline-chat_bare_profile_export_aiperf.json",
    "llmperf/vllm_Yi-1.5-34B-Chat_conc4_550_150_summary.json",
    "llmperf/vllm_Yi-1.5-34B-Chat_conc4_550_150_individual_responses.json",
]


@pytest.mark.parametrize("name", REAL_JSON)
def test_truncated_json_says_it_ends_early(name: str) -> None:
    data = real(name)
    cut = data[: len(data) * 2 // 3]
    with pytest.raises(
        ArtifactError, match=r"the JSON ends early at line \d+ \(truncated file\?\)"
    ):
        convert(cut, filename=name)


def test_truncated_json_with_forced_format() -> None:
    data = local("vllm_baseline.json")[:5000]  # cut inside line 33, the `itls` array
    with pytest.raises(ArtifactError, match="the JSON ends early at line 33"):
        convert(data, filename="vllm_baseline.json", format="vllm")


def test_broken_json_names_line_and_column() -> None:
    data = b'{\n  "duration": 1.0,\n  "completed": ,\n  "output_throughput": 2.0\n}\n'
    with pytest.raises(ArtifactError, match="not valid JSON at line 3, column 16"):
        convert(data, filename="r.json")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "the file is empty"),
        (b"  \n\n", "the file is empty"),
        (b"\x00\x01binary", "the file looks binary (NUL byte at byte 0)"),
        (b'{"duration": "caf\xe9"}', "not valid UTF-8 at byte 17"),
        (b"hello, world\n", "the file is not a recognised benchmark result"),
        (b"[1, 2, 3]", "the file is not a recognised benchmark result"),
        (b'{"model": "x"}', "the file is not a recognised benchmark result"),
    ],
)
def test_unreadable_files(data: bytes, message: str) -> None:
    with pytest.raises(ArtifactError) as error:
        convert(data, filename="upload.bin")
    assert str(error.value).startswith(message)


def test_non_json_forced_as_vllm() -> None:
    with pytest.raises(ArtifactError, match="the file is not vllm output"):
        convert(b"Metric,avg\n", filename="x.csv", format="vllm")


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"completed": 3, "output_throughput": 1.0}, "`duration` is missing"),
        ({"duration": 1.0, "output_throughput": 1.0}, "`completed` is missing"),
        (
            {"duration": 1.0, "completed": "three", "output_throughput": 1.0},
            "`completed` is 'three', not a number",
        ),
        (
            {"duration": 1.0, "completed": 2.5, "output_throughput": 1.0},
            "`completed` is 2.5, not a whole number",
        ),
        (
            {"duration": 1.0, "completed": 2, "output_throughput": 1.0, "ttfts": "0.1"},
            "`ttfts` is not a list",
        ),
        (
            {"duration": 1.0, "completed": 2, "output_throughput": 1.0, "ttfts": [0.1, "x"]},
            "`ttfts[1]` is 'x', not a number",
        ),
        (
            {"duration": 1.0, "completed": 1, "output_throughput": 1.0, "itls": [[0.1, None]]},
            "`itls[0][1]` is empty",
        ),
        (
            {"duration": True, "completed": 1, "output_throughput": 1.0},
            "`duration` is True, not a number",
        ),
    ],
)
def test_vllm_missing_or_bad_fields(record: dict, message: str) -> None:
    with pytest.raises(ArtifactError) as error:
        convert(json.dumps(record).encode(), filename="r.json")
    assert str(error.value).startswith(message)


def test_llmperf_summary_without_completed_count() -> None:
    data = json.dumps({"results_ttft_s_mean": 1.0}).encode()
    with pytest.raises(ArtifactError, match="`results_num_completed_requests` is missing"):
        convert(data, filename="x_summary.json")


def test_guidellm_benchmark_without_metrics() -> None:
    data = json.dumps({"benchmarks": [{"type_": "generative_benchmark"}]}).encode()
    with pytest.raises(ArtifactError, match=r"`benchmarks\[0\].metrics` is missing"):
        convert(data, filename="benchmarks.json")


@pytest.mark.parametrize(
    "data",
    [
        b'{"metadata": {"version": 2, "guidellm_version": "1"}, "benchmarks": [[]]}',
        b'{"benchmarks": [{"type_": "generative_benchmark", "metrics": {"request_latency": '
        b'{"successful": {"mean": "slow"}}}}]}',
        b'{"benchmarks": [{"type_": "generative_benchmark", "metrics": [], "requests": 3}]}',
        b'{"time_to_first_token": {"unit": ["ms"], "avg": 1}}',
        b'{"time_to_first_token": {"unit": "ms", "avg": {"x": 1}}}',
        b'{"duration": 1.0, "completed": 1, "output_throughput": 1.0, "itls": [[0.1], 7]}',
        b'{"hw": "h100", "output_tput_per_gpu": 10.0}',
        b'[{"ttft_s": 1.0, "end_to_end_latency_s": "fast", "number_output_tokens": 3}]',
        b'["ttft_s", {"end_to_end_latency_s": 1}]',
        b"timestamp, index, power.draw [W]\n2025/03/10 14:00:00, 0\n",
        b"timestamp, index, power.draw [mW]\n2025/03/10 14:00:00, 0, 5 mW\n",
        b'DCGM_FI_DEV_POWER_USAGE{gpu="a"} 5 1000\n',
        b"DCGM_FI_DEV_POWER_USAGE 5 1000\n",
    ],
)
def test_odd_structures_raise_only_artifact_error(data: bytes) -> None:
    with pytest.raises(ArtifactError) as error:
        convert(data, filename="upload")
    assert "\n" not in str(error.value)
