"""Alert delivery: webhooks to a real HTTP server on this machine (signature checked on the
receiving side, a 500 retried, every attempt counted, a redelivered task sending nothing),
email through Django's locmem backend, and failing webhooks."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.utils import timezone

from audit_app.budgets import delivery as delivery_module
from audit_app.budgets.delivery import (
    MAX_ATTEMPTS,
    DeliveryFailed,
    delivery_attempt,
    failing_webhooks,
    retry_countdown,
)
from audit_app.models import Alert, AlertDelivery
from audit_app.tasks import deliver_alert

pytestmark = pytest.mark.django_db
SECRET = "test-webhook-secret"


class Receiver:
    """A webhook endpoint: answers the scripted statuses in turn (then 200), keeps every
    request's body and whether its X-Audit-Signature matched the HMAC of the body."""

    def __init__(self) -> None:
        self.statuses: list[int] = []
        self.delay = 0.0
        self.received: list[tuple[dict[str, Any], bool]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802  # http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                expected = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
                signed = self.headers["X-Audit-Signature"] == f"sha256={expected}"
                receiver.received.append((json.loads(body), signed))
                time.sleep(receiver.delay)
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"


@pytest.fixture
def receiver(settings: Any) -> Iterator[Receiver]:
    settings.ALERT_WEBHOOK_SECRET = SECRET
    hook = Receiver()
    thread = threading.Thread(target=hook.server.serve_forever, daemon=True)
    thread.start()
    yield hook
    hook.server.shutdown()
    hook.server.server_close()


@pytest.fixture(autouse=True)
def retries_run_in_process() -> Iterator[None]:
    """Tasks run in this process (eager); each retry runs at once, not after its countdown,
    instead of being raised to the test as eager tasks' errors are."""
    conf = deliver_alert.app.conf
    before = conf.task_eager_propagates
    conf.task_eager_propagates = False
    yield
    conf.task_eager_propagates = before


def run_task(delivery_id: int) -> str:
    return str(deliver_alert.delay(delivery_id).get())


def _delivery(channel: str, target: str, key: str = "2026-11-04|chat|gpt-4o") -> AlertDelivery:
    alert = Alert.objects.create(
        kind="anomaly", anomaly_key=key, message="chat on gpt-4o spent $17.50.", details={"a": 1}
    )
    return AlertDelivery.objects.create(alert=alert, channel=channel, target=target)


def test_webhook_is_signed_and_retried_after_a_500_then_never_sent_again(
    receiver: Receiver,
) -> None:
    receiver.statuses = [500]
    delivery = _delivery("webhook", receiver.url)
    assert run_task(delivery.pk) == "sent"
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("sent", 2, "")
    assert delivery.sent_at is not None
    assert len(receiver.received) == 2
    body, signed = receiver.received[-1]
    assert signed is True
    assert body["text"] == "[Spend anomaly] chat on gpt-4o spent $17.50."
    assert (body["alert"]["id"], body["alert"]["kind"], body["alert"]["details"]) == (
        delivery.alert_id,
        "anomaly",
        {"a": 1},
    )
    # The task delivered again (a worker lost before acknowledging it): nothing is sent.
    assert run_task(delivery.pk) == "skipped"
    assert len(receiver.received) == 2
    delivery.refresh_from_db()
    assert delivery.attempts == 2


def test_the_failed_attempt_is_kept_until_the_next_one(receiver: Receiver) -> None:
    receiver.statuses = [500]
    delivery = _delivery("webhook", receiver.url)
    with pytest.raises(DeliveryFailed, match="answered HTTP 500"):
        delivery_attempt(delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("failed", 1)
    assert delivery.last_error == "The webhook answered HTTP 500."


def test_an_attempt_in_flight_is_not_doubled(receiver: Receiver) -> None:
    delivery = _delivery("webhook", receiver.url)
    AlertDelivery.objects.filter(pk=delivery.pk).update(attempts=1, last_attempt_at=timezone.now())
    assert delivery_attempt(delivery.pk) == "skipped"
    assert receiver.received == []
    # A claim older than CLAIM_SECONDS belongs to a worker that died: it is taken over.
    stale = timezone.now() - timedelta(seconds=delivery_module.CLAIM_SECONDS + 1)
    AlertDelivery.objects.filter(pk=delivery.pk).update(last_attempt_at=stale)
    assert delivery_attempt(delivery.pk) == "sent"
    assert len(receiver.received) == 1


def test_a_webhook_failing_every_attempt_is_marked_failing(receiver: Receiver) -> None:
    receiver.statuses = [503] * MAX_ATTEMPTS
    delivery = _delivery("webhook", receiver.url)
    assert run_task(delivery.pk) == "failed"
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("failed", MAX_ATTEMPTS)
    assert len(receiver.received) == MAX_ATTEMPTS
    failing = failing_webhooks()
    assert list(failing) == [receiver.url]
    assert (failing[receiver.url].attempts, failing[receiver.url].last_error) == (
        MAX_ATTEMPTS,
        "The webhook answered HTTP 503.",
    )
    # The next alert reaches it: no longer failing.
    later = _delivery("webhook", receiver.url, key="2026-11-05|chat|gpt-4o")
    assert run_task(later.pk) == "sent"
    assert failing_webhooks() == {}


def test_a_webhook_that_does_not_answer_in_time_fails_the_attempt(
    receiver: Receiver, monkeypatch: Any
) -> None:
    monkeypatch.setattr(delivery_module, "WEBHOOK_TIMEOUT_SECONDS", 0.2)
    receiver.delay = 1.0
    delivery = _delivery("webhook", receiver.url)
    started = time.monotonic()
    with pytest.raises(DeliveryFailed, match="no complete answer within 0.2 s"):
        delivery_attempt(delivery.pk)
    assert time.monotonic() - started < 0.9


def test_a_webhook_that_is_not_http_is_never_called(settings: Any) -> None:
    settings.ALERT_WEBHOOK_SECRET = SECRET
    delivery = _delivery("webhook", "file:///etc/passwd")
    with pytest.raises(DeliveryFailed, match="is not http"):
        delivery_attempt(delivery.pk)


def test_without_a_secret_webhooks_are_not_sent(settings: Any, receiver: Receiver) -> None:
    settings.ALERT_WEBHOOK_SECRET = ""
    delivery = _delivery("webhook", receiver.url)
    with pytest.raises(DeliveryFailed, match="ALERT_WEBHOOK_SECRET is not set"):
        delivery_attempt(delivery.pk)
    assert receiver.received == []


def test_email_is_sent_once(settings: Any, mailoutbox: list[Any]) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.DEFAULT_FROM_EMAIL = "audit@example.com"
    delivery = _delivery("email", "finops@example.com")
    assert run_task(delivery.pk) == "sent"
    assert run_task(delivery.pk) == "skipped"
    [message] = mailoutbox
    assert (message.to, message.from_email) == (["finops@example.com"], "audit@example.com")
    assert message.subject == "[Spend anomaly] chat on gpt-4o spent $17.50."
    assert message.body.startswith("chat on gpt-4o spent $17.50.\n\n{")


def test_a_deleted_alert_ends_its_task() -> None:
    delivery = _delivery("email", "finops@example.com")
    delivery.alert.delete()
    assert run_task(delivery.pk) == "deleted"


def test_backoff_doubles() -> None:
    assert [retry_countdown(n) for n in range(1, MAX_ATTEMPTS)] == [30, 60, 120, 240]


def test_lost_deliveries_are_queued_again(monkeypatch: Any) -> None:
    fresh = _delivery("email", "a@example.com")
    lost = _delivery("email", "b@example.com", key="other")
    Alert.objects.filter(pk=lost.alert_id).update(created_at=timezone.now() - timedelta(hours=1))
    queued: list[list[int]] = []
    monkeypatch.setattr(delivery_module, "_enqueue", lambda ids: queued.append(list(ids)))
    assert delivery_module.deliveries_requeue_stale() == 1
    assert queued == [[lost.pk]]
    assert fresh.pk not in queued[0]


def test_the_budgets_pages_mark_a_webhook_that_keeps_failing(
    receiver: Receiver, client: Any, manager_user: Any
) -> None:
    from audit_app.models import Budget

    budget = Budget.objects.create(
        name="gpu",
        scope_kind="all",
        amount_usd=100,
        alert_at_pct=[80],
        notify_webhooks=[receiver.url, "https://hooks.example.invalid/ok"],
    )
    receiver.statuses = [503] * MAX_ATTEMPTS
    delivery = _delivery("webhook", receiver.url)
    assert run_task(delivery.pk) == "failed"
    client.force_login(manager_user)
    listing = client.get("/budgets/").content.decode()
    # Webhook URLs are secrets: shown as scheme, host and their last four characters.
    shown = receiver.url.removesuffix("/hook") + "/…/hook"
    assert receiver.url not in listing
    assert f"<code>{shown}</code>: {MAX_ATTEMPTS} attempts" in listing
    assert listing.count('data-testid="webhook-failing"') == 1  # the budget's row
    detail = client.get(f"/budgets/{budget.pk}/").content.decode()
    assert receiver.url not in detail
    marked = detail[detail.index(f"<code>{shown}</code>") :]
    assert marked.split("</li>")[0].count("webhook-failing") == 1
    assert "The webhook answered HTTP 503." in marked
    ok = detail[detail.index("<code>https://hooks.example.invalid/…/d/ok</code>") :]
    assert "webhook-failing" not in ok.split("</li>")[0]


@pytest.mark.parametrize("secret", [SECRET, ""])
def test_without_the_allow_list_a_webhook_to_an_internal_port_is_never_sent(
    settings: Any, secret: str
) -> None:
    """A listener on 127.0.0.1 stands for Redis on 6379: nothing connects to it (and the
    refusal is said first, whether or not webhooks can be signed)."""
    import socket

    settings.ALERT_WEBHOOK_SECRET = secret
    settings.OUTBOUND_ALLOW_PRIVATE = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    try:
        delivery = _delivery("webhook", f"http://127.0.0.1:{port}/")
        with pytest.raises(DeliveryFailed):
            delivery_attempt(delivery.pk)
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()
    delivery.refresh_from_db()
    assert delivery.last_error == (
        "The webhook URL is refused: the address 127.0.0.1 is loopback, which outbound requests "
        "may not reach (an operator allows networks with OUTBOUND_ALLOW_PRIVATE)."
    )


def test_a_webhook_redirected_to_ftp_is_refused_and_its_reply_never_kept(
    settings: Any,
) -> None:
    from tests.support.outbound_peers import Route, http_peer

    settings.ALERT_WEBHOOK_SECRET = SECRET
    moved = Route(
        status=302, headers={"Location": "ftp://127.0.0.1/x"}, body=b"internal reply text"
    )
    with http_peer({"/hook": moved}) as peer:
        delivery = _delivery("webhook", f"{peer.base}/hook")
        with pytest.raises(DeliveryFailed):
            delivery_attempt(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.last_error == (
        "The webhook URL is refused: it redirected to a URL that is refused: only http and "
        "https may be used, not ftp://."
    )


def test_a_webhook_reply_body_and_reason_never_reach_the_error(settings: Any) -> None:
    from tests.support.outbound_peers import Route, http_peer

    settings.ALERT_WEBHOOK_SECRET = SECRET
    route = Route(status=400, body=b"-ERR unknown command 'POST'", reason="Redis Says Hi")
    with http_peer({"/hook": route}) as peer:
        delivery = _delivery("webhook", f"{peer.base}/hook")
        with pytest.raises(DeliveryFailed):
            delivery_attempt(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.last_error == "The webhook answered HTTP 400."


def test_a_dripping_webhook_is_cut_at_the_total_deadline(settings: Any) -> None:
    from tests.support.outbound_peers import dripping_peer, elapsed

    settings.ALERT_WEBHOOK_SECRET = SECRET
    settings.OUTBOUND_TIMEOUT_SECONDS = 2
    with dripping_peer(every_seconds=0.5, headers_too=True) as base:
        delivery = _delivery("webhook", f"{base}/hook")
        started = time.monotonic()
        with pytest.raises(DeliveryFailed, match="no complete answer within 2 s"):
            delivery_attempt(delivery.pk)
        assert elapsed(started) < 20


def test_alerts_show_webhook_targets_masked_to_every_role(receiver: Receiver, request: Any) -> None:
    from django.test import Client

    delivery = _delivery("webhook", receiver.url)
    AlertDelivery.objects.create(alert=delivery.alert, channel="email", target="finops@example.com")
    shown = receiver.url.removesuffix("/hook") + "/…/hook"
    for role in ("engineer_user", "manager_user", "finops_user"):
        client = Client()
        client.force_login(request.getfixturevalue(role))
        answer = client.get("/api/v1/alerts/").json()
        targets = {d["target"] for a in answer["results"] for d in a["deliveries"]}
        assert shown in targets and "finops@example.com" in targets
        page = client.get("/alerts/").content.decode()
        assert receiver.url not in page and shown in page
    assert delivery.shown_target == shown
