"""Monthly statements per team: the month's spend lines from the spend read model, allocated by
the stored policy (`allocation`), with volumes, end users, unit costs and last month's total.

The money is `reporting.spend.spend_lines` for the month (API spend and GPU share per line,
idle GPU per pool, the pools' attribution from `costs.billing.pool_reports`), so a month's
statements add up to the overview's total for that month. Statements are computed on demand
and cached per data version *and* policy, so a policy change applies to every month at once.

Also here: the policy's reads and changes (audited), the team directory (teams seen in the data
get a row), and who may see which teams' statements.
"""

from __future__ import annotations

import re
from calendar import monthrange
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit_app.access.audit import audit_record
from audit_app.access.permissions import Actor, Role, has_role, user_roles
from audit_app.lib.days import last_complete_day
from audit_app.lib.errors import DomainError, ErrorKind
from audit_app.lib.query_params import (
    EARLIEST_DATE,
    LATEST_DATE,
    ParameterError,
    QueryParams,
    shown,
)
from audit_app.lib.results_cache import cached
from audit_app.models import AllocationRule, AuditEvent, ServingPool, Team, Upload, WorkloadDay
from audit_app.reporting.days import default_end
from audit_app.reporting.filters import SpendFilters
from audit_app.reporting.spend import spend_lines
from audit_app.statements.allocation import (
    Line,
    Method,
    Policy,
    Rule,
    TeamBill,
    allocate,
)

ZERO = Decimal(0)
CHART_MONTHS = 12
# Who sees every team's statements; an engineer sees the teams whose directory lists them.
ALL_TEAMS_ROLES = frozenset({Role.FINOPS, Role.MANAGER})
POLICY_WRITER_ROLES = frozenset({Role.FINOPS})
MONTH = re.compile(r"(?P<year>\d{4})-(?P<month>0[1-9]|1[0-2])")


class StatementRefused(DomainError):
    """A month, policy or team the statements cannot take."""


# --- Months --------------------------------------------------------------------------------
def month_bounds(first: date) -> tuple[date, date]:
    return first, first.replace(day=monthrange(first.year, first.month)[1])


def previous_month(first: date) -> date:
    return (first - timedelta(days=1)).replace(day=1)


def month_is_over(first: date, *, today: date | None = None) -> bool:
    """True when the month's last day is complete (`audit_app.reporting.days`; with ``today``,
    the days before it): only then is it sent, and shown as a whole month rather than "month
    to date"."""
    complete = today - timedelta(days=1) if today else last_complete_day()
    return month_bounds(first)[1] <= complete


def month_param(params: QueryParams, name: str = "month") -> date | None:
    """A month, YYYY-MM, within the days the app handles, as its first day; None when absent.
    A bad value raises ParameterError naming it."""
    raw = (params.get(name) or "").strip()
    if not raw:
        return None
    found = MONTH.fullmatch(raw)
    first = date(int(found["year"]), int(found["month"]), 1) if found else None
    if first is None:
        raise ParameterError(name, f"{name}={shown(raw)} is not a month (use YYYY-MM)")
    if not EARLIEST_DATE <= first <= LATEST_DATE:
        raise ParameterError(
            name,
            f"{name}={shown(raw)} is outside {EARLIEST_DATE:%Y-%m} to {LATEST_DATE:%Y-%m}, "
            "the months we handle",
        )
    return first


def parse_month(text: str | None, *, today: date | None = None) -> date:
    """``YYYY-MM`` as the month's first day; without one, `default_month`."""
    return month_param({"month": text or ""}) or default_month(today=today)


def default_month(*, today: date | None = None) -> date:
    """The month of the last complete day with data when it is over, else the month before
    today's."""
    today = today or timezone.now().date()
    last = default_end().replace(day=1)
    return last if month_is_over(last, today=today) else previous_month(today.replace(day=1))


# --- Policy --------------------------------------------------------------------------------
def policy_current() -> Policy:
    """The stored rules: the global one (proportional when none is stored) and each pool's."""
    default = Rule()
    pools: dict[str, Rule] = {}
    for row in AllocationRule.objects.all():
        rule = Rule(method=Method(row.method), owner=row.owner_team)
        if row.pool:
            pools[row.pool] = rule
        else:
            default = rule
    return Policy(default=default, pools=pools)


def policy_uniform(method: str, *, owner: str = "") -> Policy:
    """One method for every pot (what ``--policy`` asks for); ``owner`` defaults to the stored
    global rule's owner team."""
    if method not in Method.__members__.values():
        choices = ", ".join(m.value for m in Method)
        raise StatementRefused(f"policy must be one of {choices} (got {method!r})", field="policy")
    owner = owner or policy_current().default.owner
    if method == Method.OWNER and not owner:
        raise StatementRefused(
            "the owner policy needs an owner team: set one on the global rule", field="owner"
        )
    return Policy(default=Rule(method=Method(method), owner=owner))


