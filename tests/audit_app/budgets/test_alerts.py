"""Alerts: created once per budget, period and threshold (on spend, or on the forecast when the
budget asks) and once per anomaly above the score; each with one delivery per recipient;
acknowledged with a note. Budget figures come from a fake `budget_status` (the figures are the
test's, the forecasting is tested with it); anomalies from the hand-worked sample."""

from __future__ import annotations

import io
import json
import threading
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connections
from django.test import Client

from audit_app.budgets import alerts as alerts_module
from audit_app.budgets import delivery as delivery_module
from audit_app.budgets.alerts import AcknowledgeRefused, alert_acknowledge, alerts_evaluate
from audit_app.lib.errors import ErrorKind
from audit_app.models import Alert, AlertDelivery, AuditEvent, Budget, Upload
from tests.audit_app.budgets.anomaly_samples import ingest_sample

AS_OF = date(2026, 11, 8)
PERIOD_START = date(2026, 11, 1)


@dataclass(frozen=True, kw_only=True)
class FakeStatus:
    period_start: date
    period_end: date
    actual_usd: Decimal
    forecast_usd: Decimal


def fake_status(figures: dict[str, tuple[str, str]]) -> Any:
    """A budget_status giving each budget (by name) its (actual, forecast)."""

    def status(budget: Budget, *, as_of: date) -> FakeStatus:
        actual, forecast = figures[budget.name]
        return FakeStatus(
            period_start=as_of.replace(day=1),
            period_end=date(2026, 11, 30),
            actual_usd=Decimal(actual),
            forecast_usd=Decimal(forecast),
        )

    return status


def budget(name: str = "Platform", **fields: Any) -> Budget:
    defaults: dict[str, Any] = {
        "scope_kind": "all",
        "amount_usd": Decimal("100.00"),
        "alert_at_pct": [80, 100],
        "notify_emails": ["finops@example.com"],
        "notify_webhooks": ["https://hooks.example.com/a"],
    }
    return Budget.objects.create(name=name, **{**defaults, **fields})


def crossings() -> list[tuple[str, str, int | None]]:
    return sorted(
        (a.budget.name if a.budget else "", a.kind, a.threshold_pct)
        for a in Alert.objects.select_related("budget")
    )


@pytest.mark.django_db
def test_each_threshold_is_alerted_once_on_spend_or_forecast(monkeypatch: Any) -> None:
    # $85 spent of $100: the 80 % line is crossed by spend; the forecast $120 crosses 100 %.
    # "Quiet" alerts on spend only, so its forecast over 100 % says nothing.
    budget("Platform")
    budget("Quiet", on_forecast=False)
    budget("Calm")
    monkeypatch.setattr(
        alerts_module,
        "budget_status",
        fake_status({"Platform": ("85", "120"), "Quiet": ("85", "120"), "Calm": ("10", "70")}),
    )
    created = alerts_evaluate(as_of=AS_OF)
    assert crossings() == [
        ("Platform", "budget_actual", 80),
        ("Platform", "budget_forecast", 100),
        ("Quiet", "budget_actual", 80),
    ]
    assert len(created) == 3
    first = Alert.objects.get(budget__name="Platform", kind="budget_actual")
    assert first.period_start == PERIOD_START
    assert first.message == (
        "Budget 'Platform' has spent $85.00 of $100.00 (80% threshold) in the month from "
        "2026-11-01."
    )
    assert first.details["actual_usd"] == "85.000000"
    assert sorted(first.deliveries.values_list("channel", "target", "status", "attempts")) == [
        ("email", "finops@example.com", "pending", 0),
        ("webhook", "https://hooks.example.com/a", "pending", 0),
    ]
    assert alerts_evaluate(as_of=AS_OF) == []
    assert Alert.objects.count() == 3
    assert AlertDelivery.objects.count() == 6


@pytest.mark.django_db
def test_spend_catching_up_adds_the_actual_alert_and_a_new_period_starts_again(
    monkeypatch: Any,
) -> None:
    budget("Platform")
    monkeypatch.setattr(alerts_module, "budget_status", fake_status({"Platform": ("50", "90")}))
    alerts_evaluate(as_of=AS_OF)
    assert crossings() == [("Platform", "budget_forecast", 80)]
    monkeypatch.setattr(alerts_module, "budget_status", fake_status({"Platform": ("82", "95")}))
    alerts_evaluate(as_of=AS_OF)
    assert crossings() == [
        ("Platform", "budget_actual", 80),
        ("Platform", "budget_forecast", 80),
    ]
    alerts_evaluate(as_of=date(2026, 12, 2))  # December: a new period, the same figures
    assert Alert.objects.filter(period_start=date(2026, 12, 1)).count() == 1


