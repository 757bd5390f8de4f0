"""What deleting an upload would remove: `selectors_uploads.upload_contribution`."""

from __future__ import annotations

import io
from decimal import Decimal

import pytest

from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.selectors import WorkloadContribution, upload_contribution
from audit_app.ingestion.uploads import upload_create
from audit_app.models import Upload, Workload
from tests.audit_app.ingestion.ingest_samples import SAMPLE_CSV

pytestmark = pytest.mark.django_db


def _ingest(content: bytes, name: str, kind: str = "token_log") -> Upload:
    upload = upload_create(source=io.BytesIO(content), original_name=name, kind=kind, enqueue=False)
    return upload_ingest(upload_id=upload.pk)


def test_a_token_log_counts_only_its_own_requests_per_workload() -> None:
    first = _ingest(SAMPLE_CSV, "first.csv")
    # A second file with the chat rows only (lines 2 and 3 of the sample): chat gets 2 more.
    header, chat_1, chat_2 = SAMPLE_CSV.splitlines(keepends=True)[:3]
    second = _ingest(header + chat_1 + chat_2, "second.csv")
    Workload.objects.filter(name="tool").delete()  # a workload without its row has no link
    ids = dict(Workload.objects.values_list("name", "pk"))

    contribution = upload_contribution(upload=first)
    assert contribution.rows_accepted == 4
    assert contribution.workloads == (
        WorkloadContribution(name="chat", requests=2, workload_id=ids["chat"]),
        WorkloadContribution(name="evals", requests=1, workload_id=ids["evals"]),
        WorkloadContribution(name="tool", requests=1, workload_id=None),
    )
    assert contribution.billed == ()
    assert upload_contribution(upload=second).workloads == (
        WorkloadContribution(name="chat", requests=2, workload_id=ids["chat"]),
    )


def test_a_billing_export_gives_its_billed_total_per_currency() -> None:
    data = b"".join(
        [
            b"BilledCost,BillingCurrency,ChargeCategory,ChargePeriodStart,ChargePeriodEnd,"
            b"EffectiveCost,ProviderName\n",
            b"10.25,USD,Usage,2025-06-01T00:00:00Z,2025-06-01T01:00:00Z,10.25,AWS\n",
            b"4.75,USD,Usage,2025-06-01T01:00:00Z,2025-06-01T02:00:00Z,4.75,AWS\n",
            b"3.00,EUR,Usage,2025-06-01T00:00:00Z,2025-06-01T01:00:00Z,3.00,Microsoft\n",
        ]
    )
    bill = _ingest(data, "focus.csv", kind="billing")
    assert bill.status == Upload.Status.SUCCEEDED, bill.error
    contribution = upload_contribution(upload=bill)
    # 10.25 + 4.75 = 15.00 USD; 3.00 EUR
    assert contribution.billed == (("EUR", Decimal("3.00")), ("USD", Decimal("15.00")))
    assert (contribution.rows_accepted, contribution.workloads) == (3, ())
