"""The savings plan: one feasible set of options and its after-state (pure: no Django).

Its rules in full: `docs/methods.md`, section "Choosing the savings plan".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from enum import StrEnum

CENT = Decimal("0.01")
EXACT_LIMIT = 20

OPEN = "proposed"
IN_PROGRESS = "pilot_approved"
REALISED = "verified"
CLOSED = frozenset({"rejected", "gate_failed"})


class Evidence(StrEnum):
    """What the target's throughput and latency rest on."""

    MEASURED = "measured"  # a benchmark run of the model on the target
    CATALOGUED = "catalogued"  # a published price or catalogued throughput
    NONE = "none"  # neither


@dataclass(frozen=True, kw_only=True)
class PlanOption:
    """One option as the plan sees it."""

    key: str  # unique among the options: "r12" for a stored recommendation
    id: int | None  # the recommendation's id
    workload: str | None
    workload_class: str | None
    from_pool: str | None
    to_pool: str | None  # the pool or provider receiving the traffic
    target_kind: str
    target: str
    units: frozenset[str]  # the cost units it re-prices
    after_monthly: Decimal  # those units after the change, a month
    touches: frozenset[str]  # "workload:<name>", "pool:<name>"
    removes: frozenset[str] = frozenset()  # pools it turns off
    receives: frozenset[str] = frozenset()  # pools it sends traffic to
    peak_demand: int = 0  # output tokens in the receiving side's busiest hour, after
    peak_capacity: int | None = None  # what the after-state serves in that hour (None: n/a)
    evidence: Evidence = Evidence.CATALOGUED
    moves_realtime: bool = False
    needs_benchmark: bool = False  # moves real-time traffic without measured evidence
    blocked: str = ""  # a risk that keeps it out of the plan, in one sentence
    status: str = OPEN


@dataclass(frozen=True, kw_only=True)
class PlannedOption:
    option: PlanOption
    now_monthly: Decimal  # its units today, a month
    savings_monthly: Decimal  # its share when in the plan, else what it alone would save
    in_plan: bool
    alternative_to: str | None  # key of the plan option it contradicts
    out_reason: str


@dataclass(frozen=True, kw_only=True)
class Plan:
    spend_monthly: Decimal
    after_monthly: Decimal
    savings_monthly: Decimal
    open_monthly: Decimal
    in_progress_monthly: Decimal
    realised_monthly: Decimal  # measured from spend before and after verified changes
    needs_benchmark_monthly: Decimal  # what the plan would add if the benchmarks passed
    options: tuple[PlannedOption, ...] = field(default_factory=tuple)
    heuristic: bool = False  # a group was too large for the exact search


def money(amount: Decimal) -> Decimal:
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def now_of(option: PlanOption, units_now: Mapping[str, Decimal]) -> Decimal:
    return sum((units_now.get(unit, Decimal(0)) for unit in option.units), Decimal(0))


def contradiction(a: PlanOption, b: PlanOption) -> str:
    """Why ``a`` cannot join a plan holding ``b`` ("" when it can)."""
    for pool in sorted(a.removes & (b.touches | b.receives)):
        return f"it turns off pool {pool.removeprefix('pool:')}, which the plan's option changes"
    for pool in sorted(b.removes & (a.touches | a.receives)):
        return f"pool {pool.removeprefix('pool:')} is turned off by the plan's option"
    shared = sorted(a.touches & b.touches)
    for touch in shared:
        kind, _, name = touch.partition(":")
        if kind == "workload":
            return f"workload {name} would move twice"
        return f"pool {name} would change twice"
    return ""


def capacity_problem(option: PlanOption) -> str:
    if option.peak_capacity is not None and option.peak_demand > option.peak_capacity:
        return (
            f"capacity: its busiest hour needs {option.peak_demand:,} output tokens and the "
            f"after-state serves {option.peak_capacity:,}"
        )
    return ""


def _why_not_eligible(option: PlanOption, saving: Decimal, floor: Decimal) -> str:
    if option.status in CLOSED:
        return "rejected by a manager" if option.status == "rejected" else "its gate failed"
    if option.needs_benchmark:
        return (
            "needs a benchmark: it moves real-time traffic and no measured run meets the "
            "workload's latency"
        )
    if option.blocked:
        return f"risk: {option.blocked}"
    problem = capacity_problem(option)
    if problem:
        return problem
    if saving < floor:
        return f"below the minimum: saves ${money(saving):,} a month, under ${money(floor):,}"
    return ""


