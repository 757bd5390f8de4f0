"""Delivering alerts: one `AlertDelivery` per recipient, by email or by webhook.

Its rules in full: `docs/architecture.md`, section "Alert delivery".
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from audit_app.budgets.alert_text import chat_text, email_body_text, email_subject
from audit_app.lib import outbound, task_queue
from audit_app.lib.masking import mask_webhook
from audit_app.lib.outbound import OutboundFailed, OutboundRefused, policy_from_settings
from audit_app.models import Alert, AlertDelivery

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
RETRY_BASE_SECONDS = 30
CLAIM_SECONDS = 120
WEBHOOK_TIMEOUT_SECONDS = 5
# The answer's body is not read: only its status counts.
WEBHOOK_ANSWER_BYTES = 64 * 1024
SIGNATURE_HEADER = "X-Audit-Signature"
# Pending deliveries never tried this long after their alert was created lost their task (the
# broker was down when it was queued): the scheduled evaluation queues them again.
REQUEUE_AFTER = timedelta(minutes=10)


class DeliveryFailed(Exception):
    """One attempt failed; ``attempts`` is how many were made so far."""

    def __init__(self, message: str, *, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts


def retry_countdown(attempts: int) -> int:
    """Seconds before the next attempt after ``attempts`` attempts: 30, 60, 120, 240."""
    return int(RETRY_BASE_SECONDS * 2 ** max(attempts - 1, 0))


def deliveries_queue(delivery_ids: list[int]) -> None:
    """Queue one task per delivery once the caller's transaction commits. A broker that is away
    costs nothing here: the scheduled evaluation queues untried deliveries again."""
    if delivery_ids:
        transaction.on_commit(lambda: _enqueue(delivery_ids))


def _enqueue(delivery_ids: Iterable[int]) -> None:
    for delivery_id in delivery_ids:
        task_queue.publish(
            task_queue.DELIVER_ALERT, args=[delivery_id], what=f"alert delivery {delivery_id}"
        )


def deliveries_requeue_stale() -> int:
    """Queue again the deliveries never tried REQUEUE_AFTER after their alert was created (their
    task was lost); how many were queued."""
    ids = list(
        AlertDelivery.objects.filter(
            status=AlertDelivery.Status.PENDING,
            attempts=0,
            alert__created_at__lt=timezone.now() - REQUEUE_AFTER,
        ).values_list("pk", flat=True)
    )
    _enqueue(ids)
    return len(ids)


def delivery_claim(rows: QuerySet[Any], **fields: Any) -> bool:
    """Claim the one delivery row in ``rows`` for a send: unless it was sent, or another run
    claimed it less than CLAIM_SECONDS ago, it becomes pending with one more attempt (and
    ``fields``) in one UPDATE, so two runs never send it twice. Alert and statement deliveries
    share the statuses pending, sent and failed."""
    now = timezone.now()
    free = (
        Q(status=AlertDelivery.Status.FAILED)
        | Q(last_attempt_at__isnull=True)
        | Q(last_attempt_at__lt=now - timedelta(seconds=CLAIM_SECONDS))
    )
    claimed = (
        rows.exclude(status=AlertDelivery.Status.SENT)
        .filter(free)
        .update(
            status=AlertDelivery.Status.PENDING,
            attempts=F("attempts") + 1,
            last_attempt_at=now,
            **fields,
        )
    )
    return claimed == 1


def delivery_attempt(delivery_id: int) -> str:
    """One attempt at one delivery: "sent", or "skipped" when it was sent already or another
    attempt holds it; raises DeliveryFailed (the error kept on the delivery) when it fails, and
    AlertDelivery.DoesNotExist when its alert was deleted."""
    if not delivery_claim(AlertDelivery.objects.filter(pk=delivery_id)):
        AlertDelivery.objects.get(pk=delivery_id)  # gone: DoesNotExist
        return "skipped"
    delivery = AlertDelivery.objects.select_related("alert", "alert__budget").get(pk=delivery_id)
    try:
        if delivery.channel == AlertDelivery.Channel.EMAIL:
            send_email(delivery.alert, delivery.target)
        else:
            send_webhook(delivery.alert, delivery.target)
    except Exception as exc:
        message = failure_message(exc)[:2000]
        AlertDelivery.objects.filter(pk=delivery_id).update(
            status=AlertDelivery.Status.FAILED, last_error=message
        )
        logger.warning(
            "alert delivery %s to %s failed (attempt %s): %s",
            delivery_id,
            mask_webhook(delivery.target)
            if delivery.channel == AlertDelivery.Channel.WEBHOOK
            else delivery.target,
            delivery.attempts,
            message,
        )
        raise DeliveryFailed(message, attempts=delivery.attempts) from exc
    AlertDelivery.objects.filter(pk=delivery_id).update(
        status=AlertDelivery.Status.SENT, sent_at=timezone.now(), last_error=""
    )
    return "sent"


class WebhookRefused(Exception):
    """The webhook answered with a status other than 2xx (``status``)."""

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


def failure_message(exc: Exception) -> str:
    """One sentence for the delivery's last error (never the peer's body or status text)."""
    if isinstance(exc, WebhookRefused):
        return f"The webhook answered HTTP {exc.status}."
    if isinstance(exc, OutboundRefused):
        return f"The webhook URL is refused: {exc}."
    if isinstance(exc, OutboundFailed):
        return f"The webhook failed: {exc}."
    if isinstance(exc, ValueError):
        return str(exc)
    return f"The delivery failed ({type(exc).__name__})."


def alert_text(alert: Alert) -> str:
    """The one line a chat channel shows, escaped for Slack (`alert_text.chat_text`)."""
    return chat_text(kind=str(alert.get_kind_display()), message=alert.message)


def alert_payload(alert: Alert) -> dict[str, Any]:
    """The structured alert sent to webhooks (beside ``text``)."""
    return {
        "id": alert.pk,
        "kind": alert.kind,
        "message": alert.message,
        "budget_id": alert.budget_id,
        "period_start": alert.period_start.isoformat() if alert.period_start else None,
        "threshold_pct": alert.threshold_pct,
        "anomaly_key": alert.anomaly_key or None,
        "details": alert.details,
        "created_at": alert.created_at.isoformat(),
    }


def webhook_body(alert: Alert) -> bytes:
    return json.dumps(
        {"text": alert_text(alert), "alert": alert_payload(alert)}, sort_keys=True
    ).encode("utf-8")


def webhook_secret() -> str:
    secret = str(getattr(settings, "ALERT_WEBHOOK_SECRET", "") or "")
    if not secret:
        raise ValueError("ALERT_WEBHOOK_SECRET is not set, so webhooks cannot be signed.")
    return secret


def signature(body: bytes, secret: str) -> str:
    """The X-Audit-Signature value: ``sha256=`` and the hex HMAC-SHA256 of ``body``."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def send_webhook(alert: Alert, url: str) -> None:
    """POST the signed alert; WebhookRefused for a non-2xx answer, OutboundRefused or
    OutboundFailed when the URL may not be reached or did not answer in time."""
    if urlsplit(url).scheme not in ("http", "https"):
        raise ValueError(f"The webhook URL {mask_webhook(url)} is not http(s).")
    policy = policy_from_settings(
        max_bytes=WEBHOOK_ANSWER_BYTES, timeout_seconds=WEBHOOK_TIMEOUT_SECONDS
    )
    outbound.check_url(url, policy)  # refused first, whether or not webhooks can be signed
    body = webhook_body(alert)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "inference-spend-audit-alerts",
        SIGNATURE_HEADER: signature(body, webhook_secret()),
    }
    with outbound.opened("POST", url, policy=policy, headers=headers, body=body) as response:
        if not 200 <= response.status < 300:
            raise WebhookRefused(response.status)


