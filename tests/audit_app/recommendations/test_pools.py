"""Pool recommendations on the demo organisation: priced from the pools' own bills and demand,
risk named, held in one savings plan with the workloads' options, decided like the others,
filtered by pool.

The hand-worked cases of the math are in `test_pool_options.py`; this checks the service, the
refresh, the API, the command and the pages against figures read independently (the bill from
`pool_reports`, demand from the rollups).
"""

from __future__ import annotations

import json
import math
from datetime import date
from decimal import Decimal
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db.models import Sum
from django.test import Client
from django.urls import reverse

from audit_app.costs.billing import pool_reports, pool_rollups
from audit_app.costs.rollups import rollups_in_range
from audit_app.demo.seed import demo_data_load
from audit_app.derived import derived_refresh
from audit_app.models import Recommendation, ServingPool, Workload
from audit_app.recommendations.plan import plan_as_dict, plan_read
from audit_app.recommendations.services import recommendation_decide, recommendations_refresh
from tests.support.catalog import catalog_ensure
from tests.support.plan import assert_plan_coherent

pytestmark = pytest.mark.django_db

POOLS = {"h100-pool", "trn1-pool"}
P5_TOKENS_PER_SECOND = 24524.9  # throughput-assumptions.csv, p5.48xlarge 70b
P5_USD_PER_HOUR = Decimal("98.32")  # hardware-catalog.csv, p5.48xlarge on demand


def _pool_recs(pool: str) -> list[Recommendation]:
    return list(Recommendation.objects.filter(pool__name=pool, workload__isnull=True))


