"""Billing lines holding text no database stores (a NUL character, a lone surrogate) are refused
one by one, as token-log records are, and the file lands without them (SQLite and PostgreSQL)."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from audit_app.ingestion.billing_exports import focus
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import BillingCharge, Upload

HEADER = (
    "BilledCost,BillingCurrency,ChargeCategory,ChargeClass,ChargePeriodStart,ChargePeriodEnd,"
    "EffectiveCost,ProviderName,ServiceName,ConsumedQuantity,ConsumedUnit,Tags"
)


def _row(tags: dict[str, str]) -> str:
    cell = json.dumps(tags).replace('"', '""')
    return (
        f"1.50,USD,Usage,,2026-11-01T00:00:00Z,2026-11-02T00:00:00Z,1.50,AWS,Amazon Bedrock,"
        f'10,Tokens,"{cell}"'
    )


def test_a_csv_line_whose_tag_escapes_a_nul_or_a_surrogate_is_refused() -> None:
    data = "\n".join(
        [HEADER, _row({"team": "ok"}), _row({"team": "a\x00b"}), _row({"k\ud800": "v"}), ""]
    ).encode()
    chunks = list(focus.read(io.BytesIO(data), chunk_rows=10))
    lines = [line for chunk in chunks for line in chunk.lines]
    rejects = [reject for chunk in chunks for reject in chunk.rejects]
    assert [line.tags for line in lines] == [{"team": "ok"}]
    assert [(r.line, r.field, r.value) for r in rejects] == [
        (3, "tags.team", "a\\u0000b"),
        (4, "tags", "k\\ud800"),
    ]
    assert "NUL" in rejects[0].reason and "lone surrogate" in rejects[1].reason


def _parquet(services: list[str]) -> bytes:
    count = len(services)
    table = pa.table(
        {
            "BilledCost": ["2.00"] * count,
            "BillingCurrency": ["USD"] * count,
            "ChargeCategory": ["Usage"] * count,
            "ChargePeriodStart": ["2026-11-01T00:00:00Z"] * count,
            "ChargePeriodEnd": ["2026-11-02T00:00:00Z"] * count,
            "EffectiveCost": ["2.00"] * count,
            "ProviderName": ["AWS"] * count,
            "ServiceName": services,
        }
    )
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


@pytest.mark.django_db
def test_a_parquet_export_with_a_nul_in_a_service_lands_without_that_line() -> None:
    data = _parquet(["Amazon Bedrock", "Bed\x00rock", "Amazon SageMaker"])
    upload = upload_create(
        source=io.BytesIO(data),
        original_name="focus.parquet",
        kind=Upload.Kind.BILLING,
        requested_format="focus",
        enqueue=False,
    )
    assert upload.kind == Upload.Kind.BILLING, upload.kind
    done = upload_ingest(upload_id=upload.pk)
    assert done.status == Upload.Status.SUCCEEDED, done.error
    assert (done.rows_read, done.rows_accepted, done.rows_rejected) == (3, 2, 1)
    assert done.rejects[0]["field"] == "service"
    assert done.rejects[0]["value"] == "Bed\\u0000rock"
    assert sorted(BillingCharge.objects.values_list("service", flat=True)) == [
        "Amazon Bedrock",
        "Amazon SageMaker",
    ]
