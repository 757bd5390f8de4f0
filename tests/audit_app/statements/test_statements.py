"""Statements over seeded data: every policy adds up to the month's total, pool overrides, the
policy's audit, who sees which team, month to date, the workbook against the JSON, and one
email per owner per month.

November 2026, by hand (the month's total is $28.00):

- API spend: web $0.40 (chat, 2 end users), ml $0.30, sales $1.00 (API only), and $0.30
  logged without a team;
- pool "gpu", billed $10 an hour on Nov 10 09:00 and 10:00: at 09:00 web 3,000 tokens and ml
  1,000 ($7.50 and $2.50), 10:00 idle ($10);
- pool "quiet", billed $6 on Nov 12 and never used.

Direct: web $7.90, ml $2.80, sales $1.00; shared: $10 + $6 + $0.30 = $16.30.
October: web $2.00 (the previous month's total).
"""

from __future__ import annotations

import io
import json
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from openpyxl import load_workbook

from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import (
    AuditEvent,
    BillingCharge,
    ServingPool,
    StatementDelivery,
    Team,
    Upload,
)
from audit_app.statements import delivery as delivery_module
from audit_app.statements.delivery import statements_send
from audit_app.statements.services import (
    month_is_over,
    month_statement,
    policy_change,
    policy_uniform,
)
from audit_app.tasks import send_statements

NOVEMBER = date(2026, 11, 1)
TODAY = date(2026, 12, 2)
D = Decimal

EXPECTED = {
    # gpu's $10 idle by direct spend on it (7.50 : 2.50); quiet's $6 and the $0.30 by all
    # direct spend (7.90 : 2.80 : 1.00): web 7.50 + 4.0513 + 0.2026 = 11.7539, ml 2.50 +
    # 1.4359 + 0.0718 = 4.0077, sales 0.5128 + 0.0256 = 0.5385; the two cents left by
    # flooring go to the largest remainders (sales, ml).
    "proportional": {"web": "19.65", "ml": "6.81", "sales": "1.54"},
    # gpu's $10 between web and ml; quiet's $6 and the $0.30 among all three teams.
    "even": {"web": "15.00", "ml": "9.90", "sales": "3.10"},
    # Everything shared to the platform team, which has no traffic of its own.
    "owner": {"web": "7.90", "ml": "2.80", "sales": "1.00", "platform": "16.30"},
}


def _ingest(rows: list[str], name: str) -> None:
    content = ("\n".join(rows) + "\n").encode()
    upload = upload_create(source=io.BytesIO(content), original_name=name, enqueue=False)
    upload_ingest(upload_id=upload.pk)


def _charges(upload: Upload, resource: str, hours: list[datetime], cost: str) -> list[Any]:
    return [
        BillingCharge(
            upload=upload,
            billing_period_start=datetime(2026, 11, 1, tzinfo=UTC),
            billing_period_end=datetime(2026, 12, 1, tzinfo=UTC),
            line=i + 2,
            provider="aws",
            charge_category="Usage",
            currency="USD",
            period_start=hour,
            period_end=hour + timedelta(hours=1),
            billed_cost=D(cost),
            resource_id=resource,
            meter_kind="gpu_instance",
        )
        for i, hour in enumerate(hours)
    ]


@pytest.fixture
def seeded(db: Any) -> None:
    head = "started_at,ended_at,workload,team,provider,model,input_tokens,output_tokens,cost_usd"
    _ingest(
        [
            head + ",end_user",
            "2026-11-10T08:00:00Z,2026-11-10T08:00:01Z,chat,web,openai,gpt-4o,10,10,0.20,u1",
            "2026-11-10T08:30:00Z,2026-11-10T08:30:01Z,chat,web,openai,gpt-4o,10,10,0.20,u2",
            "2026-11-10T08:00:00Z,2026-11-10T08:00:01Z,evals,ml,openai,gpt-4o,10,10,0.30,",
            "2026-11-10T08:00:00Z,2026-11-10T08:00:01Z,orphan,,openai,gpt-4o,10,10,0.30,",
            "2026-11-11T08:00:00Z,2026-11-11T08:00:01Z,leads,sales,openai,gpt-4o,10,10,1.00,",
            "2026-10-05T08:00:00Z,2026-10-05T08:00:01Z,chat,web,openai,gpt-4o,10,10,2.00,",
        ],
        "api.csv",
    )
    head = "started_at,ended_at,workload,team,provider,model,input_tokens,output_tokens,pool"
    _ingest(
        [
            head,
            "2026-11-10T09:10:00Z,2026-11-10T09:10:01Z,copilot,web,vllm,llama,2000,1000,gpu",
            "2026-11-10T09:20:00Z,2026-11-10T09:20:01Z,batch,ml,vllm,llama,500,500,gpu",
        ],
        "pool.csv",
    )
    bill = Upload.objects.create(
        kind=Upload.Kind.BILLING,
        original_name="bill.csv",
        sha256="d" * 64,
        status=Upload.Status.SUCCEEDED,
        file="x",
    )
    busy = [datetime(2026, 11, 10, h, tzinfo=UTC) for h in (9, 10)]
    charges = _charges(bill, "i-gpu", busy, "10.00")
    charges += _charges(bill, "i-quiet", [datetime(2026, 11, 12, tzinfo=UTC)], "6.00")
    for i, charge in enumerate(charges):
        charge.line = i + 2
    BillingCharge.objects.bulk_create(charges)
    ServingPool.objects.create(name="gpu", resource_ids=["i-gpu"])
    ServingPool.objects.create(name="quiet", resource_ids=["i-quiet"])


