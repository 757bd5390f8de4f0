"""Realised savings: what a verified change saved, measured from actual spend.

A change's date is the day its recommendation was verified. Its subject's cost per 1M tokens
(the workload's spend, or the pools' bills for a pool recommendation) over the
`REALISED_BEFORE_DAYS` before that day is compared with the same from that day to the last day
with data, and the difference is priced on a month of tokens at the after-window's rate. Until
`REALISED_MIN_DAYS` days follow the change it says so instead of a figure.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, timedelta
from decimal import Decimal

from audit_app.costs.costing import HOURS_IN_MONTH
from audit_app.models import Recommendation, RecommendationEvent
from audit_app.reporting.filters import SpendFilters
from audit_app.reporting.spend import spend_lines

REALISED_MIN_DAYS = 7
REALISED_BEFORE_DAYS = 28


@dataclass(frozen=True, kw_only=True)
class RealisedSaving:
    """A verified change's saving measured from spend before and after its date."""

    change_date: date
    before_start: date
    before_end: date
    after_start: date
    after_end: date
    before_usd_per_million: Decimal | None
    after_usd_per_million: Decimal | None
    monthly_tokens: int
    savings_monthly: Decimal | None  # None until a week of data follows the change
    note: str


def _cost_and_tokens(
    recommendation: Recommendation, *, start: date, end: date
) -> tuple[Decimal, int]:
    if recommendation.workload is not None:
        lines = spend_lines(
            SpendFilters(start=start, end=end, workload=recommendation.workload.name)
        )
        rows = lines.grouped("workload")
        cost = sum((r.spend_usd for r in rows.values()), Decimal(0))
        tokens = sum(r.input_tokens + r.output_tokens for r in rows.values())
        return cost, tokens
    pools = set(
        recommendation.details.get("pools")
        or [recommendation.pool.name if recommendation.pool else ""]
    )
    lines = spend_lines(SpendFilters(start=start, end=end))
    cost = Decimal(0)
    tokens = 0
    for (pool,), row in lines.grouped("pool").items():
        if pool in pools:
            cost += row.spend_usd
            tokens += row.input_tokens + row.output_tokens
    cost += sum((v for (_d, p), v in lines.idle.items() if p in pools), Decimal(0))
    return cost, tokens


def _verified_on(recommendation: Recommendation) -> date | None:
    event = (
        RecommendationEvent.objects.filter(
            recommendation=recommendation, to_status=Recommendation.Status.VERIFIED
        )
        .order_by("-created_at")
        .first()
    )
    return event.created_at.date() if event is not None else None


def _per_million(cost: Decimal, tokens: int) -> Decimal | None:
    return cost / tokens * 1_000_000 if tokens else None


def realised_saving(recommendation: Recommendation, *, last_day: date) -> RealisedSaving | None:
    """Cost per 1M tokens before and after the day the change was verified, times the volume
    of a month at the after-window's rate; None when it is not verified."""
    change = _verified_on(recommendation)
    if change is None:
        return None
    before_start = change - timedelta(days=REALISED_BEFORE_DAYS)
    before_end = change - timedelta(days=1)
    before_rate = _per_million(
        *_cost_and_tokens(recommendation, start=before_start, end=before_end)
    )
    days_after = (last_day - change).days + 1
    measured = RealisedSaving(
        change_date=change,
        before_start=before_start,
        before_end=before_end,
        after_start=change,
        after_end=last_day,
        before_usd_per_million=before_rate,
        after_usd_per_million=None,
        monthly_tokens=0,
        savings_monthly=None,
        note=f"{max(days_after, 0)} day(s) of data since the change on {change}: the saving is "
        f"measured once {REALISED_MIN_DAYS} days follow it.",
    )
    if days_after < REALISED_MIN_DAYS:
        return measured
    after_cost, after_tokens = _cost_and_tokens(recommendation, start=change, end=last_day)
    after_rate = _per_million(after_cost, after_tokens)
    monthly_tokens = int(after_tokens * HOURS_IN_MONTH / (days_after * 24))
    if before_rate is None or after_rate is None:
        return replace(
            measured,
            after_usd_per_million=after_rate,
            monthly_tokens=monthly_tokens,
            note="No tokens before or after the change: nothing to compare.",
        )
    return replace(
        measured,
        after_usd_per_million=after_rate,
        monthly_tokens=monthly_tokens,
        savings_monthly=(before_rate - after_rate) * monthly_tokens / 1_000_000,
        note=f"${before_rate:,.2f} per 1M tokens from {before_start} to {before_end}, "
        f"${after_rate:,.2f} from {change} to {last_day}, times {monthly_tokens:,} tokens a "
        "month.",
    )
