"""The clock's side of the day rule: which days are complete (`audit_app.reporting.days` holds
where default windows end, which needs the data).

A day is complete once it has ended in the reporting time zone (`REPORT_TIMEZONE`, default UTC)
and in UTC, where bills and rollups are dated. Every function takes ``now`` (default: the
clock), so tests pass a frozen moment.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.utils import timezone

DAY = timedelta(days=1)


def report_zone() -> ZoneInfo:
    """The time zone whose midnight completes a day (`REPORT_TIMEZONE`)."""
    return ZoneInfo(settings.REPORT_TIMEZONE)


def last_complete_day(now: datetime | None = None) -> date:
    """The last day that has ended in the reporting time zone and in UTC."""
    moment = now or timezone.now()
    local = moment.astimezone(report_zone()).date()
    utc = moment.astimezone(UTC).date()
    return min(local, utc) - DAY


def complete_until(now: datetime | None = None) -> datetime:
    """The first instant not yet complete (UTC midnight after the last complete day): bill
    lines and pool hours from here on are scheduled."""
    return datetime.combine(last_complete_day(now) + DAY, time.min, tzinfo=UTC)