def _totals(policy: Any = None) -> dict[str, Decimal]:
    statement = month_statement(NOVEMBER, policy=policy, today=TODAY)
    assert statement.total_usd == D("28.00")
    totals = {t.team: t.bill.total_usd for t in statement.teams}
    assert sum(totals.values()) == statement.total_usd
    return totals


@pytest.mark.parametrize("method", list(EXPECTED))
def test_every_policy_adds_up_to_the_month(seeded: None, method: str) -> None:
    policy = policy_uniform(method, owner="platform")
    assert _totals(policy) == {team: D(v) for team, v in EXPECTED[method].items()}
    statement = month_statement(NOVEMBER, policy=policy, today=TODAY)
    for team in statement.teams:
        assert team.bill.total_usd >= team.bill.direct_usd  # nobody pays less than direct
    assert {t.team: t.previous_total_usd for t in statement.teams}["web"] == D("2.00")


def test_a_pool_override_and_its_audit(seeded: None, finops_user: Any) -> None:
    policy_change(actor=finops_user, pool="quiet", method="owner", owner="ml")
    # quiet's $6 all to ml; gpu's $10 by direct spend on it; the $0.30 by all direct spend
    # (web 0.2026, ml 0.0718, sales 0.0256): web 7.7026, ml 8.5718, sales 0.0256, and the
    # cent flooring left goes to sales (the largest remainder).
    assert _totals() == {"web": D("15.60"), "ml": D("11.37"), "sales": D("1.03")}
    event = AuditEvent.objects.get(action=AuditEvent.Action.ALLOCATION_CHANGED)
    assert event.actor == finops_user
    assert event.details["after"] == {"method": "owner", "owner_team": "ml"}
    policy_change(actor=finops_user, pool="quiet", method="")  # back to the global rule
    assert _totals() == {team: D(v) for team, v in EXPECTED["proportional"].items()}
    assert AuditEvent.objects.filter(action=AuditEvent.Action.ALLOCATION_CHANGED).count() == 2


def test_unit_costs_and_end_users(seeded: None) -> None:
    web = month_statement(NOVEMBER, today=TODAY).team("web")
    assert web is not None
    assert web.bill.requests == 3 and web.end_users == 2
    assert web.usd_per_1k_requests == D("19.65") * 1000 / 3
    assert web.usd_per_1m_tokens == D("19.65") * 1_000_000 / (40 + 3000)
    assert web.usd_per_end_user == D("19.65") / 2
    assert {p.key: p.spend_usd for p in web.bill.workloads} == {
        "copilot": D("7.50"),
        "chat": D("0.40"),
    }


def test_the_policy_api_is_for_finops(seeded: None, client: Client, engineer_user: Any) -> None:
    client.force_login(engineer_user)
    body = {"pool": "gpu", "policy": "even"}
    assert client.post("/api/v1/statements/policy/", body, "application/json").status_code == 403
    assert client.get("/api/v1/statements/policy/").json()["pool_policies"] == {}


def test_the_policy_api_changes_every_month(seeded: None, client: Client, finops_user: Any) -> None:
    client.force_login(finops_user)
    answer = client.post(
        "/api/v1/statements/policy/", {"pool": "", "policy": "even"}, "application/json"
    )
    assert answer.status_code == 200 and answer.json()["policy"] == "even"
    body = client.get("/api/v1/statements/?month=2026-11").json()
    assert {t["team"]: t["total_usd"] for t in body["teams"]} == EXPECTED["even"]
    refused = client.post(
        "/api/v1/statements/policy/", {"pool": "nope", "policy": "even"}, "application/json"
    )
    assert refused.status_code == 400 and "nope" in refused.json()["detail"]
    assert client.get("/api/v1/statements/?month=2026-13").status_code == 400


