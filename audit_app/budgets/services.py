"""Budgets: create, change and delete them, each input checked here once for every front end.

A budget limits the spend of one scope of the read model (all spend, a team, a workload, a
provider or a model) over a calendar month or quarter (UTC). The API, the Budgets page, the
demo seed and the command line all send the same plain values (the API's JSON shape) through
`budget_create` / `budget_update`; each refusal is a `BudgetRefused` naming the field at fault
(``scope.value``, ``notify.emails``, ...), which the API answers with a 400 and a page shows
beside the field. Finops analysts and managers write (`BUDGET_WRITER_ROLES`); the command line
(no user) may too. Every write is recorded in the audit trail.

Budgets are not derived from the data, so no data version is renewed when they change: their
status (`audit_app.budgets.status`) is computed when it is read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator, validate_email
from django.db import IntegrityError, transaction

from audit_app.access.audit import audit_record, audit_update
from audit_app.access.permissions import BUDGET_WRITER_ROLES, Actor, has_role
from audit_app.budgets.status import pool_billing_providers
from audit_app.costs.model_names import canonical_model
from audit_app.costs.providers import normalize_provider
from audit_app.lib import task_queue
from audit_app.lib.errors import DomainError, ErrorKind
from audit_app.lib.masking import ELLIPSIS, mask_webhook, unmasked
from audit_app.models import AuditEvent, Budget, Workload
from audit_app.reporting.selectors import filter_choices

FIELDS = ("name", "scope", "period", "amount_usd", "alert_at_pct", "on_forecast", "notify")
DEFAULT_ALERT_AT_PCT = (80, 100)
MAX_AMOUNT = Decimal("999999999999.99")  # what amount_usd (14 digits, 2 decimals) holds
MIN_PCT, MAX_PCT = 1, 1000
MAX_RECIPIENTS = 20
MAX_URL_LENGTH = 2000  # AlertDelivery.target
CENT = Decimal("0.01")
_WEBHOOK_URL = URLValidator(schemes=["http", "https"])


class BudgetRefused(DomainError):
    """A budget the service will not keep; ``field`` names the input at fault."""


@dataclass(frozen=True, kw_only=True)
class BudgetValues:
    """A budget's fields, checked: what `Budget` stores."""

    name: str
    scope_kind: str
    scope_value: str
    period: str
    amount_usd: Decimal
    alert_at_pct: list[int]
    on_forecast: bool
    notify_emails: list[str]
    notify_webhooks: list[str]


def scope_choices() -> dict[str, list[str]]:
    """The values a scope of each kind may name: teams, providers and models with data,
    workloads, and the providers that bill a serving pool (whose GPU cost a provider's budget
    includes)."""
    choices = filter_choices()
    billing = {p for providers in pool_billing_providers().values() for p in providers}
    return {
        Budget.ScopeKind.TEAM: list(choices["team"]),
        Budget.ScopeKind.WORKLOAD: list(Workload.objects.values_list("name", flat=True)),
        Budget.ScopeKind.PROVIDER: sorted(set(choices["provider"]) | billing),
        Budget.ScopeKind.MODEL: list(choices["model"]),
    }


def _refuse(field: str, message: str) -> BudgetRefused:
    return BudgetRefused(message, field=field)


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _refuse("name", "name is required: give the budget a name.")
    name = value.strip()
    if "\x00" in name:
        raise _refuse("name", "name holds a NUL character; use plain text.")
    if len(name) > 200:
        raise _refuse("name", f"name is {len(name)} characters long; at most 200 are kept.")
    return name


