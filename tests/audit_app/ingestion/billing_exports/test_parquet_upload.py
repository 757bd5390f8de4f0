"""A FOCUS export as Parquet, uploaded with format `auto`: its format is read from the columns in
its footer (a Parquet file's head is binary, which a CSV check refuses). The Parquet file is
written here from tests/fixtures/billing/focus-1.3_providers.csv, every column as text."""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from typing import Any

import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import BillingCharge, Upload
from tests.audit_app.ingestion.billing_exports.bills import FIXTURES, ingest_bill

pytestmark = pytest.mark.django_db
FOCUS_CSV = FIXTURES / "focus-1.3_providers.csv"


def _parquet() -> bytes:
    names = FOCUS_CSV.read_text().split("\n", 1)[0].split(",")
    options = pa_csv.ConvertOptions(column_types=dict.fromkeys(names, "string"))
    table = pa_csv.read_csv(FOCUS_CSV, convert_options=options)
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


def _billed_by_csv() -> dict[str, Decimal]:
    totals: dict[str, Decimal] = {}
    for row in csv.DictReader(FOCUS_CSV.open()):
        currency = row["BillingCurrency"]
        totals[currency] = totals.get(currency, Decimal(0)) + Decimal(row["BilledCost"])
    return totals


def test_the_csv_sums_by_hand() -> None:
    # USD 3.60 + 4.50 + 500.00 - 25.00 - 1.10 + 1000.00 + 98.32 + 8.00; EUR 1.20
    assert _billed_by_csv() == {"USD": Decimal("1588.32"), "EUR": Decimal("1.20")}


@pytest.mark.parametrize("kind", ["auto", "billing"])
def test_a_parquet_focus_export_with_format_auto_lands(kind: str) -> None:
    content = _parquet()
    assert content.startswith(b"PAR1")
    upload = upload_create(
        source=io.BytesIO(content), original_name="focus.parquet", kind=kind, enqueue=False
    )
    landed = upload_ingest(upload_id=upload.pk)
    assert (landed.kind, landed.format, landed.status, landed.error) == (
        "billing",
        "focus",
        "succeeded",
        "",
    )
    assert (landed.rows_read, landed.rows_accepted) == (9, 9)
    # Exact decimal strings, as every JSON answer gives money (`lib.formatting.decimal_text`).
    assert landed.billing_totals["billed"] == {"EUR": "1.2", "USD": "1588.32"}


def test_the_parquet_file_lands_the_same_charges_as_the_csv() -> None:
    from_csv = ingest_bill(FOCUS_CSV.read_bytes(), "focus.csv")
    from_parquet = ingest_bill(_parquet(), "focus.parquet")

    def charges(upload: Upload) -> list[tuple[Any, ...]]:
        return list(
            BillingCharge.objects.filter(upload=upload)
            .order_by("line")
            .values_list("line", "sku", "billed_cost", "currency", "period_start")
        )

    assert charges(from_parquet) == charges(from_csv)
    # The same charges again: the Parquet upload restates the CSV one.
    assert BillingCharge.objects.filter(upload=from_csv, superseded_by=from_parquet).count() == 9


def test_through_the_api(
    client: Client, finops_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client.force_login(finops_user)
    data = {"file": SimpleUploadedFile("focus.parquet", _parquet()), "format": "auto"}
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/v1/uploads/", data)
    assert response.status_code == 202
    detail = client.get(f"/api/v1/uploads/{response.json()['id']}/").json()
    assert (detail["kind"], detail["format"], detail["status"]) == ("billing", "focus", "succeeded")
    assert detail["billing"]["billed_cost"] == {"EUR": "1.2", "USD": "1588.32"}
