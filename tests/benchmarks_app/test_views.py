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

from audit_app.models import AuditEvent, Upload
from benchmarks_app.models import BenchmarkRun, Gate
from tests.benchmarks_app.curve_samples import (
    BASELINE_POINTS,
    CANDIDATE_POINTS,
    HOSTED,
    import_curve,
    point_files,
)
from tests.benchmarks_app.curve_samples import MODEL as CURVE_MODEL
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
    # The raw file is kept, failed with the reason; no run was recorded.
    kept = Upload.objects.get()
    assert (kept.original_name, kept.status) == ("broken.json", Upload.Status.FAILED)
    assert not BenchmarkRun.objects.exists()


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
        "Error rate": "0.0 %",  # 0 failed of 50
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
    assert "mode always on, cold start 0 ms, traffic: CSV ·" in html
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
    # The Pareto chart, from the gate's recorded curves: one point a side at 1000 / p95 TPOT
    # tok/s per user and decode tok/s / 8 GPUs, which is each side's operating point.
    pareto = response.context["pareto_figure"]
    assert [trace["name"] for trace in pareto["data"]] == [
        "Baseline",
        "Candidate",
        "operating point",
    ]
    by_hand = {side: metrics_by_hand(path) for side, path in (("b", BASELINE), ("c", CANDIDATE))}
    for trace, side in zip(pareto["data"][:2], "bc", strict=True):
        assert trace["x"] == pytest.approx([1000 / by_hand[side]["tpot_p95_ms"]], rel=1e-12)
        assert trace["y"] == pytest.approx([by_hand[side]["decode_tokens_per_s"] / 8], rel=1e-12)
    assert pareto["layout"]["yaxis"]["title"]["text"] == "Output tok/s per accelerator"
    assert "shapes" not in pareto["layout"]  # no SLO, no SLO line
    assert 'id="pareto-data"' in html and "cost-vs-tpot" not in html


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


# --- runs of several load points (curve_samples.py has the numbers) ----------------------


def _curves() -> tuple[BenchmarkRun, BenchmarkRun]:
    return import_curve(), import_curve(CANDIDATE_POINTS, prefix="candidate")


def _run_page(client: Client, run: BenchmarkRun, query: str = "") -> Any:
    return client.get(f"{PAGE}runs/{run.pk}/{query}")


ROLES = ["engineer_user", "finops_user", "manager_user"]


@pytest.mark.parametrize("role", ROLES)
def test_a_curve_run_page_shows_every_point_and_the_first_points_metrics(
    client: Client, request: Any, role: str
) -> None:
    run = import_curve()
    client.force_login(request.getfixturevalue(role))
    response = _run_page(client, run)
    assert response.status_code == 200
    rows = [
        {k: row[k] for k in ("label", "load", "completed", "failed", "error_rate", "decode")}
        | {k: row[k] for k in ("ttft", "tpot", "per_gpu_hour", "cost", "selected")}
        for row in response.context["point_rows"]
    ]
    assert rows == [
        {
            "label": "concurrency 4",
            "load": "concurrency 4",
            "completed": "101",
            "failed": "49",
            "error_rate": "32.7 %",  # 49 / 150
            "decode": "2,020.0",  # 20,200 tokens / 10 s
            "ttft": "250 ms",
            "tpot": "20.0 ms",
            "per_gpu_hour": "1,818,000",  # 2,020 x 3,600 / 4
            "cost": "$1.38",  # $2.50 x 4 / (2,020 x 3,600) x 1e6 = $1.3751
            "selected": True,
        },
        {
            "label": "concurrency 16",
            "load": "concurrency 16",
            "completed": "200",
            "failed": "0",
            "error_rate": "0.0 %",
            "decode": "4,000.0",  # 80,000 / 20 s
            "ttft": "600 ms",
            "tpot": "40.0 ms",
            "per_gpu_hour": "3,600,000",  # 4,000 x 3,600 / 4
            "cost": "$0.694",  # $10 / (4,000 x 3,600) x 1e6 = $0.69444
            "selected": False,
        },
    ]
    assert response.context["failures"] == ["49 of 150 requests failed at concurrency 4 (32.7 %)"]
    html = response.content.decode()
    assert "<li>49 of 150 requests failed at concurrency 4 (32.7 %)</li>" in html
    assert f'href="/benchmarks/runs/{run.pk}/?point=1">concurrency 16</a>' in html
    assert "self-hosted · 2 points · busy-only cost <strong>$1.38</strong>" in html
    metrics = {row["label"]: row["text"] for row in response.context["metric_rows"]}
    assert (metrics["Decode tok/s"], metrics["Error rate"]) == ("2,020.0", "32.7 %")
    curve = response.context["curve_figure"]["data"][0]
    assert (curve["x"], curve["y"]) == ([20.0, 40.0], [2020.0, 4000.0])  # by p95 TPOT
    fields = {row["label"]: row["values"] for row in response.context["field_rows"]}
    assert fields["Accelerators per replica"] == ["4"]
    assert fields["$ per accelerator-hour"] == ["$2.50"]
    assert "num_gpus" not in fields and "usd_per_gpu_hour" not in html.split("run-edit-form")[0]
    assert ('id="run-edit-form"' in html) == (role == "engineer_user")