@pytest.mark.django_db
def test_the_constraint_refuses_a_second_alert_when_the_check_misses_it(
    monkeypatch: Any,
) -> None:
    # As when two workers both find no alert and both insert: the second insert is refused by
    # the database and nothing of it (alert or delivery) is left.
    budget("Platform")
    monkeypatch.setattr(alerts_module, "budget_status", fake_status({"Platform": ("85", "85")}))
    assert len(alerts_evaluate(as_of=AS_OF)) == 1
    monkeypatch.setattr(alerts_module, "alert_exists", lambda lookup: False)
    assert alerts_evaluate(as_of=AS_OF) == []
    assert (Alert.objects.count(), AlertDelivery.objects.count()) == (1, 2)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_workers_evaluating_at_once_create_each_alert_once(
    postgres_db: None, monkeypatch: Any
) -> None:
    budget("Platform")
    # The ingest's own evaluation (after its derived refresh) is held back: the two workers
    # below are the first to evaluate this data.
    monkeypatch.setattr(alerts_module, "alerts_after_refresh", lambda: None)
    ingest_sample()
    assert not Alert.objects.exists()
    start = threading.Barrier(2)
    status = fake_status({"Platform": ("120", "120")})

    def status_then_wait(budget: Budget, *, as_of: date) -> FakeStatus:
        start.wait(10)  # both workers have their figures before either inserts
        return status(budget, as_of=as_of)

    monkeypatch.setattr(alerts_module, "budget_status", status_then_wait)
    monkeypatch.setattr(alerts_module, "alert_exists", lambda lookup: False)
    # Delivery is not under test here: queued deliveries are collected, not run. (Run eagerly in
    # two threads, Celery's eager apply would race on its process-wide "join will block" flag
    # and leave it set for the tests after this one.)
    queued: list[int] = []
    monkeypatch.setattr(delivery_module, "_enqueue", queued.extend)
    results: list[int] = []
    errors: list[BaseException] = []

    def evaluate() -> None:
        try:
            results.append(len(alerts_evaluate(as_of=AS_OF)))
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=evaluate) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    # Two budget alerts ($120 crosses 80 and 100 on spend) and the planted anomaly, once each.
    assert sum(results) == 3  # however the two workers shared them
    assert sorted(Alert.objects.values_list("kind", "threshold_pct", "anomaly_key")) == [
        ("anomaly", None, "2026-11-04|chat|gpt-4o"),
        ("budget_actual", 80, ""),
        ("budget_actual", 100, ""),
    ]
    assert AlertDelivery.objects.filter(alert__budget__isnull=False).count() == 4
    assert sorted(queued) == sorted(AlertDelivery.objects.values_list("pk", flat=True))


@pytest.mark.django_db
def test_anomalies_above_the_score_alert_once(settings: Any) -> None:
    settings.ALERT_ANOMALY_EMAILS = ["oncall@example.com"]
    settings.ALERT_ANOMALY_WEBHOOKS = []
    ingest_sample()
    settings.ALERT_ANOMALY_MIN_SCORE = 1e9
    assert alerts_evaluate(as_of=AS_OF) == []
    settings.ALERT_ANOMALY_MIN_SCORE = 5
    # The anomaly is within the last 7 days of 2026-11-10, not of 2026-11-11.
    assert alerts_evaluate(as_of=date(2026, 11, 11)) == []
    [alert] = alerts_evaluate(as_of=date(2026, 11, 10))
    assert (alert.kind, alert.anomaly_key, alert.budget) == (
        "anomaly",
        "2026-11-04|chat|gpt-4o",
        None,
    )
    assert alert.message.startswith(
        "chat on gpt-4o spent $17.50 on 2026-11-04 against $3.50 expected (score "
    )
    assert alert.message.endswith("volume $14.00, mix $0.00, price $0.00.")
    assert alert.details["cause"]["volume_usd"] == "14.000000"
    assert list(alert.deliveries.values_list("channel", "target")) == [
        ("email", "oncall@example.com")
    ]
    assert alerts_evaluate(as_of=AS_OF) == []


@pytest.mark.django_db
def test_an_ingest_evaluates_alerts_and_a_failing_evaluation_never_fails_it(
    monkeypatch: Any,
) -> None:
    assert ingest_sample(refresh=True).status == Upload.Status.SUCCEEDED
    assert list(Alert.objects.values_list("anomaly_key", flat=True)) == ["2026-11-04|chat|gpt-4o"]

    def broken(**kwargs: Any) -> list[Alert]:
        raise RuntimeError("the evaluation broke")

    monkeypatch.setattr(alerts_module, "alerts_evaluate", broken)
    from audit_app.derived import derived_refresh

    assert derived_refresh(force=True) is True


