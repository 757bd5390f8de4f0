"""Allocation of shared cost: each policy, per-pool overrides, and totals to the cent."""

from __future__ import annotations

from decimal import Decimal

import pytest

from audit_app.statements.allocation import (
    UNASSIGNED,
    Line,
    Method,
    Policy,
    Rule,
    allocate,
    round_to_total,
)

D = Decimal


def line(team: str, pool: str = "", api: str = "0", gpu: str = "0", **extra: object) -> Line:
    return Line(
        team=team,
        pool=pool,
        workload=str(extra.get("workload", f"{team or 'unassigned'}/w")),
        model=str(extra.get("model", "m")),
        api_usd=D(api),
        gpu_usd=D(gpu),
        requests=int(str(extra.get("requests", 1))),
        input_tokens=10,
        output_tokens=5,
    )


# Pool "a": web $148 and ml $12 of GPU share, $320 idle. Pool "b": only ops, $10 idle. Pool
# "c": billed, nobody used it ($30 idle). API: web $0.60, ml $0.063, no team $3.
LINES = [
    line("web", "a", gpu="148"),
    line("ml", "a", gpu="12"),
    line("ops", "b", gpu="5"),
    line("web", api="0.60"),
    line("ml", api="0.063"),
    line("", api="3"),
    line("api-only", api="40"),
]
IDLE = {"a": D("320"), "b": D("10"), "c": D("30")}
TOTAL = D("148") + D("12") + D("5") + D("0.60") + D("0.063") + D("3") + D("40") + D("360")


def totals(policy: Policy) -> dict[str, Decimal]:
    return {bill.team: bill.total_usd for bill in allocate(LINES, IDLE, policy).teams}


@pytest.mark.parametrize("method", list(Method))
def test_every_policy_adds_up_to_the_months_total_to_the_cent(method: Method) -> None:
    result = allocate(LINES, IDLE, Policy(default=Rule(method=method, owner="platform")))
    assert result.total_usd == TOTAL.quantize(D("0.01"))  # 568.663 -> 568.66
    assert sum((b.total_usd for b in result.teams), D(0)) == result.total_usd
    for bill in result.teams:
        assert bill.total_usd == bill.direct_usd + bill.allocated_usd
        assert sum((s.amount_usd for s in bill.shares), D(0)) == bill.allocated_usd
        assert bill.allocated_usd >= 0  # no team pays less than its direct spend


def test_proportional_splits_a_pool_by_direct_spend_on_it() -> None:
    # Pool a's $320 idle: web 148/160, ml 12/160 -> $296 and $24. Pool b: ops alone, $10.
    # Pool c (nobody used it, $30) and the $3 without a team: by all direct spend
    # (web 148.60, ml 12.063, ops 5, api-only 40 of 205.663).
    result = allocate(LINES, IDLE, Policy())
    shares = {b.team: {s.pot: s.amount_usd for s in b.shares} for b in result.teams}
    assert shares["web"]["a"] == D("296.00")
    assert shares["ml"]["a"] == D("24.00")
    assert shares["ops"]["b"] == D("10.00")
    basis = D("205.663")
    assert abs(shares["web"]["c"] - D(30) * D("148.60") / basis) <= D("0.01")
    assert abs(shares["api-only"][""] - D(3) * D(40) / basis) <= D("0.01")
    assert "a" not in shares["api-only"]  # it never used pool a


def test_even_splits_a_pool_among_the_teams_that_used_it() -> None:
    result = allocate(LINES, IDLE, Policy(default=Rule(method=Method.EVEN)))
    shares = {b.team: {s.pot: s.amount_usd for s in b.shares} for b in result.teams}
    assert shares["web"]["a"] == shares["ml"]["a"] == D("160.00")
    assert shares["ops"]["b"] == D("10.00")
    # Pool c: nobody used it, so all four teams; $30 / 4.
    assert {shares[t]["c"] for t in ("web", "ml", "ops", "api-only")} == {D("7.50")}


def test_owner_takes_everything_shared_even_without_traffic_of_its_own() -> None:
    result = allocate(LINES, IDLE, Policy(default=Rule(method=Method.OWNER, owner="platform")))
    bills = {b.team: b for b in result.teams}
    assert bills["platform"].direct_usd == 0
    assert bills["platform"].allocated_usd == D("363.00")  # 360 idle + 3 without a team
    assert all(b.allocated_usd == 0 for t, b in bills.items() if t != "platform")


def test_a_pool_override_applies_to_that_pool_only() -> None:
    policy = Policy(pools={"a": Rule(method=Method.OWNER, owner="ml")})
    shares = {
        b.team: {s.pot: s.amount_usd for s in b.shares} for b in allocate(LINES, IDLE, policy).teams
    }
    assert shares["ml"]["a"] == D("320.00")
    assert "a" not in shares["web"]
    assert shares["ops"]["b"] == D("10.00")  # b keeps the global proportional rule


def test_traffic_without_a_team_on_a_pool_is_shared_with_the_pool() -> None:
    lines = [line("web", "a", gpu="30"), line("ml", "a", gpu="10"), line("", "a", gpu="8")]
    result = allocate(lines, {"a": D("12")}, Policy())
    bills = {b.team: b for b in result.teams}
    assert bills["web"].allocated_usd == D("15.00")  # 3/4 of 12 + 8
    assert bills["ml"].allocated_usd == D("5.00")
    assert result.total_usd == D("60.00")


def test_no_team_at_all_leaves_the_shared_cost_unassigned() -> None:
    result = allocate([line("", api="1.005")], {"a": D("2")}, Policy())
    assert [(b.team, b.total_usd) for b in result.teams] == [(UNASSIGNED, D("3.01"))]


def test_teams_with_only_api_spend_and_rounding() -> None:
    # Three teams of a third of a dollar each, plus a cent without a team: $1.00 in all.
    lines = [line(t, api=str(D(1) / 3)) for t in ("a", "b", "c")] + [line("", api="0.0000001")]
    result = allocate(lines, {}, Policy())
    assert sum((b.total_usd for b in result.teams), D(0)) == result.total_usd == D("1.00")


def test_round_to_total_hands_cents_to_the_largest_remainders() -> None:
    assert round_to_total({"a": D("0.333"), "b": D("0.333"), "c": D("0.334")}, D("1.00")) == {
        "a": D("0.33"),
        "b": D("0.33"),
        "c": D("0.34"),
    }
    assert round_to_total({"a": D("1.009"), "b": D("2.001")}, D("3.00")) == {
        "a": D("1.00"),
        "b": D("2.00"),
    }
    with pytest.raises(ValueError):
        round_to_total({}, D("0.01"))


def test_unit_parts_add_up_to_the_direct_spend() -> None:
    lines = [
        line("web", api="0.005", workload="w1", model="m1"),
        line("web", api="0.005", workload="w2", model="m1"),
        line("web", api="0.005", workload="w3", model="m2"),
    ]
    (bill,) = allocate(lines, {}, Policy()).teams
    assert bill.direct_usd == D("0.02")
    assert sum((p.spend_usd for p in bill.workloads), D(0)) == D("0.02")
    assert sum((p.spend_usd for p in bill.models), D(0)) == D("0.02")
