"""Pools whose throughput the catalog does not know: a measured benchmark
run, else the pool's own capacity over its billed replicas, else a clear "no throughput known"
on the pools table, the overview and the pools API. Every figure below is worked by hand.

One day (24 hours) of a pool serving one real-time chat workload: 60,000 output tokens in hour
0 and 10,000 in hour 5 (scaled up for the H100 cases), nothing else; the bill has three
replicas every hour. Sized with the default 20 % headroom, the peak needs
``ceil(peak × 1.2 / per-replica tokens per hour)`` replicas.
"""

from __future__ import annotations

import io
import math
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from audit_app.costs.billing import pool_reports
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import BillingCharge, Recommendation, ServingPool, Upload
from audit_app.recommendations.pool_replicas import NO_REPLICA_PRICE, NO_THROUGHPUT
from audit_app.recommendations.services import recommendations_refresh
from benchmarks_app.models import BenchmarkPoint, BenchmarkRun
from tests.support.catalog import catalog_ensure

pytestmark = pytest.mark.django_db
DAY = date(2026, 11, 2)
H0 = datetime(2026, 11, 2, 0, tzinfo=UTC)
H = timedelta(hours=1)
P5_USD_PER_HOUR = Decimal("98.32")  # hardware-catalog.csv, p5.48xlarge on demand
P5_CATALOGUED_TOKENS_PER_SECOND = 24524.9  # throughput-assumptions.csv, p5.48xlarge 70b


def _log(model: str, *, scale: int) -> None:
    """60,000 × scale output tokens in hour 0 (six requests), 10,000 × scale in hour 5."""
    rows = ["started_at,ended_at,workload,provider,model,input_tokens,output_tokens,pool"]
    for minute in range(6):
        rows.append(
            f"2026-11-02T00:{minute:02d}:00Z,2026-11-02T00:{minute:02d}:30Z,chat,vllm,{model},"
            f"100,{10_000 * scale},gpu"
        )
    rows.append(
        f"2026-11-02T05:00:00Z,2026-11-02T05:00:30Z,chat,vllm,{model},100,{10_000 * scale},gpu"
    )
    content = ("\n".join(rows) + "\n").encode()
    upload = upload_create(
        source=io.BytesIO(content), original_name="pool.csv", kind="token_log", enqueue=False
    )
    upload_ingest(upload_id=upload.pk)


def _bill(instance_type: str, usd_per_hour: Decimal, *, unit: str = "Hrs") -> None:
    """Three replicas (i-0, i-1, i-2) billed every hour of the day, one ``unit`` each."""
    bill = Upload.objects.create(
        kind=Upload.Kind.BILLING,
        original_name="bill.csv",
        sha256="b" * 64,
        status=Upload.Status.SUCCEEDED,
        file="x",
    )
    for hour in range(24):
        for replica in range(3):
            BillingCharge.objects.create(
                upload=bill,
                line=2 + hour * 3 + replica,
                provider="aws",
                charge_category="Usage",
                currency="USD",
                period_start=H0 + hour * H,
                period_end=H0 + (hour + 1) * H,
                billed_cost=usd_per_hour,
                quantity=Decimal(1),
                unit=unit,
                resource_id=f"i-{replica}",
                meter_kind="gpu_instance",
                instance_type=instance_type,
                billing_period_start=H0,
                billing_period_end=H0 + 24 * H,
            )


def _pool(capacity: int | None = None) -> ServingPool:
    return ServingPool.objects.create(
        name="gpu", resource_ids=["i-0", "i-1", "i-2"], capacity_tokens_per_hour=capacity
    )


def _rightsize() -> Recommendation:
    return Recommendation.objects.get(pool__name="gpu", target_kind="pool_rightsize")


def _run(model: str, *, gpus: int, rates: list[float]) -> BenchmarkRun:
    upload = Upload.objects.create(
        kind=Upload.Kind.BENCHMARK,
        original_name="sweep.json",
        sha256="c" * 64,
        status=Upload.Status.SUCCEEDED,
        file="y",
    )
    run = BenchmarkRun.objects.create(
        upload=upload,
        name="h100 sweep",
        tool="vllm",
        model=model,
        fields={"model": model, "gpu_type": "H100", "num_gpus": gpus},
    )
    for index, rate in enumerate(rates):
        BenchmarkPoint.objects.create(
            run=run, index=index, upload=upload, metrics={"decode_tokens_per_s": rate}
        )
    return run


