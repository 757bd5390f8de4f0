"""Evaluate budgets and anomalies into alerts, list them, and optionally deliver them now."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit_app.budgets.alerts import alerts_evaluate
from audit_app.budgets.delivery import deliver_now
from audit_app.lib.query_params import ParameterError, date_param
from audit_app.models import Alert, AlertDelivery


def alert_row(alert: Alert) -> dict[str, Any]:
    return {
        "id": alert.pk,
        "kind": alert.kind,
        "budget": alert.budget.name if alert.budget else None,
        "period_start": alert.period_start.isoformat() if alert.period_start else None,
        "threshold_pct": alert.threshold_pct,
        "anomaly_key": alert.anomaly_key or None,
        "message": alert.message,
        "created_at": alert.created_at.isoformat(),
        "acknowledged": alert.acknowledged_at is not None,
        "deliveries": [
            {
                "channel": d.channel,
                "target": d.target,
                "status": d.status,
                "attempts": d.attempts,
                "last_error": d.last_error,
            }
            for d in alert.deliveries.all()
        ],
    }


class Command(BaseCommand):
    help = (
        "Create the alerts due (budget thresholds crossed on spend or forecast, anomalies above "
        "ALERT_ANOMALY_MIN_SCORE), then list every alert, newest first; --deliver sends the "
        "deliveries not sent yet (one attempt each) before listing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true")
        parser.add_argument(
            "--deliver", action="store_true", help="Send pending deliveries before returning."
        )
        parser.add_argument(
            "--as-of", help="YYYY-MM-DD (default: the last day with data, never past today)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            as_of: date | None = date_param({"as_of": options["as_of"] or ""}, "as_of")
        except ParameterError as exc:
            raise CommandError(str(exc)) from None
        created = alerts_evaluate(as_of=as_of)
        if options["deliver"]:
            pending = AlertDelivery.objects.exclude(status=AlertDelivery.Status.SENT).order_by("pk")
            deliver_now(list(pending.values_list("pk", flat=True)))
        alerts = Alert.objects.select_related("budget").prefetch_related("deliveries")
        rows = [alert_row(alert) for alert in alerts]
        if options["json"]:
            self.stdout.write(json.dumps(rows))
            return
        for row in rows:
            sent = sum(1 for d in row["deliveries"] if d["status"] == "sent")
            state = "acknowledged" if row["acknowledged"] else "open"
            self.stdout.write(
                f"#{row['id']} {row['created_at'][:16]} {row['kind']:<15} {state:<12} "
                f"sent {sent}/{len(row['deliveries'])}  {row['message']}"
            )
        self.stdout.write(f"{len(created)} new alert(s); {len(rows)} in all")
