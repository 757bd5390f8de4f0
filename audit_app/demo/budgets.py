"""The demo's budgets, sized on the demo's own spend so the Budgets page shows each status on
first start: all spend with room to spare, a team heading over on its forecast (the one that
tells a demo address and webhook), the GPU pools AWS bills near their limit, and a model's
quarter.

Amounts come from each scope's status on the last day with data, so the budgets fit whatever
window was loaded. A month budget needs days left in its month to be "heading over": when the
data ends on a month's last day, the quarter is used (and when it ends on a quarter's last day
too, nothing is left to forecast and the team's budget is merely close). Each budget is made
once, by name, through the budget service (so checked and in the audit trail); a budget of
that name already there is left as it is. Addresses are ``example.invalid``: nothing is sent
anywhere from the demo.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import ROUND_CEILING, ROUND_HALF_UP, Decimal

from audit_app.budgets.forecast import period_bounds
from audit_app.budgets.services import budget_create, scope_choices
from audit_app.budgets.status import budget_status, default_as_of
from audit_app.models import Budget

DEMO_EMAIL = "finops-team@example.invalid"
DEMO_WEBHOOK = "https://hooks.example.invalid/services/demo-budgets"
CENT = Decimal("0.01")


@dataclass(frozen=True, kw_only=True)
class DemoBudget:
    name: str
    scope_kind: str
    scope_value: str
    # The amount as a share of the forecast; None: between spent and the forecast (heading
    # over on the forecast).
    of_forecast: Decimal | None
    quarter: bool = False
    notify: bool = False


DEMO_BUDGETS: tuple[DemoBudget, ...] = (
    DemoBudget(
        name="All inference spend",
        scope_kind="all",
        scope_value="",
        of_forecast=Decimal("1.5"),
        notify=True,
    ),
    DemoBudget(
        name="Customer experience",
        scope_kind="team",
        scope_value="customer-experience",
        of_forecast=None,
        notify=True,
    ),
    DemoBudget(
        name="GPU pools billed by AWS",
        scope_kind="provider",
        scope_value="aws",
        of_forecast=Decimal("1.1"),
    ),
    DemoBudget(
        name="Claude Sonnet 4.5 this quarter",
        scope_kind="model",
        scope_value="claude-sonnet-4-5-20250929",
        of_forecast=Decimal("2"),
        quarter=True,
    ),
)


def _period(as_of: date, *, quarter: bool) -> str:
    """Month, unless the data ends on the month's last day (nothing left to forecast)."""
    if quarter or period_bounds("month", as_of)[1] == as_of:
        return Budget.Period.QUARTER
    return Budget.Period.MONTH


def _amount(spec: DemoBudget, *, actual: Decimal, forecast: Decimal) -> Decimal:
    if spec.of_forecast is not None:
        # Rounded up to a whole ten dollars, as people set budgets.
        tens = (forecast * spec.of_forecast / 10).to_integral_value(rounding=ROUND_CEILING)
        return max(tens * 10, Decimal(10))
    if forecast - actual >= 2 * CENT:
        return ((actual + forecast) / 2).quantize(CENT, rounding=ROUND_HALF_UP)
    return max((actual * Decimal("1.05")).quantize(CENT, rounding=ROUND_HALF_UP), Decimal(10))


def demo_budgets_ensure(*, today: date | None = None) -> list[Budget]:
    """Create the demo budgets that are missing (and whose scope has data); returns them."""
    as_of = default_as_of(today)
    known = scope_choices()
    made = []
    for spec in DEMO_BUDGETS:
        if Budget.objects.filter(name=spec.name).exists():
            continue
        if spec.scope_kind != "all" and spec.scope_value not in known[spec.scope_kind]:
            continue
        period = _period(as_of, quarter=spec.quarter)
        trial = Budget(
            name=spec.name,
            scope_kind=spec.scope_kind,
            scope_value=spec.scope_value,
            period=period,
            amount_usd=Decimal(1),
        )
        state = budget_status(trial, as_of=as_of)
        notify = {"emails": [DEMO_EMAIL], "webhooks": [DEMO_WEBHOOK]} if spec.notify else None
        made.append(
            budget_create(
                user=None,
                data={
                    "name": spec.name,
                    "scope": {"kind": spec.scope_kind, "value": spec.scope_value},
                    "period": period,
                    "amount_usd": _amount(
                        spec, actual=state.actual_usd, forecast=state.forecast_usd
                    ),
                    "alert_at_pct": [80, 100],
                    "on_forecast": True,
                    "notify": notify,
                },
            )
        )
    return made
