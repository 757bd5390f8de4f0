"""Alerts: a budget crossing one of its thresholds, or a new spend anomaly, told once.

`alerts_evaluate` looks at every budget (its spend so far and, when it alerts on the forecast,
where the period will land) and at the anomalies of the last ANOMALY_LOOKBACK_DAYS days, and
creates the alerts that do not exist yet, each with one `AlertDelivery` per recipient. It runs
after every refresh of derived results (so after every ingest) and on a schedule; it is safe to
run anywhere, any number of times, even at once: the database's constraints let exactly one
of two workers create an alert (`_create_once`), and the other moves on.

A forecast alert is created only for a threshold that actual spend has not crossed yet: once
the money is spent, the actual alert says it, and a forecast alert beside it would say nothing
more.

Deliveries are queued once the alert is committed (`delivery.deliveries_queue`), never sent
inline, so a webhook that hangs never holds up an ingest.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit_app.access.audit import audit_record
from audit_app.access.permissions import Actor
from audit_app.budgets.anomaly_service import AnomalyRow, anomaly_list, anomaly_payload, usd
from audit_app.budgets.delivery import deliveries_queue
from audit_app.budgets.status import budget_status
from audit_app.lib.errors import DomainError, ErrorKind
from audit_app.models import Alert, AlertDelivery, AuditEvent, Budget
from audit_app.reporting.selectors import data_date_range

logger = logging.getLogger(__name__)

# Anomalies of this many days up to the evaluation day are alerted on (a week: an ingest that
# lands a few days late still alerts on what it brought).
ANOMALY_LOOKBACK_DAYS = 7


class AcknowledgeRefused(DomainError):
    """An acknowledgement without a note, or of an alert already acknowledged."""


@dataclass(frozen=True, kw_only=True)
class Recipients:
    emails: list[str]
    webhooks: list[str]


def evaluation_day() -> date:
    """The day alerts are evaluated for by default: the last day with data, never past today
    (today when there is no data)."""
    today = timezone.now().date()
    bounds = data_date_range()
    return min(bounds[1], today) if bounds else today


def alerts_evaluate(*, as_of: date | None = None) -> list[Alert]:
    """Create every alert due on ``as_of`` (default `evaluation_day`) that does not exist yet,
    with its deliveries queued; return those created by this call, oldest first."""
    day = as_of or evaluation_day()
    created: list[Alert] = []
    for budget in Budget.objects.order_by("pk"):
        created.extend(_budget_alerts(budget, day))
    created.extend(_anomaly_alerts(day))
    return created


def alerts_after_refresh() -> None:
    """Evaluate after derived results were refreshed (after an ingest): never raises, so an
    evaluation that fails can never fail the ingest or the refresh; the schedule tries again."""
    try:
        alerts_evaluate()
    except Exception:
        logger.exception("alert evaluation after a refresh failed; the schedule will retry")


def _budget_alerts(budget: Budget, day: date) -> list[Alert]:
    status = budget_status(budget, as_of=day)
    amount = Decimal(budget.amount_usd)
    created: list[Alert] = []
    thresholds = sorted({int(p) for p in budget.alert_at_pct or []})
    recipients = Recipients(
        emails=list(budget.notify_emails or []), webhooks=list(budget.notify_webhooks or [])
    )
    for pct in thresholds:
        line = amount * pct / 100
        spent = status.actual_usd >= line
        if spent:
            kind, figure = Alert.Kind.BUDGET_ACTUAL, status.actual_usd
        elif budget.on_forecast and status.forecast_usd >= line:
            kind, figure = Alert.Kind.BUDGET_FORECAST, status.forecast_usd
        else:
            continue
        what = "has spent" if spent else "is forecast to spend"
        message = (
            f"Budget {budget.name!r} {what} ${usd_short(figure)} of ${usd_short(amount)} "
            f"({pct}% threshold) in the {budget.period} from {status.period_start}."
        )
        details = {
            "budget": {"id": budget.pk, "name": budget.name},
            "scope": {"kind": budget.scope_kind, "value": budget.scope_value},
            "period": budget.period,
            "period_start": status.period_start.isoformat(),
            "period_end": status.period_end.isoformat(),
            "as_of": day.isoformat(),
            "amount_usd": usd(amount),
            "threshold_pct": pct,
            "actual_usd": usd(status.actual_usd),
            "forecast_usd": usd(status.forecast_usd),
        }
        alert = _create_once(
            lookup={
                "kind": kind,
                "budget": budget,
                "period_start": status.period_start,
                "threshold_pct": pct,
            },
            fields={"message": message, "details": details},
            recipients=recipients,
        )
        if alert is not None:
            created.append(alert)
    return created


def _anomaly_alerts(day: date) -> list[Alert]:
    minimum = float(settings.ALERT_ANOMALY_MIN_SCORE)
    recipients = Recipients(
        emails=list(settings.ALERT_ANOMALY_EMAILS), webhooks=list(settings.ALERT_ANOMALY_WEBHOOKS)
    )
    rows = anomaly_list(day - timedelta(days=ANOMALY_LOOKBACK_DAYS - 1), day)
    created: list[Alert] = []
    for row in sorted(rows, key=lambda r: (r.day, r.workload, r.model)):
        if not row.score >= minimum:  # NaN never alerts
            continue
        alert = _create_once(
            lookup={"kind": Alert.Kind.ANOMALY, "anomaly_key": row.key},
            fields={"message": anomaly_message(row), "details": anomaly_payload(row)},
            recipients=recipients,
        )
        if alert is not None:
            created.append(alert)
    return created


def anomaly_message(row: AnomalyRow) -> str:
    cause = row.cause
    return (
        f"{row.workload} on {row.model} spent {_usd(row.spend_usd)} on {row.day} against "
        f"{_usd(row.expected_usd)} expected (score {row.score:.1f}): volume "
        f"{_usd(cause.volume_usd)}, mix {_usd(cause.mix_usd)}, price {_usd(cause.price_usd)}."
    )


def _usd(amount: Decimal) -> str:
    """`$1,234.56`, or `-$0.02` for a part that worked against the change."""
    text = usd_short(abs(amount))
    return f"-${text}" if amount < 0 and text != "0.00" else f"${text}"


def usd_short(amount: Decimal) -> str:
    """Dollars to the cent with thousands separators, for sentences."""
    return f"{amount.quantize(Decimal('0.01')):,}"


def alert_exists(lookup: dict[str, Any]) -> bool:
    """The cheap check before an insert; the constraint, not this, is what keeps one alert."""
    return Alert.objects.filter(**lookup).exists()


def _create_once(
    *, lookup: dict[str, Any], fields: dict[str, Any], recipients: Recipients
) -> Alert | None:
    """The alert ``lookup`` names with its deliveries, or None when it exists already (made by
    an earlier evaluation, or by another worker at this very moment: its unique constraint
    refuses the second insert, whose savepoint is rolled back)."""
    if alert_exists(lookup):
        return None
    try:
        with transaction.atomic():
            alert = Alert.objects.create(**lookup, **fields)
            deliveries = [
                AlertDelivery(alert=alert, channel=AlertDelivery.Channel.EMAIL, target=email)
                for email in dict.fromkeys(recipients.emails)
            ] + [
                AlertDelivery(alert=alert, channel=AlertDelivery.Channel.WEBHOOK, target=url)
                for url in dict.fromkeys(recipients.webhooks)
            ]
            AlertDelivery.objects.bulk_create(deliveries)
            deliveries_queue(list(alert.deliveries.values_list("pk", flat=True)))
    except IntegrityError:
        return None
    logger.info("alert %s created: %s", alert.pk, alert.message)
    return alert


def alert_acknowledge(*, alert: Alert, user: Actor, note: str) -> Alert:
    """Mark ``alert`` acknowledged by ``user`` with a note (required), recorded in the audit
    trail. Refused when the note is blank or someone acknowledged it first."""
    note = (note or "").strip()
    if not note:
        raise AcknowledgeRefused(
            "A note is required: say what was done about this alert.", field="note"
        )
    with transaction.atomic():
        locked = Alert.objects.select_for_update().get(pk=alert.pk)
        if locked.acknowledged_at is not None:
            who = locked.acknowledged_by.get_username() if locked.acknowledged_by else "someone"
            raise AcknowledgeRefused(
                f"Alert {locked.pk} was already acknowledged by {who} on "
                f"{locked.acknowledged_at:%Y-%m-%d %H:%M} UTC.",
                kind=ErrorKind.CONFLICT,
            )
        locked.acknowledged_by = user if isinstance(user, User) else None
        locked.acknowledged_at = timezone.now()
        locked.acknowledgement_note = note
        locked.save(update_fields=["acknowledged_by", "acknowledged_at", "acknowledgement_note"])
        audit_record(
            actor=user,
            action=AuditEvent.Action.ALERT_ACKNOWLEDGED,
            obj=locked,
            summary=f"Acknowledged alert {locked.pk}: {note}",
            details={"alert": locked.pk, "kind": locked.kind, "note": note},
        )
    return locked