def test_an_engineer_sees_their_teams_only(
    seeded: None, client: Client, engineer_user: Any
) -> None:
    month_statement(NOVEMBER, today=TODAY)  # the teams seen get directory rows
    Team.objects.filter(name="ml").update(members=[engineer_user.username])
    client.force_login(engineer_user)
    body = client.get("/api/v1/statements/?month=2026-11").json()
    assert [t["team"] for t in body["teams"]] == ["ml"]
    assert body["total_usd"] == "28.00"  # the month's total stays the month's
    assert client.get("/statements/team/?team=web&month=2026-11").status_code == 403
    assert client.get("/statements/team/?team=ml&month=2026-11").status_code == 200
    rows = client.get("/statements.csv?month=2026-11").content.decode().splitlines()
    assert len(rows) == 2 and ",ml," in rows[1]


def test_the_workbook_adds_up_to_the_json(seeded: None, client: Client, finops_user: Any) -> None:
    client.force_login(finops_user)
    body = client.get("/api/v1/statements/?month=2026-11").json()
    response = client.get("/statements.xlsx?month=2026-11")
    book = load_workbook(io.BytesIO(response.content))
    assert book.sheetnames == ["Summary", *(t["team"] for t in body["teams"])]
    summary = list(book["Summary"].iter_rows(values_only=True))
    start = next(i for i, row in enumerate(summary) if row and row[0] == "month") + 1
    header = summary[start - 1]
    rows = [dict(zip(header, r, strict=True)) for r in summary[start:]]
    for row, team in zip(rows, body["teams"], strict=False):
        assert row["team"] == team["team"]
        for name in ("direct_usd", "allocated_usd", "total_usd"):
            assert isinstance(row[name], int | float)  # a number, not text
            assert D(str(row[name])).quantize(D("0.01")) == D(team[name])
    assert D(str(rows[-1]["total_usd"])).quantize(D("0.01")) == D(body["total_usd"])
    cell = book["Summary"].cell(row=start + 1, column=header.index("total_usd") + 1)
    assert "$" in cell.number_format
    web = book["web"]
    shares = [r for r in web.iter_rows(values_only=True) if r and str(r[0]).startswith("pool")]
    web_json = next(t for t in body["teams"] if t["team"] == "web")
    assert sum(D(str(r[1])) for r in shares) + D(web_json["allocations"][0]["amount_usd"]) == (
        D(web_json["allocated_usd"])
    )


def test_a_month_to_date_is_shown_so_and_never_sent(seeded: None) -> None:
    assert not month_is_over(NOVEMBER, today=date(2026, 11, 30))
    assert month_is_over(NOVEMBER, today=date(2026, 12, 1))
    statement = month_statement(NOVEMBER, today=date(2026, 11, 20))
    assert not statement.complete and statement.label == "November 2026 (month to date)"
    with pytest.raises(Exception, match="not over"):
        statements_send(month=NOVEMBER, today=date(2026, 11, 20))


