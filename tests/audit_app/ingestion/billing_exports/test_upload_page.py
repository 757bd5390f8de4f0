"""A billing upload's page and API detail: totals, periods and accounts, rows, the serving pools
its lines match, unknown meters, the amortized note and the supersession links both ways."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from django.test import Client

from audit_app.ingestion.billing_exports.azure import AMORTIZED_NOTE
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import ServingPool, Upload
from tests.audit_app.ingestion.billing_exports.bills import (
    FIXTURES,
    focus_csv,
    focus_row,
    ingest_bill,
)

pytestmark = pytest.mark.django_db
OCT = ("2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z")


def _row(billed: str, month: int, **kw: Any) -> dict[str, str]:
    return focus_row(
        billed=billed,
        start=f"2026-{month:02d}-02T00:00:00Z",
        end=f"2026-{month:02d}-02T01:00:00Z",
        period=OCT if month == 10 else ("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z"),
        **kw,
    )


def _older_and_newer() -> tuple[Upload, Upload]:
    """October + November, then November restated; the older one has a GPU line for a pool
    and a token meter nobody can read."""
    older = ingest_bill(
        focus_csv(
            _row("7.00", 10),
            _row("98.32", 11, resource="i-gpu", usage_type="BoxUsage:p5.48xlarge"),
            _row("0.50", 11, service="Amazon Bedrock", usage_type="USE1-MysteryModel-tokens"),
        ),
        "oct-nov.csv",
    )
    # The same two November charges at new amounts: a restatement (`supersession`).
    newer = ingest_bill(
        focus_csv(
            _row("90.00", 11, resource="i-gpu", usage_type="BoxUsage:p5.48xlarge"),
            _row("0.40", 11, service="Amazon Bedrock", usage_type="USE1-MysteryModel-tokens"),
        ),
        "nov-restated.csv",
    )
    return older, newer


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def _page(client: Client, upload: Upload) -> str:
    response = client.get(f"/uploads/{upload.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def test_the_older_uploads_page_shows_what_it_holds_and_what_replaced_it(
    client: Client, finops_user: Any
) -> None:
    ServingPool.objects.create(name="h100-pool", resource_ids=["i-gpu"])
    older, newer = _older_and_newer()
    client.force_login(finops_user)
    html = _page(client, older)
    text = _text(html)

    # Totals as landed: 7.00 + 98.32 + 0.50 = 105.82, effective the same (EffectiveCost copied).
    assert "USD $105.82 $105.82" in text
    assert "3 read · 3 accepted · 0 rejected" in text
    assert f"Partly superseded: upload {newer.pk} (nov-restated.csv) restates some" in text
    assert f'href="/uploads/{newer.pk}/"' in html
    assert "aws acct-1 2026-10-01 to 2026-11-01 actual 1 $7.00 $7.00 yes" in text
    assert (
        f"aws acct-1 2026-11-01 to 2026-12-01 actual 2 $98.82 $98.82 "
        f"no: superseded by upload {newer.pk} (nov-restated.csv)"
    ) in text
    assert "Billing accounts: acct-1 . Sub-accounts / subscriptions: 1 ( sub-1 )." in text
    assert "h100-pool 1 $98.32 $98.32" in text
    assert "1 line with 1 AI-looking meter the parser could not read" in text
    assert "aws USE1-MysteryModel-tokens 1 $0.50" in text
    # A bill has no requests or tokens of its own.
    assert "Cost stated in the log" not in text


def test_the_newer_uploads_page_lists_what_it_replaced(client: Client, finops_user: Any) -> None:
    older, newer = _older_and_newer()
    client.force_login(finops_user)
    html = _page(client, newer)
    text = _text(html)
    assert "Superseded" not in text
    assert f"upload {older.pk} (oct-nov.csv) aws acct-1 2026-11-01 to 2026-12-01 2" in text
    assert f'href="/uploads/{older.pk}/"' in html
    assert "None of its lines belong to a serving pool" in text
    assert "aws USE1-MysteryModel-tokens 1 $0.40" in text


def test_a_wholly_superseded_upload_says_so(client: Client, finops_user: Any) -> None:
    first = ingest_bill(focus_csv(_row("1.00", 11)), "a.csv")
    second = ingest_bill(focus_csv(_row("2.00", 11)), "b.csv")
    client.force_login(finops_user)
    text = _text(_page(client, first))
    assert (
        f"Superseded: upload {second.pk} (b.csv) restates every billing period of this file, "
        "so none of its charges count any more."
    ) in text


def test_an_amortized_upload_page_shows_the_note(client: Client, finops_user: Any) -> None:
    upload = ingest_bill((FIXTURES / "azure-ea_amortized-cost.csv").read_bytes(), "am.csv")
    client.force_login(finops_user)
    text = _text(_page(client, upload))
    assert AMORTIZED_NOTE in text
    # Billed 0, effective 49.20 + 2.40 + 12.30 + 0.30 + 0 = 64.20
    assert "CAD 0.00 CAD 64.20 CAD" in text
    assert "azure 12345678 2023-09-01 to 2023-10-01 amortized 5" in text


def test_a_token_log_page_has_no_billing_section(client: Client, engineer_user: Any) -> None:
    content = (
        b"started_at,ended_at,model,input_tokens,output_tokens\n"
        b"2026-11-02T00:00:00Z,2026-11-02T00:00:01Z,gpt-4o,10,5\n"
    )
    upload = upload_create(source=io.BytesIO(content), original_name="log.csv", enqueue=False)
    upload_ingest(upload_id=upload.pk)
    client.force_login(engineer_user)
    text = _text(_page(client, upload))
    assert "What this bill holds" not in text
    assert "Cost stated in the log" in text


# --- API ------------------------------------------------------------------------------------------


def test_api_detail_of_a_billing_upload(client: Client, finops_user: Any) -> None:
    ServingPool.objects.create(name="h100-pool", resource_ids=["i-gpu"])
    older, newer = _older_and_newer()
    client.force_login(finops_user)
    billing = client.get(f"/api/v1/uploads/{older.pk}/").json()["billing"]
    assert billing == {
        "billed_cost": {"USD": "105.82"},
        "effective_cost": {"USD": "105.82"},
        "cost_basis": "actual",
        "notes": [],
        "superseded": "partly",
        "superseding_upload_ids": [newer.pk],
        "periods": [
            {
                "provider": "aws",
                "account": "acct-1",
                "period_start": "2026-10-01",
                "period_end": "2026-11-01",
                "cost_basis": "actual",
                "lines": 1,
                "billed_cost": {"USD": "7"},
                "effective_cost": {"USD": "7"},
                "current": True,
                "superseded_by_upload_id": None,
            },
            {
                "provider": "aws",
                "account": "acct-1",
                "period_start": "2026-11-01",
                "period_end": "2026-12-01",
                "cost_basis": "actual",
                "lines": 2,
                # 98.32 + 0.50
                "billed_cost": {"USD": "98.82"},
                "effective_cost": {"USD": "98.82"},
                "current": False,
                "superseded_by_upload_id": newer.pk,
            },
        ],
        "billing_accounts": ["acct-1"],
        "sub_accounts": ["sub-1"],
        "sub_account_count": 1,
        "pools": [
            {
                "pool": "h100-pool",
                "currency": "USD",
                "lines": 1,
                "billed_cost": "98.32",
                "effective_cost": "98.32",
            }
        ],
        "unknown_meter_lines": 1,
        "unknown_meters": [
            {
                "provider": "aws",
                "sku": "USE1-MysteryModel-tokens",
                "currency": "USD",
                "lines": 1,
                "billed_cost": "0.5",
            }
        ],
        "replaced": [],
        "possible_restatements": [],
    }
    replaced = client.get(f"/api/v1/uploads/{newer.pk}/").json()["billing"]["replaced"]
    assert replaced == [
        {
            "upload_id": older.pk,
            "upload_name": "oct-nov.csv",
            "provider": "aws",
            "account": "acct-1",
            "period_start": "2026-11-01",
            "period_end": "2026-12-01",
            "lines": 2,
            # November before: 98.32 + 0.50; after: the restated 90.00 + 0.40.
            "billed_before": {"USD": "98.82"},
            "billed_after": {"USD": "90.4"},
            "changed": True,
        }
    ]


def test_api_detail_carries_the_amortized_note(client: Client, finops_user: Any) -> None:
    upload = ingest_bill((FIXTURES / "azure-mca_amortized-cost.csv").read_bytes(), "mca.csv")
    client.force_login(finops_user)
    billing = client.get(f"/api/v1/uploads/{upload.pk}/").json()["billing"]
    assert (billing["cost_basis"], billing["notes"]) == ("amortized", [AMORTIZED_NOTE])
    # 1.10 + 0.50, billed 0
    assert (billing["billed_cost"], billing["effective_cost"]) == ({"EUR": "0"}, {"EUR": "1.6"})


def test_api_billing_is_null_for_other_uploads_and_absent_from_the_list(
    client: Client, finops_user: Any
) -> None:
    content = b"started_at,ended_at,model,input_tokens,output_tokens\n2026-11-02,2026-11-02,m,1,1\n"
    log = upload_create(source=io.BytesIO(content), original_name="log.csv", enqueue=False)
    queued_bill = upload_create(
        source=io.BytesIO(focus_csv(_row("1.00", 11))),
        original_name="queued.csv",
        kind=Upload.Kind.BILLING,
        enqueue=False,
    )
    client.force_login(finops_user)
    assert client.get(f"/api/v1/uploads/{log.pk}/").json()["billing"] is None
    assert client.get(f"/api/v1/uploads/{queued_bill.pk}/").json()["billing"] is None
    listing = client.get("/api/v1/uploads/").json()["results"]
    assert listing and all("billing" not in u for u in listing)