def test_the_point_query_selects_the_point_whose_metrics_are_shown(
    client: Client, finops_user: Any
) -> None:
    run = import_curve()
    client.force_login(finops_user)
    response = _run_page(client, run, "?point=1")
    assert response.status_code == 200
    assert [row["selected"] for row in response.context["point_rows"]] == [False, True]
    metrics = {row["label"]: row["text"] for row in response.context["metric_rows"]}
    assert (metrics["Decode tok/s"], metrics["P95 TPOT"]) == ("4,000.0", "40.0 ms")
    assert response.context["usd_per_million"] == pytest.approx(Decimal(10_000_000) / 14_400_000)
    assert '<h2 id="point-heading">Metrics at concurrency 16</h2>' in response.content.decode()
    # A point the run does not have is a 400 naming the value; the first point is shown.
    for wrong, reason in (("2", "must be between 0 and 1"), ("first", "is not a whole number")):
        refused = _run_page(client, run, f"?point={wrong}")
        assert refused.status_code == 400
        assert refused.context["point_error"] == (
            f"point={wrong!r} {reason}; showing point 0 instead."
        )
        assert refused.context["selected"].index == 0


def test_a_hosted_run_is_priced_per_token_and_has_no_accelerator_figures(
    client: Client, manager_user: Any
) -> None:
    run = import_curve(prefix="hosted", meta=HOSTED)
    client.force_login(manager_user)
    response = _run_page(client, run)
    # (input tokens x $0.50 + output tokens x $1.50) / output tokens, per 1M output tokens:
    # (101,000 x 0.5 + 20,200 x 1.5) / 20,200 = $4.00; (200,000 x 0.5 + 80,000 x 1.5) / 80,000
    # = $2.75.
    assert [row["cost"] for row in response.context["point_rows"]] == ["$4.00", "$2.75"]
    assert [row["per_gpu_hour"] for row in response.context["point_rows"]] == [
        "not applicable",
        "not applicable",
    ]
    metrics = {row["label"]: row for row in response.context["metric_rows"]}
    for label in ("Output tokens per GPU-hour", "GPU utilization", "Tokens per joule"):
        assert (metrics[label]["text"], metrics[label]["source"]) == (
            "not applicable",
            "a hosted API",
        )
    assert "vllm · meta-llama/Llama-3.1-8B-Instruct · hosted (together_ai) · 2 points" in (
        response.content.decode()
    )


# --- editing a run --------------------------------------------------------------------------