@pytest.mark.django_db
def test_acknowledge_needs_a_note_and_happens_once(finops_user: Any, manager_user: Any) -> None:
    alert = Alert.objects.create(kind="anomaly", anomaly_key="k", message="m")
    with pytest.raises(AcknowledgeRefused, match="A note is required") as refused:
        alert_acknowledge(alert=alert, user=finops_user, note="  ")
    assert refused.value.field == "note"
    done = alert_acknowledge(alert=alert, user=finops_user, note="Known batch backfill.")
    assert (done.acknowledged_by, done.acknowledgement_note) == (
        finops_user,
        "Known batch backfill.",
    )
    event = AuditEvent.objects.get(action=AuditEvent.Action.ALERT_ACKNOWLEDGED)
    assert (event.actor, event.object_id) == (finops_user, str(alert.pk))
    with pytest.raises(AcknowledgeRefused, match="already acknowledged by ann-finops") as again:
        alert_acknowledge(alert=alert, user=manager_user, note="me too")
    assert again.value.kind is ErrorKind.CONFLICT


@pytest.mark.django_db
def test_api_lists_and_acknowledges(engineer_user: Any) -> None:
    alert = Alert.objects.create(kind="anomaly", anomaly_key="k", message="Spend jumped.")
    AlertDelivery.objects.create(alert=alert, channel="email", target="a@example.com")
    client = Client()
    client.force_login(engineer_user)
    body = client.get("/api/v1/alerts/").json()
    assert body["count"] == 1
    row = body["results"][0]
    assert (row["id"], row["kind"], row["message"], row["acknowledged_by"]) == (
        alert.pk,
        "anomaly",
        "Spend jumped.",
        None,
    )
    assert row["deliveries"][0]["target"] == "a@example.com"
    url = f"/api/v1/alerts/{alert.pk}/acknowledge/"
    missing = client.post(url, {}, content_type="application/json")
    assert (missing.status_code, list(missing.json()["errors"])) == (400, ["note"])
    done = client.post(url, {"note": "Looked: expected."}, content_type="application/json")
    assert done.status_code == 200
    assert (done.json()["acknowledged_by"], done.json()["acknowledgement_note"]) == (
        "eli-engineer",
        "Looked: expected.",
    )
    assert client.post(url, {"note": "again"}, content_type="application/json").status_code == 409
    assert client.post("/api/v1/alerts/999999/acknowledge/", {"note": "x"}).status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["finops_user", "engineer_user", "manager_user"])
def test_every_role_acknowledges_on_the_page(role: str, request: Any) -> None:
    alert = Alert.objects.create(kind="anomaly", anomaly_key="k", message="Spend jumped.")
    client = Client()
    client.force_login(request.getfixturevalue(role))
    page = client.get("/alerts/").content.decode()
    assert "Spend jumped." in page and f'action="/alerts/{alert.pk}/acknowledge/"' in page
    response = client.post(f"/alerts/{alert.pk}/acknowledge/", {"note": "On it."}, follow=True)
    assert f"Alert {alert.pk} acknowledged." in response.content.decode()
    alert.refresh_from_db()
    assert alert.acknowledgement_note == "On it."
    refused = client.post(f"/alerts/{alert.pk}/acknowledge/", {"note": "x"}, follow=True)
    assert "was already acknowledged" in refused.content.decode()


@pytest.mark.django_db
def test_alerts_command_evaluates_lists_and_delivers(
    monkeypatch: Any, settings: Any, mailoutbox: list[Any]
) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    budget("Platform", notify_webhooks=[])
    monkeypatch.setattr(alerts_module, "budget_status", fake_status({"Platform": ("85", "85")}))
    out = io.StringIO()
    call_command("alerts", "--json", "--as-of", "2026-11-08", stdout=out)
    [row] = json.loads(out.getvalue())
    assert (row["kind"], row["budget"], row["threshold_pct"], row["acknowledged"]) == (
        "budget_actual",
        "Platform",
        80,
        False,
    )
    assert row["deliveries"][0]["status"] == "pending"
    assert mailoutbox == []
    delivered = io.StringIO()
    call_command("alerts", "--json", "--deliver", "--as-of", "2026-11-08", stdout=delivered)
    [row] = json.loads(delivered.getvalue())
    assert (row["deliveries"][0]["status"], row["deliveries"][0]["attempts"]) == ("sent", 1)
    assert [m.to for m in mailoutbox] == [["finops@example.com"]]
    call_command("alerts", "--deliver", "--as-of", "2026-11-08", stdout=io.StringIO())
    assert len(mailoutbox) == 1


@pytest.mark.django_db
def test_a_budget_already_past_its_threshold_alerts_when_it_is_created(
    monkeypatch: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # Alerts derive from budgets too: creating one queues an evaluation (eager in tests).
    from audit_app.budgets.services import budget_create

    monkeypatch.setattr(alerts_module, "budget_status", fake_status({"Platform": ("90", "90")}))
    monkeypatch.setattr(delivery_module, "_enqueue", lambda ids: None)
    with django_capture_on_commit_callbacks(execute=True):
        budget_create(
            user=None,
            data={"name": "Platform", "scope": {"kind": "all"}, "amount_usd": "100"},
        )
    assert list(Alert.objects.values_list("kind", "threshold_pct")) == [("budget_actual", 80)]
