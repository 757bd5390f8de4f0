"""The plan's service: realised savings measured from spend before and after a verified change,
status flowing into the headline, and the plan coherent on generated demo organisations."""

from __future__ import annotations

import io
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from audit_app.demo.seed import demo_data_load
from audit_app.derived import derived_refresh
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import Recommendation, RecommendationEvent, Workload
from audit_app.recommendations.plan import plan_as_dict, plan_read
from audit_app.recommendations.services import recommendation_decide, recommendations_refresh
from tests.support.catalog import catalog_ensure
from tests.support.plan import assert_plan_coherent

pytestmark = pytest.mark.django_db

FIRST = date(2026, 11, 1)


def _log(days: range, *, cost: str, requests: int = 2) -> str:
    """``requests`` evals requests a day of 1,000 input + 1,000 output tokens at ``cost``."""
    rows = []
    for offset in days:
        day = (FIRST + timedelta(days=offset)).isoformat()
        for i in range(requests):
            rows.append(
                f"{day}T02:{i:02d}:00Z,{day}T02:{i:02d}:30Z,evals,openai,gpt-4o-mini,1000,1000,"
                f"{cost}"
            )
    return "started_at,ended_at,workload,provider,model,input_tokens,output_tokens,cost_usd\n" + (
        "\n".join(rows) + "\n"
    )


def _ingest(text: str, name: str) -> None:
    upload = upload_create(source=io.BytesIO(text.encode()), original_name=name, enqueue=False)
    upload_ingest(upload_id=upload.pk)
    derived_refresh()  # as `manage.py ingest` does before it returns


def _verified(change: date, manager: Any) -> Recommendation:
    workload = Workload.objects.get(name="evals")
    recommendation, _ = Recommendation.objects.update_or_create(
        workload=workload,
        target_kind="batch_api",
        target="openai batch API, gpt-4o-mini",
        defaults={
            "current_monthly_usd": 10,
            "projected_monthly_usd": 5,
            "savings_monthly_usd": 5,
            "confidence": "High",
            "period_start": FIRST,
            "period_end": FIRST + timedelta(days=29),
            "status": Recommendation.Status.VERIFIED,
        },
    )
    event = RecommendationEvent.objects.create(
        recommendation=recommendation, from_status="pilot_approved", to_status="verified"
    )
    RecommendationEvent.objects.filter(pk=event.pk).update(
        created_at=datetime(change.year, change.month, change.day, 9, tzinfo=UTC)
    )
    return recommendation


def test_realised_savings_compare_cost_per_token_before_and_after_the_change(
    manager_user: Any, settings: Any
) -> None:
    settings.RECOMMENDATION_MIN_SAVINGS_USD = 0  # the sample saves cents
    # Nov 1-14: 2 requests a day at $0.02 each: $0.04 for 4,000 tokens a day -> $10 per 1M.
    # Nov 15-30 (after the change on Nov 15): 3 a day at $0.01: $0.03 for 6,000 -> $5 per 1M.
    _ingest(_log(range(14), cost="0.02"), "before.csv")
    _ingest(_log(range(14, 30), cost="0.01", requests=3), "after.csv")
    recommendation = _verified(date(2026, 11, 15), manager_user)
    read = plan_read()
    (measured,) = read.realised.values()
    assert measured.change_date == date(2026, 11, 15)
    assert (measured.before_start, measured.before_end) == (date(2026, 10, 18), date(2026, 11, 14))
    assert (measured.after_start, measured.after_end) == (date(2026, 11, 15), date(2026, 11, 30))
    assert measured.before_usd_per_million == Decimal(10)
    assert measured.after_usd_per_million == Decimal(5)
    # A month at the after-window's volume: 16 days x 6,000 tokens = 96,000 in 384 hours ->
    # 96,000 x 730 / 384 = 182,500 tokens; (10 - 5) x 0.1825 = $0.9125.
    assert measured.monthly_tokens == 182_500
    assert measured.savings_monthly == Decimal("0.9125")
    assert plan_as_dict(read)["realised_monthly_usd"] == "0.91"
    # Once the refresh has re-priced it, the verified option carries its measured saving.
    recommendations_refresh()
    answer = plan_as_dict(plan_read())
    (row,) = [o for o in answer["options"] if o["id"] == recommendation.pk]
    assert row["status"] == "verified"
    assert row["realised"]["savings_monthly_usd"] == "0.91"
    assert row["realised"]["before"] == ["2026-10-18", "2026-11-14"]
    assert answer["realised_monthly_usd"] == "0.91"