def _edit_form(client: Client, run: BenchmarkRun, **changes: str) -> dict[str, str]:
    initial = _run_page(client, run).context["edit_form"].initial
    return {key: "" if value is None else str(value) for key, value in initial.items()} | changes


def test_an_engineer_edits_a_run_and_the_edit_is_audited(
    client: Client, engineer_user: Any
) -> None:
    run = import_curve()
    client.force_login(engineer_user)
    response = client.post(f"{PAGE}runs/{run.pk}/", _edit_form(client, run, quantization="int4"))
    assert (response.status_code, response["Location"]) == (302, f"/benchmarks/runs/{run.pk}/")
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        f"Run {run.pk} updated: quantization → int4"
    ]
    run.refresh_from_db()
    assert run.fields["quantization"] == "int4"
    event = AuditEvent.objects.get(action="run_edited")
    assert (event.actor, event.object_id) == (engineer_user, str(run.pk))
    assert event.details == {"changes": {"quantization": ["", "int4"]}}

    # Fewer accelerators: every point's cost and GPU-hour figure is recomputed.
    response = client.post(f"{PAGE}runs/{run.pk}/", _edit_form(client, run, num_gpus="2"))
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        f"Run {run.pk} updated: accelerators per replica → 2"
    ]
    rows = _run_page(client, run).context["point_rows"]
    # $2.50 x 2 / (2,020 x 3,600) x 1e6 = $0.68757; 2,020 x 3,600 / 2 = 3,636,000
    assert [(r["cost"], r["per_gpu_hour"]) for r in rows][0] == ("$0.688", "3,636,000")


def test_an_unchanged_edit_form_changes_nothing(client: Client, engineer_user: Any) -> None:
    run = import_curve()
    client.force_login(engineer_user)
    response = client.post(f"{PAGE}runs/{run.pk}/", _edit_form(client, run))
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        f"Run {run.pk}: nothing changed."
    ]
    assert not AuditEvent.objects.filter(action="run_edited").exists()


def test_a_bad_edit_is_a_400_on_its_field(client: Client, engineer_user: Any) -> None:
    run = import_curve()
    client.force_login(engineer_user)
    response = client.post(f"{PAGE}runs/{run.pk}/", _edit_form(client, run, num_gpus="eight"))
    assert response.status_code == 400
    assert response.context["edit_form"].errors == {
        "num_gpus": ["num_gpus must be a whole number of at least 1, got 'eight'"]
    }
    assert '<details id="edit-run" open>' in response.content.decode()
    run.refresh_from_db()
    assert run.fields["num_gpus"] == 4
    assert not AuditEvent.objects.filter(action="run_edited").exists()


@pytest.mark.parametrize("role", ["finops_user", "manager_user"])
def test_only_engineers_edit_a_run(client: Client, request: Any, role: str) -> None:
    run = import_curve()
    client.force_login(request.getfixturevalue(role))
    response = client.post(f"{PAGE}runs/{run.pk}/", {"name": run.name, "quantization": "int4"})
    assert response.status_code == 403
    run.refresh_from_db()
    assert run.fields["quantization"] == ""


# --- importing several files, and the new run fields, from the page -------------------------


def test_several_files_in_one_field_import_one_curve(client: Client, engineer_user: Any) -> None:
    client.force_login(engineer_user)
    files = [
        SimpleUploadedFile(name, data) for data, name in point_files(BASELINE_POINTS, prefix="b")
    ]
    response = client.post(
        PAGE,
        {
            "file": files,
            "format": "auto",
            "name": "sweep",
            "serving": "hosted",
            "provider": "together_ai",
            "usd_per_million_input": "0.50",
            "usd_per_million_output": "1.50",
            "canonical_model": "llama-3.1-8b",
        },
    )
    run = BenchmarkRun.objects.get()
    assert (response.status_code, response["Location"]) == (302, f"/benchmarks/runs/{run.pk}/")
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        f"Imported run {run.pk} (2 points, vllm, {CURVE_MODEL})."
    ]
    assert list(run.points.values_list("label", "upload__original_name")) == [
        ("concurrency 4", "b_conc4.json"),
        ("concurrency 16", "b_conc16.json"),
    ]
    assert {k: run.fields[k] for k in ("serving", "provider", "canonical_model")} == {
        "serving": "hosted",
        "provider": "together_ai",
        "canonical_model": "llama-3.1-8b",
    }
    assert (run.fields["usd_per_million_input"], run.fields["usd_per_million_output"]) == (
        "0.50",
        "1.50",
    )


