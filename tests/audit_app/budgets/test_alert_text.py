"""Alert text with names from data made inert: escaped for Slack in a webhook's ``text``, one
line in an email subject, plain text in an email body."""

from __future__ import annotations

import json
from typing import Any

import pytest

from audit_app.budgets.alert_text import (
    chat_text,
    email_body_text,
    email_subject,
    one_line,
    slack_escaped,
)
from audit_app.budgets.delivery import delivery_attempt, webhook_body
from audit_app.models import Alert, AlertDelivery

EVIL = "<!channel> <https://evil.example/sso|Spend portal: sign in again>"


def test_slack_escaping_leaves_no_mention_or_link() -> None:
    assert slack_escaped(EVIL) == (
        "&lt;!channel&gt; &lt;https://evil.example/sso|Spend portal: sign in again&gt;"
    )
    assert slack_escaped("R&D <@U123> &amp;") == "R&amp;D &lt;@U123&gt; &amp;amp;"
    text = chat_text(kind="Spend anomaly", message=f"{EVIL} on gpt-4o spent $17.50.")
    assert "<" not in text and ">" not in text
    assert text == (
        "[Spend anomaly] &lt;!channel&gt; &lt;https://evil.example/sso|Spend portal: sign in "
        "again&gt; on gpt-4o spent $17.50."
    )


def test_an_email_subject_has_no_line_break_and_the_body_no_control_character() -> None:
    assert one_line("a\r\nBcc: victim@example.com\u2028b\x00c\td") == (
        "a Bcc: victim@example.com b c d"
    )
    subject = email_subject(kind="Budget", message="Team\r\nBcc: x@example.com " + "y" * 300)
    assert "\r" not in subject and "\n" not in subject
    assert subject.startswith("[Budget] Team Bcc: x@example.com yyy")
    assert len(subject) == 200
    assert email_body_text("line one\r\nline two\x1b[31m red\x00") == (
        "line one\nline two [31m red "
    )


@pytest.mark.django_db
def test_the_webhook_text_of_an_anomaly_on_a_hostile_workload_is_escaped() -> None:
    message = f"{EVIL} & co on gpt-4o spent $17.50 on 2026-11-04."
    alert = Alert.objects.create(kind="anomaly", anomaly_key="k", message=message, details={})
    body = json.loads(webhook_body(alert))
    assert body["text"] == (
        "[Spend anomaly] &lt;!channel&gt; &lt;https://evil.example/sso|Spend portal: sign in "
        "again&gt; &amp; co on gpt-4o spent $17.50 on 2026-11-04."
    )
    assert body["alert"]["message"] == message  # the data itself, for machines, unchanged


@pytest.mark.django_db
def test_an_email_about_a_hostile_budget_name_cannot_add_headers(
    settings: Any, mailoutbox: list[Any]
) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.DEFAULT_FROM_EMAIL = "audit@example.com"
    message = f"Budget 'ops\r\nBcc: victim@example.com' {EVIL} reached $10 of $10."
    alert = Alert.objects.create(kind="budget_actual", message=message, details={})
    delivery = AlertDelivery.objects.create(alert=alert, channel="email", target="f@example.com")
    assert delivery_attempt(delivery.pk) == "sent"
    [sent] = mailoutbox
    assert sent.subject == (
        f"[{alert.get_kind_display()}] Budget 'ops Bcc: victim@example.com' {EVIL} reached $10 "
        "of $10."
    )
    assert sent.bcc == [] and sent.to == ["f@example.com"]
    assert sent.content_subtype == "plain"
    assert sent.body.startswith(f"Budget 'ops\nBcc: victim@example.com' {EVIL} reached")
    headers = sent.message()
    assert headers["Bcc"] is None and headers["To"] == "f@example.com"