def test_demo_pools_get_priced_next_steps(
    tmp_path: Path, manager_user: Any, finops_user: Any
) -> None:
    catalog_ensure()
    demo_data_load(days=30, scale=0.02, directory=tmp_path, today=date(2026, 11, 20))
    derived_refresh()  # as `manage.py seed_demo` does
    h100 = _pool_recs("h100-pool")
    assert {r.target_kind for r in h100} >= {"pool_rightsize", "pool_autoscale"}
    start, end = h100[0].period_start, h100[0].period_end
    hours = ((end - start).days + 1) * 24
    (report,) = [r for r in pool_reports(start=start, end=end) if r.pool.name == "h100-pool"]
    to_month = Decimal(730) / hours
    billed_monthly = (report.attribution.billed * to_month).quantize(Decimal("0.01"))
    idle_monthly = report.attribution.idle * to_month
    # The H100 pool: two p5.48xlarge all month, a copilot in office hours; idle > 0.
    assert report.attribution.idle > 0
    for r in h100:
        assert r.current_monthly_usd == billed_monthly
        assert r.projected_monthly_usd == r.current_monthly_usd - r.savings_monthly_usd
        # One "after" figure: what the cost model prices the plan at.
        assert r.projected_monthly_usd == Decimal(r.details["modelled_monthly_usd"])
        if r.target_kind in ("pool_rightsize", "pool_autoscale"):
            assert r.savings_monthly_usd > 0
            assert not r.details["needs_gate"]
    assert idle_monthly > 0
    # Right-size by hand: peak hour's output tokens × 1.2 over one p5's 24,524.9 tok/s × 3600.
    peak = max(
        row["o"]
        for row in pool_rollups(
            ServingPool.objects.get(name="h100-pool"), rollups_in_range(start=start, end=end)
        )
        .values("hour")
        .annotate(o=Sum("output_tokens"))
    )
    replicas = math.ceil(peak * 1.2 / (P5_TOKENS_PER_SECOND * 3600))
    assert replicas == 1
    (rightsize,) = [r for r in h100 if r.target_kind == "pool_rightsize"]
    assert rightsize.target == "h100-pool: 1 × p5.48xlarge (NVIDIA H100 80GB) always on"
    # One p5 always on: 98.32 × 730 = $71,773.60 after; the saving is the bill less that.
    assert rightsize.details["modelled_monthly_usd"] == str(P5_USD_PER_HOUR * 730)
    assert rightsize.projected_monthly_usd == P5_USD_PER_HOUR * 730
    assert rightsize.savings_monthly_usd == billed_monthly - P5_USD_PER_HOUR * 730
    assert "Risk: None" not in " ".join(rightsize.assumptions)
    assert rightsize.details["plan"]["risk"].startswith("Queueing: the busiest hour needs ")
    assert rightsize.details["chart"]["after"][0] == 1.0
    assert len(rightsize.details["chart"]["demanded"]) == 168

    # The consolidation of the two Llama 3.3 70B pools: gate needed, both pools changed.
    (consolidate,) = Recommendation.objects.filter(target_kind="pool_consolidate")
    assert sorted(consolidate.details["pools"]) == ["h100-pool", "trn1-pool"]
    assert consolidate.details["needs_gate"]

    # A tight TTFT on the real-time copilot: any scale-to-zero plan names the risk.
    copilot = Workload.objects.get(name="sales-copilot")
    copilot.latency_slo_ms = 300
    copilot.save()
    recommendations_refresh()
    (autoscale,) = [r for r in _pool_recs("h100-pool") if r.target_kind == "pool_autoscale"]
    # Nights and weekends are empty: scale to zero is the cheaper way to follow demand, and
    # the copilot's cold-start risk is stated (share of its requests, p95 TTFT, its SLO).
    assert autoscale.details["mode"] == "scale_to_zero"
    (risk,) = autoscale.details["cold_starts"]
    assert risk["workload"] == "sales-copilot" and risk["latency_slo_ms"] == 300
    assert 0 < risk["share"] < 0.05
    assert risk["p95_ttft_with_cold_starts_ms"] > risk["p95_ttft_ms"]
    assert risk["breaks_slo"] == (risk["p95_ttft_with_cold_starts_ms"] > 300)
    assert (
        "sales-copilot" in autoscale.details["risk"] and "300 ms SLO" in autoscale.details["risk"]
    )
    assert "sales-copilot" in autoscale.details["plan"]["risk"]
    assert "cold start" in autoscale.details["plan"]["risk"]
    assert autoscale.confidence.startswith("Low")
    # Scale to zero saves more but its cold starts break the copilot's SLO: held back, so
    # the always-on right-size leads and the plan holds no autoscale.
    assert autoscale.savings_monthly_usd > rightsize.savings_monthly_usd
    assert "above its latency SLO (300 ms)" in autoscale.details["plan"]["blocked"]
    (lead,) = [r for r in _pool_recs("h100-pool") if r.rank == 1]
    assert lead.target_kind == "pool_rightsize"

    # One plan: the consolidation moves the real-time copilot onto Trainium with no measured
    # run meeting its latency, so it waits for a benchmark and counts nothing.
    plan = plan_as_dict(plan_read())
    assert_plan_coherent(plan)
    options = {o["id"]: o for o in plan["options"]}
    assert options[consolidate.pk]["needs_benchmark"] and not options[consolidate.pk]["in_plan"]
    assert "manage.py gate" in options[consolidate.pk]["gate_command"]
    assert not options[autoscale.pk]["in_plan"]
    assert options[autoscale.pk]["out_reason"].startswith("risk: cold starts would raise")
    # The naive sum of every option is far above the plan, which stays below spend.
    naive = sum((r.savings_monthly_usd for r in Recommendation.objects.all()), Decimal(0))
    assert Decimal(plan["savings_monthly_usd"]) < min(naive, Decimal(plan["spend_monthly_usd"]))

    # A manager approves a right-size pilot like any other recommendation.
    decided = recommendation_decide(
        recommendation=rightsize, user=manager_user, decision="approve", note="try it"
    )
    assert decided.status == Recommendation.Status.PILOT_APPROVED

    # API: ?pool= keeps what changes that pool.
    client = Client()
    client.force_login(finops_user)
    answer = client.get("/api/v1/recommendations/", {"pool": "trn1-pool", "limit": 100}).json()
    assert {r["target_kind"] for r in answer["results"]} == {"pool_consolidate"}
    assert all(r["pool"] == "trn1-pool" and r["workload"] is None for r in answer["results"])
    answer = client.get("/api/v1/recommendations/", {"pool": "h100-pool", "limit": 100}).json()
    assert {r["id"] for r in answer["results"]} == {r.pk for r in _pool_recs("h100-pool")} | {
        consolidate.pk
    }
    nothing = client.get("/api/v1/recommendations/", {"pool": "no-such-pool"}).json()
    assert nothing["results"] == []

    # The command lists them with `pool` set.
    out = StringIO()
    call_command("recommend", "--json", stdout=out)
    rows = json.loads(out.getvalue())
    pooled = [row for row in rows if row["pool"]]
    assert {row["target_kind"] for row in pooled} >= {"pool_rightsize", "pool_consolidate"}
    assert all(row["workload"] is None for row in pooled)

    # Pages: the pools table's best step, the idle card's link, the detail's chart and risk.
    overview = client.get(reverse("overview")).content.decode()
    assert 'data-testid="idle-next-steps"' in overview
    # Each pool's step is the plan's option that changes it, with its share of the savings.
    plan = plan_as_dict(plan_read())
    changing = [
        o for o in plan["options"] if o["in_plan"] and {o["from_pool"], o["to_pool"]} & POOLS
    ]
    assert changing
    for option in changing:
        assert reverse("recommendation-detail", args=[option["id"]]) in overview
    assert reverse("recommendation-detail", args=[consolidate.pk]) not in overview
    pools = client.get("/api/v1/pools/").json()["results"]
    shown = {p["best_recommendation"]["id"]: p for p in pools if p["best_recommendation"]}
    for option in changing:
        step = shown[option["id"]]["best_recommendation"]
        assert Decimal(step["savings_monthly_usd"]) == Decimal(option["savings_monthly_usd"])
    detail = client.get(reverse("recommendation-detail", args=[autoscale.pk])).content.decode()
    assert "pool-replicas" in detail and 'data-testid="risk"' in detail
    assert "no benchmark gate is needed" in detail
    page = client.get(reverse("recommendations"), {"pool": "h100-pool"})
    assert page.status_code == 200
    assert 'data-pool="h100-pool"' in page.content.decode()


