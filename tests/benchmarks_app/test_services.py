"""The benchmark services (benchmarks_app.services): runs and gates through the CLI, the API
and the pages, then the services called directly (traffic, imports and their refusals)."""

from __future__ import annotations

import io
import json
from datetime import UTC, date, datetime
from decimal import Decimal
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client

from audit_app.lib.results_cache import data_changed
from audit_app.models import DailyRollup, HourlyRollup, Upload
from benchmarks_app.models import BenchmarkRun, Gate
from benchmarks_app.services import (
    ALWAYS_BUSY,
    GateRefused,
    GateTraffic,
    RunRefused,
    benchmark_run_import,
    benchmark_run_import_path,
    gate_traffic,
)
from tests.benchmarks_app.gate_samples import recommendation as approved_recommendation
from tests.factories import UploadFactory

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks"
BASELINE = FIXTURES / "vllm_baseline.json"
CANDIDATE = FIXTURES / "vllm_candidate.json"
UTILISATION = [
    "--meta-baseline",
    "gpu_utilization_pct=80",
    "--meta-candidate",
    "gpu_utilization_pct=85",
]


def _gate(*args: str) -> tuple[int, dict[str, Any]]:
    out = StringIO()
    code = 0
    try:
        call_command(
            "gate",
            "--baseline",
            str(BASELINE),
            "--candidate",
            str(CANDIDATE),
            "--json",
            *args,
            stdout=out,
        )
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, json.loads(out.getvalue())


def _expected_usd_per_million(tokens_per_s: float) -> Decimal:
    # Busy-only: $4 per GPU-hour x 8 GPUs / (T x 3600) x 1e6.
    return Decimal(4) * 8 / (Decimal(str(tokens_per_s)) * 3600) * Decimal(1_000_000)


def test_pass_when_everything_improves() -> None:
    code, body = _gate(*UTILISATION)
    assert code == 0
    assert body["verdict"] == "pass"
    assert body["confounders"] == [] and body["missing"] == []
    assert all(check["passed"] for check in body["checks"])
    baseline = BenchmarkRun.objects.get(pk=body["baseline_run"])
    tokens = baseline.points.get(index=0).metrics["decode_tokens_per_s"]
    # 50 requests: total output tokens / duration, read back independently from the file.
    raw = json.loads(BASELINE.read_text())
    assert tokens == pytest.approx(raw["total_output_tokens"] / raw["duration"])
    expected = _expected_usd_per_million(tokens)
    assert abs(Decimal(body["cost_per_million_tokens"]["baseline"]) - expected) < Decimal("1e-9")
    gate = Gate.objects.get(pk=body["gate_id"])
    assert gate.baseline_sha256 == baseline.upload.sha256


def test_incomplete_names_what_is_missing() -> None:
    code, body = _gate()
    assert code == 1
    assert body["verdict"] == "incomplete"
    assert any("GPU utilization" in m and "baseline" in m for m in body["missing"])


def test_fail_names_the_regressed_metric() -> None:
    # Swap the runs: the "candidate" is now the slower one.
    out = StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command(
            "gate",
            "--baseline",
            str(CANDIDATE),
            "--candidate",
            str(BASELINE),
            "--json",
            "--meta-baseline",
            "gpu_utilization_pct=85",
            "--meta-candidate",
            "gpu_utilization_pct=85",
            stdout=out,
        )
    assert exit_info.value.code == 1
    body = json.loads(out.getvalue())
    assert body["verdict"] == "fail"
    failed = {c["metric"] for c in body["checks"] if not c["passed"]}
    assert {"ttft_p95_ms", "tpot_p95_ms", "decode_tokens_per_s"} <= failed


def test_invalid_names_the_confounder() -> None:
    code, body = _gate(*UTILISATION, "--meta-candidate", "quantization=int4")
    assert code == 1
    assert body["verdict"] == "invalid"
    assert body["confounders"] == ["quantization differs: baseline fp8, candidate int4"]


def test_traffic_profile_and_mode(tmp_path: Path) -> None:
    traffic = tmp_path / "traffic.csv"
    traffic.write_text("hour,output_tokens\n0,0\n1,5000000\n2,0\n")
    code, body = _gate(*UTILISATION, "--traffic", str(traffic), "--mode", "scale_to_zero")
    assert body["verdict"] == "pass"
    assert set(body["cost_by_mode"]) == {"always_on", "autoscale", "scale_to_zero"}
    assert Gate.objects.get(pk=body["gate_id"]).inputs["traffic"] == f"CSV {traffic}"
    with pytest.raises(CommandError) as both:
        _gate(*UTILISATION, "--traffic", str(traffic), "--traffic-workload", "evals")
    assert str(both.value) == (
        "--traffic-workload: Give a traffic CSV or a workload to price the runs on, not both."
    )
    bad = tmp_path / "bad.csv"
    bad.write_text("hour,output_tokens\n0,lots\n")
    with pytest.raises(CommandError, match="--traffic"):
        _gate(*UTILISATION, "--traffic", str(bad))