def _keys(option: PlanOption) -> frozenset[str]:
    return option.touches | option.removes | option.receives


class _Held:
    """What the options held so far touch, turn off and receive: an option fits when it
    contradicts none of them (the same rule as `contradiction`, without the pairs)."""

    def __init__(self) -> None:
        self.touched: set[str] = set()
        self.removed: set[str] = set()
        self.received: set[str] = set()

    def fits(self, option: PlanOption) -> bool:
        return not (
            option.touches & self.touched
            or option.removes & (self.touched | self.received)
            or (option.touches | option.receives) & self.removed
        )

    def hold(self, option: PlanOption) -> None:
        self.touched |= option.touches
        self.removed |= option.removes
        self.received |= option.receives


def _components(indices: Sequence[int], options: Sequence[PlanOption]) -> list[list[int]]:
    """Groups of ``indices`` linked through a workload or pool they share (only options that
    share one can contradict)."""
    parent = {i: i for i in indices}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[str, int] = {}
    for i in indices:
        for key in _keys(options[i]):
            if key in first:
                parent[find(i)] = find(first[key])
            else:
                first[key] = i
    groups: dict[int, list[int]] = {}
    for i in indices:
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def _best_subset(
    indices: Sequence[int], options: Sequence[PlanOption], savings: Sequence[Decimal]
) -> list[int]:
    """The subset of ``indices`` without contradictions that saves most (exact)."""
    order = sorted(indices, key=lambda i: (-savings[i], options[i].key))
    suffix = [Decimal(0)] * (len(order) + 1)
    for pos in range(len(order) - 1, -1, -1):
        suffix[pos] = suffix[pos + 1] + max(savings[order[pos]], Decimal(0))
    best: list[int] = []
    best_total = Decimal(-1)

    def search(pos: int, chosen: list[int], total: Decimal) -> None:
        nonlocal best, best_total
        if total > best_total:
            best, best_total = list(chosen), total
        if pos == len(order) or total + suffix[pos] <= best_total:
            return
        i = order[pos]
        if all(not contradiction(options[i], options[j]) for j in chosen):
            chosen.append(i)
            search(pos + 1, chosen, total + savings[i])
            chosen.pop()
        search(pos + 1, chosen, total)

    search(0, [], Decimal(0))
    return best


def choose(
    options: Sequence[PlanOption], savings: Sequence[Decimal], eligible: Sequence[bool]
) -> tuple[set[int], bool]:
    """(indices of the plan's options, whether a group was filled greedily)."""
    chosen: set[int] = set()
    held = _Held()
    # Decided options first: verified, then approved, larger saving first.
    decided = sorted(
        (i for i, o in enumerate(options) if eligible[i] and o.status in (REALISED, IN_PROGRESS)),
        key=lambda i: (options[i].status != REALISED, -savings[i], options[i].key),
    )
    for i in decided:
        if held.fits(options[i]):
            chosen.add(i)
            held.hold(options[i])
    free = [
        i
        for i, o in enumerate(options)
        if eligible[i] and i not in chosen and o.status == OPEN and held.fits(o)
    ]
    heuristic = False
    for group in _components(free, options):
        if len(group) <= EXACT_LIMIT:
            chosen.update(_best_subset(group, options, savings))
            continue
        heuristic = True
        greedy = _Held()
        for i in sorted(group, key=lambda i: (-savings[i], options[i].key)):
            if greedy.fits(options[i]):
                chosen.add(i)
                greedy.hold(options[i])
    return chosen, heuristic


def _shares(amounts: Sequence[Decimal], total: Decimal) -> list[Decimal]:
    """``amounts`` rounded to the cent so that they add up to ``total`` (largest remainder)."""
    rounded = [a.quantize(CENT, rounding="ROUND_FLOOR") for a in amounts]
    left = int((total - sum(rounded, Decimal(0))) / CENT)
    order = sorted(range(len(amounts)), key=lambda i: (rounded[i] - amounts[i], i))
    step = CENT if left >= 0 else -CENT
    for k in range(abs(left)):
        rounded[order[k % len(order)]] += step
    return rounded