@transaction.atomic
def policy_change(*, actor: Actor, pool: str, method: str, owner: str = "") -> Policy:
    """Set the global rule (``pool`` "") or a pool's override; ``method`` "" removes a pool's
    override. Audited; statements of every month follow at once."""
    if not has_role(actor, POLICY_WRITER_ROLES) and actor is not None:
        raise StatementRefused(
            "Only finops analysts may change how shared cost is allocated.",
            kind=ErrorKind.FORBIDDEN,
        )
    if pool and not ServingPool.objects.filter(name=pool).exists():
        raise StatementRefused(f"no serving pool named {pool!r}", field="pool")
    if method and method not in AllocationRule.Method.values:
        choices = ", ".join(AllocationRule.Method.values)
        raise StatementRefused(f"method must be one of {choices} (got {method!r})", field="method")
    if not method and not pool:
        raise StatementRefused("the global rule needs a method", field="method")
    if method == AllocationRule.Method.OWNER and not owner.strip():
        raise StatementRefused("the owner method needs an owner team", field="owner")
    row = AllocationRule.objects.filter(pool=pool).first()
    before = {"method": row.method if row else "", "owner_team": row.owner_team if row else ""}
    user = actor if has_role(actor) else None
    if not method:
        if row is not None:
            row.delete()
        after = {"method": "", "owner_team": ""}
        row = AllocationRule(pool=pool)
    else:
        row, _ = AllocationRule.objects.update_or_create(
            pool=pool,
            defaults={"method": method, "owner_team": owner.strip(), "updated_by": user},
        )
        after = {"method": row.method, "owner_team": row.owner_team}
    where = f"pool {pool}" if pool else "every pool"
    audit_record(
        actor=actor,
        action=AuditEvent.Action.ALLOCATION_CHANGED,
        obj=row,
        summary=f"allocation of {where}: {after['method'] or 'the global rule'}"
        + (f" to {after['owner_team']}" if after["owner_team"] else ""),
        details={"pool": pool, "before": before, "after": after},
    )
    return policy_current()


# --- Team directory and who sees what -------------------------------------------------------
def team_directory(names: list[str] | None = None) -> dict[str, Team]:
    """Every team's row by name; ``names`` seen in the data get a row when they have none."""
    directory = {team.name: team for team in Team.objects.all()}
    missing = sorted({n for n in names or () if n and n not in directory})
    if missing:
        Team.objects.bulk_create([Team(name=n) for n in missing], ignore_conflicts=True)
        directory = {team.name: team for team in Team.objects.all()}
    return directory


def visible_teams(user: Actor) -> frozenset[str] | None:
    """The teams whose statements ``user`` may see: None for all (finops, managers), else the
    teams whose directory row lists the user's name as a member."""
    if user_roles(user) & ALL_TEAMS_ROLES:
        return None
    if user is None or not has_role(user):
        return frozenset()
    name = user.get_username()
    return frozenset(t.name for t in Team.objects.all() if name in t.members)


# --- Statements ----------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class TeamStatement:
    bill: TeamBill
    previous_total_usd: Decimal | None  # the team's total the month before (None: not billed)
    end_users: int | None  # distinct end users of its workloads (None: none logged)

    @property
    def team(self) -> str:
        return self.bill.team

    @property
    def change_usd(self) -> Decimal | None:
        if self.previous_total_usd is None:
            return None
        return self.bill.total_usd - self.previous_total_usd

    def _per(self, count: int | None, scale: int) -> Decimal | None:
        return self.bill.total_usd * scale / count if count else None

    @property
    def usd_per_1k_requests(self) -> Decimal | None:
        return self._per(self.bill.requests, 1_000)

    @property
    def usd_per_1m_tokens(self) -> Decimal | None:
        return self._per(self.bill.input_tokens + self.bill.output_tokens, 1_000_000)

    @property
    def usd_per_end_user(self) -> Decimal | None:
        return self._per(self.end_users, 1)


@dataclass(frozen=True, kw_only=True)
class MonthStatement:
    month: date  # first day
    end: date  # last day
    policy: Policy
    complete: bool  # False: month to date, never sent
    total_usd: Decimal
    shared_usd: Decimal
    teams: tuple[TeamStatement, ...]

    @property
    def label(self) -> str:
        return f"{self.month:%B %Y}" + ("" if self.complete else " (month to date)")

    def team(self, name: str) -> TeamStatement | None:
        return next((t for t in self.teams if t.team == name), None)

    def visible_to(self, teams: frozenset[str] | None) -> tuple[TeamStatement, ...]:
        return self.teams if teams is None else tuple(t for t in self.teams if t.team in teams)