def test_benchmark_import_cli_refuses_the_wrong_tool() -> None:
    with pytest.raises(CommandError, match="not aiperf output"):
        call_command("benchmark_import", str(BASELINE), "--format", "aiperf")
    with pytest.raises(CommandError, match="--meta expects KEY=VALUE"):
        call_command("benchmark_import", str(BASELINE), "--meta", "num_gpus")


def test_api_runs_gates_and_recommendation_link(
    client: Client, engineer_user: Any, manager_user: Any
) -> None:
    client.force_login(engineer_user)
    ids = []
    for path in (BASELINE, CANDIDATE):
        response = client.post(
            "/api/v1/benchmark-runs/",
            {"file": SimpleUploadedFile(path.name, path.read_bytes()), "gpu_utilization_pct": "80"},
        )
        assert response.status_code == 201, response.json()
        ids.append(response.json()["id"])
    recommendation = approved_recommendation()  # for the runs' model, on H100s
    response = client.post(
        "/api/v1/gates/",
        {"baseline": ids[0], "candidate": ids[1], "recommendation": recommendation.pk},
    )
    assert response.status_code == 201
    assert response.json()["verdict"] == "pass"
    recommendation.refresh_from_db()
    assert recommendation.status == "verified"
    assert client.get(f"/api/v1/gates/{response.json()['id']}/").json()["verdict"] == "pass"
    # Managers read, but only engineers import runs and create gates.
    client.force_login(manager_user)
    runs = client.get("/api/v1/benchmark-runs/").json()
    assert (runs["count"], [r["id"] for r in runs["results"]]) == (2, ids[::-1])
    assert (
        client.post("/api/v1/gates/", {"baseline": ids[0], "candidate": ids[1]}).status_code == 403
    )
    bad = client.post("/api/v1/benchmark-runs/", {"file": SimpleUploadedFile("x.json", b"{")})
    assert bad.status_code == 403


def test_api_bad_file_is_a_clear_400(client: Client, engineer_user: Any) -> None:
    client.force_login(engineer_user)
    response = client.post(
        "/api/v1/benchmark-runs/", {"file": SimpleUploadedFile("broken.json", b'{"duration": 1')}
    )
    assert response.status_code == 400
    message = response.json()["errors"]["file"][0]
    assert message.startswith("broken.json: ") and "Traceback" not in message


def test_pages(client: Client, engineer_user: Any) -> None:
    client.force_login(engineer_user)
    response = client.post(
        "/benchmarks/",
        {
            "file": SimpleUploadedFile(BASELINE.name, BASELINE.read_bytes()),
            "format": "auto",
            "gpu_utilization_pct": "",
            "name": "baseline",
        },
    )
    assert response.status_code == 302
    run = BenchmarkRun.objects.get()
    detail = client.get(f"/benchmarks/runs/{run.pk}/")
    assert detail.status_code == 200
    assert detail.context["distribution_figure"]["data"][0]["name"] == "TTFT (ms)"
    client.post(
        "/benchmarks/",
        {
            "file": SimpleUploadedFile(CANDIDATE.name, CANDIDATE.read_bytes()),
            "format": "auto",
            "name": "candidate",
        },
    )
    candidate = BenchmarkRun.objects.exclude(pk=run.pk).get()
    response = client.post(
        "/benchmarks/",
        {
            "baseline": run.pk,
            "candidate": candidate.pk,
            "mode": "autoscale",
            "cold_start_seconds": "30",
            "traffic_csv": "",
        },
    )
    gate = Gate.objects.get()
    assert response["Location"] == f"/benchmarks/gates/{gate.pk}/"
    page = client.get(response["Location"])
    assert page.context["gate"].verdict == "incomplete"  # no GPU utilization stated
    assert "GPU utilization" in page.content.decode()
    assert [t["name"] for t in page.context["cost_figure"]["data"]] == ["Baseline", "Candidate"]


def test_gate_on_a_workloads_last_30_days() -> None:
    import io

    from audit_app.costs.rollups import rollups_in_range
    from audit_app.ingestion.ingest import upload_ingest
    from audit_app.ingestion.uploads import upload_create
    from audit_app.reporting.selectors import hourly_output_tokens

    log = (
        b"started_at,ended_at,workload,provider,model,input_tokens,output_tokens\n"
        b"2026-11-02T01:10:00Z,2026-11-02T01:10:05Z,evals,vllm,llama,100,7000000\n"
        b"2026-11-02T03:10:00Z,2026-11-02T03:10:05Z,evals,vllm,llama,100,1000000\n"
    )
    upload = upload_create(source=io.BytesIO(log), original_name="t.csv", enqueue=False)
    upload_ingest(upload_id=upload.pk)
    demand = hourly_output_tokens(
        queryset=rollups_in_range(workload="evals"), start=date(2026, 11, 2), end=date(2026, 11, 2)
    )
    assert demand[1] == 7_000_000 and demand[3] == 1_000_000 and sum(demand) == 8_000_000
    code, body = _gate(*UTILISATION, "--traffic-workload", "evals", "--mode", "scale_to_zero")
    assert body["verdict"] == "pass"
    gate = Gate.objects.get(pk=body["gate_id"])
    assert gate.inputs["traffic"] == "workload evals, 2026-11-02 to 2026-11-02"
    assert gate.inputs["traffic_hours"] == 24
    with pytest.raises(CommandError, match="no traffic"):
        _gate(*UTILISATION, "--traffic-workload", "nobody")


