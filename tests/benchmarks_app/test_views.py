"""Every benchmarks page (`benchmarks_app/urls.py`): success, bad input (400 naming the field),
the roles refused, and 404.

``/benchmarks/`` (GET the lists and forms; POST a run import or a gate), ``/benchmarks/runs/<id>/``
and ``/benchmarks/gates/<id>/``. Units on these pages: test_pages_formatting.py; a gate for a
recommendation from the page: test_gate_link.py.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from audit_app.models import Upload
from benchmarks_app.models import BenchmarkRun, Gate
from tests.benchmarks_app.gate_samples import (
    BASELINE,
    RUNS_MODEL,
    import_runs,
    metrics_by_hand,
    workload_traffic,
)

# The gate inputs these tests set; the run fields and SLO it records are tested on their own.
INPUT_KEYS = ("mode", "cold_start_seconds", "traffic", "traffic_hours", "tolerances")

pytestmark = pytest.mark.django_db
PAGE = "/benchmarks/"
TRAFFIC_CSV = "hour,output_tokens\n0,1000000\n1,0\n2,1000000\n"


def _run_form(path: Any = BASELINE, **values: str) -> dict[str, Any]:
    return {
        "file": SimpleUploadedFile(path.name, path.read_bytes()),
        "format": "auto",
        "name": "baseline",
        "gpu_utilization_pct": "80",
        **values,
    }


def _gate_form(baseline: BenchmarkRun, candidate: BenchmarkRun, **values: str) -> dict[str, Any]:
    return {
        "baseline": baseline.pk,
        "candidate": candidate.pk,
        "mode": "always_on",
        "cold_start_seconds": "0",
        "traffic_csv": "",
        "traffic_workload": "",
        **values,
    }


# --- the list page --------------------------------------------------------------------------


def test_an_engineer_sees_runs_gates_and_both_forms(client: Client, engineer_user: Any) -> None:
    baseline, candidate = import_runs()
    client.force_login(engineer_user)
    client.post(PAGE, _gate_form(baseline, candidate))
    gate = Gate.objects.get()
    response = client.get(PAGE)
    assert response.status_code == 200
    assert list(response.context["runs"]) == [candidate, baseline]
    assert list(response.context["gates"]) == [gate]
    html = response.content.decode()
    assert 'id="run-form"' in html and 'id="gate-form"' in html
    assert [v for v, _ in response.context["gate_form"].fields["mode"].choices] == [
        "always_on",
        "autoscale",
        "scale_to_zero",
    ]


@pytest.mark.parametrize("role", ["finops_user", "manager_user"])
def test_other_roles_read_the_lists_without_the_forms(
    client: Client, request: Any, role: str
) -> None:
    import_runs()
    client.force_login(request.getfixturevalue(role))
    response = client.get(PAGE)
    assert response.status_code == 200
    assert len(response.context["runs"]) == 2
    html = response.content.decode()
    assert 'id="run-form"' not in html and 'id="gate-form"' not in html


def test_a_user_with_no_role_is_refused_and_anonymous_sent_to_sign_in(
    client: Client, no_role_user: Any
) -> None:
    baseline, candidate = import_runs()
    for path in (PAGE, f"{PAGE}runs/{baseline.pk}/"):
        response = client.get(path)
        assert (response.status_code, response["Location"]) == (
            302,
            f"/accounts/login/?next={path}",
        )
    client.force_login(no_role_user)
    for path in (PAGE, f"{PAGE}runs/{baseline.pk}/"):
        assert client.get(path).status_code == 403


# --- importing a run ------------------------------------------------------------------------


def test_importing_a_run_opens_it_with_its_metrics_computed_by_hand(
    client: Client, engineer_user: Any
) -> None:
    client.force_login(engineer_user)
    response = client.post(PAGE, _run_form(dataset="sharegpt-v3"))
    run = BenchmarkRun.objects.get()
    assert (response.status_code, response["Location"]) == (302, f"/benchmarks/runs/{run.pk}/")
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        f"Imported run {run.pk} (vllm, {RUNS_MODEL})."
    ]
    assert (run.name, run.fields["dataset"], run.created_by) == (
        "baseline",
        "sharegpt-v3",
        engineer_user,
    )
    expected = metrics_by_hand(BASELINE)
    first = run.points.get(index=0).metrics
    assert {k: first[k] for k in expected} == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("values", "field", "message"),
    [
        ({"file": ""}, "file", "This field is required."),
        (
            {"format": "jmeter"},
            "format",
            "Select a valid choice. jmeter is not one of the available choices.",
        ),
        ({"format": "aiperf"}, "file", "vllm_baseline.json: "),
        # A run field that does not parse is shown on the file it was meant for.
        ({"num_gpus": "eight"}, "file", "num_gpus"),
    ],
    ids=["no file", "unknown format", "wrong tool", "bad run field"],
)
def test_a_bad_run_is_a_400_on_the_field(
    client: Client, engineer_user: Any, values: dict[str, str], field: str, message: str
) -> None:
    client.force_login(engineer_user)
    form = _run_form(**values)
    if form["file"] == "":
        del form["file"]
    response = client.post(PAGE, form)
    assert response.status_code == 400
    errors = response.context["run_form"].errors
    assert list(errors) == [field]
    assert errors[field][0].startswith(message) or message in errors[field][0]
    assert not BenchmarkRun.objects.exists()


def test_a_broken_file_is_a_sentence_not_a_traceback(client: Client, engineer_user: Any) -> None:
    client.force_login(engineer_user)
    response = client.post(
        PAGE,
        {"file": SimpleUploadedFile("broken.json", b'{"duration": 1'), "format": "auto"},
    )
    assert response.status_code == 400
    message = response.context["run_form"].errors["file"][0]
    assert message.startswith("broken.json: ") and "Traceback" not in message
    assert not Upload.objects.exists()  # the import is one transaction


@pytest.mark.parametrize("role", ["finops_user", "manager_user", "no_role_user"])
def test_only_engineers_import_runs_or_gate_from_the_page(
    client: Client, request: Any, role: str
) -> None:
    baseline, candidate = import_runs()
    client.force_login(request.getfixturevalue(role))
    assert client.post(PAGE, _run_form()).status_code == 403
    assert client.post(PAGE, _gate_form(baseline, candidate)).status_code == 403
    assert (BenchmarkRun.objects.count(), Gate.objects.count()) == (2, 0)


# --- creating a gate ------------------------------------------------------------------------


def test_a_gate_on_a_traffic_csv_opens_its_verdict(client: Client, engineer_user: Any) -> None:
    baseline, candidate = import_runs()
    client.force_login(engineer_user)
    response = client.post(
        PAGE,
        _gate_form(
            baseline,
            candidate,
            mode="scale_to_zero",
            cold_start_seconds="36",
            traffic_csv=TRAFFIC_CSV,
        ),
    )
    gate = Gate.objects.get()
    assert (response.status_code, response["Location"]) == (302, f"/benchmarks/gates/{gate.pk}/")
    assert {k: gate.inputs[k] for k in INPUT_KEYS} == {
        "mode": "scale_to_zero",
        "cold_start_seconds": 36.0,
        "traffic": "CSV",
        "traffic_hours": 3,
        "tolerances": {},
    }
    assert (gate.verdict, gate.created_by) == ("pass", engineer_user)
    # One replica of 8 GPUs at $4 in hours 0 and 2, plus a 36 s cold start (0.01 h):
    # 16.08 GPU-hours = $64.32 for 2M tokens.
    costs = gate.result["cost_per_million_tokens"]
    assert {side: Decimal(cost) for side, cost in costs.items()} == {
        "baseline": Decimal("32.16"),
        "candidate": Decimal("32.16"),
    }


def test_a_gate_on_a_workloads_traffic_records_that_source(
    client: Client, engineer_user: Any
) -> None:
    baseline, candidate = import_runs()
    workload_traffic(workload="evals", model=RUNS_MODEL, day="2026-11-10")
    client.force_login(engineer_user)
    client.post(PAGE, _gate_form(baseline, candidate, traffic_workload=" evals "))
    gate = Gate.objects.get()
    assert gate.inputs["traffic"] == "workload evals, 2026-11-10 to 2026-11-10"
    assert gate.inputs["traffic_hours"] == 24


@pytest.mark.parametrize(
    ("values", "field", "message"),
    [
        (
            {"baseline": "999"},
            "baseline",
            "Select a valid choice. That choice is not one of the available choices.",
        ),
        (
            {"mode": "sometimes"},
            "mode",
            "Select a valid choice. sometimes is not one of the available choices.",
        ),
        (
            {"cold_start_seconds": "-1"},
            "cold_start_seconds",
            "Ensure this value is greater than or equal to 0.",
        ),
        (
            {"traffic_csv": "hour,output_tokens\n0,lots\n"},
            "traffic_csv",
            "line 2: output_tokens must be a whole number ≥ 0, got 'lots'",
        ),
        (
            {"traffic_csv": "0,0\n"},
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
    ],
    ids=[
        "unknown baseline",
        "unknown mode",
        "negative cold start",
        "bad traffic line",
        "traffic of zeros",
        "CSV and workload",
        "workload without traffic",
    ],
)
def test_bad_gate_input_is_a_400_on_the_field_and_records_nothing(
    client: Client, engineer_user: Any, values: dict[str, str], field: str, message: str
) -> None:
    baseline, candidate = import_runs()
    client.force_login(engineer_user)
    response = client.post(PAGE, {**_gate_form(baseline, candidate), **values})
    assert response.status_code == 400
    assert response.context["gate_form"].errors == {field: [message]}
    assert not Gate.objects.exists()


# --- a run ----------------------------------------------------------------------------------


def test_a_run_page_shows_its_metrics_and_charts(client: Client, manager_user: Any) -> None:
    baseline, _ = import_runs()
    client.force_login(manager_user)
    response = client.get(f"/benchmarks/runs/{baseline.pk}/")
    assert response.status_code == 200
    rows = {row["label"]: row for row in response.context["metric_rows"]}
    expected = metrics_by_hand(BASELINE)
    assert rows["P95 TTFT"]["value"] == pytest.approx(expected["ttft_p95_ms"], rel=1e-12)
    assert rows["Decode tok/s"]["value"] == pytest.approx(
        expected["decode_tokens_per_s"], rel=1e-12
    )
    assert {label: row["text"] for label, row in rows.items()} == {
        "P50 TTFT": "325 ms",  # 324.7995
        "P95 TTFT": "444 ms",  # 444.2928
        "P50 TPOT": "31.4 ms",  # 31.3661
        "P95 TPOT": "35.4 ms",  # 35.3726
        "P95 ITL": "37.3 ms",  # 37.3251
        "P95 end-to-end latency": "4.83 s",  # 4,827.8592 ms
        "Decode tok/s": "578.4",  # 6,400 / 11.064596
        "Per-user decode tok/s": "31.9",  # 1,000 / 31.3661
        "Output tokens per GPU-hour": "260,290",  # 578.42148 x 3,600 / 8
        "GPU utilization": "80.0 %",  # stated
        "Tokens per joule": "—",  # no telemetry
    }
    assert rows["Tokens per joule"]["missing"].startswith("tokens per joule: attach")
    # $4 x 8 GPUs / (578.42148 tok/s x 3,600 s) x 1e6 = $15.3675
    assert "busy-only cost <strong>$15.37</strong> per 1M output tokens" in (
        response.content.decode()
    )
    distribution = response.context["distribution_figure"]["data"]
    assert [trace["name"] for trace in distribution] == ["TTFT (ms)", "TPOT (ms)"]
    assert len(distribution[0]["x"]) == 50  # one per request
    assert response.context["timeline_figure"]["data"][0]["name"] == "Output tokens/s"
    assert "telemetry_figure" not in response.context


def test_an_unknown_run_is_a_404(client: Client, engineer_user: Any) -> None:
    client.force_login(engineer_user)
    assert client.get("/benchmarks/runs/999/").status_code == 404


# --- a gate ---------------------------------------------------------------------------------


def test_a_gate_page_shows_its_verdict_inputs_and_charts(
    client: Client, engineer_user: Any, finops_user: Any
) -> None:
    baseline, candidate = import_runs()
    client.force_login(engineer_user)
    location = client.post(PAGE, _gate_form(baseline, candidate, traffic_csv=TRAFFIC_CSV))[
        "Location"
    ]
    client.force_login(finops_user)
    response = client.get(location)
    assert response.status_code == 200
    html = response.content.decode()
    assert '<p class="verdict-word" data-testid="verdict">PASS</p>' in html
    assert "mode always_on, cold start 0 ms, traffic: CSV ·" in html
    checks = {c["metric"]: c for c in response.context["checks"]}
    assert (checks["ttft_p95_ms"]["baseline_text"], checks["ttft_p95_ms"]["candidate_text"]) == (
        "444 ms",  # 444.2928
        "347 ms",  # 346.5483
    )
    assert checks["ttft_p95_ms"]["label"] == "P95 TTFT"
    cost = response.context["cost_figure"]["data"]
    assert [trace["name"] for trace in cost] == ["Baseline", "Candidate"]
    # Always on and autoscale keep one replica all 3 hours ($96 for 2M tokens); scale to zero
    # runs it 2 hours ($64).
    assert [trace["y"] for trace in cost] == [[48.0, 48.0, 32.0], [48.0, 48.0, 32.0]]
    scatter = response.context["scatter_figure"]["data"][0]
    assert scatter["text"] == [f"run {candidate.pk}", f"run {baseline.pk}"]  # newest first


def test_an_unknown_gate_is_a_404(client: Client, finops_user: Any) -> None:
    client.force_login(finops_user)
    assert client.get("/benchmarks/gates/999/").status_code == 404


def test_a_user_with_no_role_cannot_read_a_gate(
    client: Client, engineer_user: Any, no_role_user: Any
) -> None:
    baseline, candidate = import_runs()
    client.force_login(engineer_user)
    location = client.post(PAGE, _gate_form(baseline, candidate))["Location"]
    client.logout()
    assert client.get(location).status_code == 302
    client.force_login(no_role_user)
    assert client.get(location).status_code == 403
