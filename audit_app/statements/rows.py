"""A month's statements as the API and CLI answer them (JSON) and as the CSV lists them: one
shape, so the page, API, command, CSV and workbook show the same figures."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from audit_app.statements.services import MonthStatement, TeamStatement

SIX = Decimal("0.000001")
CSV_HEADER = (
    "month",
    "team",
    "display_name",
    "cost_centre",
    "direct_api_usd",
    "direct_gpu_usd",
    "direct_usd",
    "allocated_usd",
    "total_usd",
    "previous_total_usd",
    "requests",
    "input_tokens",
    "output_tokens",
    "end_users",
    "usd_per_1k_requests",
    "usd_per_1m_tokens",
    "usd_per_end_user",
)


def usd(amount: Decimal | None) -> str | None:
    """Money as a decimal string (cents stay cents; unit costs keep six places)."""
    if amount is None:
        return None
    return str(amount if amount == amount.quantize(Decimal("0.01")) else amount.quantize(SIX))


def team_json(team: TeamStatement) -> dict[str, Any]:
    bill = team.bill
    return {
        "team": bill.team,
        "direct_usd": usd(bill.direct_usd),
        "direct_api_usd": usd(bill.direct_api_usd),
        "direct_gpu_usd": usd(bill.direct_gpu_usd),
        "allocated_usd": usd(bill.allocated_usd),
        "total_usd": usd(bill.total_usd),
        "requests": bill.requests,
        "input_tokens": bill.input_tokens,
        "output_tokens": bill.output_tokens,
        "end_users": team.end_users,
        "usd_per_1k_requests": usd(team.usd_per_1k_requests),
        "usd_per_1m_tokens": usd(team.usd_per_1m_tokens),
        "usd_per_end_user": usd(team.usd_per_end_user),
        "previous_total_usd": usd(team.previous_total_usd),
        "allocations": [
            {"pot": s.pot, "amount_usd": usd(s.amount_usd), "why": s.why} for s in bill.shares
        ],
    }


def statement_json(
    statement: MonthStatement, teams: tuple[TeamStatement, ...] | None = None
) -> dict[str, Any]:
    """The answer of ``GET /api/v1/statements/`` and ``manage.py statement --json``; ``teams``
    narrows the list (an engineer's own teams), never the month's total."""
    policy = statement.policy
    return {
        "month": f"{statement.month:%Y-%m}",
        "complete": statement.complete,
        "policy": str(policy.default.method),
        "owner_team": policy.default.owner or None,
        "pool_policies": {
            pool: {"policy": str(rule.method), "owner_team": rule.owner or None}
            for pool, rule in sorted(policy.pools.items())
        },
        "total_usd": usd(statement.total_usd),
        "shared_usd": usd(statement.shared_usd),
        "teams": [team_json(t) for t in (statement.teams if teams is None else teams)],
    }


def csv_rows(
    statement: MonthStatement, teams: tuple[TeamStatement, ...], directory: dict[str, Any]
) -> list[list[object]]:
    """One row per team, in CSV_HEADER's order."""
    rows: list[list[object]] = []
    for team in teams:
        bill = team.bill
        entry = directory.get(bill.team)
        rows.append(
            [
                f"{statement.month:%Y-%m}",
                bill.team,
                entry.display_name if entry else "",
                entry.cost_centre if entry else "",
                bill.direct_api_usd,
                bill.direct_gpu_usd,
                bill.direct_usd,
                bill.allocated_usd,
                bill.total_usd,
                team.previous_total_usd,
                bill.requests,
                bill.input_tokens,
                bill.output_tokens,
                team.end_users,
                team.usd_per_1k_requests,
                team.usd_per_1m_tokens,
                team.usd_per_end_user,
            ]
        )
    return rows
