"""vLLM bench serve results: the real InferenceX files (and a concurrency sweep built from three
of them), the hand-made current-format file, the baseline/candidate pair, and the unit,
alignment and load-point rules of `converters.vllm`."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from benchmarks_app.artifacts import ArtifactError
from benchmarks_app.converters import convert, convert_points
from tests.benchmarks_app.converters.files import local, real

approx = pytest.approx
GPT_OSS = "vllm/inferencex_multinode_gpt-oss-120b_conc{}_gpus16_ctx8_gen8.json"


# --- real files ------------------------------------------------------------------------------


def test_inferencex_kimi_legacy_result() -> None:
    artifact = convert(
        real("vllm/inferencex_kimik2.5_1k1k_int4_vllm_tp8_conc4_mi355x.json"),
        filename="inferencex_kimik2.5_1k1k_int4_vllm_tp8_conc4_mi355x.json",
    )
    assert artifact.tool == "vllm"
    assert artifact.model == "moonshotai/Kimi-K2.5"
    assert artifact.duration_s == approx(165.7859344901517)
    assert artifact.completed_requests == 40
    # Legacy file: no `failed` key; num_prompts 40 − completed 40.
    assert artifact.failed_requests == 0
    assert (artifact.total_input_tokens, artifact.total_output_tokens) == (37068, 36709)
    assert artifact.request_rate is None  # "request_rate": "inf"
    assert artifact.max_concurrency == 4
    assert (artifact.label, artifact.load_known) == ("concurrency 4", True)
    # "date": "20260527-075026" (saved at the end, read as UTC) minus duration 165.7859344901517 s
    end = datetime(2026, 5, 27, 7, 50, 26, tzinfo=UTC).timestamp()
    assert artifact.ended_at_s == end
    assert artifact.started_at_s == approx(end - 165.7859344901517)
    reported = artifact.reported
    # Stats are already ms in the file (`_ms` keys): copied as they are.
    assert reported["ttft_mean_ms"] == approx(317.0863160688896)
    assert reported["ttft_p50_ms"] == approx(296.9768075272441)  # median_ttft_ms
    assert reported["ttft_p99_ms"] == approx(585.9901384473777)
    assert reported["tpot_mean_ms"] == approx(17.294128568510715)
    assert reported["tpot_p99_ms"] == approx(18.459965544077445)
    assert reported["itl_p50_ms"] == approx(44.25954492762685)
    assert reported["e2e_mean_ms"] == approx(16175.88243483915)  # mean_e2el_ms
    assert reported["e2e_p99_ms"] == approx(18323.80557443248)
    assert reported["output_tokens_per_s"] == approx(221.42409193453412)
    assert reported["requests_per_s"] == approx(0.2412749918924886)
    # The file has p90, p99 and p99.9 only: p95 stays absent (never taken from p99).
    assert "ttft_p95_ms" not in reported and "tpot_p95_ms" not in reported
    assert any("No p95 for TTFT and TPOT" in sentence for sentence in artifact.assumptions)
    assert artifact.per_request is None
    assert artifact.metadata == {}


def test_inferencex_multinode_gpt_oss_result() -> None:
    artifact = convert(
        real("vllm/inferencex_multinode_gpt-oss-120b_conc4_gpus16_ctx8_gen8.json"),
        filename="concurrency_4_req_rate_inf_gpus_16_ctx_8_gen_8.json",
    )
    assert artifact.model.startswith("/models/models--openai--gpt-oss-120b/snapshots/")
    assert artifact.duration_s == approx(89.19548447802663)
    assert (artifact.total_input_tokens, artifact.total_output_tokens) == (40960, 40960)
    assert artifact.reported["ttft_p50_ms"] == approx(124.30587713606656)
    assert artifact.reported["tpot_mean_ms"] == approx(8.386647437519565)
    assert artifact.reported["e2e_p50_ms"] == approx(8702.599443029612)
    assert artifact.reported["output_tokens_per_s"] == approx(459.21607175182197)


def test_inferencex_slo_variant_reads_unsuffixed_latencies_as_seconds() -> None:
    artifact = convert(
        real("inferencex/slo_variant_glm5_fp8_vllm_tp8_isl1024_osl128_conc4.json"),
        filename="glm5_fp8_vllm_tp8_isl1024_osl128_conc4.json",
    )
    assert artifact.tool == "vllm"
    assert artifact.model == "zai-org/GLM-5-FP8"
    assert artifact.completed_requests == 40
    assert artifact.duration_s == approx(31.08160568587482)
    reported = artifact.reported
    # "median_ttft": 0.26499967742711306 s × 1000 = 264.99967742711306 ms
    assert reported["ttft_p50_ms"] == approx(264.99967742711306)
    # "p99_ttft": 0.5848183088190854 s → 584.8183088190854 ms
    assert reported["ttft_p99_ms"] == approx(584.8183088190854)
    # "median_tpot": 0.021372462615488082 s → 21.372462615488082 ms
    assert reported["tpot_p50_ms"] == approx(21.372462615488082)
    # "p99_e2el": 3.7203497649915516 s → 3720.3497649915516 ms
    assert reported["e2e_p99_ms"] == approx(3720.3497649915516)
    assert reported["output_tokens_per_s"] == approx(164.72765441223032)
    assert "ttft_mean_ms" not in reported  # the file has no mean
    assert any(
        "without a _ms suffix" in sentence and "seconds" in sentence
        for sentence in artifact.assumptions
    )


def test_inferencex_aggregated_row_is_read_as_vllm_derived() -> None:
    artifact = convert(
        real("inferencex/agg_kimik2.5_1k1k_int4_vllm_tp8_conc4_mi355x.json"),
        filename="agg_kimik2.5_1k1k_int4_vllm_tp8_conc4_mi355x.json",
    )
    assert artifact.tool == "vllm"
    assert artifact.model == "moonshotai/Kimi-K2.5"
    assert artifact.max_concurrency == 4  # "conc": 4
    reported = artifact.reported
    # "mean_ttft": 0.3170863160688896 s → 317.0863160688896 ms (same as the raw file's ms)
    assert reported["ttft_mean_ms"] == approx(317.0863160688896)
    # "median_tpot": 0.017393898241078155 s → 17.393898241078155 ms
    assert reported["tpot_p50_ms"] == approx(17.393898241078155)
    # "p99_e2el": 18.32380557443248 s → 18323.80557443248 ms
    assert reported["e2e_p99_ms"] == approx(18323.80557443248)
    # output_tput_per_gpu 27.678011491816765 tok/s/GPU × tp 8 GPUs = 221.42409193453412 tok/s,
    # the raw file's output_throughput.
    assert reported["output_tokens_per_s"] == approx(221.42409193453412)
    assert "median_intvty" not in reported
    assert artifact.metadata == {
        "quantization": "int4",
        "gpu_type": "mi355x",
        "container_image": "vllm/vllm-openai-rocm:v0.21.0",
        "input_len": "1024",
        "output_len": "1024",
        "num_gpus": "8",
    }
    assert artifact.duration_s is None and artifact.completed_requests is None
    assert (artifact.label, artifact.load_known, artifact.request_rate) == (
        "concurrency 4",
        True,
        None,
    )
    assert artifact.started_at_s is None  # the row has no date


# --- hand-made current-format file -----------------------------------------------------------


def test_current_format_with_arrays_metadata_and_a_failed_request() -> None:
    artifact = convert(local("vllm_current_5_requests.json"), filename="run.json")
    assert artifact.completed_requests == 5
    assert artifact.failed_requests == 1
    assert artifact.duration_s == 1.25
    assert artifact.request_rate == 5.0
    assert artifact.max_concurrency == 8
    assert artifact.label == "5 req/s, concurrency 8"
    assert (artifact.total_input_tokens, artifact.total_output_tokens) == (1500, 20)
    # The metadata names of the contract are copied as strings; `team` is not one of them.
    assert artifact.metadata == {
        "model_hash": "h5",
        "quantization": "bf16",
        "batch_size": "32",
        "num_gpus": "1",
        "gpu_type": "L4",
        "usd_per_gpu_hour": "0.80",
        "dataset": "random",
        "input_len": "300",
        "output_len": "4",
    }
    per_request = artifact.per_request
    assert per_request is not None
    # ttfts [0.1, 0.12, 0.15, 0.2, 0.25] s × 1000; the 6th request failed ("Read timed out").
    assert per_request.ttft_ms == approx((100.0, 120.0, 150.0, 200.0, 250.0))
    assert per_request.latency_ms == approx((180.0, 180.0, 210.0, 250.0, 350.0))
    assert per_request.output_tokens == (5, 3, 4, 2, 6)
    assert per_request.input_tokens == (100, 200, 300, 400, 500)
    # itls pooled: 4 + 2 + 3 + 1 + 5 = 15 gaps, in ms.
    assert per_request.itl_ms == approx(
        (20, 20, 20, 20, 30, 30, 10, 20, 30, 50, 20, 20, 20, 20, 20)
    )
    # start_times 1000.0 … 1000.8 s, relative to the first.
    assert per_request.start_s == approx((0.0, 0.2, 0.4, 0.6, 0.8))
    # Reported stats are the file's; by hand from the arrays: TPOT per request
    # (latency − ttft) / (n − 1) = 80/4, 60/2, 60/3, 50/1, 100/5 = 20, 30, 20, 50, 20 ms,
    # mean 28, median 20, p95 (numpy linear, index 3.8) = 30 + 0.8 × 20 = 46.
    assert artifact.reported["tpot_mean_ms"] == 28.0
    assert artifact.reported["tpot_p50_ms"] == 20.0
    assert artifact.reported["tpot_p95_ms"] == 46.0
    # TTFT p95 = sorted[3] + 0.8 × (sorted[4] − sorted[3]) = 200 + 0.8 × 50 = 240.
    assert artifact.reported["ttft_p95_ms"] == 240.0
    assert artifact.reported["itl_mean_ms"] == approx(350 / 15)
    assert artifact.reported["e2e_p99_ms"] == 346.0
    assert artifact.reported["output_tokens_per_s"] == 16.0  # 20 tokens / 1.25 s
    # 2025-03-10 14:00:00 UTC = 1741615200; the run started 1.25 s earlier.
    assert (artifact.started_at_s, artifact.ended_at_s) == (1741615198.75, 1741615200.0)
    assert artifact.assumptions == (
        "1 of 6 requests failed (16.7 %); latencies are over the 5 that completed.",
    )


def test_baseline_and_candidate_pair_same_model_candidate_better_everywhere() -> None:
    baseline = convert(local("vllm_baseline.json"), filename="vllm_baseline.json")
    candidate = convert(local("vllm_candidate.json"), filename="vllm_candidate.json")
    expected_metadata = {
        "model_hash": "abc123",
        "quantization": "fp8",
        "batch_size": "64",
        "num_gpus": "8",
        "gpu_type": "H100",
        "usd_per_gpu_hour": "4.00",
        "dataset": "sharegpt",
        "input_len": "1024",
        "output_len": "128",
    }
    for artifact in (baseline, candidate):
        assert artifact.metadata == expected_metadata
        assert artifact.model == "meta-llama/Llama-3.1-70B-Instruct"
        assert artifact.completed_requests == 50
        assert artifact.per_request is not None
        assert len(artifact.per_request.ttft_ms) == 50
        assert len(artifact.per_request.latency_ms) == 50
        assert len(artifact.per_request.itl_ms) == 50 * 127
        assert artifact.total_output_tokens == 50 * 128
    assert candidate.reported["output_tokens_per_s"] > baseline.reported["output_tokens_per_s"]
    for metric in ("ttft", "tpot", "itl", "e2e"):
        for stat in ("mean", "p50", "p95", "p99"):
            key = f"{metric}_{stat}_ms"
            assert candidate.reported[key] < baseline.reported[key], key
    assert max(candidate.per_request.ttft_ms) < max(baseline.per_request.ttft_ms)


# --- rules -----------------------------------------------------------------------------------


def _result(**fields: object) -> bytes:
    record = {"model_id": "m", "duration": 2.0, "completed": 2, "output_throughput": 10.0}
    record.update(fields)
    return json.dumps(record).encode()


def test_legacy_goodput_key_with_colon_is_tolerated() -> None:
    artifact = convert(_result(**{"request_goodput:": None}), filename="r.json")
    assert artifact.reported["output_tokens_per_s"] == 10.0


def test_latencies_rebuilt_from_ttft_plus_itls_when_the_file_has_none() -> None:
    data = _result(ttfts=[0.1, 0.2], itls=[[0.01, 0.02], [0.05]], output_lens=[3, 2])
    artifact = convert(data, filename="r.json")
    # 100 + 10 + 20 = 130 ms; 200 + 50 = 250 ms
    assert artifact.per_request.latency_ms == approx((130.0, 250.0))
    assert any("rebuilt" in sentence for sentence in artifact.assumptions)


def test_per_request_arrays_already_in_ms_are_caught_by_the_median() -> None:
    data = _result(ttfts=[100.0, 200.0], median_ttft_ms=150.0)
    artifact = convert(data, filename="r.json")
    assert artifact.per_request.ttft_ms == (100.0, 200.0)
    assert any("read as milliseconds" in sentence for sentence in artifact.assumptions)


def test_flattened_itls_are_accepted() -> None:
    artifact = convert(_result(itls=[0.01, 0.02, 0.03]), filename="r.json")
    assert artifact.per_request.itl_ms == approx((10.0, 20.0, 30.0))


def test_append_result_file_gives_one_point_per_line() -> None:
    data = _result(duration=2.0) + b"\n" + _result(duration=3.0) + b"\n"
    assert convert(data, filename="r.json").duration_s == 2.0  # convert: the first point
    points = convert_points(data, filename="r.json")
    assert [p.duration_s for p in points] == [2.0, 3.0]
    assert not any("first was converted" in s for p in points for s in p.assumptions)


def _gpt_oss_sweep() -> list[dict]:
    return [json.loads(real(GPT_OSS.format(concurrency))) for concurrency in (4, 8, 32)]


@pytest.mark.parametrize("layout", ["append-result lines", "JSON list"])
def test_a_concurrency_sweep_gives_one_point_per_result(layout: str) -> None:
    # Three real InferenceX results of one gpt-oss-120b deployment at concurrency 4, 8 and 32,
    # put in one file as `--append-result` writes it, or as a JSON list.
    files = [real(GPT_OSS.format(concurrency)).strip() for concurrency in (4, 8, 32)]
    data = b"\n".join(files) if layout == "append-result lines" else b"[" + b",".join(files) + b"]"
    points = convert_points(data, filename="sweep.json")
    results = _gpt_oss_sweep()  # read independently of the converter
    assert [p.label for p in points] == ["concurrency 4", "concurrency 8", "concurrency 32"]
    assert [p.max_concurrency for p in points] == [4, 8, 32]
    assert all(p.load_known and p.request_rate is None for p in points)  # "request_rate": "inf"
    for point, result in zip(points, results, strict=True):
        assert point.completed_requests == result["completed"] == result["num_prompts"]
        assert point.failed_requests == 0  # num_prompts − completed (no `failed` key)
        assert point.reported["output_tokens_per_s"] == result["output_throughput"]
        assert point.reported["ttft_p50_ms"] == result["median_ttft_ms"]
        assert point.duration_s == result["duration"]
        end = datetime.strptime(result["date"], "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
        assert point.ended_at_s == end.timestamp()
        assert point.started_at_s == approx(end.timestamp() - result["duration"])
    # By hand from the concurrency-32 file: 320 completed, 2985.561049824788 output tok/s.
    assert points[2].completed_requests == 320
    assert points[2].reported["output_tokens_per_s"] == approx(2985.561049824788)


def test_a_result_of_a_sweep_that_cannot_be_read_names_its_place() -> None:
    first, second = _result(), _result(completed="x")
    with pytest.raises(ArtifactError) as error:
        convert_points(first + b"\n" + second + b"\n", filename="r.json")
    assert str(error.value) == "line 2: `completed` is 'x', not a number"
    listed = b"[" + first + b"," + first + b',{"duration": 1.0, "output_throughput": 2.0}]'
    with pytest.raises(ArtifactError) as error:
        convert_points(listed, filename="r.json")
    assert str(error.value).startswith("results[2]: `completed` is missing")


def test_failed_requests_are_counted_and_said() -> None:
    artifact = convert(_result(completed=101, failed=49), filename="r.json")
    assert (artifact.completed_requests, artifact.failed_requests) == (101, 49)
    # 49 / 150 = 32.666… % → 32.7 %
    assert artifact.assumptions[-1] == (
        "49 of 150 requests failed (32.7 %); latencies are over the 101 that completed."
    )


def test_a_result_without_rate_or_concurrency_has_an_unknown_load() -> None:
    artifact = convert(_result(), filename="r.json")
    assert (artifact.label, artifact.load_known) == ("", False)
    assert (artifact.request_rate, artifact.max_concurrency) == (None, None)
    unlimited = convert(_result(request_rate="inf"), filename="r.json")
    assert (unlimited.label, unlimited.load_known, unlimited.request_rate) == (
        "unlimited rate",
        True,
        None,
    )


def test_an_array_that_cannot_be_aligned_is_left_out_and_said() -> None:
    # 3 output lengths for 2 completed requests, and `errors` disagrees with `failed`: no way to
    # tell which entry to drop.
    data = _result(
        ttfts=[0.1, 0.2],
        latencies=[0.3, 0.4],
        output_lens=[3, 4, 5],
        errors=["", "", "boom"],
        failed=0,
    )
    artifact = convert(data, filename="r.json")
    assert artifact.per_request.output_tokens == ()
    assert artifact.per_request.ttft_ms == approx((100.0, 200.0))
    assert any(
        "`output_lens` has 3 entries for 2 completed" in sentence
        for sentence in artifact.assumptions
    )


def test_missing_duration_names_the_field() -> None:
    data = json.dumps({"completed": 3, "output_throughput": 1.0}).encode()
    with pytest.raises(ArtifactError, match="`duration` is missing"):
        convert(data, filename="r.json", format="vllm")


def test_non_numeric_statistic_names_the_key() -> None:
    with pytest.raises(ArtifactError, match="`mean_ttft_ms` is 'fast', not a number"):
        convert(_result(mean_ttft_ms="fast"), filename="r.json")


def test_multinode_inferencex_row_divides_by_decode_gpus() -> None:
    row = {
        "model": "m",
        "is_multinode": True,
        "num_prefill_gpu": 8,
        "num_decode_gpu": 8,
        "output_tput_per_gpu": 57.4,
        "median_ttft": 0.1,
    }
    artifact = convert(json.dumps(row).encode(), filename="agg_x.json")
    assert artifact.reported["output_tokens_per_s"] == approx(57.4 * 8)  # decode GPUs only
    assert artifact.metadata["num_gpus"] == "16"
    assert artifact.reported["ttft_p50_ms"] == approx(100.0)


def test_an_unreadable_date_leaves_the_point_without_a_window_and_says_so() -> None:
    # The window only picks the point's telemetry: the result is still read.
    artifact = convert(_result(date="9999-99-99"), filename="r.json")
    assert (artifact.started_at_s, artifact.ended_at_s) == (None, None)
    assert artifact.reported["output_tokens_per_s"] == 10.0
    assert artifact.assumptions[-1] == (
        "`date` is '9999-99-99', not a YYYYMMDD-HHMMSS time, so the point has no time window."
    )
