"""Budget status: the scope's daily spend from the read model against a hand computation, the
history handed to the forecast, and the status rule."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import pytest

from audit_app.budgets import status as status_module
from audit_app.budgets.forecast import Forecast, ForecastDay
from audit_app.budgets.status import (
    HISTORY_DAYS,
    budget_status,
    budget_statuses,
    default_as_of,
    pool_billing_providers,
    scope_daily_spend,
    status_of,
)
from audit_app.models import Budget
from audit_app.reporting.filters import SpendFilters
from audit_app.reporting.spend import spend_report
from tests.audit_app.budgets.budget_samples import (
    AS_OF,
    NOVEMBER,
    PERIOD,
    expected_daily,
    ingest_budget_sample,
)

pytestmark = pytest.mark.django_db
HISTORY_START = PERIOD[0] - timedelta(days=HISTORY_DAYS)


@pytest.fixture
def sample(db: Any) -> None:
    ingest_budget_sample()


@pytest.mark.parametrize(("kind", "value"), sorted(NOVEMBER))
def test_scope_daily_spend_matches_the_hand_computation(
    sample: None, kind: str, value: str
) -> None:
    got = scope_daily_spend(scope_kind=kind, scope_value=value, start=HISTORY_START, end=AS_OF)
    assert got == expected_daily(kind, value, HISTORY_START, AS_OF)


def test_a_provider_budget_adds_its_pools_idle_hour_to_the_read_models_filter(
    sample: None,
) -> None:
    day = date(2026, 11, 4)
    filtered = spend_report(SpendFilters(start=day, end=day, provider="hosted_vllm"))
    # The read model's provider filter: the GPU share of hosted_vllm's traffic, idle left out.
    assert filtered.total_usd == Decimal("10.00")
    assert filtered.idle_gpu_usd == Decimal(0)
    # The budget adds the idle hour of the pool that served it; AWS, which bills the pool,
    # has no traffic of its own but gets the pool's whole bill.
    for provider in ("hosted_vllm", "aws"):
        got = scope_daily_spend(scope_kind="provider", scope_value=provider, start=day, end=day)
        assert got == {day: Decimal("20.00")}
    assert pool_billing_providers() == {"gpu": frozenset({"aws"})}
    assert pool_billing_providers(start=date(2026, 11, 5), end=date(2026, 11, 6)) == {
        "gpu": frozenset()
    }


def test_default_as_of_is_the_last_complete_day_with_data(sample: None) -> None:
    assert default_as_of(today=date(2026, 12, 1)) == date(2026, 11, 12)
    # On 7 November, the 7th is still running: the 6th is the last complete day.
    assert default_as_of(today=date(2026, 11, 7)) == date(2026, 11, 6)


def test_default_as_of_without_data_is_the_last_complete_day(db: Any) -> None:
    assert default_as_of(today=date(2026, 3, 4)) == date(2026, 3, 3)


def _fake_forecast(total: str, calls: list[dict[str, Any]]) -> Any:
    """A forecast_period that records what it was given and projects ``total``."""

    def fake(
        daily: Mapping[date, Decimal], *, period_start: date, period_end: date, as_of: date
    ) -> Forecast:
        calls.append({"daily": dict(daily), "start": period_start, "end": period_end})
        spent = sum((v for d, v in daily.items() if period_start <= d <= as_of), Decimal(0))
        return Forecast(
            period_start=period_start,
            period_end=period_end,
            as_of=as_of,
            actual_usd=spent,
            forecast_usd=Decimal(total),
            low_usd=Decimal(total) - 1,
            high_usd=Decimal(total) + 1,
            method="fake",
            days=(
                ForecastDay(
                    day=period_end,
                    actual_usd=None,
                    forecast_usd=Decimal(total),
                    low_usd=Decimal(total),
                    high_usd=Decimal(total),
                ),
            ),
        )

    return fake


def _budget(**kw: Any) -> Budget:
    values = {
        "name": "web",
        "scope_kind": "team",
        "scope_value": "web",
        "period": "month",
        "amount_usd": Decimal("40.00"),
        "alert_at_pct": [80, 100],
        "on_forecast": True,
    }
    values.update(kw)
    return Budget.objects.create(**values)


def test_status_hands_the_history_from_the_first_day_with_data_and_reports_the_forecast(
    sample: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(status_module, "forecast_period", _fake_forecast("45.00", calls))
    state = budget_status(_budget(), as_of=AS_OF)
    [call] = calls
    assert (call["start"], call["end"]) == PERIOD
    # Eight weeks before the period at most, from the first day with any data (20 October in
    # the sample): days before it are unknown, not $0 days.
    first_data = date(2026, 10, 20)
    assert first_data > HISTORY_START
    assert call["daily"] == expected_daily("team", "web", first_data, AS_OF)
    assert (state.period_start, state.period_end, state.as_of) == (*PERIOD, AS_OF)
    # Spent: 10.00 + 10.00 (sales' GPU share) + 2.25; forecast 45.00 of 40.00.
    assert state.actual_usd == Decimal("22.25")
    assert (state.forecast_usd, state.low_usd, state.high_usd) == (
        Decimal("45.00"),
        Decimal("44.00"),
        Decimal("46.00"),
    )
    assert state.pct_actual == Decimal("55.6")  # 22.25 / 40 = 55.625 %
    assert state.pct_forecast == Decimal("112.5")
    assert state.status == "forecast_over"
    assert state.status_label == "Forecast over"
    assert state.scope == {"kind": "team", "value": "web"}


def test_a_quarter_reads_from_its_first_day(sample: None, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(status_module, "forecast_period", _fake_forecast("1", calls))
    state = budget_status(_budget(scope_kind="all", scope_value="", period="quarter"), as_of=AS_OF)
    assert (state.period_start, state.period_end) == (date(2026, 10, 1), date(2026, 12, 31))
    assert min(calls[0]["daily"]) == date(2026, 10, 20)  # the first day with data
    assert state.actual_usd == Decimal("41.75")  # 4.00 in October + 37.75 in November


def test_real_forecast_keeps_the_spent_figure_and_every_day(sample: None) -> None:
    state = budget_status(_budget(scope_kind="provider", scope_value="aws"), as_of=AS_OF)
    assert state.actual_usd == Decimal("20.00")
    assert [d.day for d in state.forecast.days] == [
        PERIOD[0] + timedelta(days=i) for i in range(30)
    ]
    assert state.forecast.days[AS_OF.day - 1].actual_usd == Decimal("20.00")
    assert state.forecast.days[-1].actual_usd is None


def test_budget_statuses_lists_every_budget_by_name(sample: None) -> None:
    _budget(name="zeta", amount_usd=Decimal("10.00"), on_forecast=False)
    _budget(name="alpha", scope_kind="model", scope_value="gpt-4o", on_forecast=False)
    states = budget_statuses(AS_OF)
    assert [(s.name, s.actual_usd, s.status) for s in states] == [
        ("alpha", Decimal("12.25"), "ok"),  # 30.6 % of 40
        ("zeta", Decimal("22.25"), "over"),  # 22.25 >= 10
    ]


@pytest.mark.parametrize(
    ("actual", "forecast", "on_forecast", "pcts", "expected"),
    [
        ("100", "0", True, [80], "over"),  # spent reaches the amount exactly
        ("99.99", "100", True, [80], "forecast_over"),
        ("99.99", "100", False, [80], "warning"),  # forecast ignored, spent past 80 %
        ("79.99", "150", False, [80], "ok"),
        ("80", "0", True, [80, 100], "warning"),  # the lowest threshold, reached exactly
        ("10", "80", True, [100, 80], "warning"),  # on the forecast; thresholds unsorted
        ("10", "79.99", True, [80], "ok"),
        ("10", "95", True, [120], "ok"),  # the only threshold is above the forecast
    ],
)
def test_status_rule(
    actual: str, forecast: str, on_forecast: bool, pcts: list[int], expected: str
) -> None:
    got = status_of(
        amount=Decimal(100),
        actual=Decimal(actual),
        forecast=Decimal(forecast),
        on_forecast=on_forecast,
        alert_at_pct=pcts,
    )
    assert got == expected