def _scope(value: Any, *, kept: tuple[str, str] | None = None) -> tuple[str, str]:
    if not isinstance(value, Mapping):
        raise _refuse("scope", 'scope must be an object such as {"kind": "team", "value": "web"}.')
    unknown = sorted(str(k) for k in value if k not in ("kind", "value"))
    if unknown:
        raise _refuse("scope", f"scope has unknown keys {', '.join(unknown)}: use kind and value.")
    kind = value.get("kind")
    if kind not in Budget.ScopeKind.values:
        raise _refuse(
            "scope.kind",
            f"scope.kind must be one of {', '.join(Budget.ScopeKind.values)}, not {kind!r}.",
        )
    raw = value.get("value", "")
    if raw is None:
        raw = ""
    if not isinstance(raw, str):
        raise _refuse("scope.value", f"scope.value must be text, not {raw!r}.")
    raw = raw.strip()
    if kind == Budget.ScopeKind.ALL:
        if raw:
            raise _refuse("scope.value", f'scope.value must be empty for kind "all", not {raw!r}.')
        return kind, ""
    if not raw:
        raise _refuse("scope.value", f'scope.value is required for kind "{kind}".')
    if (kind, raw) == kept:  # unchanged: kept even when its data has since gone
        return kind, raw
    known = scope_choices()[kind]
    candidates = [raw]
    if kind == Budget.ScopeKind.PROVIDER:
        candidates.append(normalize_provider(raw))
    elif kind == Budget.ScopeKind.MODEL:
        candidates.append(canonical_model(raw))  # a routed name (openai/gpt-4o) finds gpt-4o
    for candidate in candidates:
        if candidate in known:
            return kind, candidate
    shown = ", ".join(known[:10]) + (f", … ({len(known)} in all)" if len(known) > 10 else "")
    raise _refuse(
        "scope.value",
        f"scope.value {raw[:200]!r} is not a {kind} with data; known: {shown or 'none yet'}.",
    )


def _period(value: Any) -> str:
    if value not in Budget.Period.values:
        raise _refuse(
            "period", f"period must be one of {', '.join(Budget.Period.values)}, not {value!r}."
        )
    return str(value)


def _amount(value: Any) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, str | int | float | Decimal):
        raise _refuse("amount_usd", f"amount_usd must be a number of dollars, not {value!r}.")
    try:
        amount = Decimal(str(value).strip())
    except InvalidOperation:
        raise _refuse(
            "amount_usd", f"amount_usd must be a number of dollars, not {str(value)[:50]!r}."
        ) from None
    if not amount.is_finite() or amount <= 0:
        raise _refuse("amount_usd", f"amount_usd must be above 0, not {str(value)[:50]}.")
    if amount > MAX_AMOUNT:
        raise _refuse("amount_usd", f"amount_usd must be at most {MAX_AMOUNT}.")
    if amount != amount.quantize(CENT):
        raise _refuse("amount_usd", f"amount_usd is kept in whole cents, not {amount}.")
    return amount.quantize(CENT)


def _percent(item: Any) -> int:
    if isinstance(item, bool) or not isinstance(item, int | float | Decimal | str):
        raise ValueError
    number = Decimal(str(item).strip())
    if not number.is_finite() or number != number.to_integral_value():
        raise ValueError
    return int(number)


def _alert_at_pct(value: Any) -> list[int]:
    if not isinstance(value, Sequence) or isinstance(value, str) or not value:
        raise _refuse(
            "alert_at_pct", "alert_at_pct must be a non-empty list of percentages, e.g. [80, 100]."
        )
    found: set[int] = set()
    for item in value:
        try:
            pct = _percent(item)
        except (ValueError, InvalidOperation):
            pct = 0
        if not MIN_PCT <= pct <= MAX_PCT:
            raise _refuse(
                "alert_at_pct",
                f"alert_at_pct holds {str(item)[:50]!r}: each must be a whole percentage from "
                f"{MIN_PCT} to {MAX_PCT}.",
            )
        found.add(pct)
    return sorted(found)


