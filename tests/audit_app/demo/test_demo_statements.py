"""The demo's last complete month as statements: under each policy the teams' totals add up to
the overview's total for the month, idle GPU is allocated (no team below its direct spend), and
sending writes one email per team owner, once."""

from __future__ import annotations

from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest

from audit_app.demo.seed import demo_data_load
from audit_app.demo.teams import PLATFORM_TEAM
from audit_app.models import Team
from audit_app.reporting.filters import SpendFilters
from audit_app.reporting.spend import spend_report
from audit_app.statements.allocation import Method
from audit_app.statements.delivery import statements_send
from audit_app.statements.services import month_statement, policy_uniform

pytestmark = pytest.mark.django_db
TODAY = date(2026, 11, 20)  # data from 21 October: October is the last complete month
OCTOBER = date(2026, 10, 1)


def test_the_demo_month_is_shared_out_and_sent_once(tmp_path: Path, settings: Any) -> None:
    demo_data_load(days=30, scale=0.02, directory=tmp_path / "demo", today=TODAY)
    report = spend_report(SpendFilters(start=OCTOBER, end=date(2026, 10, 31)))
    overview_total = report.total_usd.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    assert report.idle_gpu_usd > 0
    for method in Method:
        statement = month_statement(OCTOBER, policy=policy_uniform(method), today=TODAY)
        assert statement.complete
        assert sum(t.bill.total_usd for t in statement.teams) == overview_total, method
        assert statement.shared_usd >= report.idle_gpu_usd.quantize(Decimal("0.01")), method
        assert all(t.bill.allocated_usd >= 0 for t in statement.teams), method
        if method == Method.OWNER:
            platform = statement.team(PLATFORM_TEAM)
            assert platform is not None and platform.bill.allocated_usd == statement.shared_usd

    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = str(tmp_path / "mail")
    owners = {
        t.name
        for t in Team.objects.exclude(owner_email="")
        if month_statement(OCTOBER, today=TODAY).team(t.name)
    }
    assert owners
    sent = statements_send(month=OCTOBER, today=TODAY)
    assert sorted(o.team for o in sent if o.outcome == "sent") == sorted(owners)
    assert statements_send(month=OCTOBER, today=TODAY)
    # The file backend writes each connection's messages to one file, so count messages.
    mail = "".join(path.read_text() for path in (tmp_path / "mail").iterdir())
    recipients = sorted(line for line in mail.splitlines() if line.startswith("To: "))
    assert recipients == sorted(f"To: {name}-lead@example.invalid" for name in owners)
