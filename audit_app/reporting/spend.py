"""The one read model for money (`docs/methods.md`): what every page, chart, API, CSV and CLI
shows.

Its rules in full: `docs/methods.md`, section "The spend read model".
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, fields
from datetime import date, timedelta
from decimal import Decimal

from audit_app.costs.billing import pool_reports, pooled_models
from audit_app.costs.rollups import PricedGroup, daily_rollups, priced_groups
from audit_app.lib.results_cache import cached
from audit_app.reporting.days import PartialDays, default_end, partial_days, same_days_end
from audit_app.reporting.filters import SpendFilters
from audit_app.reporting.selectors import (
    EMPTY_LATENCY,
    UnpricedModel,
    WorkloadUsage,
    data_date_range,
    workload_usage,
)

ZERO = Decimal(0)
GROUP_BY_FIELDS = ("workload", "team", "model", "provider", "pool", "day")
STACK_CHOICES = ("provider", "model", "team", "workload", "pool")
MAX_SERIES = 8
OTHER = "other"
NONE_LABEL = "(none)"
IDLE_LABEL = "Idle GPU"


@dataclass(kw_only=True)
class _Sums:
    """Running sums of one line or group (mutable while a report is built)."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    logged_cost_usd: Decimal = ZERO
    estimated_cost_usd: Decimal = ZERO
    gpu_cost_usd: Decimal = ZERO
    unpriced_requests: int = 0

    def add(self, other: _Sums) -> None:
        self.requests += other.requests
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.logged_cost_usd += other.logged_cost_usd
        self.estimated_cost_usd += other.estimated_cost_usd
        self.gpu_cost_usd += other.gpu_cost_usd
        self.unpriced_requests += other.unpriced_requests

    @property
    def spend_usd(self) -> Decimal:
        return self.logged_cost_usd + self.estimated_cost_usd + self.gpu_cost_usd


class _UnpricedTally:
    """Requests with no logged cost and no price card, per (provider, model)."""

    def __init__(self) -> None:
        self._sums: dict[tuple[str, str], list[int]] = {}

    def add(self, group: PricedGroup) -> None:
        if group.unpriced_requests:
            sums = self._sums.setdefault((group.provider, group.model), [0, 0, 0])
            sums[0] += group.unpriced_requests
            sums[1] += group.unpriced_input_tokens
            sums[2] += group.unpriced_output_tokens

    def models(self) -> list[UnpricedModel]:
        return [
            UnpricedModel(provider=p, model=m, requests=t[0], input_tokens=t[1], output_tokens=t[2])
            for (p, m), t in sorted(self._sums.items(), key=lambda item: (-item[1][1], item[0]))
        ]


@dataclass(frozen=True, kw_only=True)
class LineKey:
    day: date
    workload: str
    team: str
    provider: str
    model: str
    pool: str

    def value(self, dimension: str) -> str:
        value = getattr(self, dimension)
        return value.isoformat() if isinstance(value, date) else value


@dataclass(frozen=True, kw_only=True)
class SpendRow:
    """Spend of one group (a workload, team, model, provider, pool or day)."""

    key: str
    requests: int
    input_tokens: int
    output_tokens: int
    logged_cost_usd: Decimal  # the logs' own cost
    estimated_cost_usd: Decimal  # tokens without a logged cost, priced from price cards
    gpu_cost_usd: Decimal  # share of serving-pool GPU bills
    unpriced_requests: int  # no logged cost and no price card: not in any $ figure

    @property
    def api_spend_usd(self) -> Decimal:
        return self.logged_cost_usd + self.estimated_cost_usd

    @property
    def spend_usd(self) -> Decimal:
        return self.api_spend_usd + self.gpu_cost_usd


def _row(key: str, sums: _Sums) -> SpendRow:
    return SpendRow(
        key=key,
        requests=sums.requests,
        input_tokens=sums.input_tokens,
        output_tokens=sums.output_tokens,
        logged_cost_usd=sums.logged_cost_usd,
        estimated_cost_usd=sums.estimated_cost_usd,
        gpu_cost_usd=sums.gpu_cost_usd,
        unpriced_requests=sums.unpriced_requests,
    )