def test_async_pool_with_a_known_capacity_gets_an_offload(tmp_path: Path) -> None:
    catalog_ensure()
    demo_data_load(days=30, scale=0.02, directory=tmp_path, today=date(2026, 11, 20))
    derived_refresh()  # as `manage.py seed_demo` does
    # The Trainium pool runs an async tagger 24/7: every hour has traffic, so without a
    # capacity it has no idle cost and no recommendation.
    assert _pool_recs("trn1-pool") == [] or {r.target_kind for r in _pool_recs("trn1-pool")} == {
        "pool_consolidate"
    }
    # Its two trn1.32xlarge serve 2 × 140.51 tok/s: with that capacity, quiet hours are idle.
    trn1 = ServingPool.objects.get(name="trn1-pool")
    trn1.capacity_tokens_per_hour = int(2 * 140.51 * 3600)
    trn1.save()
    recommendations_refresh()
    recs = {r.target_kind: r for r in _pool_recs("trn1-pool")}
    assert "pool_offload" in recs
    offload = recs["pool_offload"]
    start, end = offload.period_start, offload.period_end
    hours = ((end - start).days + 1) * 24
    (report,) = [r for r in pool_reports(start=start, end=end) if r.pool.name == "trn1-pool"]
    to_month = Decimal(730) / hours
    tagger_share = report.by_workload["ticket-tagger"] * to_month
    idle = report.attribution.idle * to_month
    assert report.attribution.idle > 0
    # The tagger moves off: its share of the bill moves with it.
    assert offload.details["moved_monthly_usd"] == {
        "ticket-tagger": str(tagger_share.quantize(Decimal("0.01")))
    }
    assert idle > 0
    # Its after is the cost model's: the tier's charge for the tagger's tokens and no replica.
    assert offload.projected_monthly_usd == Decimal(offload.details["modelled_monthly_usd"])
    assert 0 < offload.savings_monthly_usd <= offload.current_monthly_usd
    assert "ticket-tagger" in offload.target and "0 × trn1.32xlarge" in offload.target
    # Whatever the options, the plan holds at most one per pool and workload.
    assert_plan_coherent(plan_as_dict(plan_read()))
