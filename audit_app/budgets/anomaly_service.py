"""Spend anomalies per workload × model × day, read from the one read model.

Each workload × model pair is a daily series of requests, tokens (input + output) and spend,
where spend is the read model's own figure per line (`reporting.spend.spend_lines`: API spend
plus the GPU share, never priced a second time), grouped by (day, workload, model). Days
without traffic are zero days. `anomalies.detect` judges each series against the same weekday
of the previous weeks, and splits each jump into volume, mix and price. The series start no
earlier than the first day with data: a day before any data was loaded is unknown, not a zero
day (or every pair's first weeks would be jumps from nothing).

Only complete days are scored (`reporting.days`): a window reaching past the last complete day
stops at it, so a day still running is never judged against whole ones. Each anomaly's day
spends at least `ANOMALY_MIN_USD` over its expected day (and $1 over it, or three times it:
`anomalies.detect`); the page and the API sort by dollars or score and filter by dollars
(`anomaly_query`), so small workloads' anomalies do not crowd out large ones.

A list for one window is cached per data version, like the spend report.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings

from audit_app.budgets.anomalies import Cause, DayUsage, detect
from audit_app.lib.days import last_complete_day
from audit_app.lib.query_params import QueryParams, choice_param, decimal_param
from audit_app.lib.results_cache import cached
from audit_app.reporting.filters import SpendFilters, date_window
from audit_app.reporting.selectors import data_date_range
from audit_app.reporting.spend import spend_lines

# Weeks of the same weekday each day is compared with (the contract's default of `detect`).
HISTORY_WEEKS = 4


@dataclass(frozen=True, kw_only=True)
class AnomalyRow:
    """One day a workload's spend on one model jumped (or fell) away from its usual."""

    day: date
    workload: str
    model: str
    spend_usd: Decimal
    expected_usd: Decimal
    score: float
    cause: Cause

    @property
    def key(self) -> str:
        """What names this anomaly once and for all (`Alert.anomaly_key`)."""
        return f"{self.day.isoformat()}|{self.workload}|{self.model}"

    @property
    def change_usd(self) -> Decimal:
        return self.spend_usd - self.expected_usd


def anomaly_window(params: QueryParams) -> tuple[date, date]:
    """``?start=&end=``, as every dated page reads them (`reporting.filters.date_window`)."""
    return date_window(params)


# ?sort=: newest day first (the default), or the largest change in dollars, or score, first.
ANOMALY_SORTS = ("day", "change", "score")
MAX_MIN_USD = Decimal(1_000_000_000)


@dataclass(frozen=True, kw_only=True)
class AnomalyQuery:
    start: date
    end: date
    sort: str
    min_change_usd: Decimal


def anomaly_query(params: QueryParams) -> AnomalyQuery:
    """``?start=&end=&sort=day|change|score&min_usd=`` (the smallest change in dollars shown);
    a bad value raises ParameterError naming it."""
    start, end = anomaly_window(params)
    sort = choice_param(params, "sort", ANOMALY_SORTS, default="day")
    floor = decimal_param(
        params, "min_usd", default=Decimal(0), minimum=Decimal(0), maximum=MAX_MIN_USD
    )
    return AnomalyQuery(start=start, end=end, sort=sort, min_change_usd=floor)


def anomaly_rows(query: AnomalyQuery) -> list[AnomalyRow]:
    """The window's anomalies changing spend by at least ``min_change_usd``, in its order."""
    rows = [r for r in anomaly_list(query.start, query.end) if r.change_usd >= query.min_change_usd]
    if query.sort == "change":
        return sorted(rows, key=lambda r: (-r.change_usd, -r.day.toordinal(), r.workload))
    if query.sort == "score":
        return sorted(rows, key=lambda r: (-abs(r.score), -r.day.toordinal(), r.workload))
    return rows


def usage_series(start: date, end: date) -> dict[tuple[str, str], list[DayUsage]]:
    """Every workload × model with traffic or spend from ``start`` to ``end``: one DayUsage a
    day, zero days included, oldest first."""
    lines = spend_lines(SpendFilters(start=start, end=end)).grouped("day", "workload", "model")
    per_pair: dict[tuple[str, str], dict[date, DayUsage]] = defaultdict(dict)
    for (day, workload, model), row in lines.items():
        if not (row.requests or row.spend_usd):
            continue
        per_pair[(workload, model)][date.fromisoformat(day)] = DayUsage(
            day=date.fromisoformat(day),
            requests=row.requests,
            tokens=row.input_tokens + row.output_tokens,
            spend_usd=row.spend_usd,
        )
    days = [start + timedelta(days=i) for i in range((end - start).days + 1)]
    return {
        pair: [
            known.get(day) or DayUsage(day=day, requests=0, tokens=0, spend_usd=Decimal(0))
            for day in days
        ]
        for pair, known in sorted(per_pair.items())
    }


def anomaly_list(start: date, end: date) -> list[AnomalyRow]:
    """Anomalies from ``start`` to ``end`` (complete days only), newest day first, the strongest
    first within a day (cached per data version, day and floor)."""
    key = f"{start}|{end}|{last_complete_day()}|{settings.ANOMALY_MIN_USD}"
    return cached("anomaly_list", key, lambda: _anomaly_list(start, end))


def _anomaly_list(start: date, end: date) -> list[AnomalyRow]:
    end = min(end, last_complete_day())
    history_start = start - timedelta(weeks=HISTORY_WEEKS)
    bounds = data_date_range()
    if bounds is None or bounds[0] > end or start > end:
        return []
    history_start = max(history_start, bounds[0])
    rows = []
    for (workload, model), series in usage_series(history_start, end).items():
        found_days = detect(
            series, start=start, end=end, weeks=HISTORY_WEEKS, min_usd=settings.ANOMALY_MIN_USD
        )
        for found in found_days:
            rows.append(
                AnomalyRow(
                    day=found.day,
                    workload=workload,
                    model=model,
                    spend_usd=found.spend_usd,
                    expected_usd=found.expected_usd,
                    score=found.score,
                    cause=found.cause,
                )
            )
    return sorted(rows, key=lambda r: (-r.day.toordinal(), -abs(r.score), r.workload, r.model))


def usd(amount: Decimal) -> str:
    """Money in JSON: a string with six decimals, as every command and the API print it."""
    return str(amount.quantize(Decimal("0.000001")))


def anomaly_payload(row: AnomalyRow) -> dict[str, Any]:
    """The JSON shape of one anomaly (the API's rows and `manage.py anomalies --json`)."""
    return {
        "day": row.day.isoformat(),
        "workload": row.workload,
        "model": row.model,
        "spend_usd": usd(row.spend_usd),
        "expected_usd": usd(row.expected_usd),
        # A score is finite unless the usual days never vary and this one does: then null.
        "score": round(row.score, 3) if math.isfinite(row.score) else None,
        "cause": {
            "volume_usd": usd(row.cause.volume_usd),
            "mix_usd": usd(row.cause.mix_usd),
            "price_usd": usd(row.cause.price_usd),
        },
    }