@dataclass(frozen=True, kw_only=True)
class SpendBreakdown:
    group_by: str
    rows: list[SpendRow]
    idle_gpu_usd: Decimal  # pools' idle cost in the window (0 when a filter narrows it)
    unpriced_models: list[UnpricedModel]

    @property
    def api_spend_usd(self) -> Decimal:
        return sum((row.api_spend_usd for row in self.rows), ZERO)

    @property
    def gpu_cost_usd(self) -> Decimal:
        return sum((row.gpu_cost_usd for row in self.rows), ZERO)

    @property
    def attributed_usd(self) -> Decimal:
        """What the rows cost: API spend and attributed GPU cost, idle left out."""
        return sum((row.spend_usd for row in self.rows), ZERO)

    @property
    def total_usd(self) -> Decimal:
        return self.attributed_usd + self.idle_gpu_usd

    def head(self, count: int) -> tuple[list[SpendRow], SpendRow | None]:
        """The first ``count`` rows (costliest first), and the rest added up into one row
        keyed "N others" (None when there is no rest), for tables that must stay short."""
        rest = self.rows[count:]
        if not rest:
            return self.rows, None
        return self.rows[:count], SpendRow(
            key=f"{len(rest):,} others",
            requests=sum(row.requests for row in rest),
            input_tokens=sum(row.input_tokens for row in rest),
            output_tokens=sum(row.output_tokens for row in rest),
            logged_cost_usd=sum((row.logged_cost_usd for row in rest), ZERO),
            estimated_cost_usd=sum((row.estimated_cost_usd for row in rest), ZERO),
            gpu_cost_usd=sum((row.gpu_cost_usd for row in rest), ZERO),
            unpriced_requests=sum(row.unpriced_requests for row in rest),
        )


@dataclass(frozen=True, kw_only=True)
class SpendSeries:
    """Spend per day split by one dimension: the top names, then one "other" series."""

    days: list[date]
    series: dict[str, list[Decimal]]  # name -> one value per day, aligned with days
    idle: list[Decimal]  # idle GPU cost per day (zeros when filtered)


@dataclass(frozen=True, kw_only=True)
class DailySpend:
    days: list[date]
    api_spend_usd: list[Decimal]
    gpu_cost_usd: list[Decimal]
    idle_gpu_usd: list[Decimal]
    requests: list[int]
    input_tokens: list[int]
    output_tokens: list[int]

    @property
    def spend_usd(self) -> list[Decimal]:
        """Attributed spend per day (API + GPU share), idle apart."""
        return [a + g for a, g in zip(self.api_spend_usd, self.gpu_cost_usd, strict=True)]


@dataclass(frozen=True, kw_only=True)
class SpendReport:
    """Every money figure for one window and filters."""

    start: date
    end: date
    breakdowns: dict[str, SpendBreakdown]
    series: dict[str, SpendSeries]
    daily: DailySpend
    idle_by_pool: dict[str, Decimal]
    unpriced_models: list[UnpricedModel]
    has_traffic: bool  # any rollup in the window (a window can have bills but no traffic)

    @property
    def idle_gpu_usd(self) -> Decimal:
        return sum(self.idle_by_pool.values(), ZERO)

    @property
    def total_usd(self) -> Decimal:
        return self.breakdowns["workload"].total_usd

    @property
    def api_spend_usd(self) -> Decimal:
        return self.breakdowns["workload"].api_spend_usd

    @property
    def gpu_cost_usd(self) -> Decimal:
        return self.breakdowns["workload"].gpu_cost_usd

    def breakdown(self, group_by: str) -> SpendBreakdown:
        if group_by not in self.breakdowns:
            raise ValueError(f"group_by must be one of {', '.join(GROUP_BY_FIELDS)}")
        return self.breakdowns[group_by]

    @property
    def is_empty(self) -> bool:
        return not self.has_traffic and not self.idle_by_pool


@dataclass(frozen=True, kw_only=True)
class SpendLines:
    """The lines behind a report, for callers that group them their own way."""

    lines: dict[LineKey, _Sums] = field(default_factory=dict)
    idle: dict[tuple[date, str], Decimal] = field(default_factory=dict)  # (day, pool) -> USD
    unpriced_models: list[UnpricedModel] = field(default_factory=list)

    def grouped(self, *dimensions: str) -> dict[tuple[str, ...], SpendRow]:
        """Rows keyed by the tuple of ``dimensions`` of each line."""
        groups: dict[tuple[str, ...], _Sums] = defaultdict(_Sums)
        for key, sums in self.lines.items():
            groups[tuple(key.value(d) for d in dimensions)].add(sums)
        return {k: _row("/".join(k), v) for k, v in groups.items()}