def test_realised_waits_for_a_week_of_data_after_the_change(manager_user: Any) -> None:
    _ingest(_log(range(30), cost="0.02"), "all.csv")
    _verified(date(2026, 11, 26), manager_user)  # Nov 26-30: five days of data after
    (measured,) = plan_read().realised.values()
    assert measured.savings_monthly is None
    assert measured.note.startswith("5 day(s) of data since the change on 2026-11-26")


def test_status_moves_the_plan_from_open_to_in_progress(
    tmp_path: Path, manager_user: Any, finops_user: Any, settings: Any
) -> None:
    catalog_ensure()
    demo_data_load(days=30, scale=0.02, directory=tmp_path, today=date(2026, 11, 20))
    derived_refresh()  # as `manage.py seed_demo` does
    before = plan_as_dict(plan_read())
    assert_plan_coherent(before)
    chosen = [o for o in before["options"] if o["in_plan"]]
    assert chosen and Decimal(before["in_progress_monthly_usd"]) == 0
    first = chosen[0]
    recommendation_decide(
        recommendation=Recommendation.objects.get(pk=first["id"]),
        user=manager_user,
        decision="approve",
        note="pilot",
    )
    after = plan_as_dict(plan_read())
    assert_plan_coherent(after)
    assert after["in_progress_monthly_usd"] == first["savings_monthly_usd"]
    assert after["savings_monthly_usd"] == before["savings_monthly_usd"]
    assert Decimal(after["open_monthly_usd"]) == Decimal(before["open_monthly_usd"]) - Decimal(
        first["savings_monthly_usd"]
    )
    # The pages say the same.
    client = Client()
    client.force_login(finops_user)
    html = client.get("/recommendations/").content.decode()
    assert f"{Decimal(after['in_progress_monthly_usd']):,}" in html


@pytest.mark.parametrize(
    ("scale", "today", "slo"),
    [
        (0.02, date(2026, 11, 20), None),
        (0.05, date(2026, 10, 9), 250),
        (0.01, date(2026, 12, 2), 5000),
    ],
)
def test_generated_organisations_get_a_coherent_plan(
    tmp_path: Path, scale: float, today: date, slo: int | None
) -> None:
    catalog_ensure()
    demo_data_load(days=30, scale=scale, directory=tmp_path, today=today)
    derived_refresh()  # as `manage.py seed_demo` does
    if slo is not None:
        Workload.objects.filter(name="sales-copilot").update(latency_slo_ms=slo)
        recommendations_refresh()
    plan = plan_as_dict(plan_read())
    assert_plan_coherent(plan)
    options = plan["options"]
    # The demo's real-time copilot: a move measured on Trainium2 (the demo's benchmark run meets
    # its latency), in the plan unless a larger saving on its pool holds it out; others wait for
    # a run.
    (measured,) = [
        o for o in options if o["workload"] == "sales-copilot" and o["evidence"] == "measured"
    ]
    if not measured["in_plan"]:
        assert measured["out_reason"].startswith("contradiction: it turns off pool h100-pool")
        rival = next(o for o in options if o["id"] == measured["alternative_to"])
        assert Decimal(rival["savings_monthly_usd"]) >= Decimal(measured["savings_monthly_usd"])
    assert any(o["workload"] == "sales-copilot" and o["needs_benchmark"] for o in options)
    assert any(o["needs_benchmark"] and o["gate_command"] for o in options)
    for o in options:
        if o["needs_benchmark"]:
            assert o["gate_command"].startswith("manage.py gate --baseline ")
            assert not o["in_plan"]
        assert "Risk: None" not in o["risk"]