def _on_forecast(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _refuse("on_forecast", f"on_forecast must be true or false, not {value!r}.")
    return value


def _text_list(value: Any, field: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise _refuse(field, f"{field} must be a list.")
    if len(value) > MAX_RECIPIENTS:
        raise _refuse(field, f"{field} holds {len(value)} entries; at most {MAX_RECIPIENTS}.")
    items = []
    for item in value:
        if not isinstance(item, str) or "\x00" in item:
            raise _refuse(field, f"{field} holds {str(item)[:200]!r}, which is not plain text.")
        if item.strip() and item.strip() not in items:
            items.append(item.strip())
    return items


def _emails(value: Any) -> list[str]:
    emails = _text_list(value, "notify.emails")
    for email in emails:
        try:
            validate_email(email)
        except ValidationError:
            raise _refuse(
                "notify.emails", f"notify.emails holds {email[:200]!r}, not an email address."
            ) from None
    return emails


def _webhooks(value: Any) -> list[str]:
    urls = _text_list(value, "notify.webhooks")
    for url in urls:
        if ELLIPSIS in url:
            raise _refuse(
                "notify.webhooks",
                f"notify.webhooks holds the masked URL {url[:200]!r}, which stands for none of "
                "this budget's webhooks; give the whole URL.",
            )
        try:
            if len(url) > MAX_URL_LENGTH:
                raise ValidationError("too long")
            _WEBHOOK_URL(url)
        except ValidationError:
            raise _refuse(
                "notify.webhooks",
                f"notify.webhooks holds {url[:200]!r}, not an http(s) URL.",
            ) from None
    return urls


def _notify(value: Any) -> tuple[list[str], list[str]]:
    if value is None:
        return [], []
    if not isinstance(value, Mapping):
        raise _refuse(
            "notify", 'notify must be an object such as {"emails": [...], "webhooks": [...]}.'
        )
    unknown = sorted(str(k) for k in value if k not in ("emails", "webhooks"))
    if unknown:
        raise _refuse(
            "notify", f"notify has unknown keys {', '.join(unknown)}: use emails and webhooks."
        )
    return _emails(value.get("emails")), _webhooks(value.get("webhooks"))


def budget_values(
    data: Mapping[str, Any], *, kept_scope: tuple[str, str] | None = None
) -> BudgetValues:
    """Check a whole budget given as the API's JSON object (defaults: period month,
    alert_at_pct [80, 100], on_forecast true, nobody to tell). Raises BudgetRefused naming
    the first field at fault. ``kept_scope`` (kind, value), a budget's current scope, is
    accepted as it is, even once nothing of it has data any more."""
    unknown = sorted(str(k) for k in data if k not in FIELDS)
    if unknown:
        raise _refuse(unknown[0], f"{unknown[0]} is not a budget field: use {', '.join(FIELDS)}.")
    if "amount_usd" not in data:
        raise _refuse("amount_usd", "amount_usd is required: the budget's limit in dollars.")
    if "scope" not in data:
        raise _refuse("scope", 'scope is required, e.g. {"kind": "all"}.')
    name = _name(data.get("name"))
    kind, value = _scope(data["scope"], kept=kept_scope)
    emails, webhooks = _notify(data.get("notify"))
    return BudgetValues(
        name=name,
        scope_kind=kind,
        scope_value=value,
        period=_period(data.get("period", Budget.Period.MONTH)),
        amount_usd=_amount(data["amount_usd"]),
        alert_at_pct=_alert_at_pct(data.get("alert_at_pct", list(DEFAULT_ALERT_AT_PCT))),
        on_forecast=_on_forecast(data.get("on_forecast", True)),
        notify_emails=emails,
        notify_webhooks=webhooks,
    )


def budget_data(budget: Budget) -> dict[str, Any]:
    """A budget as the API's JSON object (what `budget_values` reads back)."""
    return {
        "name": budget.name,
        "scope": {"kind": budget.scope_kind, "value": budget.scope_value},
        "period": budget.period,
        "amount_usd": budget.amount_usd,
        "alert_at_pct": list(budget.alert_at_pct),
        "on_forecast": budget.on_forecast,
        "notify": {"emails": list(budget.notify_emails), "webhooks": list(budget.notify_webhooks)},
    }


def notify_unmasked(notify: Any, stored_webhooks: list[str]) -> Any:
    """``notify`` with each masked webhook URL that stands for a stored one (a form or an
    answer sent back as it was shown) replaced by the stored URL; anything else as it is."""
    if not isinstance(notify, Mapping) or not isinstance(notify.get("webhooks"), list):
        return notify
    webhooks = [
        unmasked(url, stored_webhooks, mask_webhook) if isinstance(url, str) else url
        for url in notify["webhooks"]
    ]
    return {**notify, "webhooks": webhooks}


def _check_writer(user: Actor) -> None:
    if user is not None and not has_role(user, BUDGET_WRITER_ROLES):
        raise BudgetRefused(
            "Only finops analysts and managers may create, change or delete budgets.",
            kind=ErrorKind.FORBIDDEN,
        )


def _save(budget: Budget, values: BudgetValues) -> None:
    for name, value in asdict(values).items():
        setattr(budget, name, value)
    try:
        with transaction.atomic():
            budget.save()
    except IntegrityError:
        if Budget.objects.filter(name=values.name).exclude(pk=budget.pk).exists():
            raise _refuse("name", f"A budget named {values.name!r} already exists.") from None
        raise


def _audit_details(budget: Budget) -> dict[str, Any]:
    """The budget's stored fields, as JSON for the audit trail."""
    return {
        "name": budget.name,
        "scope_kind": budget.scope_kind,
        "scope_value": budget.scope_value,
        "period": budget.period,
        "amount_usd": str(budget.amount_usd),
        "alert_at_pct": list(budget.alert_at_pct),
        "on_forecast": budget.on_forecast,
        "notify_emails": list(budget.notify_emails),
        "notify_webhooks": [mask_webhook(url) for url in budget.notify_webhooks],
    }


def alerts_evaluate_soon() -> None:
    """Alerts are derived from budgets too: once a budget is created or changed, evaluate them
    (the worker's task), so a budget already past a threshold alerts now, not at the next
    scheduled pass. A broker that is away costs nothing: the schedule evaluates again."""
    transaction.on_commit(
        lambda: task_queue.publish(task_queue.EVALUATE_ALERTS, what="the alert evaluation")
    )


@transaction.atomic
def budget_create(*, user: Actor, data: Mapping[str, Any]) -> Budget:
    """A new budget from the API's JSON object; refused (BudgetRefused) naming the field."""
    _check_writer(user)
    values = budget_values(data)
    budget = Budget(created_by=user if has_role(user) else None)
    _save(budget, values)
    audit_record(
        actor=user,
        action=AuditEvent.Action.BUDGET_CHANGED,
        obj=budget,
        summary=f"created budget {budget.name} (${budget.amount_usd} a {budget.period})",
        details={"change": "created", **_audit_details(budget)},
    )
    alerts_evaluate_soon()
    return budget


@transaction.atomic
def budget_update(*, budget: Budget, user: Actor, data: Mapping[str, Any]) -> Budget:
    """Change the fields ``data`` gives (the others stay); the whole budget is checked again."""
    _check_writer(user)
    locked = Budget.objects.select_for_update().get(pk=budget.pk)
    old = _audit_details(locked)
    merged = {**budget_data(locked), **data}
    merged["notify"] = notify_unmasked(merged.get("notify"), locked.notify_webhooks)
    values = budget_values(merged, kept_scope=(locked.scope_kind, locked.scope_value))
    _save(locked, values)
    audit_update(
        actor=user,
        action=AuditEvent.Action.BUDGET_CHANGED,
        obj=locked,
        what=f"budget {locked.name}",
        before=old,
        after=_audit_details(locked),
    )
    alerts_evaluate_soon()
    return locked


@transaction.atomic
def budget_delete(*, budget: Budget, user: Actor) -> None:
    """Delete the budget (and its alerts)."""
    _check_writer(user)
    audit_record(
        actor=user,
        action=AuditEvent.Action.BUDGET_CHANGED,
        obj=budget,
        summary=f"deleted budget {budget.name} (${budget.amount_usd} a {budget.period})",
        details={"change": "deleted", **_audit_details(budget)},
    )
    budget.delete()
