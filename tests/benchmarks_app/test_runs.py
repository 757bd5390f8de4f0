"""Runs as curves through every front end: several files imported as one run, bad
sweeps refused naming the file, stored runs completed (PATCH, `gate --meta` on a run id) with
the edit audited and recorded gates unchanged, hosted sides priced from a price card, and the
`gate` command over several files per side with an SLO.

The sweep files are the vLLM fixture `vllm_baseline.json` at other concurrencies, its latencies
and duration scaled by a factor k: p95 TTFT and TPOT scale by k, decode tok/s by 1 / k. The
fixture: 6,400 output tokens in 11.064596 s, p95 TTFT 444.2928 ms, p95 TPOT 35.37255 ms.
"""

from __future__ import annotations

import io
import json
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from audit_app.models import AuditEvent, PriceCard, Upload
from benchmarks_app.models import BenchmarkRun, Gate
from benchmarks_app.services import (
    RunRefused,
    benchmark_run_import,
    benchmark_run_update,
    gate_evaluate,
)
from tests.support.paths import FIXTURES_DIR

pytestmark = pytest.mark.django_db

FIXTURE = json.loads((FIXTURES_DIR / "benchmarks" / "vllm_baseline.json").read_text())
DECODE = 6400 / 11.064596  # tok/s of the fixture
P95_TPOT = 35.37255275590552


def _point_file(concurrency: int, k: float = 1.0, d: float | None = None, **changes: Any) -> bytes:
    """The fixture at `concurrency`, latencies × k and duration × d (default k): decode tok/s
    = 6,400 / (11.064596 × d)."""
    d = k if d is None else d
    data = dict(FIXTURE)
    data.update(max_concurrency=concurrency, request_rate="inf", duration=FIXTURE["duration"] * d)
    for key in ("ttfts", "latencies"):
        data[key] = [value * k for value in FIXTURE[key]]
    data["itls"] = [[gap * k for gap in gaps] for gaps in FIXTURE["itls"]]
    for key in list(data):
        if key.endswith("_ms"):
            del data[key]  # summary figures: the per-request arrays say it all
    data["output_throughput"] = FIXTURE["output_throughput"] / d
    data.update(changes)
    return json.dumps(data).encode()


def _import(
    *points: tuple[float, ...], meta: dict[str, str] | None = None, tag: str = ""
) -> BenchmarkRun:
    """A run of points (concurrency, k[, d]) of `_point_file`."""
    files = [
        (io.BytesIO(_point_file(int(p[0]), *p[1:], label=f"{tag}{p[0]}")), f"{tag}c{p[0]}.json")
        for p in points
    ]
    return benchmark_run_import(files=files, meta={"gpu_utilization_pct": "80", **(meta or {})})


def test_several_files_make_one_run_with_a_point_each() -> None:
    run = _import((8, 1.0), (16, 1.25))
    points = list(run.points.order_by("index"))
    assert [p.load for p in points] == [{"concurrency": 8}, {"concurrency": 16}]
    assert [p.upload.original_name for p in points] == ["c8.json", "c16.json"]
    assert (points[0].input_len, points[0].output_len) == (1024, 128)  # the files' metadata
    assert points[0].metrics["decode_tokens_per_s"] == pytest.approx(DECODE)
    assert points[1].metrics["decode_tokens_per_s"] == pytest.approx(DECODE / 1.25)
    assert points[1].metrics["tpot_p95_ms"] == pytest.approx(P95_TPOT * 1.25)
    assert points[0].metrics["error_rate_pct"] == 0.0  # "failed": 0 in the file
    # A curve's load is per point, not a run field.
    assert run.fields.get("concurrency") is None


