"""The day rule: which days are complete, and where every default window ends.

A day is **complete** once it has ended in the reporting time zone (`REPORT_TIMEZONE`, default
UTC) and in UTC, where bills and rollups are dated (a UTC-dated day still gets records until its
UTC midnight). Default windows on every surface (pages, API, CLI) end at the last complete day
with data (`default_end`; which days are complete is `audit_app.lib.days`); forecasts count
actuals through it; anomalies are scored on complete days only. The days after it are partial:
their traffic shows apart, as "today so far", and bill lines and GPU pool hours dated after it
are *scheduled*, counted once their day completes.

Every function takes ``now`` (default: the clock), so tests pass a frozen moment.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

from django.utils import timezone

from audit_app.lib.days import DAY, last_complete_day
from audit_app.reporting.selectors import data_date_range


def default_end(now: datetime | None = None, *, last_complete: date | None = None) -> date:
    """Where default windows end: the last complete day with data, or the last complete day
    when no complete day has data (``last_complete``: that day, instead of the clock's)."""
    last = last_complete or last_complete_day(now)
    bounds = data_date_range()
    if bounds is None or bounds[0] > last:
        return last
    return min(bounds[1], last)


@dataclass(frozen=True, kw_only=True)
class PartialDays:
    """The days after the last complete day up to today (UTC dates, as data are dated)."""

    first: date
    last: date

    @property
    def label(self) -> str:
        if self.first == self.last:
            return "Today so far"
        return f"Today so far ({self.first:%b} {self.first.day} to {self.last:%b} {self.last.day})"


def partial_days(now: datetime | None = None) -> PartialDays:
    moment = now or timezone.now()
    first = last_complete_day(moment) + DAY
    return PartialDays(first=first, last=max(first, moment.astimezone(UTC).date()))


def same_days_end(
    *, start: date, last: date, period_end: date, previous_start: date, previous_end: date
) -> date:
    """The last day of the previous period's like-for-like days for ``start..last`` of a period
    ending ``period_end``: as many days from its start (capped at its end), or the whole
    previous period once ``last`` closes its own."""
    if last >= period_end:
        return previous_end
    return min(previous_start + (last - start), previous_end)
