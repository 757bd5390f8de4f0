"""Helpers for the restated-export tests: small FOCUS files written inline, and ingesting a
bill through the same services as an upload from the page."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import Upload
from tests.support.paths import FIXTURES_DIR

FIXTURES = FIXTURES_DIR / "billing"
# The FinOps Foundation's official FOCUS 1.0 sample (1,000 anonymised real rows: AWS, Microsoft,
# Oracle, September 2024; CC BY 4.0): provenance in tests/fixtures/real/README.md.
FOCUS_SAMPLE = FIXTURES_DIR / "real" / "billing" / "focus-1.0_official-sample_1000rows.csv"

FOCUS_COLUMNS = (
    "BilledCost",
    "EffectiveCost",
    "BillingCurrency",
    "BillingAccountId",
    "BillingPeriodStart",
    "BillingPeriodEnd",
    "ChargeCategory",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ProviderName",
    "ServiceName",
    "SubAccountId",
    "ResourceId",
    "SkuId",
    "x_UsageType",
    "Tags",
)


def focus_row(
    *,
    billed: str,
    start: str,
    end: str,
    account: str = "acct-1",
    period: tuple[str, str] = ("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z"),
    provider: str = "AWS",
    effective: str | None = None,
    service: str = "Amazon EC2",
    resource: str = "",
    usage_type: str = "",
    tags: str = "",
) -> dict[str, str]:
    return {
        "BilledCost": billed,
        "EffectiveCost": billed if effective is None else effective,
        "BillingCurrency": "USD",
        "BillingAccountId": account,
        "BillingPeriodStart": period[0],
        "BillingPeriodEnd": period[1],
        "ChargeCategory": "Usage",
        "ChargePeriodStart": start,
        "ChargePeriodEnd": end,
        "ProviderName": provider,
        "ServiceName": service,
        "SubAccountId": "sub-1",
        "ResourceId": resource,
        "SkuId": "sku",
        "x_UsageType": usage_type,
        "Tags": tags,
    }


def focus_csv(*rows: dict[str, str]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=FOCUS_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def ingest_bill(content: bytes, name: str, *, requested_format: str = "auto") -> Upload:
    upload = upload_create(
        source=io.BytesIO(content),
        original_name=name,
        kind=Upload.Kind.BILLING,
        requested_format=requested_format,
        enqueue=False,
    )
    landed = upload_ingest(upload_id=upload.pk)
    assert landed.status == Upload.Status.SUCCEEDED, landed.error
    return landed


def billed_total_by_csv(content: bytes) -> Decimal:
    """The file's BilledCost added up with the csv module alone (`NULL` is no charge)."""
    total = Decimal(0)
    for row in csv.DictReader(io.StringIO(content.decode("utf-8-sig"))):
        if row["BilledCost"] not in ("", "NULL"):
            total += Decimal(row["BilledCost"])
    return total


def restated_sample() -> tuple[bytes, bytes]:
    """The FOCUS sample, and the same file with its first charge's BilledCost raised by 1."""
    original = FOCUS_SAMPLE.read_bytes()
    header, first, rest = original.split(b"\n", 2)
    assert first.startswith(b"NULL,0.00000080000,"), first[:40]
    changed_first = first.replace(b"NULL,0.00000080000,", b"NULL,1.00000080000,", 1)
    return original, b"\n".join([header, changed_first, rest])