def test_files_that_disagree_on_the_model_are_refused_naming_the_file() -> None:
    other = _point_file(16, model_id="mistralai/Mistral-Large-Instruct-2411")
    with pytest.raises(RunRefused) as refused:
        benchmark_run_import(
            files=[(io.BytesIO(_point_file(8)), "c8.json"), (io.BytesIO(other), "c16.json")]
        )
    assert str(refused.value) == (
        "c16.json: model 'mistralai/Mistral-Large-Instruct-2411' differs from "
        "'meta-llama/Llama-3.1-70B-Instruct' in c8.json; a run's files must measure one model "
        "at one quantization"
    )
    assert not BenchmarkRun.objects.exists()


def test_files_that_disagree_on_quantization_are_refused() -> None:
    with pytest.raises(RunRefused, match="c16.json: quantization 'int4' differs from 'fp8'"):
        benchmark_run_import(
            files=[
                (io.BytesIO(_point_file(8)), "c8.json"),
                (io.BytesIO(_point_file(16, quantization="int4")), "c16.json"),
            ]
        )


def test_two_files_at_the_same_load_are_refused_naming_both() -> None:
    with pytest.raises(RunRefused) as refused:
        benchmark_run_import(
            files=[
                (io.BytesIO(_point_file(8)), "first.json"),
                (io.BytesIO(_point_file(8, 1.1)), "again.json"),
            ]
        )
    assert "duplicate point at concurrency 8, input 1,024 / output 128" in str(refused.value)
    assert "of first.json and point 2" in str(refused.value)
    assert "of again.json" in str(refused.value)


# --- the gate over stored curves -------------------------------------------------------------


def test_a_regression_at_one_concurrency_fails_naming_it() -> None:
    baseline = _import((8, 1.0), (16, 1.2), (32, 1.6))
    # The candidate is the same at 8 and 16; at 32 its latencies are 1.892 / 1.6 − 1 = +18.25 %
    # longer (throughput the same).
    candidate = _import((8, 1.0), (16, 1.2), (32, 1.892, 1.6), tag="cand")
    gate = gate_evaluate(baseline=baseline, candidate=candidate)
    assert gate.verdict == "fail"
    assert "at concurrency 32: p95 TPOT +18.2 % (allowed 0 %)" in gate.result["summary"]
    assert [p["load"] for p in gate.result["points"]] == [
        {"concurrency": 8},
        {"concurrency": 16},
        {"concurrency": 32},
    ]
    assert gate.inputs["points"] == {"baseline": 3, "candidate": 3}


def test_the_slo_picks_each_sides_operating_point_and_its_cost() -> None:
    # p95 TPOT at k: 35.37 k ms. SLO 50 ms: k = 1.2 (42.4 ms) qualifies, k = 1.6 (56.6) does not.
    # Throughput grows with concurrency: decode = DECODE / d with d = 1, 0.6, 0.4.
    baseline = _import((8, 1.0, 1.0), (16, 1.2, 0.6), (32, 1.6, 0.4))
    candidate = _import((8, 0.9, 1.0), (16, 1.1, 0.6), (32, 1.4, 0.4), tag="cand")  # 49.5 ms
    gate = gate_evaluate(baseline=baseline, candidate=candidate, slo_ttft_ms=2000, slo_tpot_ms=50)
    assert gate.verdict == "pass"
    op = gate.result["operating_point"]
    assert (op["baseline"]["load"], op["candidate"]["load"]) == (
        {"concurrency": 16},
        {"concurrency": 32},
    )
    # The fixture's run fields: 8 GPUs at $4. Busy-only $ per 1M = 32 / (T × 3600) × 1e6.
    for side, d in (("baseline", 0.6), ("candidate", 0.4)):
        expected = Decimal(32) / Decimal(str(DECODE / d * 3600)) * 1_000_000
        got = Decimal(gate.result["cost_per_million_tokens"][side])
        assert abs(got - expected) < Decimal("1e-6")
    assert gate.result["slo"] == {"ttft_ms": 2000.0, "tpot_ms": 50.0}