def test_an_empty_file_among_several_is_named(client: Client, engineer_user: Any) -> None:
    client.force_login(engineer_user)
    [(data, name)] = point_files(BASELINE_POINTS[:1], prefix="b")
    files = [SimpleUploadedFile(name, data), SimpleUploadedFile("empty.json", b"")]
    response = client.post(PAGE, {"file": files, "format": "auto"})
    assert response.status_code == 400
    assert response.context["run_form"].errors == {
        "file": ["empty.json: The submitted file is empty."]
    }
    assert not BenchmarkRun.objects.exists()


def test_the_forms_have_several_files_the_hosted_fields_and_the_slo(
    client: Client, engineer_user: Any, finops_user: Any
) -> None:
    client.force_login(engineer_user)
    html = client.get(PAGE).content.decode()
    file_input = '<input type="file" name="file" multiple required'
    assert f'{file_input} aria-describedby="id_file_helptext" id="id_file">' in html
    assert '<p class="help" id="id_file_helptext">One file, or several' in html
    for label in (
        "Serving",
        "API provider (hosted API)",
        "$ per 1M input tokens (hosted API)",
        "$ per 1M output tokens (hosted API)",
        "Canonical model (to match another provider&#x27;s spelling)",
    ):
        assert f">{label}</label>" in html
    # The empty state names the form, the API and the command, not the command's flags.
    assert "Import result files with the form below, with <code>POST /api/v1/benchmark-runs/" in (
        html
    )
    assert "<code>manage.py benchmark_import PATH [PATH ...]</code>" in html
    assert "--meta" not in html
    client.force_login(finops_user)
    assert "Engineers import result files on this page" in client.get(PAGE).content.decode()

    _curves()  # the gate form shows once there are runs
    client.force_login(engineer_user)
    html = client.get(PAGE).content.decode()
    assert '<label for="id_slo_ttft_ms">p95 TTFT limit (ms)</label>' in html
    assert '<label for="id_slo_tpot_ms">p95 TPOT limit (ms)</label>' in html


def test_the_list_shows_points_failures_serving_and_gate_costs(
    client: Client, engineer_user: Any, manager_user: Any
) -> None:
    baseline, candidate = _curves()
    hosted = import_curve(prefix="hosted", meta=HOSTED)
    client.force_login(engineer_user)
    client.post(PAGE, _gate_form(baseline, candidate, slo_tpot_ms="35"))
    client.force_login(manager_user)
    response = client.get(PAGE)
    rows = {
        row["run"].pk: (row["points"], row["failures"], row["serving"])
        for row in response.context["run_rows"]
    }
    assert rows == {
        baseline.pk: (2, "49 of 350 failed", "self-hosted"),  # 49 of 101 + 49 + 200 + 0
        candidate.pk: (2, "50 of 350 failed", "self-hosted"),
        hosted.pk: (2, "49 of 350 failed", "hosted"),
    }
    html = response.content.decode()
    assert (
        '<td class="num">4,800.0</td><td class="num">500 ms</td><td class="num">30.0 ms</td>'
        in (
            html  # the candidate's peak point, concurrency 16
        )
    )
    # The operating points' costs: $1.3751 (baseline, concurrency 4) → $0.5787 (candidate,
    # concurrency 16: $10 / (4,800 x 3,600) x 1e6).
    [gate_row] = response.context["gate_rows"]
    assert gate_row["costs"] == {"baseline": "$1.38", "candidate": "$0.579"}
    assert '<td class="num">$1.38 → $0.579</td>' in html