def spend_lines(filters: SpendFilters) -> SpendLines:
    """API spend and GPU share per (day, workload, team, provider, model, pool), and idle GPU
    cost per (day, pool) when the filters do not narrow the traffic. Not cached (a year of
    lines is large); `spend_report` caches what it builds from them."""
    lines: dict[LineKey, _Sums] = defaultdict(_Sums)
    pools_by_model = pooled_models()
    unpriced = _UnpricedTally()
    for group in priced_groups(
        filters.queryset(), ["workload", "team", "provider", "model", "pool", "day"]
    ):
        workload, team, provider, model, pool, day = group.dims
        key = LineKey(
            day=day,
            workload=workload,
            team=team,
            provider=provider,
            model=model,
            pool=pool or (pools_by_model.get(model, "") if group.self_hosted else ""),
        )
        lines[key].add(
            _Sums(
                requests=group.requests,
                input_tokens=group.input_tokens,
                output_tokens=group.output_tokens,
                logged_cost_usd=group.logged_cost_usd,
                estimated_cost_usd=group.estimated_cost_usd,
                unpriced_requests=group.unpriced_requests,
            )
        )
        unpriced.add(group)
    idle: dict[tuple[date, str], Decimal] = defaultdict(Decimal)
    wanted = {
        name: value
        for name, value in (
            ("workload", filters.workload),
            ("team", filters.team),
            ("provider", filters.provider),
            ("model", filters.model),
        )
        if value
    }
    for report in pool_reports(start=filters.start, end=filters.end):
        if report.currency != "USD":
            continue  # never converted; the pools table shows it in its own currency
        for (moment, traffic), cents in report.attribution.lines.items():
            day = moment.date()
            if isinstance(traffic, str):  # the idle line
                if not filters.narrowed:
                    idle[(day, report.pool.name)] += cents
                continue
            workload, team, provider, model = traffic
            key = LineKey(
                day=day,
                workload=workload,
                team=team,
                provider=provider,
                model=model,
                pool=report.pool.name,
            )
            if any(key.value(name) != value for name, value in wanted.items()):
                continue
            lines[key].add(_Sums(gpu_cost_usd=cents))
    return SpendLines(lines=dict(lines), idle=dict(idle), unpriced_models=unpriced.models())


def spend_report(filters: SpendFilters) -> SpendReport:
    """Every money figure for ``filters`` (cached per data version)."""
    return cached("spend_report", filters.cache_key(), lambda: _spend_report(filters))


def _days(start: date, end: date) -> list[date]:
    return [start + timedelta(days=i) for i in range((end - start).days + 1)]


def _sorted_rows(group_by: str, groups: dict[str, _Sums]) -> list[SpendRow]:
    rows = [_row(key, sums) for key, sums in groups.items()]
    if group_by == "day":
        return sorted(rows, key=lambda r: r.key)
    return sorted(rows, key=lambda r: (-r.spend_usd, r.key))


def _series(
    dimension: str, lines: SpendLines, days: list[date], idle: list[Decimal]
) -> SpendSeries:
    index = {day: i for i, day in enumerate(days)}
    per_name: dict[str, list[Decimal]] = {}
    for key, sums in lines.lines.items():
        i = index.get(key.day)
        if i is None:
            continue
        name = key.value(dimension) or NONE_LABEL
        values = per_name.setdefault(name, [ZERO] * len(days))
        values[i] += sums.spend_usd
    ranked = sorted(per_name, key=lambda n: (-sum(per_name[n]), n))
    series = {name: per_name[name] for name in ranked[:MAX_SERIES]}
    if len(ranked) > MAX_SERIES:
        other = [ZERO] * len(days)
        for name in ranked[MAX_SERIES:]:
            other = [a + b for a, b in zip(other, per_name[name], strict=True)]
        series[OTHER] = other
    return SpendSeries(days=days, series=series, idle=idle)


