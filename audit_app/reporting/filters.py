"""Filters that live in the URL (?start=&end=&team=&provider=&model=), parsed in one place for
pages, CSV exports, the API and the CLI (with the parsers of audit_app.lib.query_params)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, timedelta
from typing import Any
from urllib.parse import urlencode

from django.db.models import QuerySet
from django.utils import timezone

from audit_app.costs.model_names import canonical_pair
from audit_app.costs.rollups import daily_rollups, rollups_in_range
from audit_app.lib.days import last_complete_day
from audit_app.lib.query_params import ParameterError, QueryParams, date_param, text_param
from audit_app.models import DailyRollup, HourlyRollup
from audit_app.reporting.days import default_end
from audit_app.reporting.selectors import data_date_range

DEFAULT_DAYS = 30
MAX_DAYS = 800
# Windows the filters offer as one-click links: the last N days with data. The worker's warm-up
# (audit_app.derived.warm_defaults) computes each after every change, so the first
# visitor of a year of data is served from the cache like the visitor of the default window.
QUICK_WINDOW_DAYS = (7, DEFAULT_DAYS, 90, 365)


@dataclass(frozen=True, kw_only=True)
class SpendFilters:
    start: date
    end: date
    team: str = ""
    provider: str = ""
    model: str = ""
    workload: str = ""  # set by workload pages, not a URL parameter

    @property
    def narrowed(self) -> bool:
        """True when a filter other than the dates is set: only part of the traffic is shown,
        so idle GPU cost (which belongs to no workload, team or model) is left out."""
        return bool(self.team or self.provider or self.model or self.workload)

    def cache_key(self) -> str:
        """The filters, and the last complete day: pool hours after it are scheduled, so the
        same window's money changes when a day completes."""
        return "|".join(
            (
                self.start.isoformat(),
                self.end.isoformat(),
                self.team,
                self.provider,
                self.model,
                self.workload,
                last_complete_day().isoformat(),
            )
        )

    def for_workload(self, name: str) -> SpendFilters:
        return replace(self, workload=name)

    def queryset(self, **extra: Any) -> QuerySet[DailyRollup]:
        """Daily rollups in the range: what sums, spend and percentiles read."""
        return daily_rollups(
            start=self.start,
            end=self.end,
            team=self.team,
            provider=self.provider,
            model=self.model,
            workload=self.workload,
            **extra,
        )

    def hourly_queryset(self, **extra: Any) -> QuerySet[HourlyRollup]:
        """Hourly rollups in the range, for views that need the hour of day."""
        return rollups_in_range(
            start=self.start,
            end=self.end,
            team=self.team,
            provider=self.provider,
            model=self.model,
            workload=self.workload,
            **extra,
        )

    def query_string(self, **overrides: str) -> str:
        params = {
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "team": self.team,
            "provider": self.provider,
            "model": self.model,
            **overrides,
        }
        return urlencode({k: v for k, v in params.items() if v})

    def with_range(self, start: date, end: date) -> SpendFilters:
        return replace(self, start=start, end=end)


def whole_range() -> SpendFilters:
    """Every day with data (today alone when there is none)."""
    bounds = data_date_range()
    if bounds is None:
        today = timezone.now().date()
        return SpendFilters(start=today, end=today)
    return SpendFilters(start=bounds[0], end=bounds[1])


def quick_windows() -> list[SpendFilters]:
    """The QUICK_WINDOW_DAYS windows ending where default windows end, unfiltered."""
    end = default_end()
    return [SpendFilters(start=end - timedelta(days=n - 1), end=end) for n in QUICK_WINDOW_DAYS]


def date_window(params: QueryParams) -> tuple[date, date]:
    """``?start=&end=`` (YYYY-MM-DD): without them, the DEFAULT_DAYS days ending on the last
    complete day with data (`reporting.days.default_end`), the one default window of every
    page, API answer and command. A bad value raises ParameterError naming it."""
    start = date_param(params, "start")
    end = date_param(params, "end")
    if end is None:
        end = default_end()
    if start is None:
        start = end - timedelta(days=DEFAULT_DAYS - 1)
    if start > end:
        raise ParameterError("start", f"start ({start}) is after end ({end})")
    if (end - start).days > MAX_DAYS:
        raise ParameterError(
            "start", f"start ({start}) to end ({end}) is longer than {MAX_DAYS} days"
        )
    return start, end


def parse_filters(params: QueryParams) -> SpendFilters:
    """Filters from query parameters. Without dates: the default window (`date_window`).
    A bad value raises ParameterError naming it."""
    start, end = date_window(params)
    text = {name: text_param(params, name) for name in ("team", "provider", "model")}
    if text["provider"] or text["model"]:
        # Rollups store each provider's and model's one name (`model_names.canonical_pair`);
        # an alias (bedrock, aws.bedrock) or a routed name (openai/gpt-4o) finds it too.
        provider, model = canonical_pair(text["provider"], text["model"])
        if text["provider"]:
            text["provider"] = provider
        if text["model"]:
            text["model"] = model
    return SpendFilters(start=start, end=end, **text)
