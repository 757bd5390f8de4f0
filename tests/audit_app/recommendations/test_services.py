"""Overrides, recommendations and managers' decisions: services, API, pages and CLI."""

from __future__ import annotations

import io
import json
from decimal import Decimal
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import Recommendation, RecommendationEvent, Workload, WorkloadClassification
from audit_app.recommendations.services import recommendations_refresh
from audit_app.workloads.services import effective_class, workloads_classify

pytestmark = pytest.mark.django_db

# One asynchronous-looking workload on gpt-4o-mini, no batch API, no cost in the log:
# 20 requests x (10,000 input + 1,000 output) tokens at $0.15 / $0.60 per 1M
# = 20 x (0.0015 + 0.0006) = $0.042 over the window (1 day = 24 h).
EVALS = "started_at,ended_at,workload,provider,model,input_tokens,output_tokens\n" + "".join(
    f"2026-11-02T02:{i:02d}:00Z,2026-11-02T02:{i:02d}:30Z,evals,openai,gpt-4o-mini,10000,1000\n"
    for i in range(20)
)


@pytest.fixture(autouse=True)
def no_savings_floor(settings: Any) -> None:
    """The sample saves $0.64 a month, under the default $10 floor (tested on its own below)."""
    settings.RECOMMENDATION_MIN_SAVINGS_USD = 0


@pytest.fixture
def evals(db: Any, manager_user: Any) -> Workload:
    upload = upload_create(source=io.BytesIO(EVALS.encode()), original_name="e.csv", enqueue=False)
    upload_ingest(upload_id=upload.pk)
    workload = Workload.objects.get(name="evals")
    return workload


def _mark_async(client: Client, workload: Workload) -> Any:
    return client.patch(
        f"/api/v1/workloads/{workload.pk}/",
        data=json.dumps({"workload_class": "async", "reason": "nightly job"}),
        content_type="application/json",
    )


def test_override_roles_and_validation(
    client: Client, evals: Workload, finops_user: Any, engineer_user: Any
) -> None:
    client.force_login(finops_user)
    assert _mark_async(client, evals).status_code == 403
    client.force_login(engineer_user)
    missing = client.patch(
        f"/api/v1/workloads/{evals.pk}/",
        data=json.dumps({"workload_class": "async", "reason": " "}),
        content_type="application/json",
    )
    assert missing.status_code == 400
    assert missing.json()["errors"] == {"reason": ["This field may not be blank."]}
    bad = client.patch(
        f"/api/v1/workloads/{evals.pk}/",
        data=json.dumps({"workload_class": "soon", "reason": "x"}),
        content_type="application/json",
    )
    assert bad.status_code == 400 and "workload_class" in bad.json()["errors"]
    body = _mark_async(client, evals).json()
    assert body["workload_class"] == "async"
    assert body["override"]["by"] == "eli-engineer"
    assert body["override"]["reason"] == "nightly job"


def test_override_survives_reclassification(
    client: Client, evals: Workload, engineer_user: Any
) -> None:
    client.force_login(engineer_user)
    _mark_async(client, evals)
    workloads_classify()
    computed = WorkloadClassification.objects.get(workload=evals)
    assert computed.evidence  # the classifier still says its piece
    assert effective_class(evals) == "async"
    out = StringIO()
    call_command("workloads", "--json", stdout=out)
    [row] = json.loads(out.getvalue())
    assert row["workload_class"] == "async"
    assert row["override"]["workload_class"] == "async"
    assert row["computed_class"] == computed.workload_class
    assert isinstance(row["evidence"], list) and 0 <= row["confidence"] <= 1


def test_batch_recommendation_priced_by_hand(
    client: Client, evals: Workload, engineer_user: Any
) -> None:
    client.force_login(engineer_user)
    _mark_async(client, evals)
    recommendations_refresh()
    batch = Recommendation.objects.get(workload=evals, target_kind="batch_api")
    # $0.042 a day -> x 730 / 24 a month = $1.2775; batch halves it (0.075/0.15): $0.63875.
    assert batch.current_monthly_usd == Decimal("1.28")
    assert batch.projected_monthly_usd == Decimal("0.64")
    assert batch.savings_monthly_usd == Decimal("0.64")
    assert batch.status == "proposed"
    assert any("Batch price 0.075" in a for a in batch.assumptions)
    assert [e.to_status for e in batch.events.all()] == ["proposed"]
    out = StringIO()
    call_command("recommend", "--json", stdout=out)
    rows = json.loads(out.getvalue())
    assert {
        "workload",
        "target",
        "current_monthly_usd",
        "projected_monthly_usd",
        "savings_monthly_usd",
        "assumptions",
    } <= set(rows[0])
    assert rows[0]["workload"] == "evals" and rows[0]["savings_monthly_usd"] == "0.64"