def test_a_bad_slo_is_refused_naming_the_field() -> None:
    run = _import((8, 1.0))
    with pytest.raises(Exception) as refused:
        gate_evaluate(baseline=run, candidate=run, slo_tpot_ms=-5)
    assert getattr(refused.value, "field", None) == "slo_tpot_ms"
    assert not Gate.objects.exists()


# --- completing a stored run -----------------------------------------------------------------


def test_an_edit_recomputes_the_points_is_audited_and_leaves_recorded_gates_alone(
    engineer_user: Any,
) -> None:
    run = _import((8, 1.0), (16, 1.25))
    gate = gate_evaluate(baseline=run, candidate=run)
    recorded = (gate.verdict, gate.result, gate.inputs)
    itl_before = run.points.get(index=0).metrics["itl_p95_ms"]
    benchmark_run_update(run=run, changes={"num_gpus": "4", "quantization": ""}, user=engineer_user)
    run.refresh_from_db()
    assert run.fields["num_gpus"] == 4 and run.fields["quantization"] == ""
    # Output tokens per GPU-hour = decode tok/s × 3600 / 4 now.
    first = run.points.get(index=0).metrics
    assert first["output_tokens_per_gpu_hour"] == pytest.approx(DECODE * 3600 / 4)
    # The pooled ITL gaps are stored as their percentiles: the recompute reads the same p95.
    assert first["itl_p95_ms"] == pytest.approx(itl_before, rel=1e-12)
    gaps = [gap * 1000 for gaps in FIXTURE["itls"] for gap in gaps]
    assert itl_before == pytest.approx(float(np.percentile(gaps, 95)), rel=1e-12)
    event = AuditEvent.objects.get(action=AuditEvent.Action.RUN_EDITED)
    assert event.actor == engineer_user
    assert event.details == {"changes": {"num_gpus": [8, 4], "quantization": ["fp8", ""]}}
    assert event.summary == f"run {run.pk}: quantization 'fp8' → (not stated), num_gpus 8 → 4"
    gate.refresh_from_db()
    assert (gate.verdict, gate.result, gate.inputs) == recorded
    assert gate.inputs["fields"]["baseline"]["num_gpus"] == 8  # the values the gate used


def test_a_bad_edit_names_the_field_and_changes_nothing() -> None:
    run = _import((8, 1.0))
    with pytest.raises(RunRefused) as refused:
        benchmark_run_update(run=run, changes={"num_gpus": "eight"})
    assert str(refused.value) == "num_gpus must be a whole number of at least 1, got 'eight'"
    assert refused.value.field == "num_gpus"
    with pytest.raises(RunRefused, match="colour is not a run field"):
        benchmark_run_update(run=run, changes={"colour": "red"})
    run.refresh_from_db()
    assert run.fields["num_gpus"] == 8
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.RUN_EDITED).exists()


def test_patch_completes_a_run_for_engineers_only(
    client: Client, engineer_user: Any, finops_user: Any, manager_user: Any
) -> None:
    run = _import((8, 1.0))
    url = f"/api/v1/benchmark-runs/{run.pk}/"
    body = json.dumps({"quantization": "int4", "name": "H100 sweep"})
    assert Client().patch(url, body, content_type="application/json").status_code == 401
    for user in (finops_user, manager_user):
        client.force_login(user)
        assert client.patch(url, body, content_type="application/json").status_code == 403
    client.force_login(engineer_user)
    response = client.patch(url, body, content_type="application/json")
    assert response.status_code == 200
    assert (response.json()["fields"]["quantization"], response.json()["name"]) == (
        "int4",
        "H100 sweep",
    )
    bad = client.patch(url, json.dumps({"batch_size": "0"}), content_type="application/json")
    assert bad.status_code == 400
    assert bad.json()["errors"] == {
        "batch_size": ["batch_size must be a whole number of at least 1, got '0'"]
    }
    unknown = client.patch(url, json.dumps({"colour": "red"}), content_type="application/json")
    assert unknown.status_code == 400 and "colour" in unknown.json()["errors"]