# --- a gate over curves, with an SLO --------------------------------------------------------


def test_slo_fields_reach_the_gate(client: Client, engineer_user: Any) -> None:
    baseline, candidate = _curves()
    client.force_login(engineer_user)
    response = client.post(
        PAGE, _gate_form(baseline, candidate, slo_ttft_ms="550", slo_tpot_ms="35")
    )
    gate = Gate.objects.get()
    assert response["Location"] == f"/benchmarks/gates/{gate.pk}/"
    assert gate.inputs["slo"] == {"ttft_ms": 550.0, "tpot_ms": 35.0}
    assert gate.result["slo"] == {"ttft_ms": 550.0, "tpot_ms": 35.0}
    # Baseline: concurrency 16 (p95 TTFT 600 ms, TPOT 40 ms) is outside; concurrency 4 is in.
    # Candidate: concurrency 16 (500 ms, 30 ms) is in and is the faster.
    operating = gate.result["operating_point"]
    assert (operating["baseline"]["label"], operating["candidate"]["label"]) == (
        "concurrency 4",
        "concurrency 16",
    )


@pytest.mark.parametrize(
    ("values", "field", "message"),
    [
        (
            {"slo_tpot_ms": "0"},
            "slo_tpot_ms",
            "slo tpot_ms must be a number of milliseconds above 0",
        ),
        (
            {"slo_ttft_ms": "-5"},
            "slo_ttft_ms",
            "slo ttft_ms must be a number of milliseconds above 0",
        ),
        ({"slo_ttft_ms": "soon"}, "slo_ttft_ms", "Enter a number."),
    ],
    ids=["zero TPOT", "negative TTFT", "not a number"],
)
def test_a_bad_slo_is_a_400_on_its_field(
    client: Client, engineer_user: Any, values: dict[str, str], field: str, message: str
) -> None:
    baseline, candidate = _curves()
    client.force_login(engineer_user)
    response = client.post(PAGE, _gate_form(baseline, candidate, **values))
    assert response.status_code == 400
    assert response.context["gate_form"].errors == {field: [message]}
    assert not Gate.objects.exists()


@pytest.mark.parametrize("role", ROLES)
def test_a_curve_gate_page_groups_checks_by_point_with_slo_and_pareto(
    client: Client, engineer_user: Any, request: Any, role: str
) -> None:
    baseline, candidate = _curves()
    client.force_login(engineer_user)
    location = client.post(PAGE, _gate_form(baseline, candidate, slo_tpot_ms="35"))["Location"]
    client.force_login(request.getfixturevalue(role))
    response = client.get(location)
    assert response.status_code == 200
    html = response.content.decode()
    assert '<p class="verdict-word" data-testid="verdict">FAIL</p>' in html
    assert "SLO: p95 TPOT ≤ 35 ms." in html
    assert [
        (r["side"], r["point"], r["tokens"], r["ttft"], r["tpot"], r["cost"])
        for r in response.context["operating_rows"]
    ] == [
        ("baseline", "concurrency 4", "2,020.0", "250 ms", "20.0 ms", "$1.38"),
        ("candidate", "concurrency 16", "4,800.0", "500 ms", "30.0 ms", "$0.579"),
    ]
    groups = response.context["point_groups"]
    assert [g["where"] for g in groups] == [
        "concurrency 4",
        "concurrency 16",
        "the operating point",
    ]
    at_4 = {c["metric"]: c for c in groups[0]["checks"]}
    # Error rate 49 / 150 = 32.67 % → 50 / 150 = 33.33 %: +0.67 points, over the 0.5 allowed.
    error = at_4["error_rate_pct"]
    assert (error["baseline_text"], error["candidate_text"], error["change_text"]) == (
        "32.7 %",
        "33.3 %",
        "+0.7 pts",
    )
    assert not error["passed"]
    decode = at_4["decode_tokens_per_s"]  # 2,020 → 2,000 tok/s: −0.99 %
    assert (decode["change_text"], decode["passed"]) == ("−1.0 %", False)
    [slo_cost] = groups[2]["checks"]  # $1.3751 → $0.5787: −57.9 %
    assert (slo_cost["baseline_text"], slo_cost["candidate_text"], slo_cost["change_text"]) == (
        "$1.38",
        "$0.579",
        "−57.9 %",
    )
    assert '<th scope="colgroup" colspan="7">Concurrency 16</th>' in html
    pareto = response.context["pareto_figure"]
    traces = {trace["name"]: trace for trace in pareto["data"]}
    # x = 1000 / p95 TPOT, y = decode tok/s / 4 GPUs, in order of x.
    assert (traces["Baseline"]["x"], traces["Baseline"]["y"]) == ([25.0, 50.0], [1000.0, 505.0])
    assert traces["Candidate"]["x"] == pytest.approx([1000 / 30, 50.0])
    assert traces["Candidate"]["y"] == [1200.0, 500.0]
    stars = traces["operating point"]
    assert stars["x"] == pytest.approx([50.0, 1000 / 30])
    assert stars["y"] == [505.0, 1200.0]
    [line] = pareto["layout"]["shapes"]
    assert line["x0"] == line["x1"] == pytest.approx(1000 / 35)
    fields = {row["label"]: row["values"] for row in response.context["field_rows"]}
    assert fields["Accelerators per replica"] == ["4", "4"]