def _spend_report(filters: SpendFilters) -> SpendReport:
    lines = spend_lines(filters)
    days = _days(filters.start, filters.end)
    index = {day: i for i, day in enumerate(days)}
    idle_by_pool: dict[str, Decimal] = defaultdict(Decimal)
    idle_per_day = [ZERO] * len(days)
    for (day, pool), amount in lines.idle.items():
        idle_by_pool[pool] += amount
        if day in index:
            idle_per_day[index[day]] += amount
    idle_total = sum(idle_by_pool.values(), ZERO)
    groups: dict[str, dict[str, _Sums]] = {g: defaultdict(_Sums) for g in GROUP_BY_FIELDS}
    api = [ZERO] * len(days)
    gpu = [ZERO] * len(days)
    requests = [0] * len(days)
    tokens_in = [0] * len(days)
    tokens_out = [0] * len(days)
    for key, sums in lines.lines.items():
        for group_by in GROUP_BY_FIELDS:
            groups[group_by][key.value(group_by)].add(sums)
        i = index.get(key.day)
        if i is not None:
            api[i] += sums.logged_cost_usd + sums.estimated_cost_usd
            gpu[i] += sums.gpu_cost_usd
            requests[i] += sums.requests
            tokens_in[i] += sums.input_tokens
            tokens_out[i] += sums.output_tokens
    breakdowns = {
        group_by: SpendBreakdown(
            group_by=group_by,
            rows=_sorted_rows(group_by, groups[group_by]),
            idle_gpu_usd=idle_total,
            unpriced_models=lines.unpriced_models,
        )
        for group_by in GROUP_BY_FIELDS
    }
    return SpendReport(
        start=filters.start,
        end=filters.end,
        breakdowns=breakdowns,
        series={d: _series(d, lines, days, idle_per_day) for d in STACK_CHOICES},
        daily=DailySpend(
            days=days,
            api_spend_usd=api,
            gpu_cost_usd=gpu,
            idle_gpu_usd=idle_per_day,
            requests=requests,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
        ),
        idle_by_pool=dict(sorted(idle_by_pool.items())),
        unpriced_models=lines.unpriced_models,
        has_traffic=any(s.requests for s in lines.lines.values()),
    )


def spend_breakdown(*, group_by: str, filters: SpendFilters) -> SpendBreakdown:
    """Spend per workload / team / model / provider / pool / day."""
    if group_by not in GROUP_BY_FIELDS:
        raise ValueError(f"group_by must be one of {', '.join(GROUP_BY_FIELDS)}")
    return spend_report(filters).breakdown(group_by)


# --- Months -----------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class MonthComparison:
    """The month holding the last complete day with data, so far, against the same days of the
    month before (Dec 1–5 against Nov 1–5; the whole month before once this one is complete),
    with the month before's whole total beside it."""

    first: date
    last: date  # the last day counted
    complete: bool  # last is the month's last day
    this_month: Decimal
    previous_start: date
    previous_same_end: date
    previous_end: date
    previous_same_days: Decimal
    previous_month: Decimal
    this_label: str
    same_days_label: str
    previous_label: str
    previous_data_from: date | None  # the first day with data, when after previous_start
    today: PartialDays  # the days after the last complete day: "today so far"
    today_usd: Decimal  # their API spend (their pool hours are scheduled)
    today_requests: int

    @property
    def change_percent(self) -> float | None:
        """This month so far against the previous month's same days (None when those days
        have no data, or only part of them)."""
        if not self.previous_same_days or self.previous_data_from is not None:
            return None
        return float((self.this_month - self.previous_same_days) / self.previous_same_days * 100)


def _total(first: date, last: date) -> Decimal:
    return spend_report(SpendFilters(start=first, end=last)).total_usd if first <= last else ZERO


def _span(first: date, last: date) -> str:
    return f"{first:%b} {first.day}–{last.day}" if first != last else f"{first:%b} {first.day}"


