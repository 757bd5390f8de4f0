"""Sending each team owner their month's statement by email, once.

`statements_send` runs on STATEMENTS_SEND_DAY of each month (Celery beat) for the month before,
and from the Statements page's "Send now" (finops). For each team with an owner email it first
*claims* a `StatementDelivery` row, unique per (team, month), then sends: a row already sent, or
being sent by another run (pending, tried less than `budgets.delivery.CLAIM_SECONDS` ago), is
not claimed, so a redelivered task or a second click never sends twice. A failure is kept on the
row (attempts, last error) and logged, like alert deliveries; the next run tries it again.
Months not yet over are never sent.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date

from django.conf import settings
from django.core.mail import EmailMessage
from django.utils import timezone

from audit_app.budgets.delivery import delivery_claim, failure_message
from audit_app.lib.formatting import money
from audit_app.models import StatementDelivery, Team
from audit_app.statements.services import (
    MonthStatement,
    StatementRefused,
    TeamStatement,
    month_is_over,
    month_statement,
    previous_month,
    team_directory,
)
from audit_app.statements.workbook import statement_workbook

logger = logging.getLogger(__name__)

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


@dataclass(frozen=True, kw_only=True)
class SendOutcome:
    team: str
    target: str
    outcome: str  # "sent", "skipped" (sent already or being sent), "failed: <why>"


def _claim(team: str, first: date, target: str) -> StatementDelivery | None:
    row, _ = StatementDelivery.objects.get_or_create(
        team=team, month=first, defaults={"target": target}
    )
    claimed = delivery_claim(StatementDelivery.objects.filter(pk=row.pk), target=target)
    return row if claimed else None


def statement_email(statement: MonthStatement, team: TeamStatement, entry: Team) -> EmailMessage:
    """The owner's email: the figures in plain text, the team's workbook attached."""
    bill = team.bill
    name = entry.display_name or bill.team
    lines = [
        f"{name}'s inference statement for {statement.label}.",
        "",
        f"Direct spend: {money(bill.direct_usd)} "
        f"(API {money(bill.direct_api_usd)}, GPU {money(bill.direct_gpu_usd)})",
        f"Allocated shared cost: {money(bill.allocated_usd)}",
        f"Total: {money(bill.total_usd)}"
        + (
            f" (previous month {money(team.previous_total_usd)})" if team.previous_total_usd else ""
        ),
        "",
        *(f"- {share.label}: {money(share.amount_usd)}, {share.why}" for share in bill.shares),
        "",
        "The workbook attached has the details; the Statements page of Inference Spend Audit "
        "shows every month.",
    ]
    message = EmailMessage(
        subject=f"Inference statement {statement.month:%Y-%m}: {name} {money(bill.total_usd)}",
        body="\n".join(lines),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[entry.owner_email],
    )
    message.attach(
        f"statement-{statement.month:%Y-%m}-{bill.team}.xlsx".replace("/", "-"),
        statement_workbook(statement, (team,), {bill.team: entry}),
        XLSX,
    )
    return message


def _send_one(statement: MonthStatement, team: TeamStatement, entry: Team) -> SendOutcome:
    row = _claim(team.team, statement.month, entry.owner_email)
    if row is None:
        return SendOutcome(team=team.team, target=entry.owner_email, outcome="skipped")
    try:
        statement_email(statement, team, entry).send(fail_silently=False)
    except Exception as exc:
        message = failure_message(exc)[:2000]
        StatementDelivery.objects.filter(pk=row.pk).update(
            status=StatementDelivery.Status.FAILED, last_error=message
        )
        logger.warning(
            "statement %s %s to %s failed: %s",
            team.team,
            statement.month,
            entry.owner_email,
            message,
        )
        return SendOutcome(team=team.team, target=entry.owner_email, outcome=f"failed: {message}")
    StatementDelivery.objects.filter(pk=row.pk).update(
        status=StatementDelivery.Status.SENT, sent_at=timezone.now(), last_error=""
    )
    return SendOutcome(team=team.team, target=entry.owner_email, outcome="sent")


def statements_send(*, month: date | None = None, today: date | None = None) -> list[SendOutcome]:
    """Send ``month``'s statement (default: the month before today's) to each team owner with
    an email, once each; refused for a month not yet over."""
    today = today or timezone.now().date()
    first = month or previous_month(today.replace(day=1))
    if not month_is_over(first, today=today):
        raise StatementRefused(
            f"{first:%Y-%m} is not over yet: a month to date is never sent", field="month"
        )
    statement = month_statement(first, today=today)
    directory = team_directory([t.team for t in statement.teams])
    outcomes = []
    for team in statement.teams:
        entry = directory.get(team.team)
        if entry is not None and entry.owner_email:
            outcomes.append(_send_one(statement, team, entry))
    return outcomes
