"""Where each budget stands: spent so far in its period, where the period will land, its status.

Its rules in full: `docs/methods.md`, section "Where a budget stands".
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal

from audit_app.budgets.forecast import Forecast, forecast_period, period_bounds
from audit_app.costs.billing import charges_in_range, pool_charges
from audit_app.lib.days import last_complete_day
from audit_app.lib.results_cache import cached
from audit_app.models import BillingCharge, Budget, ServingPool, Upload
from audit_app.reporting.days import default_end, same_days_end
from audit_app.reporting.filters import SpendFilters
from audit_app.reporting.selectors import data_date_range
from audit_app.reporting.spend import spend_lines, spend_report

HISTORY_DAYS = 56  # eight weeks before the period, for the weekday shape
STATUS_LABELS = {
    "ok": "OK",
    "warning": "Warning",
    "forecast_over": "Forecast over",
    "over": "Over",
}
# The API schema's BudgetStatusEnum (settings SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"]).
BUDGET_STATUSES = tuple(STATUS_LABELS)
ZERO = Decimal(0)
TENTH = Decimal("0.1")


def default_as_of(today: date | None = None) -> date:
    """The last complete day with data (`reporting.days.default_end`), where every default
    window ends; given ``today``, the day before it is the last complete day."""
    return default_end(last_complete=today - timedelta(days=1) if today else None)


def pool_billing_providers(
    *, start: date | None = None, end: date | None = None
) -> dict[str, frozenset[str]]:
    """Serving pool -> the providers its bill lines name (``aws``, ...): the charges the
    pool's cost is read from over start..end (`charges_in_range`), or every landed, current
    charge when no window is given."""
    if start is not None and end is not None:
        charges = charges_in_range(start=start, end=end)
    else:
        charges = BillingCharge.objects.filter(
            upload__status=Upload.Status.SUCCEEDED, superseded_by__isnull=True
        )
    return {
        pool.name: frozenset(
            pool_charges(pool, charges).values_list("provider", flat=True).distinct().order_by()
        )
        for pool in ServingPool.objects.all()
    }


def _days(start: date, end: date) -> list[date]:
    return [start + timedelta(days=i) for i in range((end - start).days + 1)]


def _provider_daily(provider: str, start: date, end: date) -> dict[date, Decimal]:
    lines = spend_lines(SpendFilters(start=start, end=end))
    billing = pool_billing_providers(start=start, end=end)
    pools = {pool for pool, providers in billing.items() if provider in providers}
    pools |= {key.pool for key in lines.lines if key.provider == provider and key.pool}
    daily: dict[date, Decimal] = defaultdict(Decimal)
    for key, sums in lines.lines.items():
        if key.provider == provider or key.pool in pools:
            daily[key.day] += sums.spend_usd
    for (day, pool), amount in lines.idle.items():
        if pool in pools:
            daily[day] += amount
    return dict(daily)


def scope_daily_spend(
    *, scope_kind: str, scope_value: str, start: date, end: date
) -> dict[date, Decimal]:
    """The scope's spend on each day start..end (every day present, zeros included)."""
    if scope_kind == Budget.ScopeKind.PROVIDER:
        found = cached(
            "budget_provider_daily",
            f"{scope_value}|{start}|{end}|{last_complete_day()}",
            lambda: _provider_daily(scope_value, start, end),
        )
        return {day: found.get(day, ZERO) for day in _days(start, end)}
    filters = SpendFilters(start=start, end=end)
    if scope_kind != Budget.ScopeKind.ALL:
        filters = SpendFilters(start=start, end=end, **{scope_kind: scope_value})
    daily = spend_report(filters).daily
    return {
        day: spent + idle
        for day, spent, idle in zip(daily.days, daily.spend_usd, daily.idle_gpu_usd, strict=True)
    }


@dataclass(frozen=True, kw_only=True)
class BudgetStatus:
    budget_id: int
    name: str
    scope_kind: str
    scope_value: str
    period: str
    amount_usd: Decimal
    as_of: date
    period_start: date
    period_end: date
    actual_usd: Decimal
    forecast_usd: Decimal
    low_usd: Decimal
    high_usd: Decimal
    pct_actual: Decimal  # of the amount, one decimal
    pct_forecast: Decimal
    status: str  # ok | warning | forecast_over | over
    forecast: Forecast
    previous_start: date
    previous_same_end: date  # the previous period's like-for-like days: previous_start..this
    previous_end: date
    previous_same_days_usd: Decimal
    previous_period_usd: Decimal

    @property
    def change_percent(self) -> Decimal | None:
        """Spent against the previous period's same days, in percent (None from nothing)."""
        if not self.previous_same_days_usd:
            return None
        change = (self.actual_usd - self.previous_same_days_usd) / self.previous_same_days_usd
        return (change * 100).quantize(TENTH, rounding=ROUND_HALF_UP)

    @property
    def scope(self) -> dict[str, str]:
        """As the API writes it: {"kind": ..., "value": ...}."""
        return {"kind": self.scope_kind, "value": self.scope_value}

    @property
    def status_label(self) -> str:
        return STATUS_LABELS[self.status]