def _out_of_plan(
    option: PlanOption,
    *,
    reason: str,
    chosen_by_key: Mapping[str, list[int]],
    items: Sequence[PlanOption],
    savings: Sequence[Decimal],
) -> tuple[str, str | None]:
    """(why ``option`` is out, the key of the plan option it is an alternative to)."""
    rival = max(
        (
            j
            for j in {j for key in _keys(option) for j in chosen_by_key.get(key, ())}
            if contradiction(option, items[j])
        ),
        key=lambda j: (savings[j], items[j].key),
        default=None,
    )
    if not reason and rival is not None:
        reason = f"contradiction: {contradiction(option, items[rival])} ({items[rival].target})"
    elif not reason:
        reason = "the plan saves more without it"
    return reason, items[rival].key if rival is not None else None


def _planned(
    items: Sequence[PlanOption],
    *,
    now: Sequence[Decimal],
    savings: Sequence[Decimal],
    reasons: Sequence[str],
    chosen: set[int],
    shares: Mapping[int, Decimal],
) -> tuple[PlannedOption, ...]:
    """Every option: in the plan with its share, or out with why and what it is an
    alternative to."""
    chosen_by_key: dict[str, list[int]] = {}
    for i in chosen:
        for key in _keys(items[i]):
            chosen_by_key.setdefault(key, []).append(i)
    planned = []
    for i, option in enumerate(items):
        reason, rival = "", None
        if i not in chosen:
            reason, rival = _out_of_plan(
                option, reason=reasons[i], chosen_by_key=chosen_by_key, items=items, savings=savings
            )
        planned.append(
            PlannedOption(
                option=option,
                now_monthly=money(now[i]),
                savings_monthly=shares[i] if i in chosen else money(savings[i]),
                in_plan=i in chosen,
                alternative_to=rival,
                out_reason=reason,
            )
        )
    return tuple(planned)


def plan_build(
    options: Iterable[PlanOption],
    *,
    spend_monthly: Decimal,
    units_now: Mapping[str, Decimal],
    min_savings: Decimal,
    realised: Mapping[str, Decimal] | None = None,
) -> Plan:
    """The plan that saves most among ``options``, priced from ``units_now`` (each cost unit's
    spend today, a month) and ``spend_monthly`` (all of today's spend, a month).
    ``realised`` maps each verified change's key to its measured saving: the realised total is
    theirs, measured from spend, never the estimate."""
    items = sorted(options, key=lambda o: o.key)
    now = [now_of(o, units_now) for o in items]
    savings = [n - o.after_monthly for n, o in zip(now, items, strict=True)]
    reasons = [_why_not_eligible(o, s, min_savings) for o, s in zip(items, savings, strict=True)]
    eligible = [not r for r in reasons]
    chosen, heuristic = choose(items, savings, eligible)
    # What the plan would hold if every benchmark it waits for passed.
    hopeful = [
        e or (o.needs_benchmark and o.status not in CLOSED and s >= min_savings and not o.blocked)
        for e, o, s in zip(eligible, items, savings, strict=True)
    ]
    with_benchmarks, _ = choose(items, savings, hopeful)

    total = sum((savings[i] for i in chosen), Decimal(0))
    after = money(spend_monthly - total)
    plan_savings = money(spend_monthly) - after
    ordered = sorted(chosen)
    shares = dict(zip(ordered, _shares([savings[i] for i in ordered], plan_savings), strict=True))
    extra = money(sum((savings[i] for i in with_benchmarks), Decimal(0))) - money(total)

    def by_status(status: str) -> Decimal:
        return money(sum((shares[i] for i in chosen if items[i].status == status), Decimal(0)))

    return Plan(
        spend_monthly=money(spend_monthly),
        after_monthly=after,
        savings_monthly=plan_savings,
        open_monthly=by_status(OPEN),
        in_progress_monthly=by_status(IN_PROGRESS),
        realised_monthly=money(sum((realised or {}).values(), Decimal(0))),
        needs_benchmark_monthly=max(extra, Decimal(0)),
        options=_planned(
            items, now=now, savings=savings, reasons=reasons, chosen=chosen, shares=shares
        ),
        heuristic=heuristic,
    )