def test_the_api_imports_several_parts_as_one_run(client: Client, engineer_user: Any) -> None:
    client.force_login(engineer_user)
    files = [io.BytesIO(_point_file(c, k)) for c, k in ((8, 1.0), (16, 1.25))]
    for f, name in zip(files, ("c8.json", "c16.json"), strict=True):
        f.name = name
    response = client.post("/api/v1/benchmark-runs/", {"file": files, "num_gpus": "8"})
    assert response.status_code == 201, response.content
    body = response.json()
    assert [p["load"] for p in body["points"]] == [{"concurrency": 8}, {"concurrency": 16}]
    assert [p["file"] for p in body["points"]] == ["c8.json", "c16.json"]
    assert body["points"][1]["metrics"]["decode_tokens_per_s"] == pytest.approx(DECODE / 1.25)
    assert body["failed_requests"] == 0


# --- hosted sides ----------------------------------------------------------------------------


def test_a_hosted_run_is_priced_from_the_providers_price_card() -> None:
    PriceCard.objects.create(
        provider="together",
        model="meta-llama/Llama-3.1-70B-Instruct",
        input_usd_per_mtok=Decimal("0.88"),
        output_usd_per_mtok=Decimal("0.88"),
        valid_from=date(2026, 1, 1),
    )
    hosted = {"provider": "together", "num_gpus": "", "usd_per_gpu_hour": "", "batch_size": ""}
    baseline = _import((8, 1.0), meta=hosted)
    candidate = _import(
        (8, 0.9),
        meta={
            **hosted,
            "provider": "fireworks",
            "usd_per_million_input": "0.90",
            "usd_per_million_output": "0.90",
        },
        tag="cand",
    )
    gate = gate_evaluate(baseline=baseline, candidate=candidate)
    # The fixture: 51,200 input and 6,400 output tokens. Together: (51,200 + 6,400) × 0.88 /
    # 6,400 = $7.92 per 1M output tokens; Fireworks at 0.90: $8.10 → +2.27 %, a fail on cost.
    costs = gate.result["cost_per_million_tokens"]
    assert Decimal(costs["baseline"]) == Decimal("7.92")
    assert Decimal(costs["candidate"]) == Decimal("8.1")
    assert gate.verdict == "fail"
    assert "cost per 1M output tokens +2.3 %" in gate.result["summary"]
    assert gate.inputs["prices"]["baseline"].startswith("price card together / ")
    assert gate.result["serving"] == {"baseline": "hosted", "candidate": "hosted"}


# --- the command line ------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_gate_takes_several_files_per_side_and_an_slo(tmp_path: Path, capsys: Any) -> None:
    # Decode grows with concurrency (duration × 0.6 at 16); p95 TPOT at 16 is 42.4 ms on the
    # baseline, 38.9 ms on the candidate: both inside 50 ms, so both operate at 16.
    baseline = [
        _write(tmp_path, f"b{c}.json", _point_file(c, k, d))
        for c, k, d in ((8, 1.0, 1.0), (16, 1.2, 0.6))
    ]
    candidate = [
        _write(tmp_path, f"c{c}.json", _point_file(c, k, d, label="cand"))
        for c, k, d in ((8, 0.9, 1.0), (16, 1.1, 0.6))
    ]
    meta = [
        "--meta-baseline",
        "gpu_utilization_pct=80",
        "--meta-candidate",
        "gpu_utilization_pct=80",
    ]
    call_command(
        "gate",
        "--baseline",
        *baseline,
        "--candidate",
        *candidate,
        *meta,
        "--slo-tpot-ms",
        "50",
        "--json",
    )
    body = json.loads(capsys.readouterr().out)
    assert body["verdict"] == "pass"
    assert body["operating_point"]["baseline"]["load"] == {"concurrency": 16}
    assert body["operating_point"]["candidate"]["load"] == {"concurrency": 16}
    assert len(body["points"]) == 2 and body["slo"] == {"ttft_ms": None, "tpot_ms": 50.0}