def test_one_email_per_owner_per_month(
    seeded: None, mailoutbox: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    month_statement(NOVEMBER, today=TODAY)
    Team.objects.filter(name="web").update(owner_email="web-lead@example.com")
    Team.objects.filter(name="ml").update(owner_email="ml-lead@example.com")
    first = statements_send(month=NOVEMBER, today=TODAY)
    assert sorted((o.team, o.outcome) for o in first) == [("ml", "sent"), ("web", "sent")]
    again = statements_send(month=NOVEMBER, today=TODAY)
    assert {o.outcome for o in again} == {"skipped"}
    assert len(mailoutbox) == 2
    web = next(m for m in mailoutbox if m.to == ["web-lead@example.com"])
    assert "$19.65" in web.subject
    (name, content, mimetype) = web.attachments[0]
    assert name == "statement-2026-11-web.xlsx" and mimetype.endswith("sheet")
    sheet = load_workbook(io.BytesIO(content))["Summary"]
    assert any(row[1] == "web" and row[8] == 19.65 for row in sheet.iter_rows(values_only=True))
    assert StatementDelivery.objects.filter(status="sent").count() == 2


def test_a_failed_email_is_kept_and_sent_by_the_next_run(
    seeded: None, mailoutbox: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    month_statement(NOVEMBER, today=TODAY)
    Team.objects.filter(name="sales").update(owner_email="sales@example.com")
    real = delivery_module.statement_email

    def broken(*args: Any) -> Any:
        raise ConnectionRefusedError("smtp down")

    monkeypatch.setattr(delivery_module, "statement_email", broken)
    [outcome] = statements_send(month=NOVEMBER, today=TODAY)
    assert outcome.outcome.startswith("failed")
    row = StatementDelivery.objects.get(team="sales")
    assert (row.status, row.attempts) == ("failed", 1) and "ConnectionRefusedError" in (
        row.last_error
    )
    monkeypatch.setattr(delivery_module, "statement_email", real)
    monkeypatch.setattr("django.utils.timezone.now", lambda: datetime(2026, 12, 2, 6, tzinfo=UTC))
    assert send_statements() == 1  # the beat's task: last month, for "today" Dec 2
    assert send_statements() == 0
    row.refresh_from_db()
    assert (row.status, row.attempts, len(mailoutbox)) == ("sent", 2, 1)


def test_the_command_prints_the_json_under_a_policy(seeded: None) -> None:
    out = io.StringIO()
    call_command("statement", "--month", "2026-11", "--json", "--policy", "even", stdout=out)
    body = json.loads(out.getvalue())
    assert body["month"] == "2026-11" and body["policy"] == "even"
    assert {t["team"]: t["total_usd"] for t in body["teams"]} == EXPECTED["even"]
    web = next(t for t in body["teams"] if t["team"] == "web")
    assert web["previous_total_usd"] == "2.00" and web["end_users"] == 2


def test_the_pages(seeded: None, client: Client, finops_user: Any) -> None:
    client.force_login(finops_user)
    page = client.get("/statements/?month=2026-11")
    html = page.content.decode()
    assert page.status_code == 200 and 'data-testid="statements-total">$28.00<' in html
    assert client.get("/statements/?month=bad").status_code == 400
    team = client.get("/statements/team/?team=web&month=2026-11")
    assert team.status_code == 200
    figure = team.context["figure"]
    assert [len(trace["x"]) for trace in figure["data"]] == [12, 12]
    assert figure["data"][0]["y"][-2:] == [2.0, 7.9] and figure["data"][1]["y"][-1] == 11.75
    saved = client.post(
        "/statements/policy/", {"pool": "", "method": "owner", "owner": "", "month": "2026-11"}
    )
    assert saved.status_code == 302
    assert "needs an owner team" in client.get(saved["Location"]).content.decode()


def test_the_admin_changes_the_policy_through_the_audited_service(
    seeded: None, client: Client, admin_user: Any
) -> None:
    client.force_login(admin_user)
    form = {"pool": "gpu", "method": "owner", "owner_team": ""}
    refused = client.post("/admin/audit_app/allocationrule/add/", form)
    assert refused.status_code == 200 and b"needs an owner team" in refused.content
    saved = client.post("/admin/audit_app/allocationrule/add/", {**form, "owner_team": "web"})
    assert saved.status_code == 302
    event = AuditEvent.objects.get(action=AuditEvent.Action.ALLOCATION_CHANGED)
    assert event.actor == admin_user and event.details["pool"] == "gpu"
    # gpu's $10 idle to web now: web 7.90 + 10 + its share of quiet's $6 and the $0.30.
    assert _totals()["web"] == D("7.90") + D("10.00") + D("4.25")


def test_the_beat_sends_on_the_send_day(settings: Any) -> None:
    from celery import current_app

    entry = settings.CELERY_BEAT_SCHEDULE["send-statements"]
    assert entry["task"] == "audit_app.send_statements" in current_app.tasks
    assert entry["schedule"].day_of_month == {settings.STATEMENTS_SEND_DAY} == {2}
    assert settings.CELERY_TASK_ROUTES["audit_app.send_statements"] == {"queue": "outbound"}


def test_finops_sets_the_policy_and_sends_from_the_page(
    seeded: None,
    client: Client,
    finops_user: Any,
    manager_user: Any,
    mailoutbox: list[Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("django.utils.timezone.now", lambda: datetime(2026, 12, 3, tzinfo=UTC))
    month_statement(NOVEMBER, today=TODAY)
    Team.objects.filter(name="web").update(owner_email="web-lead@example.com")
    client.force_login(manager_user)
    assert client.post("/statements/send/", {"month": "2026-11"}).status_code == 403
    assert client.post("/statements/policy/", {"method": "even"}).status_code == 403
    client.force_login(finops_user)
    saved = client.post("/statements/policy/", {"pool": "", "method": "even", "month": "2026-11"})
    page = client.get(saved["Location"])
    assert [(r[0].team, r[0].bill.total_usd) for r in page.context["rows"]] == sorted(
        ((t, D(v)) for t, v in EXPECTED["even"].items()), key=lambda r: -r[1]
    )
    assert "Global: even" in page.content.decode()
    sent = client.get(client.post("/statements/send/", {"month": "2026-11"})["Location"])
    assert "1 statement(s) sent; 0 were sent already." in sent.content.decode()
    client.post("/statements/send/", {"month": "2026-11"})
    assert len(mailoutbox) == 1 and "$15.00" in mailoutbox[0].subject
    late = client.get(client.post("/statements/send/", {"month": "2026-12"})["Location"])
    assert "not over yet" in late.content.decode()
