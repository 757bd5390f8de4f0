"""What every savings plan must satisfy, checked from its JSON (the API's and the CLI's)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any


def assert_plan_coherent(plan: dict[str, Any]) -> None:
    """One feasible plan, priced like spend: savings = spend − after to the cent, the in-plan
    shares add up to it, it is below spend, no option sends traffic to (or changes) a pool
    another in-plan option turns off, no workload or pool is changed twice, and every in-plan
    option moving real-time traffic has measured evidence."""
    spend = Decimal(plan["spend_monthly_usd"])
    after = Decimal(plan["after_monthly_usd"])
    savings = Decimal(plan["savings_monthly_usd"])
    assert savings == spend - after
    in_plan = [o for o in plan["options"] if o["in_plan"]]
    assert sum((Decimal(o["savings_monthly_usd"]) for o in in_plan), Decimal(0)) == savings
    assert savings < spend or spend == 0
    split = (
        Decimal(plan["open_monthly_usd"])
        + Decimal(plan["in_progress_monthly_usd"])
        + sum(
            (Decimal(o["savings_monthly_usd"]) for o in in_plan if o["status"] == "verified"),
            Decimal(0),
        )
    )
    assert split == savings
    workloads = [o["workload"] for o in in_plan if o["workload"]]
    assert len(workloads) == len(set(workloads)), "a workload moves twice"
    for option in in_plan:
        assert Decimal(option["savings_monthly_usd"]) > 0
        assert option["out_reason"] is None and option["alternative_to"] is None
        if option["workload_class"] == "realtime" and option["target_kind"] != "batch_api":
            assert option["evidence"] == "measured", option
        assert not option["needs_benchmark"]
    # Pools: each changed by at most one in-plan option, and none receives traffic from an
    # option while another changes or turns it off.
    changed: dict[str, int | None] = {}
    for option in in_plan:
        for name in (option["from_pool"] or "").split(", "):
            if name:
                assert name not in changed, (name, option)
                changed[name] = option["id"]
    for option in in_plan:
        receiver = option["to_pool"]
        if receiver in changed:
            assert changed[receiver] == option["id"] or receiver == option["from_pool"], option
    for option in plan["options"]:
        if not option["in_plan"]:
            assert option["out_reason"], option
