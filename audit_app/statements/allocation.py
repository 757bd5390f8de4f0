"""Give every dollar of a month to a team: direct spend, plus shared cost allocated by policy.

Pure module (no Django).

Its rules in full: `docs/methods.md`, section "Allocating shared cost".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, ROUND_HALF_UP, Decimal
from enum import StrEnum

CENT = Decimal("0.01")
ZERO = Decimal(0)
UNASSIGNED = "unassigned"
UNOWNED_API = ""  # the pot key of API spend without a team (pools are keyed by name)


class Method(StrEnum):
    PROPORTIONAL = "proportional"
    EVEN = "even"
    OWNER = "owner"


@dataclass(frozen=True, kw_only=True)
class Rule:
    method: Method = Method.PROPORTIONAL
    owner: str = ""  # the team that takes it all under ``owner``


@dataclass(frozen=True, kw_only=True)
class Policy:
    default: Rule = field(default_factory=Rule)
    pools: Mapping[str, Rule] = field(default_factory=dict)  # pool name -> its override

    def rule(self, pot: str) -> Rule:
        return self.pools.get(pot, self.default) if pot else self.default

    def fingerprint(self) -> str:
        """A text that changes whenever a rule does (for cache keys)."""
        rules = [("", self.default), *sorted(self.pools.items())]
        return ";".join(f"{pot}={rule.method}:{rule.owner}" for pot, rule in rules)


@dataclass(frozen=True, kw_only=True)
class Line:
    """Spend of one (team, pool, workload, model) over the month; team "" is no team."""

    team: str
    pool: str
    workload: str
    model: str
    api_usd: Decimal
    gpu_usd: Decimal
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, kw_only=True)
class Share:
    """The part of one pot a team was given, and why."""

    pot: str  # a pool's name, or UNOWNED_API
    amount_usd: Decimal
    why: str

    @property
    def label(self) -> str:
        return f"pool {self.pot}" if self.pot else "API spend without a team"


@dataclass(frozen=True, kw_only=True)
class Part:
    """A workload or model inside one team: its direct spend and volume."""

    key: str
    spend_usd: Decimal
    requests: int
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True, kw_only=True)
class TeamBill:
    team: str
    direct_api_usd: Decimal
    direct_gpu_usd: Decimal
    allocated_usd: Decimal
    shares: tuple[Share, ...]
    requests: int
    input_tokens: int
    output_tokens: int
    workloads: tuple[Part, ...]
    models: tuple[Part, ...]

    @property
    def direct_usd(self) -> Decimal:
        return self.direct_api_usd + self.direct_gpu_usd

    @property
    def total_usd(self) -> Decimal:
        return self.direct_usd + self.allocated_usd


@dataclass(frozen=True, kw_only=True)
class Allocation:
    total_usd: Decimal  # the month's total, to the cent
    shared_usd: Decimal  # of which shared cost, to the cent
    teams: tuple[TeamBill, ...]  # costliest first


def round_to_total(amounts: Mapping[str, Decimal], total: Decimal) -> dict[str, Decimal]:
    """Round each amount to cents so that they add up to ``total`` (a whole number of cents).

    Largest remainder: floor each amount, then hand the missing cents one by one to the amounts
    with the largest remainders (non-zero amounts first, ties by key), or take surplus cents
    from those with the smallest. Needs at least one amount unless ``total`` is zero.
    """
    if not amounts:
        if total:
            raise ValueError(f"nothing to round {total} onto")
        return {}
    floored = {k: v.quantize(CENT, rounding=ROUND_FLOOR) for k, v in amounts.items()}
    missing = int((total - sum(floored.values(), ZERO)) / CENT)
    order = sorted(amounts, key=lambda k: (-(amounts[k] - floored[k]), not amounts[k], k))
    if missing < 0:
        order.reverse()
    step = CENT if missing > 0 else -CENT
    for i in range(abs(missing)):
        floored[order[i % len(order)]] += step
    return floored


def month_total(lines: Iterable[Line], idle: Mapping[str, Decimal]) -> Decimal:
    """Every line's spend plus every pool's idle cost, exact."""
    return sum((x.api_usd + x.gpu_usd for x in lines), ZERO) + sum(idle.values(), ZERO)


def _money(amount: Decimal) -> str:
    return f"${amount.quantize(CENT, rounding=ROUND_HALF_UP):,.2f}"


@dataclass(frozen=True, kw_only=True)
class _Month:
    """The month's lines summed the ways allocation needs them."""

    direct: dict[str, Decimal]  # named team -> direct spend
    on_pool: dict[str, dict[str, Decimal]]  # pool -> named team -> GPU share
    users: dict[str, set[str]]  # pool -> named teams with traffic on it
    pots: dict[str, Decimal]  # pot -> shared amount
    unowned: set[str]  # pots holding spend without a team

    @staticmethod
    def of(lines: list[Line], idle: Mapping[str, Decimal]) -> _Month:
        direct: dict[str, Decimal] = defaultdict(Decimal)
        on_pool: dict[str, dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
        users: dict[str, set[str]] = defaultdict(set)
        pots: dict[str, Decimal] = defaultdict(Decimal)
        unowned: set[str] = set()
        for x in lines:
            if x.team:
                direct[x.team] += x.api_usd + x.gpu_usd
                if x.pool:
                    on_pool[x.pool][x.team] += x.gpu_usd
                    users[x.pool].add(x.team)
                continue
            if x.api_usd:
                pots[UNOWNED_API] += x.api_usd
                unowned.add(UNOWNED_API)
            if x.gpu_usd:
                pots[x.pool] += x.gpu_usd
                unowned.add(x.pool)
        for pool, amount in idle.items():
            pots[pool] += amount
        return _Month(
            direct=dict(direct),
            on_pool={p: dict(t) for p, t in on_pool.items()},
            users=dict(users),
            pots={p: a for p, a in pots.items() if a},
            unowned=unowned,
        )


def _weights(month: _Month, pot: str, rule: Rule) -> tuple[dict[str, Decimal], str]:
    """Each team's weight in ``pot`` under ``rule``, and the sentence saying why."""
    teams = sorted(month.direct)
    if rule.method == Method.OWNER and rule.owner:
        return {rule.owner: Decimal(1)}, f"all to {rule.owner}, which owns it"
    if pot and rule.method == Method.PROPORTIONAL:
        basis = {t: a for t, a in month.on_pool.get(pot, {}).items() if a > 0}
        total = sum(basis.values(), ZERO)
        if total > 0:
            return basis, f"by direct spend on the pool ({{own}} of {_money(total)})"
    if pot and rule.method == Method.EVEN and month.users.get(pot):
        used = sorted(month.users[pot])
        return {t: Decimal(1) for t in used}, f"evenly among the {len(used)} teams that used it"
    fallback = "" if not pot else "nobody with a team used the pool, so "
    if rule.method == Method.EVEN or not teams:
        return {t: Decimal(1) for t in teams}, f"{fallback}evenly among all {len(teams)} teams"
    basis = {t: a for t, a in month.direct.items() if a > 0}
    total = sum(basis.values(), ZERO)
    if total <= 0:
        return {t: Decimal(1) for t in teams}, f"{fallback}evenly among all {len(teams)} teams"
    return basis, f"{fallback}by direct spend on everything ({{own}} of {_money(total)})"


def _pot_name(pot: str, month: _Month) -> str:
    if not pot:
        return "API spend without a team"
    parts = ["idle GPU"] + (["traffic without a team"] if pot in month.unowned else [])
    return f"{' and '.join(parts)} of pool {pot}"


def _exact_shares(month: _Month, policy: Policy) -> dict[str, dict[str, tuple[Decimal, str]]]:
    """team -> pot -> (exact share, why)."""
    shares: dict[str, dict[str, tuple[Decimal, str]]] = defaultdict(dict)
    for pot, amount in sorted(month.pots.items()):
        weights, why = _weights(month, pot, policy.rule(pot))
        if not weights:
            shares[UNASSIGNED][pot] = (amount, f"{_pot_name(pot, month)}: no team this month")
            continue
        total = sum(weights.values(), ZERO)
        for team, weight in weights.items():
            own = _money(month.direct.get(team, ZERO) if not pot else weight)
            text = f"{_pot_name(pot, month)}, {why.replace('{own}', own)}"
            shares[team][pot] = (amount * weight / total, text)
    return shares


def _parts(lines: list[Line], attribute: str, total: Decimal) -> tuple[Part, ...]:
    spend: dict[str, Decimal] = defaultdict(Decimal)
    volume: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for x in lines:
        key = getattr(x, attribute)
        spend[key] += x.api_usd + x.gpu_usd
        counts = volume[key]
        counts[0] += x.requests
        counts[1] += x.input_tokens
        counts[2] += x.output_tokens
    cents = round_to_total(spend, total) if spend else {}
    parts = [
        Part(key=k, spend_usd=cents[k], requests=v[0], input_tokens=v[1], output_tokens=v[2])
        for k, v in volume.items()
    ]
    return tuple(sorted(parts, key=lambda p: (-p.spend_usd, p.key)))


def _bill(
    team: str,
    lines: list[Line],
    *,
    direct: Decimal,
    allocated: Decimal,
    shares: Mapping[str, tuple[Decimal, str]],
) -> TeamBill:
    api = sum((x.api_usd for x in lines), ZERO)
    gpu = sum((x.gpu_usd for x in lines), ZERO)
    split = round_to_total({"api": api, "gpu": gpu}, direct)
    cents = round_to_total({pot: s[0] for pot, s in shares.items()}, allocated)
    return TeamBill(
        team=team,
        direct_api_usd=split["api"],
        direct_gpu_usd=split["gpu"],
        allocated_usd=allocated,
        shares=tuple(
            Share(pot=pot, amount_usd=cents[pot], why=shares[pot][1]) for pot in sorted(shares)
        ),
        requests=sum(x.requests for x in lines),
        input_tokens=sum(x.input_tokens for x in lines),
        output_tokens=sum(x.output_tokens for x in lines),
        workloads=_parts(lines, "workload", direct),
        models=_parts(lines, "model", direct),
    )


def allocate(lines: Iterable[Line], idle: Mapping[str, Decimal], policy: Policy) -> Allocation:
    """Each team's bill for the month under ``policy`` (see the module docstring)."""
    lines = list(lines)
    month = _Month.of(lines, idle)
    total = month_total(lines, idle).quantize(CENT, rounding=ROUND_HALF_UP)
    shares = _exact_shares(month, policy)
    teams = sorted(set(month.direct) | set(shares))
    exact_direct = {t: month.direct.get(t, ZERO) for t in teams}
    direct_total = sum(exact_direct.values(), ZERO).quantize(CENT, rounding=ROUND_HALF_UP)
    direct = round_to_total(exact_direct, direct_total)
    shared_total = total - direct_total
    exact_allocated = {t: sum((s[0] for s in shares[t].values()), ZERO) for t in shares}
    allocated = {t: ZERO for t in teams} | round_to_total(exact_allocated, shared_total)
    by_team: dict[str, list[Line]] = defaultdict(list)
    for x in lines:
        if x.team:
            by_team[x.team].append(x)
    bills = [
        _bill(t, by_team[t], direct=direct[t], allocated=allocated[t], shares=shares[t])
        for t in teams
    ]
    return Allocation(
        total_usd=total,
        shared_usd=shared_total,
        teams=tuple(sorted(bills, key=lambda b: (-b.total_usd, b.team))),
    )