@pytest.fixture(autouse=True)
def _floors(settings: Any) -> None:
    settings.POOL_RECOMMENDATION_MIN_IDLE_USD = 1000
    settings.RECOMMENDATION_MIN_SAVINGS_USD = 10


def test_uncatalogued_pool_is_right_sized_on_its_own_capacity(finops_user: Any) -> None:
    catalog_ensure()
    _log("mystery-lm", scale=1)
    _bill("x9.metal", Decimal("10"))  # not in the hardware catalog
    _pool(capacity=150_000)  # three replicas: 50,000 tokens/hour each
    recommendations_refresh(today=DAY)

    rightsize = _rightsize()
    # Peak 60,000 × 1.2 = 72,000 tokens over 50,000 per replica: ceil(1.44) = 2 replicas.
    assert math.ceil(60_000 * 1.2 / 50_000) == 2
    assert rightsize.target == "gpu: 2 × x9.metal always on"
    # Price from the bill: $720 over 72 instance-hours = $10/hour. Today 3 × $10 × 730 =
    # $21,900 a month; two always on 2 × $10 × 730 = $14,600; saving $7,300 (under idle).
    assert rightsize.current_monthly_usd == Decimal("21900.00")
    assert rightsize.details["modelled_monthly_usd"] == "14600.00"
    assert rightsize.savings_monthly_usd == Decimal("7300.00")
    (report,) = pool_reports(start=DAY, end=DAY)
    # The assumptions say where the throughput and price came from.
    assert rightsize.assumptions[0] == (
        "13.89 output tokens/s per x9.metal: the pool's stated capacity (150,000 "
        "tokens/hour) over its 3 billed replica(s) at the busiest hour. Neither measured nor "
        "catalogued: a benchmark run of this model on this hardware would replace it."
    )
    assert rightsize.assumptions[1].startswith("$10.00/hour per replica: the bill's cost over")
    assert "72 instance-hours" in rightsize.assumptions[1]
    assert rightsize.confidence.startswith("Medium")

    # The pools API carries the same best step the pools table shows.
    client = Client()
    client.force_login(finops_user)
    answer = client.get(reverse("api-pools"), {"start": DAY, "end": DAY}).json()
    (row,) = answer["results"]
    best = row["best_recommendation"]
    leader = Recommendation.objects.get(pool__name="gpu", rank=1)
    # The leader scales to zero: 2 replicas in hour 0 (warm), 1 in hour 5 with one 600 s cold
    # start: (3 + 1/6) × $10 = $31.67 a day, × 730 / 24 = $963.19 a month; it saves
    # 21,900 − 963.19 = $20,936.81, under the idle cost (a capacity counts input tokens too):
    # (720 − 30 × 60,600 / 150,000 − 30 × 10,100 / 150,000) × 730 / 24 = 705.86 × 730 / 24
    # = $21,469.91.
    assert leader.target_kind == "pool_autoscale" and leader.details["mode"] == "scale_to_zero"
    assert leader.savings_monthly_usd == Decimal("20936.81")
    assert (report.attribution.idle * 730 / 24).quantize(Decimal("0.01")) == Decimal("21469.91")
    assert best["id"] == leader.pk
    assert best["target_kind"] == "pool_autoscale"
    assert Decimal(best["savings_monthly_usd"]) == Decimal("20936.81")
    assert best["status"] == "proposed"
    assert best["url"].endswith(f"/api/v1/recommendations/{leader.pk}/")
    assert row["next_step_note"] is None
    overview = client.get(reverse("overview"), {"start": DAY, "end": DAY}).content.decode()
    assert reverse("recommendation-detail", args=[leader.pk]) in overview
    assert 'data-testid="pool-no-throughput"' not in overview