# --- The services called directly ---------------------------------------------------------------


def test_gate_traffic_without_csv_or_workload_is_always_busy() -> None:
    assert gate_traffic() == ALWAYS_BUSY
    assert gate_traffic(csv_text="  \n", workload="  ") == ALWAYS_BUSY
    assert ALWAYS_BUSY.demand is None


def test_gate_traffic_from_a_csv_keeps_its_hours_and_names_its_file() -> None:
    text = "hour,output_tokens\n0,0\n1,100\n\n2,50\n"

    assert gate_traffic(csv_text=text, csv_name="hourly.csv") == GateTraffic(
        demand=(0, 100, 50), source="CSV hourly.csv"
    )
    assert gate_traffic(csv_text="a,7\n").source == "CSV"


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        (
            {"csv_text": "0,10\n", "workload": "evals"},
            "traffic_workload",
            "Give a traffic CSV or a workload to price the runs on, not both.",
        ),
        (
            {"csv_text": "0,10\n1,x\n"},
            "traffic_csv",
            "line 2: output_tokens must be a whole number ≥ 0, got 'x'",
        ),
        (
            {"csv_text": "0,0\n1,0\n"},
            "traffic_csv",
            "the traffic CSV demands 0 output tokens in every hour; cost per 1M tokens is "
            "undefined",
        ),
        ({"workload": "evals"}, "traffic_workload", "no traffic for workload 'evals'"),
    ],
)
def test_gate_traffic_refusals_name_the_field(
    kwargs: dict[str, str], field: str, message: str
) -> None:
    with pytest.raises(GateRefused) as refused:
        gate_traffic(**kwargs)

    assert (str(refused.value), refused.value.field) == (message, field)


def test_gate_traffic_of_a_workload_is_its_hourly_output_over_the_days_with_data() -> None:
    upload = UploadFactory(status=Upload.Status.SUCCEEDED)
    for hour, tokens in ((3, 100), (4, 40)):
        HourlyRollup.objects.create(
            upload=upload,
            hour=datetime(2026, 11, 2, hour, tzinfo=UTC),
            workload="evals",
            model="gpt-4o",
            requests=1,
            output_tokens=tokens,
        )
    DailyRollup.objects.create(
        upload=upload, day=date(2026, 11, 2), workload="evals", model="gpt-4o", output_tokens=140
    )
    data_changed()

    traffic = gate_traffic(workload=" evals ")

    assert traffic.source == "workload evals, 2026-11-02 to 2026-11-02"
    assert traffic.demand == (0, 0, 0, 100, 40, *[0] * 19)
    with pytest.raises(GateRefused) as refused:
        gate_traffic(workload="chat")
    assert str(refused.value) == "workload 'chat' has no traffic from 2026-11-02 to 2026-11-02"


def test_import_of_a_missing_file_is_refused_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nothing.json"

    with pytest.raises(RunRefused) as refused:
        benchmark_run_import_path(path=missing)
    assert (str(refused.value), refused.value.field) == (f"{missing}: no such file", "file")

    with pytest.raises(RunRefused) as refused:
        benchmark_run_import_path(path=BASELINE, telemetry=missing)
    assert (str(refused.value), refused.value.field) == (f"{missing}: no such file", "telemetry")
    assert BenchmarkRun.objects.count() == 0


def test_import_of_an_unreadable_file_fails_its_upload_and_records_no_run() -> None:
    with pytest.raises(RunRefused) as refused:
        benchmark_run_import(source=io.BytesIO(b'{"duration": 1'), filename="broken.json")

    assert str(refused.value).startswith("broken.json: ")
    assert refused.value.field == "file"
    assert BenchmarkRun.objects.count() == 0
    # The raw file is kept, failed with the converter's sentence (the run is all or nothing).
    kept = Upload.objects.get()
    assert kept.status == Upload.Status.FAILED
    assert kept.error == str(refused.value).removeprefix("broken.json: ")


def test_the_same_result_file_twice_is_two_runs_over_one_kept_upload() -> None:
    first = benchmark_run_import_path(path=BASELINE, meta={"gpu_utilization_pct": "80"})
    second = benchmark_run_import_path(path=BASELINE, meta={"gpu_utilization_pct": "85"}, name="b")

    assert first.upload_id == second.upload_id
    assert (first.name, second.name) == ("vllm_baseline.json", "b")
    stored = Upload.objects.get(pk=first.upload_id)
    assert (first.tool, stored.status, stored.format) == ("vllm", "succeeded", "vllm")
    assert BenchmarkRun.objects.count() == 2