def test_gate_meta_completes_a_stored_run_by_id(tmp_path: Path, capsys: Any) -> None:
    run = benchmark_run_import(source=io.BytesIO(_point_file(8)), filename="c8.json")
    other = benchmark_run_import(
        source=io.BytesIO(_point_file(8, 0.9, label="x")),
        filename="c8b.json",
        meta={"gpu_utilization_pct": "80"},
    )
    # Utilization is missing on the stored baseline: incomplete, exit 1, saying which flag.
    with pytest.raises(SystemExit):
        call_command("gate", "--baseline", str(run.pk), "--candidate", str(other.pk))
    assert "gpu_utilization_pct" in capsys.readouterr().out
    call_command(
        "gate",
        "--baseline",
        str(run.pk),
        "--candidate",
        str(other.pk),
        "--meta-baseline",
        "gpu_utilization_pct=80",
    )
    assert "PASS" in capsys.readouterr().out
    run.refresh_from_db()
    assert run.fields["gpu_utilization_pct"] == 80.0
    assert AuditEvent.objects.filter(
        action=AuditEvent.Action.RUN_EDITED, object_id=str(run.pk)
    ).exists()


def test_gate_refuses_a_run_id_mixed_with_files(tmp_path: Path) -> None:
    run = benchmark_run_import(source=io.BytesIO(_point_file(8)), filename="c8.json")
    path = _write(tmp_path, "c16.json", _point_file(16))
    with pytest.raises(CommandError, match="--baseline: give one run id, or result files"):
        call_command("gate", "--baseline", str(run.pk), path, "--candidate", str(run.pk))
    with pytest.raises(CommandError, match="--slo-tpot-ms: slo tpot_ms must be"):
        call_command(
            "gate", "--baseline", str(run.pk), "--candidate", str(run.pk), "--slo-tpot-ms", "0"
        )


def test_benchmark_import_takes_several_paths(tmp_path: Path, capsys: Any) -> None:
    paths = [_write(tmp_path, f"c{c}.json", _point_file(c)) for c in (8, 16, 32)]
    call_command("benchmark_import", *paths, "--json")
    body = json.loads(capsys.readouterr().out)
    assert [p["load"] for p in body["points"]] == [{"concurrency": c} for c in (8, 16, 32)]


def test_the_gate_page_names_the_run_page_field_where_the_command_names_a_flag(
    client: Client, finops_user: Any
) -> None:
    run = _import((8, 1.0), meta={"usd_per_gpu_hour": ""})
    other = _import((8, 0.9), tag="cand")
    gate = gate_evaluate(baseline=run, candidate=other)
    assert gate.verdict == "incomplete"
    (sentence,) = gate.result["missing"]
    assert sentence.endswith("state usd_per_gpu_hour (--meta-baseline usd_per_gpu_hour=4.00)")
    client.force_login(finops_user)
    html = client.get(f"/benchmarks/gates/{gate.pk}/").content.decode()
    assert "state usd_per_gpu_hour (“$ per accelerator-hour” on the run page)" in html
    assert "--meta" not in html


def test_the_telemetry_files_assumptions_reach_the_run() -> None:
    # nvidia-smi writes its timestamps without a zone; the converter says it read them as UTC.
    telemetry = FIXTURES_DIR / "benchmarks" / "nvidia_smi.csv"
    with telemetry.open("rb") as samples:
        run = benchmark_run_import(
            source=io.BytesIO(_point_file(8)),
            filename="c8.json",
            telemetry=(samples, telemetry.name),
        )
    assert (
        "telemetry nvidia_smi.csv: nvidia-smi timestamps carry no time zone; they were read as UTC."
        in run.assumptions
    )