@pytest.mark.parametrize(
    ("floor", "proposed"), [(10, False), (Decimal("0.65"), False), (0.5, True)]
)
def test_options_under_the_savings_floor_are_not_proposed(
    client: Client,
    evals: Workload,
    engineer_user: Any,
    settings: Any,
    floor: Any,
    proposed: bool,
) -> None:
    # The batch tier saves $0.64 a month (see above): proposed only with a floor under it.
    settings.RECOMMENDATION_MIN_SAVINGS_USD = floor
    client.force_login(engineer_user)
    _mark_async(client, evals)
    recommendations_refresh()
    assert Recommendation.objects.filter(workload=evals).exists() is proposed


def test_realtime_workloads_get_no_recommendation(
    client: Client, evals: Workload, engineer_user: Any
) -> None:
    client.force_login(engineer_user)
    client.patch(
        f"/api/v1/workloads/{evals.pk}/",
        data=json.dumps({"workload_class": "realtime", "reason": "users wait"}),
        content_type="application/json",
    )
    assert recommendations_refresh() == []
    assert Recommendation.objects.count() == 0


def test_manager_decides_others_are_refused(
    client: Client, evals: Workload, engineer_user: Any, manager_user: Any
) -> None:
    client.force_login(engineer_user)
    _mark_async(client, evals)
    recommendations_refresh()
    recommendation = Recommendation.objects.get(workload=evals, target_kind="batch_api")
    url = f"/api/v1/recommendations/{recommendation.pk}/decision/"
    assert client.post(url, {"decision": "approve"}).status_code == 403
    client.force_login(manager_user)
    no_note = client.post(url, {"decision": "reject"})
    assert no_note.status_code == 400
    assert no_note.json()["errors"] == {"note": ["A rejection needs a note saying why."]}
    approved = client.post(url, {"decision": "approve", "note": "try it for a week"})
    assert approved.status_code == 200
    assert approved.json()["status"] == "pilot_approved"
    again = client.post(url, {"decision": "reject", "note": "changed my mind"})
    assert again.status_code == 409
    events = list(RecommendationEvent.objects.filter(recommendation=recommendation))
    assert [(e.from_status, e.to_status) for e in events] == [
        ("", "proposed"),
        ("proposed", "pilot_approved"),
    ]
    assert events[1].user == manager_user and events[1].note == "try it for a week"
    # A decided recommendation keeps its status when prices are refreshed.
    recommendations_refresh()
    assert Recommendation.objects.get(pk=recommendation.pk).status == "pilot_approved"
    assert client.get("/api/v1/recommendations/").json()["results"][0]["status"] == (
        "pilot_approved"
    )


def test_pages(
    client: Client,
    evals: Workload,
    engineer_user: Any,
    manager_user: Any,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    # The override commits, then the worker refreshes recommendations (in-process here).
    settings.DERIVED_REFRESH_ON_CHANGE = True
    client.force_login(engineer_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/workloads/{evals.pk}/class/", {"workload_class": "async", "reason": "a nightly job"}
        )
    assert response.status_code == 302
    page = client.get(f"/workloads/{evals.pk}/").content.decode()
    assert 'data-testid="workload-class">Asynchronous<' in page and "a nightly job" in page
    recommendation = Recommendation.objects.get(workload=evals, target_kind="batch_api")
    listing = client.get("/recommendations/").content.decode()
    assert "openai batch API, gpt-4o-mini" in listing
    detail = client.get(f"/recommendations/{recommendation.pk}/")
    assert detail.context["can_decide"] is False  # engineers see, managers decide
    assert (
        client.post(
            f"/recommendations/{recommendation.pk}/decision/", {"decision": "approve"}
        ).status_code
        == 403
    )
    client.force_login(manager_user)
    detail = client.get(f"/recommendations/{recommendation.pk}/")
    assert detail.context["can_decide"] is True
    assert [t["name"] for t in detail.context["cost_figure"]["data"]] == ["Monthly cost"]
    client.post(
        f"/recommendations/{recommendation.pk}/decision/",
        {"decision": "reject", "note": "latency matters after all"},
    )
    assert Recommendation.objects.get(pk=recommendation.pk).status == "rejected"
    overview = client.get("/?start=2026-11-01&end=2026-11-03")
    assert overview.context["class_split"]["async"] == Decimal("0.042")
