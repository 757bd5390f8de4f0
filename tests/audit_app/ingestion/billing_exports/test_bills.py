"""`manage.py bills` and `GET /api/v1/bills/`: the bills over current charges, restated exports
resolved. Expected sums come from the files through the csv module, or by hand in comments."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from audit_app.ingestion.uploads import upload_delete
from audit_app.lib.formatting import decimal_text
from tests.audit_app.ingestion.billing_exports.bills import (
    billed_total_by_csv,
    focus_csv,
    focus_row,
    ingest_bill,
    restated_sample,
)

pytestmark = pytest.mark.django_db
MICROSOFT_ACCOUNT = "/providers/Microsoft.Billing/billingAccounts/8611537"


def bills_json() -> dict[str, Any]:
    out = StringIO()
    call_command("bills", "--json", stdout=out)
    return json.loads(out.getvalue())


def effective_total_by_csv(content: bytes) -> Decimal:
    total = Decimal(0)
    for row in csv.DictReader(io.StringIO(content.decode("utf-8-sig"))):
        if row["EffectiveCost"] not in ("", "NULL"):
            total += Decimal(row["EffectiveCost"])
    return total


def test_bills_json_on_the_restated_focus_sample_then_after_deleting_the_restatement() -> None:
    original, changed = restated_sample()
    first = ingest_bill(original, "focus-sep.csv")
    second = ingest_bill(changed, "focus-sep-restated.csv")
    billed = billed_total_by_csv(changed)
    effective = effective_total_by_csv(changed)
    assert billed == Decimal("21.52022672899")  # the sample's 20.52022672899, one line +1

    def period(provider: str, account: str, start: str, end: str, **kw: Any) -> dict[str, Any]:
        return {
            "provider": provider,
            "account": account,
            "period_start": start,
            "period_end": end,
            "cost_basis": "actual",
            "scheduled_cost": {},  # every line of 2024 is long complete
            **kw,
        }

    report = bills_json()
    assert report["billed_cost"] == {"USD": decimal_text(billed)}
    assert report["effective_cost"] == {"USD": decimal_text(effective)}
    assert [
        {k: v for k, v in p.items() if k not in ("billed_cost", "effective_cost")}
        for p in report["periods"]
    ] == [
        period(
            "aws",
            "1234567890123",
            "2024-09-01",
            "2024-10-01",
            upload_id=second.pk,
            upload_ids=[second.pk],
            superseded_upload_ids=[first.pk],
        ),
        period(
            "azure",
            MICROSOFT_ACCOUNT,
            "2024-09-01",
            "2024-10-01",
            upload_id=second.pk,
            upload_ids=[second.pk],
            superseded_upload_ids=[first.pk],
        ),
        period(
            "oracle",
            "20209880",
            "2024-09-01",
            "2024-10-01",
            upload_id=second.pk,
            upload_ids=[second.pk],
            superseded_upload_ids=[first.pk],
        ),
        period(
            "oracle",
            "20209880",
            "2024-10-01",
            "2024-11-01",
            upload_id=second.pk,
            upload_ids=[second.pk],
            superseded_upload_ids=[first.pk],
        ),
    ]
    # The periods add up to the total.
    assert sum(Decimal(p["billed_cost"]["USD"]) for p in report["periods"]) == billed

    upload_delete(upload=second)
    report = bills_json()
    assert report["billed_cost"] == {"USD": decimal_text(billed_total_by_csv(original))}
    assert {p["upload_id"] for p in report["periods"]} == {first.pk}
    assert {tuple(p["superseded_upload_ids"]) for p in report["periods"]} == {()}


def test_bills_json_oct_nov_restated_by_nov_only() -> None:
    oct_period = ("2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z")
    both = ingest_bill(
        focus_csv(
            focus_row(
                billed="7.00",
                start="2026-10-05T00:00:00Z",
                end="2026-10-06T00:00:00Z",
                period=oct_period,
            ),
            focus_row(billed="10.00", start="2026-11-05T00:00:00Z", end="2026-11-06T00:00:00Z"),
        ),
        "oct-nov.csv",
    )
    nov = ingest_bill(
        focus_csv(
            focus_row(billed="12.50", start="2026-11-05T00:00:00Z", end="2026-11-06T00:00:00Z")
        ),
        "nov.csv",
    )
    report = bills_json()
    # 7.00 (October, first file) + 12.50 (November, restated)
    assert report["billed_cost"] == {"USD": "19.5"}
    assert [
        (p["period_start"], p["billed_cost"], p["upload_id"], p["superseded_upload_ids"])
        for p in report["periods"]
    ] == [
        ("2026-10-01", {"USD": "7"}, both.pk, []),
        ("2026-11-01", {"USD": "12.5"}, nov.pk, [both.pk]),
    ]


def test_bills_with_nothing_landed() -> None:
    assert bills_json() == {
        "billed_cost": {},
        "scheduled_cost": {},
        "effective_cost": {},
        "periods": [],
    }
    out = StringIO()
    call_command("bills", stdout=out)
    assert out.getvalue().strip() == "No billing export has landed."


def test_bills_table() -> None:
    first = ingest_bill(
        focus_csv(
            focus_row(billed="1.25", start="2026-11-02T00:00:00Z", end="2026-11-02T01:00:00Z")
        ),
        "a.csv",
    )
    second = ingest_bill(
        focus_csv(
            focus_row(billed="2.75", start="2026-11-02T00:00:00Z", end="2026-11-02T01:00:00Z")
        ),
        "b.csv",
    )
    out = StringIO()
    call_command("bills", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "billed:    USD 2.75"
    assert lines[1] == "effective: USD 2.75"
    assert lines[3].split() == [
        "provider",
        "account",
        "period",
        "basis",
        "billed",
        "upload",
        "superseded",
    ]
    assert lines[4].split() == [
        "aws",
        "acct-1",
        "2026-11-01..2026-12-01",
        "actual",
        "USD",
        "2.75",
        str(second.pk),
        str(first.pk),
    ]


def test_bills_api_answers_what_the_command_prints(finops_user: Any) -> None:
    original, changed = restated_sample()
    ingest_bill(original, "focus-sep.csv")
    ingest_bill(changed, "focus-sep-restated.csv")
    client = Client()
    client.force_login(finops_user)
    response = client.get("/api/v1/bills/")
    assert response.status_code == 200
    printed = bills_json()
    periods = printed.pop("periods")
    assert response.json() == {
        **printed,
        "count": len(periods),
        "next": None,
        "previous": None,
        "results": periods,
    }
    assert response.json()["billed_cost"] == {"USD": "21.52022672899"}


@pytest.mark.parametrize(
    ("user_fixture", "status"),
    [(None, 401), ("no_role_user", 403), ("manager_user", 200), ("engineer_user", 200)],
)
def test_bills_api_permissions(user_fixture: str | None, status: int, request: Any) -> None:
    client = Client()
    if user_fixture:
        client.force_login(request.getfixturevalue(user_fixture))
    response = client.get("/api/v1/bills/")
    assert response.status_code == status
    if status != 200:
        assert set(response.json()) == {"detail", "errors"}


def test_bills_api_is_in_the_schema(finops_user: Any) -> None:
    client = Client()
    client.force_login(finops_user)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert "/api/v1/bills/" in schema["paths"]
    output = schema["components"]["schemas"]["BillsOutput"]
    assert sorted(output["properties"]) == [
        "billed_cost",
        "count",
        "effective_cost",
        "next",
        "previous",
        "results",
        "scheduled_cost",
    ]