def month_comparison(*, today: date | None = None) -> MonthComparison:
    """The month so far like for like (see `MonthComparison`), through the last complete day
    with data (`reporting.days.default_end`; given ``today``, the day before it is the last
    complete day), and today so far apart."""
    partial = partial_days() if today is None else PartialDays(first=today, last=today)
    last = default_end(last_complete=partial.first - timedelta(days=1))
    today_report = spend_report(SpendFilters(start=partial.first, end=partial.last))
    first = last.replace(day=1)
    month_end = (first + timedelta(days=32)).replace(day=1) - timedelta(days=1)
    previous_end = first - timedelta(days=1)
    previous_start = previous_end.replace(day=1)
    same_end = same_days_end(
        start=first,
        last=last,
        period_end=month_end,
        previous_start=previous_start,
        previous_end=previous_end,
    )
    complete = last == month_end
    bounds = data_date_range()
    data_from = bounds[0] if bounds and bounds[0] > previous_start else None
    return MonthComparison(
        first=first,
        last=last,
        complete=complete,
        this_month=_total(first, last),
        previous_start=previous_start,
        previous_same_end=same_end,
        previous_end=previous_end,
        previous_same_days=_total(previous_start, same_end),
        previous_month=_total(previous_start, previous_end),
        this_label=f"{first:%B %Y}" if complete else f"{first:%B %Y} so far ({_span(first, last)})",
        same_days_label=f"{previous_start:%B %Y}"
        if complete
        else f"Same days of {previous_start:%B} ({_span(previous_start, same_end)})",
        previous_label=f"{previous_start:%B %Y}",
        previous_data_from=data_from,
        today=partial,
        today_usd=today_report.total_usd,
        today_requests=sum(today_report.daily.requests, 0),
    )


# --- Workloads ----------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class WorkloadStats(WorkloadUsage):
    """A workload's traffic and latency with its money from the read model."""

    api_spend_usd: Decimal
    gpu_cost_usd: Decimal
    unpriced_requests: int

    @property
    def spend_usd(self) -> Decimal:
        return self.api_spend_usd + self.gpu_cost_usd


def _stats(usage: WorkloadUsage, row: SpendRow | None) -> WorkloadStats:
    return WorkloadStats(
        **{f.name: getattr(usage, f.name) for f in fields(WorkloadUsage)},
        api_spend_usd=row.api_spend_usd if row else ZERO,
        gpu_cost_usd=row.gpu_cost_usd if row else ZERO,
        unpriced_requests=row.unpriced_requests if row else 0,
    )


def workload_list(filters: SpendFilters) -> list[WorkloadStats]:
    """Every workload with traffic in the window: volume, latency and spend, costliest first
    (cached per data version: with thousands of workloads, building the list costs more than
    reading it back)."""
    return cached("workload_list", filters.cache_key(), lambda: _workload_list(filters))


def _workload_list(filters: SpendFilters) -> list[WorkloadStats]:
    report = spend_report(filters)
    rows = {row.key: row for row in report.breakdown("workload").rows}
    stats = [_stats(u, rows.get(u.name)) for u in workload_usage(queryset=filters.queryset())]
    return sorted(stats, key=lambda w: (-w.spend_usd, w.name))


def workload_stats(filters: SpendFilters, *, workload_id: int | None = None) -> WorkloadStats:
    """One workload (``filters.workload``) over the window; zeros when it had no traffic."""
    found = workload_list(filters)
    if found:
        return found[0]
    empty = WorkloadUsage(
        id=workload_id,
        name=filters.workload,
        teams=[],
        providers=[],
        models=[],
        requests=0,
        errors=0,
        streaming_requests=0,
        input_tokens=0,
        output_tokens=0,
        ttft=EMPTY_LATENCY,
        latency=EMPTY_LATENCY,
        tpot=EMPTY_LATENCY,
    )
    return _stats(empty, None)


# --- One upload -----------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class UploadSpend:
    """What one token-log upload's requests cost at API prices (its GPU share depends on the
    other uploads in the same hours, so it belongs to the windowed report, not to the upload)."""

    api_spend_usd: Decimal
    unpriced_models: list[UnpricedModel]


def upload_spend(*, upload_id: int) -> UploadSpend:
    unpriced = _UnpricedTally()
    total = ZERO
    for group in priced_groups(daily_rollups(upload=upload_id), ["provider", "model"]):
        total += group.spend_usd
        unpriced.add(group)
    return UploadSpend(api_spend_usd=total, unpriced_models=unpriced.models())