@pytest.mark.parametrize("model", ["llama-3.3-70b-instruct", "mystery-lm"])
def test_measured_throughput_is_used_and_wins_over_the_catalogue(model: str) -> None:
    catalog_ensure()
    _log(model, scale=1000)  # peak hour 60,000,000 output tokens
    _bill("p5.48xlarge", P5_USD_PER_HOUR)
    _pool()
    # A run of the model on 8 × H100 (one p5.48xlarge): best point 12,000 tok/s.
    _run(f"meta-llama/{model}", gpus=8, rates=[10_000.0, 12_000.0])
    recommendations_refresh(today=DAY)

    rightsize = _rightsize()
    # Measured: 12,000 × 3600 = 43,200,000 tokens/hour per replica; 72,000,000 needs
    # ceil(1.67) = 2. The catalogue (24,524.9 tok/s, 88,289,640/hour) would say 1.
    assert math.ceil(60_000_000 * 1.2 / (12_000 * 3600)) == 2
    assert math.ceil(60_000_000 * 1.2 / (P5_CATALOGUED_TOKENS_PER_SECOND * 3600)) == 1
    assert rightsize.target == "gpu: 2 × p5.48xlarge (NVIDIA H100 80GB) always on"
    # Two p5 always on: 2 × 98.32 × 730 = $143,547.20 a month.
    assert rightsize.details["modelled_monthly_usd"] == "143547.20"
    run = BenchmarkRun.objects.get()
    assert rightsize.assumptions[0] == (
        f"12,000 output tokens/s per p5.48xlarge (NVIDIA H100 80GB) for {model}: measured, "
        f"benchmark run {run.pk} (h100 sweep, vllm; 8 × H100), the best of its 2 point(s) "
        "(point 2)."
    )
    assert rightsize.confidence.startswith("High")


def test_measured_run_on_fewer_accelerators_is_scaled_to_the_replica() -> None:
    catalog_ensure()
    _log("mystery-lm", scale=1000)
    _bill("p5.48xlarge", P5_USD_PER_HOUR)
    _pool()
    # 4 × H100 at 12,000 tok/s: 24,000 tok/s for the p5's 8, 86,400,000/hour: one replica.
    _run("mystery-lm", gpus=4, rates=[12_000.0])
    recommendations_refresh(today=DAY)
    assert math.ceil(60_000_000 * 1.2 / (24_000 * 3600)) == 1
    rightsize = _rightsize()
    assert rightsize.target == "gpu: 1 × p5.48xlarge (NVIDIA H100 80GB) always on"
    assert "scaled from its 4 accelerator(s) to the replica's 8" in rightsize.assumptions[0]


def test_pool_with_no_throughput_known_says_so(finops_user: Any) -> None:
    catalog_ensure()
    _log("mystery-lm", scale=1)
    _bill("x9.metal", Decimal("10"))
    _pool()  # no capacity, no run, not catalogued
    # A run on other hardware does not count.
    run = _run("mystery-lm", gpus=8, rates=[12_000.0])
    run.fields = {"model": "mystery-lm", "gpu_type": "A100", "num_gpus": 8}
    run.save()
    recommendations_refresh(today=DAY)
    assert not Recommendation.objects.filter(pool__name="gpu").exists()
    # Idle: $720 billed, 2 busy hours fully attributed (no capacity): $660 idle over the day,
    # $20,075 a month, above the $1,000 floor.
    (report,) = pool_reports(start=DAY, end=DAY)
    assert report.attribution.idle == Decimal("660.00")

    client = Client()
    client.force_login(finops_user)
    overview = client.get(reverse("overview"), {"start": DAY, "end": DAY}).content.decode()
    assert 'data-testid="pool-no-throughput"' in overview
    assert "No throughput known: set capacity_tokens_per_hour or add a benchmark run." in overview
    assert 'data-testid="idle-no-throughput"' in overview
    (row,) = client.get(reverse("api-pools"), {"start": DAY, "end": DAY}).json()["results"]
    assert row["best_recommendation"] is None
    assert row["next_step_note"] == NO_THROUGHPUT

    # Setting the capacity gives it a priced next step, and the note goes.
    pool = ServingPool.objects.get(name="gpu")
    pool.capacity_tokens_per_hour = 150_000
    pool.save()
    recommendations_refresh(today=DAY)
    assert _rightsize().target == "gpu: 2 × x9.metal always on"
    overview = client.get(reverse("overview"), {"start": DAY, "end": DAY}).content.decode()
    assert 'data-testid="pool-no-throughput"' not in overview


def test_uncatalogued_instance_billed_without_instance_hours_says_its_price_is_unknown(
    finops_user: Any,
) -> None:
    catalog_ensure()
    _log("mystery-lm", scale=1)
    _bill("x9.metal", Decimal("10"), unit="Requests")  # no instance-hours on the bill
    _pool(capacity=150_000)  # a capacity, but no price for a replica
    recommendations_refresh(today=DAY)
    assert not Recommendation.objects.filter(pool__name="gpu").exists()
    client = Client()
    client.force_login(finops_user)
    (row,) = client.get(reverse("api-pools"), {"start": DAY, "end": DAY}).json()["results"]
    assert row["next_step_note"] == NO_REPLICA_PRICE
    overview = client.get(reverse("overview"), {"start": DAY, "end": DAY}).content.decode()
    assert "No replica price known: add the instance type to the hardware catalog" in overview
