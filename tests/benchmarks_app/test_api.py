"""Every benchmarks API route (`benchmarks_app/api/urls.py`): success, bad input (400 naming the
field), the roles refused, and 404.

Runs: ``/api/v1/benchmark-runs/`` (GET list, POST import) and ``/api/v1/benchmark-runs/<id>/``.
Gates: ``/api/v1/gates/`` (GET list, POST create) and ``/api/v1/gates/<id>/``.
A gate for a recommendation (the link, its refusals, every role x status) is in
test_gate_link.py and tests/audit_app/access/test_authorization_matrix.py.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from audit_app.models import Upload
from benchmarks_app.models import BenchmarkRun, Gate
from tests.benchmarks_app.gate_samples import (
    BASELINE,
    CANDIDATE,
    RUNS_MODEL,
    import_runs,
    metrics_by_hand,
    workload_traffic,
)

# The gate inputs these tests set; the run fields and SLO it records are tested on their own.
INPUT_KEYS = ("mode", "cold_start_seconds", "traffic", "traffic_hours", "tolerances")

pytestmark = pytest.mark.django_db
RUNS = "/api/v1/benchmark-runs/"
GATES = "/api/v1/gates/"
NO_ROLE = "Your account has no role that may use this endpoint."
NOT_FOUND = {"detail": "Not found.", "errors": {}}
# Three hours of traffic, each below one replica's capacity (baseline 578 tok/s x 3,600 s =
# 2.08M tokens an hour; candidate 649 tok/s): one replica of 8 GPUs at $4 when there is demand.
TRAFFIC_CSV = "hour,output_tokens\n0,1000000\n1,0\n2,1000000\n"


def _post_run(client: Client, path: Any = BASELINE, **data: Any) -> Any:
    return client.post(RUNS, {"file": SimpleUploadedFile(path.name, path.read_bytes()), **data})


def _gate_body(baseline: BenchmarkRun, candidate: BenchmarkRun, **values: Any) -> dict[str, Any]:
    return {"baseline": baseline.pk, "candidate": candidate.pk, **values}


# --- runs: list and import ------------------------------------------------------------------


def test_an_engineer_imports_a_run_and_reads_its_metrics_computed_by_hand(
    client: Client, engineer_user: Any
) -> None:
    client.force_login(engineer_user)
    response = _post_run(client, name="baseline", gpu_utilization_pct="80", dataset="sharegpt-v3")
    assert response.status_code == 201
    body = response.json()
    run = BenchmarkRun.objects.get()
    assert body["id"] == run.pk
    assert (body["name"], body["tool"], body["model"]) == ("baseline", "vllm", RUNS_MODEL)
    assert body["sha256"] == Upload.objects.get(kind="benchmark").sha256
    assert body["assumptions"] == []
    # The file's own fields, with the stated ones winning.
    assert body["fields"]["dataset"] == "sharegpt-v3"
    assert (body["fields"]["num_gpus"], body["fields"]["usd_per_gpu_hour"]) == (8, "4.00")
    assert body["fields"]["gpu_utilization_pct"] == 80.0
    expected = metrics_by_hand(BASELINE)
    assert {k: body["metrics"][k] for k in expected} == pytest.approx(expected, rel=1e-12)
    # 6,400 output tokens / 11.064596 s, and vLLM's own percentiles in the file agree.
    assert body["metrics"]["decode_tokens_per_s"] == pytest.approx(578.4214805493124, rel=1e-12)
    assert body["metrics"]["ttft_p95_ms"] == pytest.approx(444.2928, rel=1e-12)
    assert body["metrics"]["e2e_p95_ms"] == pytest.approx(4827.8592, rel=1e-12)
    assert body["metrics"]["sources"]["gpu_utilization_pct"] == "stated"


def test_the_run_list_pages_newest_first(client: Client, finops_user: Any) -> None:
    baseline, candidate = import_runs()
    client.force_login(finops_user)
    body = client.get(RUNS).json()
    assert (body["count"], body["next"], body["previous"]) == (2, None, None)
    assert [r["id"] for r in body["results"]] == [candidate.pk, baseline.pk]
    first = client.get(RUNS, {"limit": 1}).json()
    assert [r["id"] for r in first["results"]] == [candidate.pk]
    assert first["next"] == f"http://testserver{RUNS}?limit=1&offset=1"


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({}, "file", "No file was submitted."),
        ({"format": "jmeter"}, "format", '"jmeter" is not a valid choice.'),
        ({"format": "aiperf"}, "file", "vllm_baseline.json: "),
        ({"num_gpus": "eight"}, "meta", "num_gpus"),
    ],
    ids=["no file", "unknown format", "wrong tool", "bad run field"],
)
def test_a_bad_run_is_a_400_naming_the_field(
    client: Client, engineer_user: Any, data: dict[str, str], field: str, message: str
) -> None:
    client.force_login(engineer_user)
    response = _post_run(client, **data) if data else client.post(RUNS, {"name": "no file"})
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert list(errors) == [field]
    assert message in errors[field][0]
    assert not BenchmarkRun.objects.exists()


def test_a_bad_run_field_names_the_value(client: Client, engineer_user: Any) -> None:
    client.force_login(engineer_user)
    body = _post_run(client, num_gpus="eight").json()
    assert "'eight'" in body["errors"]["meta"][0]


@pytest.mark.parametrize("role", ["finops_user", "manager_user", "no_role_user"])
def test_only_engineers_import_runs(client: Client, request: Any, role: str) -> None:
    client.force_login(request.getfixturevalue(role))
    response = _post_run(client)
    assert response.status_code == 403
    assert not BenchmarkRun.objects.exists() and not Upload.objects.exists()


def test_a_user_with_no_role_cannot_list_runs(client: Client, no_role_user: Any) -> None:
    import_runs()
    client.force_login(no_role_user)
    response = client.get(RUNS)
    assert (response.status_code, response.json()) == (403, {"detail": NO_ROLE, "errors": {}})


@pytest.mark.parametrize("limit", ["0", "many"])
def test_a_bad_page_parameter_is_a_400_naming_it(
    client: Client, manager_user: Any, limit: str
) -> None:
    client.force_login(manager_user)
    response = client.get(RUNS, {"limit": limit})
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["limit"]


# --- runs: detail ---------------------------------------------------------------------------


def test_one_run(client: Client, manager_user: Any) -> None:
    baseline, _ = import_runs()
    client.force_login(manager_user)
    body = client.get(f"{RUNS}{baseline.pk}/").json()
    assert (body["id"], body["name"], body["tool"]) == (baseline.pk, "vllm_baseline.json", "vllm")
    assert body["sha256"] == baseline.upload.sha256
    expected = metrics_by_hand(BASELINE)
    assert {k: body["metrics"][k] for k in expected} == pytest.approx(expected, rel=1e-12)


def test_an_unknown_run_is_a_404(client: Client, engineer_user: Any) -> None:
    client.force_login(engineer_user)
    response = client.get(f"{RUNS}999/")
    assert (response.status_code, response.json()) == (404, NOT_FOUND)


def test_a_user_with_no_role_cannot_read_a_run(client: Client, no_role_user: Any) -> None:
    baseline, _ = import_runs()
    client.force_login(no_role_user)
    assert client.get(f"{RUNS}{baseline.pk}/").status_code == 403


def test_anonymous_callers_are_asked_to_sign_in(client: Client) -> None:
    baseline, _ = import_runs()
    for path in (RUNS, f"{RUNS}{baseline.pk}/", GATES):
        assert client.get(path).status_code == 401
    assert client.post(GATES, {}).status_code == 401


# --- gates: create and list -----------------------------------------------------------------


def test_a_gate_on_a_traffic_csv_records_its_inputs_and_costs(
    client: Client, engineer_user: Any
) -> None:
    baseline, candidate = import_runs()
    client.force_login(engineer_user)
    response = client.post(
        GATES,
        _gate_body(
            baseline,
            candidate,
            mode="scale_to_zero",
            cold_start_seconds=36,
            traffic_csv=TRAFFIC_CSV,
            tolerances={"ttft_p95_ms": 5},
        ),
        content_type="application/json",
    )
    assert response.status_code == 201
    body = response.json()
    gate = Gate.objects.get()
    assert (body["id"], body["verdict"], body["recommendation"]) == (gate.pk, "pass", None)
    assert (body["baseline"], body["candidate"]) == (baseline.pk, candidate.pk)
    assert body["baseline_sha256"] == baseline.upload.sha256
    assert {k: body["inputs"][k] for k in INPUT_KEYS} == {
        "mode": "scale_to_zero",
        "cold_start_seconds": 36.0,
        "traffic": "CSV",
        "traffic_hours": 3,
        "tolerances": {"ttft_p95_ms": 5.0},
    }
    # Both runs need one replica (8 GPUs x $4) in hours 0 and 2, for 2M tokens in all.
    # Scale to zero: 2 replica-hours + one cold start of 36 s (0.01 h) = 16.08 GPU-hours
    # = $64.32, $32.16 per 1M. Always on and autoscale keep a replica all 3 hours: $96, $48.
    costs = {
        mode: {side: Decimal(cost) for side, cost in sides.items()}
        for mode, sides in body["result"]["cost_by_mode"].items()
    }
    assert costs == {
        "always_on": {"baseline": Decimal(48), "candidate": Decimal(48)},
        "autoscale": {"baseline": Decimal(48), "candidate": Decimal(48)},
        "scale_to_zero": {"baseline": Decimal("32.16"), "candidate": Decimal("32.16")},
    }
    chosen = body["result"]["cost_per_million_tokens"]
    assert {side: Decimal(cost) for side, cost in chosen.items()} == {
        "baseline": Decimal("32.16"),
        "candidate": Decimal("32.16"),
    }
    checks = {c["metric"]: c for c in body["result"]["checks"]}
    # (6,400 / 9.864894 s) / (6,400 / 11.064596 s) - 1 = 11.064596 / 9.864894 - 1
    assert checks["decode_tokens_per_s"]["delta_pct"] == pytest.approx(
        (11.064596 / 9.864894 - 1) * 100, rel=1e-9
    )
    assert checks["ttft_p95_ms"]["baseline"] == pytest.approx(444.2928, rel=1e-12)
    assert checks["ttft_p95_ms"]["candidate"] == pytest.approx(346.5483, rel=1e-12)


def test_a_gate_with_no_traffic_is_priced_always_busy(client: Client, engineer_user: Any) -> None:
    baseline, candidate = import_runs()
    client.force_login(engineer_user)
    body = client.post(GATES, _gate_body(baseline, candidate)).json()
    assert {k: body["inputs"][k] for k in INPUT_KEYS} == {
        "mode": "always_on",
        "cold_start_seconds": 0.0,
        "traffic": "always busy",
        "traffic_hours": 0,
        "tolerances": {},
    }
    # Busy only: $4 x 8 GPUs / (6,400 / 11.064596 tok/s x 3,600 s) x 1e6.
    expected = Decimal(32) / (Decimal(6400) / Decimal("11.064596") * 3600) * 1_000_000
    baseline_cost = Decimal(body["result"]["cost_per_million_tokens"]["baseline"])
    assert abs(baseline_cost - expected) < Decimal("1e-9")


def test_a_gate_on_a_workloads_traffic_records_that_source(
    client: Client, engineer_user: Any
) -> None:
    baseline, candidate = import_runs()
    workload_traffic(workload="evals", model=RUNS_MODEL, day="2026-11-10")
    client.force_login(engineer_user)
    body = client.post(
        GATES, _gate_body(baseline, candidate, traffic_workload="evals", traffic_csv="")
    ).json()
    assert body["inputs"]["traffic"] == "workload evals, 2026-11-10 to 2026-11-10"
    assert body["inputs"]["traffic_hours"] == 24  # one day of hours


def test_the_gate_list_pages_newest_first(client: Client, engineer_user: Any) -> None:
    baseline, candidate = import_runs()
    client.force_login(engineer_user)
    first = client.post(GATES, _gate_body(baseline, candidate)).json()["id"]
    second = client.post(GATES, _gate_body(candidate, baseline)).json()["id"]
    body = client.get(GATES).json()
    assert (body["count"], [g["id"] for g in body["results"]]) == (2, [second, first])
    assert [g["verdict"] for g in body["results"]] == ["fail", "pass"]


@pytest.mark.parametrize(
    ("values", "field", "message"),
    [
        ({"baseline": None}, "baseline", "This field is required."),
        ({"baseline": 999}, "baseline", "no benchmark run with id 999"),
        ({"candidate": 998}, "candidate", "no benchmark run with id 998"),
        ({"mode": "sometimes"}, "mode", '"sometimes" is not a valid choice.'),
        (
            {"cold_start_seconds": -1},
            "cold_start_seconds",
            "Ensure this value is greater than or equal to 0.",
        ),
        (
            {"traffic_csv": "hour,output_tokens\n0,lots\n"},
            "traffic_csv",
            "line 2: output_tokens must be a whole number ≥ 0, got 'lots'",
        ),
        (
            {"traffic_csv": "hour,output_tokens\n0,0\n1,0\n"},
            "traffic_csv",
            "the traffic CSV demands 0 output tokens in every hour; cost per 1M tokens is "
            "undefined",
        ),
        (
            {"traffic_csv": TRAFFIC_CSV, "traffic_workload": "evals"},
            "traffic_workload",
            "Give a traffic CSV or a workload to price the runs on, not both.",
        ),
        ({"traffic_workload": "nobody"}, "traffic_workload", "no traffic for workload 'nobody'"),
        (
            {"tolerances": {"ttft_p99_ms": 5}},
            "tolerances",
            "unknown metric(s) in tolerances: ttft_p99_ms; known: ",
        ),
        ({"tolerances": {"ttft_p95_ms": -5}}, "tolerances", "ttft_p95_ms"),
    ],
    ids=[
        "no baseline",
        "unknown baseline",
        "unknown candidate",
        "unknown mode",
        "negative cold start",
        "bad traffic line",
        "traffic of zeros",
        "CSV and workload",
        "workload without traffic",
        "unknown tolerance metric",
        "negative tolerance",
    ],
)
def test_bad_gate_input_is_a_400_naming_the_field_and_records_nothing(
    client: Client, engineer_user: Any, values: dict[str, Any], field: str, message: str
) -> None:
    baseline, candidate = import_runs()
    client.force_login(engineer_user)
    body = {k: v for k, v in {**_gate_body(baseline, candidate), **values}.items() if v is not None}
    response = client.post(GATES, body, content_type="application/json")
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert list(errors) == [field]
    assert errors[field][0].startswith(message)
    assert not Gate.objects.exists()


@pytest.mark.parametrize("role", ["finops_user", "manager_user", "no_role_user"])
def test_only_engineers_create_gates(client: Client, request: Any, role: str) -> None:
    baseline, candidate = import_runs()
    client.force_login(request.getfixturevalue(role))
    response = client.post(GATES, _gate_body(baseline, candidate))
    assert response.status_code == 403
    assert not Gate.objects.exists()


# --- gates: detail --------------------------------------------------------------------------


def test_one_gate(client: Client, engineer_user: Any, finops_user: Any) -> None:
    baseline, candidate = import_runs()
    client.force_login(engineer_user)
    created = client.post(GATES, _gate_body(baseline, candidate, traffic_csv=TRAFFIC_CSV)).json()
    client.force_login(finops_user)
    assert client.get(f"{GATES}{created['id']}/").json() == created


def test_an_unknown_gate_is_a_404(client: Client, manager_user: Any) -> None:
    client.force_login(manager_user)
    response = client.get(f"{GATES}999/")
    assert (response.status_code, response.json()) == (404, NOT_FOUND)


def test_a_user_with_no_role_cannot_read_gates(client: Client, no_role_user: Any) -> None:
    baseline, candidate = import_runs()
    client.force_login(no_role_user)
    assert client.get(GATES).status_code == 403
    assert client.get(f"{GATES}1/").status_code == 403


def test_runs_read_the_same_through_list_and_detail(client: Client, manager_user: Any) -> None:
    baseline, candidate = import_runs()
    client.force_login(manager_user)
    listed = {r["id"]: r for r in client.get(RUNS).json()["results"]}
    for run in (baseline, candidate):
        assert client.get(f"{RUNS}{run.pk}/").json() == listed[run.pk]
    assert metrics_by_hand(CANDIDATE)["decode_tokens_per_s"] == pytest.approx(
        listed[candidate.pk]["metrics"]["decode_tokens_per_s"], rel=1e-12
    )
