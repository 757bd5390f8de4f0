"""Pool recommendations' pure layer, on cases worked by hand in the comments.

The deployment everywhere: T = 1 output token/s, so one replica serves 3,600 tokens an hour,
one accelerator at $10/hour, a 600 s cold start (1/6 of a replica-hour). A 4-hour window scales
to a month by 730 / 4 = 182.5.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from audit_app.costs.costing import Deployment, ScalingMode
from audit_app.recommendations.pool_options import (
    PoolFacts,
    PoolKind,
    PoolWorkload,
    autoscale_plan,
    cold_start_risk,
    consolidate_plan,
    offload_plan,
    replicas_from_cost,
    rightsize_plan,
    week_mean,
    with_headroom,
)

A = Deployment(
    tokens_per_second=1.0,
    accelerators_per_replica=1,
    usd_per_accelerator_hour=Decimal(10),
    cold_start_seconds=600.0,
)
B = Deployment(
    tokens_per_second=0.5,
    accelerators_per_replica=1,
    usd_per_accelerator_hour=Decimal(4),
    cold_start_seconds=600.0,
)


def linear_ttft(q: float) -> float:
    return 100 + 100 * q  # p95 = 195 ms


def realtime(requests: tuple[int, ...] = (10, 20, 0, 10)) -> PoolWorkload:
    return PoolWorkload(
        name="copilot",
        realtime=True,
        asynchronous=False,
        attributed_usd=Decimal(60),
        demand=(3000, 6000, 0, 1500),
        requests=requests,
        ttft_quantile=linear_ttft,
    )


def batch(demand: tuple[int, ...], attributed: str) -> PoolWorkload:
    return PoolWorkload(
        name="tagger",
        realtime=False,
        asynchronous=True,
        attributed_usd=Decimal(attributed),
        demand=demand,
        requests=(5, 5, 5, 5),
    )


def pool(
    name: str = "a",
    *,
    workloads: tuple[PoolWorkload, ...] | None = None,
    deployment: Deployment = A,
    replicas: int = 4,
    billed: str = "160",
    idle: str = "100",
) -> PoolFacts:
    return PoolFacts(
        name=name,
        models=("llama-70b",),
        replica=f"{name}-box",
        deployment=deployment,
        assumptions=("source line",),
        billed_usd=Decimal(billed),
        idle_usd=Decimal(idle),
        provisioned=(replicas,) * 4,
        workloads=workloads if workloads is not None else (realtime(),),
    )


def test_headroom_rounds_each_hour_up() -> None:
    # 3000 × 1.2 = 3600 exactly; 1501 × 1.2 = 1801.2 -> 1802.
    assert with_headroom([3000, 1501, 0], Decimal("0.2")) == [3600, 1802, 0]


def test_rightsize_serves_the_peak_hour_with_headroom() -> None:
    # Peak 6000 × 1.2 = 7200 = 2 replicas of 3600: 2 × 4 h × $10 = $80 -> × 182.5 = $14,600.
    # Billed $160 -> $29,200 a month; saving 29,200 − 14,600 = $14,600.
    plan = rightsize_plan(pool())
    assert plan is not None
    assert plan.kind is PoolKind.RIGHTSIZE
    assert plan.replicas_per_hour == (2, 2, 2, 2)
    assert plan.current_monthly == Decimal(29200)
    assert plan.modelled_monthly == Decimal(14600)
    assert plan.savings_monthly == Decimal(14600)
    assert plan.projected_monthly == Decimal(14600)
    assert not plan.needs_gate


def test_rightsize_needs_fewer_replicas_than_today() -> None:
    assert rightsize_plan(pool(replicas=2)) is None


def test_rightsize_saving_is_the_bill_less_the_modelled_cost_whatever_the_idle() -> None:
    # The same two replicas priced after; idle only $20 today changes nothing: the saving is
    # what the pool bills less what the cost model prices the plan at, $14,600.
    plan = rightsize_plan(pool(idle="20"))
    assert plan is not None
    assert plan.savings_monthly == Decimal(14600)
    assert plan.projected_monthly == plan.modelled_monthly == Decimal(14600)


def test_autoscale_prices_cold_starts_and_names_the_realtime_risk() -> None:
    # Sized demand [3600, 7200, 0, 1800] -> needed [1, 2, 0, 1].
    # Autoscale [1, 2, 1, 1]: 5 replica-hours + 1 added × 1/6 = 31/6 -> $51.67.
    # Scale to zero [1, 2, 0, 1]: 4 + 2 added × 1/6 = 13/3 -> $43.33 (cheaper) -> × 182.5
    # = $7,908.33; saving 29,200 − 7,908.33 = $21,291.67.
    plan = autoscale_plan(pool())
    assert plan is not None
    assert plan.mode is ScalingMode.SCALE_TO_ZERO
    assert plan.replicas_per_hour == (1, 2, 0, 1)
    assert plan.modelled_monthly.quantize(Decimal("0.01")) == Decimal("7908.33")
    assert plan.savings_monthly.quantize(Decimal("0.01")) == Decimal("21291.67")
    # Cold-start waits: hour 1 adds 1 of 2: 20 × 1/6 × 1/2 = 5/3; hour 3 adds 1 of 1:
    # 10 × 1/6 = 5/3; 10/3 of 40 requests = 8.33 % >= 5 %: in its p95 (600 s + 195 ms).
    (risk,) = plan.risks
    assert risk.share == pytest.approx(1 / 12)
    assert risk.in_p95
    assert risk.p95_ttft_ms == pytest.approx(195)
    assert risk.p95_ttft_with_cold_starts_ms == pytest.approx(600_195)
    assert "copilot" in plan.risk and "600 s cold start" in plan.risk
    assert "in its p95 TTFT" in plan.risk


def test_cold_start_below_p95_moves_it_up_the_histogram() -> None:
    # Same waits (10/3) over 130 requests = 1/39 < 5 %: p95 becomes today's quantile
    # 0.95 / (1 − 1/39) = 0.975 -> 100 + 97.5 = 197.5 ms.
    risk = cold_start_risk(
        realtime((100, 20, 0, 10)), replicas_per_hour=(1, 2, 0, 1), cold_start_seconds=600
    )
    assert risk.share == pytest.approx(1 / 39)
    assert not risk.in_p95
    assert risk.p95_ttft_with_cold_starts_ms == pytest.approx(197.5)


def test_autoscale_keeps_a_replica_when_that_costs_the_same() -> None:
    # Demand every hour: both modes provision [1, 1, 1, 1]; no cold start, no risk.
    steady = PoolWorkload(
        name="copilot",
        realtime=True,
        asynchronous=False,
        attributed_usd=Decimal(60),
        demand=(100, 100, 100, 100),
        requests=(1, 1, 1, 1),
    )
    plan = autoscale_plan(pool(workloads=(steady,)))
    assert plan is not None
    assert plan.mode is ScalingMode.AUTOSCALE
    assert plan.risks[0].share == 0


def test_consolidate_two_pools_on_the_cheaper_replica() -> None:
    # Pool a (above) + pool b: T = 0.5 (1,800 tokens/h) at $4, 2 replicas, billed $32, idle $20,
    # an async workload of 600 tokens every hour, attributed $12.
    # Combined [3600, 6600, 600, 2100] × 1.2 = [4320, 7920, 720, 2520]; peak 7920:
    # on a: 3 replicas × 4 h × $10 = $120; on b: 5 × 4 × $4 = $80 -> b hosts, 5 < 4 + 2.
    # Current (160 + 32) × 182.5 = $35,040; modelled 80 × 182.5 = $14,600; saving $20,440.
    # a's workload moves to b: its attributed 60 × 182.5 = $10,950.
    b = pool(
        "b",
        workloads=(batch((600, 600, 600, 600), "12"),),
        deployment=B,
        replicas=2,
        billed="32",
        idle="20",
    )
    plan = consolidate_plan([pool(), b])
    assert plan is not None
    assert plan.kind is PoolKind.CONSOLIDATE
    assert plan.pool == "b"
    assert plan.pools == ("a", "b")
    assert plan.replicas_per_hour == (5, 5, 5, 5)
    assert plan.current_monthly == Decimal(35040)
    assert plan.modelled_monthly == Decimal(14600)
    assert plan.moved_monthly == {"copilot": Decimal(10950)}
    assert plan.savings_monthly == Decimal(20440)
    assert plan.needs_gate
    assert consolidate_plan([pool()]) is None


def test_offload_moves_async_work_and_right_sizes_the_rest() -> None:
    # Real-time [3000, 6000, 0, 1500] stays -> 2 always on, $80; the async workload (7200 in
    # hours 2 and 3, attributed $40) goes to a tier charging $5. Modelled (80 + 5) × 182.5 =
    # $15,512.50; current $29,200 -> saving $13,687.50.
    facts = pool(workloads=(realtime(), batch((0, 0, 7200, 7200), "40")), idle="50")
    plan = offload_plan(facts, tier="batch API", tier_usd=Decimal(5))
    assert plan is not None
    assert plan.replicas_per_hour == (2, 2, 2, 2)
    assert plan.modelled_monthly == Decimal("15512.5")
    assert plan.savings_monthly == Decimal("13687.5")
    assert plan.moved_monthly == {"tagger": Decimal(7300)}
    assert offload_plan(pool(), tier="batch API", tier_usd=Decimal(5)) is None


def test_async_peaks_make_the_right_size_bigger_than_the_offload() -> None:
    # Same pool right-sized with the async work: [3000, 6000, 7200, 8700] × 1.2 peak 10,440 ->
    # 3 replicas, $120 -> $21,900; saving 29,200 − 21,900 = $7,300.
    facts = pool(workloads=(realtime(), batch((0, 0, 7200, 7200), "40")), idle="50")
    plan = rightsize_plan(facts)
    assert plan is not None
    assert plan.replicas_per_hour[0] == 3
    assert plan.savings_monthly == Decimal(7300)


def test_week_mean_wraps_round_the_week() -> None:
    means = week_mean([1, 2, 3, 5], first_hour_of_week=166)
    # Slots 166, 167, 0, 1.
    assert (means[166], means[167], means[0], means[1], means[2]) == (1, 2, 3, 5, 0)


def test_replicas_from_hourly_cost() -> None:
    assert replicas_from_cost(
        [Decimal("196.64"), Decimal("98.32"), Decimal(0)], Decimal("98.32")
    ) == [2, 1, 0]
