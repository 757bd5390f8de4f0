"""AIPerf and GenAI-Perf exports: the two real AIPerf files, the hand-made GenAI-Perf CSV, and the
unit rules of `converters.aiperf`."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from benchmarks_app.artifacts import ArtifactError
from benchmarks_app.converters import convert, convert_points
from tests.benchmarks_app.converters.files import local, real

approx = pytest.approx
REAL = "aiperf/audit_baseline-chat_bare_profile_export_aiperf.json"


def test_real_non_streaming_run_has_no_ttft() -> None:
    artifact = convert(
        real("aiperf/audit_baseline-chat_bare_profile_export_aiperf.json"),
        filename="profile_export_aiperf.json",
    )
    assert artifact.tool == "aiperf"
    assert artifact.tool_version == "0.8.0"
    assert artifact.model == "mock-model"  # input_config.models.items[0].name
    assert artifact.max_concurrency == 4  # input_config.phases[0].concurrency
    assert (artifact.label, artifact.load_known, artifact.request_rate) == (
        "concurrency 4",
        True,
        None,
    )
    assert artifact.completed_requests == 64  # request_count.avg
    assert artifact.failed_requests == 0  # error_summary: []
    # input_config.datasets[0]: type synthetic, prompts.isl.mean 550 (no osl configured)
    assert artifact.metadata == {"dataset": "synthetic", "input_len": "550"}
    # start_time "2026-04-30T09:16:38.957302", end_time "…09:16:38.996646", no zone: read as UTC
    start = datetime(2026, 4, 30, 9, 16, 38, 957302, tzinfo=UTC).timestamp()
    assert artifact.started_at_s == approx(start)
    assert artifact.ended_at_s == approx(start + 0.039344)
    assert any("read as UTC" in sentence for sentence in artifact.assumptions)
    # benchmark_duration {"unit": "sec", "avg": 0.034502655}
    assert artifact.duration_s == approx(0.034502655)
    # total_isl 35200, total_osl 35277
    assert (artifact.total_input_tokens, artifact.total_output_tokens) == (35200, 35277)
    reported = artifact.reported
    # request_latency is {"unit": "ms", "avg": 1.516322453125, "p50": 0.6734304999999999, …}
    assert reported["e2e_mean_ms"] == approx(1.516322453125)
    assert reported["e2e_p50_ms"] == approx(0.6734304999999999)
    assert reported["e2e_p95_ms"] == approx(10.865638499999939)
    assert reported["e2e_p99_ms"] == approx(15.14387014)
    assert reported["output_tokens_per_s"] == approx(1022443.0554692096)  # tokens/sec
    assert reported["requests_per_s"] == approx(1854.929714829192)  # requests/sec
    # Non-streaming: no time_to_first_token / inter_token_latency → absent, not zero.
    for key in ("ttft_mean_ms", "ttft_p95_ms", "tpot_mean_ms", "itl_mean_ms"):
        assert key not in reported
    assert any("no time_to_first_token" in sentence for sentence in artifact.assumptions)


def test_synthetic_streaming_shape() -> None:
    # A synthetic fixture (round numbers): checks the mapping of the streaming metrics only.
    artifact = convert(
        real("aiperf/SYNTHETIC_operator_ui_fixture_c128_profile_export_aiperf.json"),
        filename="profile_export_aiperf.json",
    )
    assert artifact.model == "llama3-8b"
    assert artifact.max_concurrency == 128  # input_config.runtime.concurrency
    assert artifact.label == "concurrency 128"
    # "2026-04-22T10:00:00Z" … "2026-04-22T10:05:00Z": zoned, so no assumption about it
    assert artifact.started_at_s == datetime(2026, 4, 22, 10, tzinfo=UTC).timestamp()
    assert artifact.ended_at_s - artifact.started_at_s == 300.0
    assert not any("UTC" in sentence for sentence in artifact.assumptions)
    reported = artifact.reported
    assert reported["ttft_mean_ms"] == 150.0  # time_to_first_token.avg, unit ms
    assert reported["ttft_p50_ms"] == 142.5
    assert reported["ttft_p99_ms"] == 195.0
    assert "ttft_p95_ms" not in reported  # the file has p50/p90/p99 only
    # inter_token_latency = (latency − TTFT)/(OSL − 1) is the TPOT of docs/methods.md
    assert reported["tpot_mean_ms"] == 25.0
    assert reported["tpot_p99_ms"] == 32.5
    assert reported["e2e_p99_ms"] == 390.0
    assert reported["output_tokens_per_s"] == 5388.8
    assert reported["requests_per_s"] == 42.1


def test_genai_perf_csv() -> None:
    artifact = convert(
        local("profile_export_genai_perf.csv"), filename="profile_export_genai_perf.csv"
    )
    assert artifact.tool == "genai-perf"
    reported = artifact.reported
    # "Time To First Token (ms)" row: avg "1,234.56", p50 "1,188.80", p95 "1,901.30", p99 "1,975.10"
    assert reported["ttft_mean_ms"] == approx(1234.56)
    assert reported["ttft_p50_ms"] == approx(1188.80)
    assert reported["ttft_p95_ms"] == approx(1901.30)
    assert reported["ttft_p99_ms"] == approx(1975.10)
    # "Inter Token Latency (ms)" → TPOT: avg 14.25, p95 18.40
    assert reported["tpot_mean_ms"] == approx(14.25)
    assert reported["tpot_p95_ms"] == approx(18.40)
    # "Request Latency (ms)": avg "3,045.60", p99 "3,960.20"
    assert reported["e2e_mean_ms"] == approx(3045.60)
    assert reported["e2e_p99_ms"] == approx(3960.20)
    # Metric,Value block: "Output Token Throughput (per sec)",2345.67
    assert reported["output_tokens_per_s"] == approx(2345.67)
    assert reported["requests_per_s"] == approx(18.32)
    # The CSV carries no input config: the load is unknown.
    assert (artifact.label, artifact.load_known) == ("", False)


def test_aiperf_csv_is_detected_and_read() -> None:
    data = (
        b"Metric,avg,min,max,p1,p5,p10,p25,p50,p75,p90,p95,p99,std\n"
        b"Time to First Token (ms),120.00,80.00,200.00,81.00,85.00,90.00,100.00,110.00,130.00,"
        b"160.00,180.00,195.00,20.00\n"
        b"Request Count,,,,,,,,,,,,,\n"
        b"\n"
        b"Metric,Value\n"
        b"Request Count,100\n"
        b"Benchmark Duration (sec),12.50\n"
        b"Output Token Throughput (tokens/sec),1024.00\n"
    )
    artifact = convert(data, filename="profile_export_aiperf.csv")
    assert artifact.tool == "aiperf"
    assert artifact.reported["ttft_p95_ms"] == 180.0
    assert artifact.completed_requests == 100
    assert artifact.duration_s == 12.5  # unit sec
    assert artifact.reported["output_tokens_per_s"] == 1024.0


def _export(**metrics: object) -> bytes:
    return json.dumps({"aiperf_version": "0.3.0", **metrics}).encode()


def test_units_convert_by_their_unit_field() -> None:
    data = _export(
        time_to_first_token={"unit": "s", "avg": 0.25, "p95": 0.4},
        inter_token_latency={"unit": "ns", "avg": 12_500_000.0},
        request_latency={"unit": "us", "avg": 2_000_000.0},
    )
    reported = convert(data, filename="x.json").reported
    assert reported["ttft_mean_ms"] == approx(250.0)  # 0.25 s
    assert reported["ttft_p95_ms"] == approx(400.0)
    assert reported["tpot_mean_ms"] == approx(12.5)  # 12 500 000 ns
    assert reported["e2e_mean_ms"] == approx(2000.0)  # 2 000 000 µs


def test_a_time_without_unit_is_read_as_ms_and_said() -> None:
    artifact = convert(_export(request_latency={"avg": 12.0}), filename="x.json")
    assert artifact.reported["e2e_mean_ms"] == 12.0
    assert artifact.assumptions[0] == (
        "request_latency had no unit; read as milliseconds, the tool's display unit."
    )


def test_an_unknown_time_unit_is_an_error_naming_the_field() -> None:
    data = _export(request_latency={"unit": "fortnights", "avg": 1.0})
    with pytest.raises(ArtifactError, match="`request_latency.unit` has unit 'fortnights'"):
        convert(data, filename="x.json")


def test_a_throughput_not_per_second_is_an_error() -> None:
    data = _export(output_token_throughput={"unit": "tokens/min", "avg": 60.0})
    with pytest.raises(ArtifactError, match="expected a rate per second"):
        convert(data, filename="x.json")


def test_genai_perf_json_with_telemetry() -> None:
    data = json.dumps(
        {
            "time_to_first_token": {"unit": "ms", "avg": 50.0, "p95": 90.0},
            "request_throughput": {"unit": "requests/sec", "avg": 3.0},
            "telemetry_stats": {
                "gpu_utilization": {"unit": "%", "avg": {"gpu0": 80.0, "gpu1": 60.0}}
            },
            "input_config": {
                "model_names": ["llama"],
                "perf_analyzer": {"stimulus": {"concurrency": 16}},
            },
        }
    ).encode()
    artifact = convert(data, filename="profile_export_genai_perf.json")
    assert artifact.tool == "genai-perf"
    assert artifact.model == "llama"
    assert artifact.max_concurrency == 16
    assert artifact.metadata == {"gpu_utilization_pct": "70.00"}  # (80 + 60) / 2
    assert artifact.reported["ttft_p95_ms"] == 90.0


def test_an_export_without_any_known_metric_is_refused() -> None:
    data = b"Metric,avg,min,max\nGPU Temperature (C),60.00,55.00,70.00\n"
    with pytest.raises(ArtifactError, match="no request_latency, time_to_first_token"):
        convert(data, filename="profile_export_aiperf.csv")


def test_a_csv_row_with_an_unquoted_thousands_separator_names_its_line() -> None:
    data = b"Metric,avg,min\nRequest Latency (ms),1,234.56,900.00\n"
    with pytest.raises(ArtifactError, match="line 2: 4 cells under a 3-column header"):
        convert(data, filename="profile_export_genai_perf.csv")


def _real_export(**changes: object) -> dict:
    export = json.loads(real(REAL))
    export.update(changes)
    return export


def test_a_rate_phase_after_a_warmup_gives_the_rate_and_the_concurrency_cap() -> None:
    export = _real_export()
    export["input_config"]["phases"] = [
        {"name": "warmup", "kind": "warmup", "type": "concurrency", "concurrency": 2},
        {"name": "profiling", "type": "poisson", "rate": 12.5, "concurrency": 64},
    ]
    export["input_config"]["datasets"][0]["prompts"]["osl"] = {"mean": 150, "stddev": 10}
    artifact = convert(json.dumps(export).encode(), filename="profile_export_aiperf.json")
    assert (artifact.label, artifact.request_rate, artifact.max_concurrency) == (
        "poisson 12.5 req/s",
        12.5,
        64,
    )
    assert artifact.metadata == {"dataset": "synthetic", "input_len": "550", "output_len": "150"}


def test_a_concurrency_phase_without_a_value_runs_at_aiperfs_default_of_one() -> None:
    export = _real_export()
    export["input_config"]["phases"] = [{"name": "profiling", "type": "concurrency"}]
    artifact = convert(json.dumps(export).encode(), filename="profile_export_aiperf.json")
    assert (artifact.label, artifact.max_concurrency) == ("concurrency 1", 1)


def test_a_fixed_schedule_replay_has_no_load_setting() -> None:
    export = _real_export()
    export["input_config"]["phases"] = [{"name": "profiling", "type": "fixed_schedule"}]
    artifact = convert(json.dumps(export).encode(), filename="profile_export_aiperf.json")
    assert (artifact.label, artifact.load_known) == ("fixed schedule", False)


def test_error_counts_become_failed_requests_and_are_said() -> None:
    export = _real_export(error_request_count={"unit": "requests", "avg": 16.0})
    artifact = convert(json.dumps(export).encode(), filename="profile_export_aiperf.json")
    # 16 failed + 64 completed = 80; 16 / 80 = 20.0 %
    assert (artifact.completed_requests, artifact.failed_requests) == (64, 16)
    assert "16 of 80 requests failed (20.0 %); latencies are over the 64 that completed." in (
        artifact.assumptions
    )
    summary = [
        {"error_details": {"code": 429, "type": "RateLimit"}, "count": 3},
        {"error_details": {"code": 500, "type": "Server"}, "count": 2},
    ]
    artifact = convert(
        json.dumps(_real_export(error_summary=summary)).encode(), filename="x_aiperf.json"
    )
    assert artifact.failed_requests == 5  # 3 + 2, error_request_count absent
    bad = _real_export(error_summary=[{"error_details": {}, "count": "many"}])
    with pytest.raises(
        ArtifactError, match=r"^`error_summary\[0\].count` is 'many', not a number$"
    ):
        convert(json.dumps(bad).encode(), filename="x_aiperf.json")


def test_older_aiperf_loadgen_and_prompt_settings() -> None:
    export = _real_export()
    export["input_config"] = {
        "loadgen": {"request_rate": 8.0, "request_rate_mode": "constant", "concurrency": 32},
        "input": {"prompt": {"input_tokens": {"mean": 1024}, "output_tokens": {"mean": 128}}},
    }
    artifact = convert(json.dumps(export).encode(), filename="profile_export_aiperf.json")
    assert (artifact.label, artifact.request_rate, artifact.max_concurrency) == (
        "constant 8 req/s",
        8.0,
        32,
    )
    assert artifact.metadata == {"input_len": "1024", "output_len": "128"}


def test_genai_perf_flat_config_lengths_and_rate() -> None:
    data = json.dumps(
        {
            "request_latency": {"unit": "ms", "avg": 100.0},
            "input_config": {
                "model_names": ["llama"],
                "synthetic_input_tokens_mean": 550,
                "output_tokens_mean": -1,  # GenAI-Perf's "not set"
                "input_dataset": "openorca",
                "perf_analyzer": {"stimulus": {"request_rate": 4}},
            },
        }
    ).encode()
    artifact = convert(data, filename="profile_export_genai_perf.json")
    assert artifact.tool == "genai-perf"
    assert (artifact.label, artifact.request_rate, artifact.max_concurrency) == (
        "4 req/s",
        4.0,
        None,
    )
    assert artifact.metadata == {"dataset": "openorca", "input_len": "550"}
    assert len(convert_points(data, filename="profile_export_genai_perf.json")) == 1


def test_an_unreadable_start_time_leaves_the_point_without_a_window_and_says_so() -> None:
    export = _real_export(start_time="last tuesday")
    artifact = convert(json.dumps(export).encode(), filename="profile_export_aiperf.json")
    assert (artifact.started_at_s, artifact.ended_at_s) == (None, None)
    assert artifact.completed_requests == 64
    assert (
        "`start_time` is 'last tuesday', not an ISO 8601 date-time, so the point has no time "
        "window." in artifact.assumptions
    )