def test_tolerances_from_the_command_and_the_page(
    tmp_path: Path, capsys: Any, client: Client, engineer_user: Any
) -> None:
    # At concurrency 8 the candidate's latencies are 10 % longer, its throughput the same: a
    # fail at 0 %, a pass once latencies may regress 11 % (10 % and a binary rounding).
    baseline = _import((8, 1.0))
    candidate = _import((8, 1.1, 1.0), tag="cand")
    ids = ["--baseline", str(baseline.pk), "--candidate", str(candidate.pk)]
    with pytest.raises(SystemExit):
        call_command("gate", *ids)
    assert "p95 TTFT +10.0 % (allowed 0 %)" in capsys.readouterr().out
    latency = [f"{m}=11" for m in ("ttft_p50_ms", "ttft_p95_ms", "tpot_p50_ms", "tpot_p95_ms")]
    latency += ["itl_p95_ms=11", "e2e_p95_ms=11", "per_user_decode_tokens_per_s=11"]
    flags = [flag for pair in latency for flag in ("--tolerance", pair)]
    call_command("gate", *ids, *flags)
    assert "PASS" in capsys.readouterr().out
    assert Gate.objects.latest("pk").inputs["tolerances"]["tpot_p95_ms"] == 11.0
    with pytest.raises(CommandError, match="--tolerance: expected METRIC=PERCENT"):
        call_command("gate", *ids, "--tolerance", "tpot_p95_ms")
    with pytest.raises(CommandError, match="--tolerance: unknown metric"):
        call_command("gate", *ids, "--tolerance", "speed=5")
    client.force_login(engineer_user)
    form = {
        "baseline": baseline.pk,
        "candidate": candidate.pk,
        "mode": "always_on",
        "cold_start_seconds": "0",
        "tolerances": "\n".join(latency),
    }
    response = client.post("/benchmarks/", form)
    assert response.status_code == 302
    assert Gate.objects.latest("pk").verdict == "pass"
    bad = client.post("/benchmarks/", {**form, "tolerances": "speed=5"})
    assert bad.status_code == 400
    assert "unknown metric(s) in tolerances: speed" in bad.content.decode()


def test_a_refused_file_is_kept_with_the_reason() -> None:
    # The raw upload is kept whatever the verdict on it: a file no converter reads, and both
    # files of a sweep refused for a duplicate point.
    with pytest.raises(RunRefused):
        benchmark_run_import(source=io.BytesIO(b'{"not": "a result"}'), filename="bad.json")
    bad = Upload.objects.get(original_name="bad.json")
    assert bad.status == Upload.Status.FAILED
    assert bad.error.startswith("the file is not a recognised benchmark result")  # its own
    with pytest.raises(RunRefused) as refused:
        benchmark_run_import(
            files=[
                (io.BytesIO(_point_file(8)), "one.json"),
                (io.BytesIO(_point_file(8, 1.1)), "two.json"),
            ]
        )
    for name in ("one.json", "two.json"):
        kept = Upload.objects.get(original_name=name)
        assert (kept.status, kept.error) == (Upload.Status.FAILED, str(refused.value))
        with kept.file.open("rb") as stored:
            assert json.loads(stored.read())["max_concurrency"] == 8
    assert not BenchmarkRun.objects.exists()


def test_a_point_stores_only_the_telemetry_of_its_own_window() -> None:
    from benchmarks_app.artifacts import BenchmarkArtifact, TelemetrySample
    from benchmarks_app.runs import stored_artifact

    samples = tuple(
        TelemetrySample(timestamp_s=float(t), gpu_index=0, utilization_pct=50.0) for t in range(10)
    )
    point = BenchmarkArtifact(tool="vllm", telemetry=samples, started_at_s=3.0, ended_at_s=5.0)
    assert [s["timestamp_s"] for s in stored_artifact(point)["telemetry"]] == [3.0, 4.0, 5.0]
    unwindowed = BenchmarkArtifact(tool="vllm", telemetry=samples)
    assert len(stored_artifact(unwindowed)["telemetry"]) == 10