def test_a_gate_with_a_hosted_side_charts_tokens_per_dollar_and_lists_unmatched_points(
    client: Client, engineer_user: Any
) -> None:
    baseline = import_curve()
    # The candidate, a hosted API, measured concurrency 4 and 64: 16 and 64 are unmatched.
    hosted_points = (CANDIDATE_POINTS[0], (64, 20, 200, 0, 96_000, 500, 30))
    candidate = import_curve(hosted_points, prefix="api", meta=HOSTED)
    client.force_login(engineer_user)
    location = client.post(PAGE, _gate_form(baseline, candidate))["Location"]
    response = client.get(location)
    assert response.context["unmatched"] == [
        "Baseline point 2 (concurrency 16, input 1,000 / output 200): no candidate point at the "
        "same load and lengths.",
        "Candidate point 2 (concurrency 64, input 1,000 / output 200): no baseline point at the "
        "same load and lengths.",
    ]
    html = response.content.decode()
    assert "<li>Candidate prices: stated: $0.50 input, $1.50 output per 1M tokens</li>" in html
    assert "Baseline: self-hosted · Candidate: hosted" in html
    assert "not applicable on the candidate (a hosted API)" in html
    pareto = response.context["pareto_figure"]
    assert pareto["layout"]["yaxis"]["title"]["text"] == "Output tokens per dollar"
    traces = {trace["name"]: trace for trace in pareto["data"]}
    # 1e6 / cost per 1M output tokens, in order of 1000 / p95 TPOT. Baseline (4 GPUs at $2.50):
    # $10 / (4,000 x 3,600) x 1e6 at concurrency 16 (x = 25), $10 / (2,020 x 3,600) x 1e6 at
    # 4 (x = 50). Candidate: (200,000 x $0.50 + 96,000 x $1.50) / 96,000 = $2.5417 at
    # concurrency 64 (x = 33.3), (100,000 x $0.50 + 20,000 x $1.50) / 20,000 = $4.00 at 4.
    assert traces["Baseline"]["y"] == pytest.approx(
        [1e6 / (1e7 / 14_400_000), 1e6 / (1e7 / 7_272_000)]
    )
    assert traces["Candidate"]["x"] == pytest.approx([1000 / 30, 50.0])
    assert traces["Candidate"]["y"] == pytest.approx([1e6 / (244_000 / 96_000), 1e6 / 4.0])