@dataclass(frozen=True, kw_only=True)
class _Month:
    lines: list[Line]
    idle: dict[str, Decimal]
    users: dict[str, set[int]]  # team -> end-user hashes of its workloads


def _month_data(first: date) -> _Month:
    start, end = month_bounds(first)
    spend = spend_lines(SpendFilters(start=start, end=end))
    merged: dict[tuple[str, str, str, str], list[Any]] = defaultdict(lambda: [ZERO, ZERO, 0, 0, 0])
    for key, sums in spend.lines.items():
        m = merged[(key.team, key.pool, key.workload, key.model)]
        m[0] += sums.logged_cost_usd + sums.estimated_cost_usd
        m[1] += sums.gpu_cost_usd
        m[2] += sums.requests
        m[3] += sums.input_tokens
        m[4] += sums.output_tokens
    lines = [
        Line(team=t, pool=p, workload=w, model=mo, api_usd=v[0], gpu_usd=v[1], requests=v[2],
             input_tokens=v[3], output_tokens=v[4])
        for (t, p, w, mo), v in merged.items()
    ]  # fmt: skip
    idle: dict[str, Decimal] = defaultdict(Decimal)
    for (_, pool), amount in spend.idle.items():
        idle[pool] += amount
    workload_teams: dict[str, set[str]] = defaultdict(set)
    for line in lines:
        if line.team:
            workload_teams[line.workload].add(line.team)
    users: dict[str, set[int]] = defaultdict(set)
    for workload, hashes in WorkloadDay.objects.filter(
        day__gte=start,
        day__lte=end,
        upload__status=Upload.Status.SUCCEEDED,
        workload__in=list(workload_teams),
    ).values_list("workload", "end_user_hashes"):
        for team in workload_teams[workload]:
            users[team].update(hashes)
    return _Month(lines=lines, idle=dict(idle), users=dict(users))


def _computed(first: date, policy: Policy, today: date) -> MonthStatement:
    # numpy comes with the sketches: imported here so start-up stays light.
    from audit_app.ingestion.rollups import distinct_estimate, distinct_sketch

    data = _month_data(first)
    allocation = allocate(data.lines, data.idle, policy)
    before = allocate(*_lines_and_idle(previous_month(first)), policy)
    previous = {bill.team: bill.total_usd for bill in before.teams}
    teams = tuple(
        TeamStatement(
            bill=bill,
            previous_total_usd=previous.get(bill.team),
            end_users=(
                distinct_estimate(distinct_sketch(data.users[bill.team]))
                if data.users.get(bill.team)
                else None
            ),
        )
        for bill in allocation.teams
    )
    # Teams seen in the month's data get a directory row, once per computed statement.
    team_directory([t.bill.team for t in teams])
    return MonthStatement(
        month=first,
        end=month_bounds(first)[1],
        policy=policy,
        complete=month_is_over(first, today=today),
        total_usd=allocation.total_usd,
        shared_usd=allocation.shared_usd,
        teams=teams,
    )


def _lines_and_idle(first: date) -> tuple[list[Line], dict[str, Decimal]]:
    data = _month_data(first)
    return data.lines, data.idle


def month_statement(
    first: date, *, policy: Policy | None = None, today: date | None = None
) -> MonthStatement:
    """Every team's statement for the month starting ``first`` under ``policy`` (the stored one
    by default); cached per data version and policy."""
    policy = policy or policy_current()
    today = today or timezone.now().date()
    key = f"{first}|{month_is_over(first, today=today)}|{policy.fingerprint()}"
    return cached("month_statement", key, lambda: _computed(first, policy, today))


@dataclass(frozen=True, kw_only=True)
class TeamMonth:
    month: date
    direct_usd: Decimal
    allocated_usd: Decimal


def team_history(
    team: str, *, last: date, months: int = CHART_MONTHS, policy: Policy | None = None
) -> list[TeamMonth]:
    """The team's direct and allocated cost for each of ``months`` months ending with ``last``
    (oldest first; zeros where it had none)."""
    firsts = [last]
    while len(firsts) < months:
        firsts.insert(0, previous_month(firsts[0]))
    history = []
    for first in firsts:
        found = month_statement(first, policy=policy).team(team)
        history.append(
            TeamMonth(
                month=first,
                direct_usd=found.bill.direct_usd if found else ZERO,
                allocated_usd=found.bill.allocated_usd if found else ZERO,
            )
        )
    return history