def send_email(alert: Alert, address: str) -> None:
    body = "\n\n".join(
        [
            email_body_text(alert.message),
            json.dumps(alert_payload(alert), indent=2, sort_keys=True),
            "Acknowledge it on the Alerts page of Inference Spend Audit.",
        ]
    )
    send_mail(
        subject=email_subject(kind=str(alert.get_kind_display()), message=alert.message),
        message=body,
        from_email=settings.DEFAULT_FROM_EMAIL,
        recipient_list=[address],
        fail_silently=False,
    )


def deliver_now(delivery_ids: Iterable[int]) -> dict[int, str]:
    """One attempt at each delivery, in this process (``manage.py alerts --deliver``): the
    outcome per delivery, "sent", "skipped" or "failed: <error>"."""
    outcomes: dict[int, str] = {}
    for delivery_id in delivery_ids:
        try:
            outcomes[delivery_id] = delivery_attempt(delivery_id)
        except DeliveryFailed as exc:
            outcomes[delivery_id] = f"failed: {exc}"
        except AlertDelivery.DoesNotExist:
            outcomes[delivery_id] = "deleted"
    return outcomes


@dataclass(frozen=True, kw_only=True)
class FailingWebhook:
    url: str
    shown_url: str  # masked, for pages
    alert_id: int
    attempts: int
    last_error: str
    last_attempt_at: datetime | None


def failing_webhooks() -> dict[str, FailingWebhook]:
    """Webhook URLs whose latest attempted delivery failed after all MAX_ATTEMPTS attempts,
    keyed by URL (sorted): what the Budgets page marks as failing. A later success, or a newer
    delivery still being retried, clears the mark."""
    latest: dict[str, AlertDelivery] = {}
    attempted = AlertDelivery.objects.filter(
        channel=AlertDelivery.Channel.WEBHOOK, last_attempt_at__isnull=False
    ).order_by("target", "-last_attempt_at", "-pk")
    for delivery in attempted.iterator():
        latest.setdefault(delivery.target, delivery)
    return {
        url: FailingWebhook(
            url=url,
            shown_url=mask_webhook(url),
            alert_id=d.alert_id,
            attempts=d.attempts,
            last_error=d.last_error,
            last_attempt_at=d.last_attempt_at,
        )
        for url, d in sorted(latest.items())
        if d.status == AlertDelivery.Status.FAILED and d.attempts >= MAX_ATTEMPTS
    }
