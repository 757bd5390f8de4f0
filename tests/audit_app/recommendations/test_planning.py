"""The savings plan's choice, as plain functions: every figure worked out by hand."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from audit_app.recommendations.planning import (
    EXACT_LIMIT,
    Evidence,
    PlanOption,
    contradiction,
    plan_build,
)

# Today's spend, a month, by cost unit: two pools and one workload's API spend.
UNITS = {
    "pool:h100": Decimal("1000"),
    "pool:trn1": Decimal("300"),
    "api:evals|openai|gpt-4o": Decimal("200"),
}
SPEND = Decimal("1550")  # the units plus $50 nobody changes


def option(key: str, **fields: Any) -> PlanOption:
    base: dict[str, Any] = {
        "key": key,
        "id": int(key[1:]),
        "workload": None,
        "workload_class": None,
        "from_pool": None,
        "to_pool": None,
        "target_kind": "pool_rightsize",
        "target": key,
        "units": frozenset(),
        "after_monthly": Decimal(0),
        "touches": frozenset(),
    }
    base.update(fields)
    return PlanOption(**base)


RIGHTSIZE_H100 = option(
    "r1",
    units=frozenset({"pool:h100"}),
    touches=frozenset({"pool:h100"}),
    after_monthly=Decimal("600"),
    from_pool="h100",
    to_pool="h100",
)  # saves 400
# h100's real-time copilot moves into trn1, h100 turned off: 1000 + 300 -> 700; saves 600.
CONSOLIDATE = option(
    "r2",
    target_kind="pool_consolidate",
    units=frozenset({"pool:h100", "pool:trn1"}),
    touches=frozenset({"pool:h100", "pool:trn1", "workload:copilot"}),
    removes=frozenset({"pool:h100"}),
    receives=frozenset({"pool:trn1"}),
    after_monthly=Decimal("700"),
    from_pool="h100",
    to_pool="trn1",
)
# trn1's only workload moves to a hosted provider, trn1 turned off: 300 -> 30; saves 270.
TAGGER_OFF_TRN1 = option(
    "r3",
    workload="tagger",
    workload_class="async",
    target_kind="cheaper_provider",
    units=frozenset({"pool:trn1"}),
    touches=frozenset({"pool:trn1", "workload:tagger"}),
    removes=frozenset({"pool:trn1"}),
    after_monthly=Decimal("30"),
    from_pool="trn1",
    to_pool="deepinfra",
)
# evals' API spend to the batch tier: 200 -> 100; saves 100.
EVALS_BATCH = option(
    "r4",
    workload="evals",
    workload_class="async",
    target_kind="batch_api",
    units=frozenset({"api:evals|openai|gpt-4o"}),
    touches=frozenset({"workload:evals"}),
    after_monthly=Decimal("100"),
    to_pool="openai",
)
EVALS_PROVIDER = replace(EVALS_BATCH, key="r5", id=5, after_monthly=Decimal("120"))  # saves 80


def build(*options: PlanOption, floor: str = "10", realised: Any = None) -> Any:
    return plan_build(
        options,
        spend_monthly=SPEND,
        units_now=UNITS,
        min_savings=Decimal(floor),
        realised=realised,
    )


def by_key(plan: Any) -> dict[str, Any]:
    return {p.option.key: p for p in plan.options}


def test_contradictions_are_named() -> None:
    # A pool turned off by one option and receiving traffic from another.
    assert contradiction(CONSOLIDATE, TAGGER_OFF_TRN1) == (
        "pool trn1 is turned off by the plan's option"
    )
    # Two moves of one workload.
    assert contradiction(EVALS_BATCH, EVALS_PROVIDER) == "workload evals would move twice"
    # Two changes of one pool.
    assert contradiction(RIGHTSIZE_H100, CONSOLIDATE).startswith("pool h100")
    assert contradiction(RIGHTSIZE_H100, EVALS_BATCH) == ""


def test_the_plan_is_the_best_feasible_set_not_a_sum() -> None:
    # Feasible sets: {consolidate} 600; {rightsize, tagger} 400 + 270 = 670; plus evals' batch
    # 100 either way. Best: rightsize + tagger + batch = 770, not 600 + 400 + 270 + 100 + 80.
    plan = build(RIGHTSIZE_H100, CONSOLIDATE, TAGGER_OFF_TRN1, EVALS_BATCH, EVALS_PROVIDER)
    got = by_key(plan)
    assert {k for k, p in got.items() if p.in_plan} == {"r1", "r3", "r4"}
    assert plan.spend_monthly == Decimal("1550.00")
    # After: 50 untouched + h100 600 + trn1 30 + evals 100 = 780.
    assert plan.after_monthly == Decimal("780.00")
    assert plan.savings_monthly == Decimal("770.00") == plan.spend_monthly - plan.after_monthly
    assert sum(p.savings_monthly for p in plan.options if p.in_plan) == plan.savings_monthly
    assert got["r2"].alternative_to in {"r1", "r3"}
    assert got["r2"].out_reason.startswith("contradiction: ")
    assert got["r5"].alternative_to == "r4"
    assert got["r5"].out_reason.startswith("contradiction: workload evals would move twice")
    assert got["r5"].savings_monthly == Decimal("80.00")  # what it alone would save


def test_a_real_time_move_without_measured_evidence_counts_nothing() -> None:
    unmeasured = replace(CONSOLIDATE, moves_realtime=True, needs_benchmark=True)
    plan = build(unmeasured)
    (only,) = plan.options
    assert not only.in_plan
    assert only.out_reason.startswith("needs a benchmark")
    assert plan.savings_monthly == Decimal("0.00")
    # What it would add once measured: its own 600.
    assert plan.needs_benchmark_monthly == Decimal("600.00")
    measured = replace(unmeasured, needs_benchmark=False, evidence=Evidence.MEASURED)
    assert build(measured).savings_monthly == Decimal("600.00")


def test_needs_benchmark_potential_is_a_plan_too() -> None:
    # With the consolidation measured the best plan is still rightsize + tagger (670 > 600):
    # waiting for its benchmark adds nothing.
    unmeasured = replace(CONSOLIDATE, needs_benchmark=True)
    plan = build(RIGHTSIZE_H100, unmeasured, TAGGER_OFF_TRN1)
    assert plan.savings_monthly == Decimal("670.00")
    assert plan.needs_benchmark_monthly == Decimal("0")


def test_capacity_at_the_peak_hour_keeps_an_option_out() -> None:
    short = replace(CONSOLIDATE, peak_demand=5_000_000, peak_capacity=4_000_000)
    (only,) = build(short).options
    assert not only.in_plan
    assert only.out_reason == (
        "capacity: its busiest hour needs 5,000,000 output tokens and the after-state serves "
        "4,000,000"
    )


def test_risk_and_floor_and_rejection_keep_options_out() -> None:
    risky = replace(RIGHTSIZE_H100, blocked="cold starts would raise copilot's p95 TTFT")
    small = replace(EVALS_BATCH, after_monthly=Decimal("195"))  # saves 5 < 10
    rejected = replace(TAGGER_OFF_TRN1, status="rejected")
    got = by_key(build(risky, small, rejected))
    assert got["r1"].out_reason == "risk: cold starts would raise copilot's p95 TTFT"
    assert got["r4"].out_reason == "below the minimum: saves $5.00 a month, under $10.00"
    assert got["r3"].out_reason == "rejected by a manager"
    assert not any(p.in_plan for p in got.values())


def test_approved_options_are_placed_first_and_split_out() -> None:
    # The manager approved the consolidation: it holds although rightsize + tagger save more.
    approved = replace(CONSOLIDATE, status="pilot_approved")
    verified = replace(EVALS_BATCH, status="verified")
    plan = build(RIGHTSIZE_H100, approved, TAGGER_OFF_TRN1, verified, realised={"r4": Decimal(90)})
    got = by_key(plan)
    assert got["r2"].in_plan and got["r4"].in_plan
    assert not got["r1"].in_plan and not got["r3"].in_plan
    assert plan.in_progress_monthly == Decimal("600.00")
    assert plan.open_monthly == Decimal("0.00")
    assert plan.savings_monthly == Decimal("700.00")
    assert plan.realised_monthly == Decimal("90.00")  # measured, not the estimate of 100


def test_shares_add_up_to_the_cent() -> None:
    # Three options saving a third of a dollar each: 1.00 / 3 rounds to 0.33, 0.33, 0.34.
    units = {f"api:w{i}|p|m": Decimal(1) for i in range(3)}
    options = [
        option(
            f"r{i + 1}",
            workload=f"w{i}",
            units=frozenset({f"api:w{i}|p|m"}),
            touches=frozenset({f"workload:w{i}"}),
            after_monthly=Decimal(2) / 3,
        )
        for i in range(3)
    ]
    plan = plan_build(options, spend_monthly=Decimal(3), units_now=units, min_savings=Decimal(0))
    shares = sorted(p.savings_monthly for p in plan.options)
    assert shares == [Decimal("0.33"), Decimal("0.33"), Decimal("0.34")]
    assert plan.savings_monthly == Decimal("1.00") == sum(shares)
    assert plan.after_monthly == Decimal("2.00")


def test_a_large_group_is_filled_greedily_and_stays_feasible() -> None:
    # A chain of options each contradicting the next (they share a pool pairwise): too many
    # for the exact search; the greedy fill still never holds two that contradict.
    count = EXACT_LIMIT + 5
    units = {f"pool:p{i}": Decimal(100) for i in range(count + 1)}
    options = [
        option(
            f"r{i + 1}",
            units=frozenset({f"pool:p{i}", f"pool:p{i + 1}"}),
            touches=frozenset({f"pool:p{i}", f"pool:p{i + 1}"}),
            after_monthly=Decimal(100 + i),
        )
        for i in range(count)
    ]
    plan = plan_build(
        options, spend_monthly=Decimal(100 * (count + 1)), units_now=units, min_savings=Decimal(0)
    )
    assert plan.heuristic
    chosen = [p.option for p in plan.options if p.in_plan]
    assert chosen
    for a in chosen:
        for b in chosen:
            assert a is b or not contradiction(a, b)
    assert plan.savings_monthly == plan.spend_monthly - plan.after_monthly


@pytest.mark.parametrize("seed", range(20))
def test_exact_search_matches_brute_force(seed: int) -> None:
    """On random small sets the search finds the best feasible subset a brute force finds."""
    import itertools
    import random

    rng = random.Random(seed)
    pools = [f"pool:p{i}" for i in range(4)]
    units = {p: Decimal(rng.randint(50, 500)) for p in pools}
    options = []
    for i in range(7):
        touched = frozenset(rng.sample(pools, rng.randint(1, 2)))
        now = sum((units[p] for p in touched), Decimal(0))
        options.append(
            option(
                f"r{i + 1}",
                units=touched,
                touches=touched,
                after_monthly=now - Decimal(rng.randint(1, 300)),
            )
        )
    plan = plan_build(
        options, spend_monthly=sum(units.values()), units_now=units, min_savings=Decimal(0)
    )
    best = Decimal(0)
    for size in range(len(options) + 1):
        for subset in itertools.combinations(options, size):
            if any(contradiction(a, b) for a, b in itertools.combinations(subset, 2)):
                continue
            total = sum(
                (sum((units[u] for u in o.units), Decimal(0)) - o.after_monthly for o in subset),
                Decimal(0),
            )
            best = max(best, total)
    assert plan.savings_monthly == best.quantize(Decimal("0.01"))