def _percent(part: Decimal, whole: Decimal) -> Decimal:
    return (part / whole * 100).quantize(TENTH, rounding=ROUND_HALF_UP)


def status_of(
    *,
    amount: Decimal,
    actual: Decimal,
    forecast: Decimal,
    on_forecast: bool,
    alert_at_pct: list[int],
) -> str:
    """ok | warning | forecast_over | over, by the rule in the module docstring."""
    if actual >= amount:
        return "over"
    if on_forecast and forecast >= amount:
        return "forecast_over"
    if alert_at_pct:
        line = amount * min(alert_at_pct) / 100
        if actual >= line or (on_forecast and forecast >= line):
            return "warning"
    return "ok"


def _exact_actuals(forecast: Forecast, daily: Mapping[date, Decimal]) -> Forecast:
    """The forecast with its days through as-of carrying the read model's exact cumulative
    spend (the forecast rounds to the cent), so the chart's last actual point is spent."""
    running = ZERO
    days = []
    for entry in forecast.days:
        if entry.actual_usd is None:
            days.append(entry)
            continue
        running += daily.get(entry.day, ZERO)
        days.append(dataclasses.replace(entry, actual_usd=running, forecast_usd=running))
    return dataclasses.replace(forecast, days=tuple(days))


@dataclass(frozen=True, kw_only=True)
class _Previous:
    start: date
    same_end: date
    end: date


def _previous(period: str, *, start: date, end: date, last: date) -> _Previous:
    """The previous period and the last of its days like ``start..last``."""
    previous_start, previous_end = period_bounds(period, start - timedelta(days=1))
    same_end = same_days_end(
        start=start,
        last=last,
        period_end=end,
        previous_start=previous_start,
        previous_end=previous_end,
    )
    return _Previous(start=previous_start, same_end=same_end, end=previous_end)


def _counted(as_of: date | None) -> tuple[date, date]:
    """(the day choosing the period, the last day counted: never after the last complete
    day)."""
    chosen = as_of or default_as_of()
    return chosen, min(chosen, last_complete_day())


def budget_status(budget: Budget, *, as_of: date | None = None) -> BudgetStatus:
    """The budget in the period holding ``as_of`` (default: `default_as_of`), counted through
    ``as_of`` or the last complete day, whichever is earlier."""
    chosen, day = _counted(as_of)
    start, end = period_bounds(budget.period, chosen)
    previous = _previous(budget.period, start=start, end=end, last=min(day, end))
    history_start = min(start - timedelta(days=HISTORY_DAYS), previous.start)
    bounds = data_date_range()
    if bounds is not None and bounds[0] > history_start:
        # Days before the first day with any data are unknown, not $0 days: a quarter whose
        # data starts in its second month is projected from that month's level.
        history_start = min(bounds[0], day)
    daily = scope_daily_spend(
        scope_kind=budget.scope_kind,
        scope_value=budget.scope_value,
        start=min(history_start, day),
        end=day,
    )
    forecast = forecast_period(daily, period_start=start, period_end=end, as_of=day)
    # Spent, and the previous period's figures, are the read model over exactly their days, to
    # its precision (the forecast rounds to the cent): the overview's month so far and the
    # spend API for the same days give the same figures.
    spent = _scope_days(budget, start, day)
    actual = sum(spent.values(), ZERO)
    forecast = _exact_actuals(forecast, spent)
    amount = budget.amount_usd
    return BudgetStatus(
        budget_id=budget.pk,
        name=budget.name,
        scope_kind=budget.scope_kind,
        scope_value=budget.scope_value,
        period=budget.period,
        amount_usd=amount,
        as_of=day,
        period_start=start,
        period_end=end,
        actual_usd=actual,
        forecast_usd=forecast.forecast_usd,
        low_usd=forecast.low_usd,
        high_usd=forecast.high_usd,
        pct_actual=_percent(actual, amount),
        pct_forecast=_percent(forecast.forecast_usd, amount),
        status=status_of(
            amount=amount,
            actual=actual,
            forecast=forecast.forecast_usd,
            on_forecast=budget.on_forecast,
            alert_at_pct=list(budget.alert_at_pct),
        ),
        forecast=forecast,
        previous_start=previous.start,
        previous_same_end=previous.same_end,
        previous_end=previous.end,
        previous_same_days_usd=sum(
            _scope_days(budget, previous.start, previous.same_end).values(), ZERO
        ),
        previous_period_usd=sum(_scope_days(budget, previous.start, previous.end).values(), ZERO),
    )


def _scope_days(budget: Budget, first: date, last: date) -> dict[date, Decimal]:
    """The budget's scope's spend on each day first..last (none when last < first)."""
    if last < first:
        return {}
    return scope_daily_spend(
        scope_kind=budget.scope_kind, scope_value=budget.scope_value, start=first, end=last
    )


def budget_statuses(as_of: date | None = None) -> list[BudgetStatus]:
    """Every budget's status on ``as_of`` (default: `default_as_of`), by name."""
    day = as_of or default_as_of()
    return [budget_status(budget, as_of=day) for budget in Budget.objects.order_by("name")]
