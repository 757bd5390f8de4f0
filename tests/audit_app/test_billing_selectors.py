"""Pool attribution and reconciliation on the database, against hand-computed figures."""

from __future__ import annotations

import io
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from audit_app.filters import SpendFilters
from audit_app.models import BillingCharge, ServingPool, Upload
from audit_app.selectors_billing import pool_reports, reconciliation
from audit_app.selectors_spend import spend_report
from audit_app.services.ingest import upload_ingest
from audit_app.services.uploads import upload_create
from tests.audit_app.ingest_samples import SAMPLE_CSV

pytestmark = pytest.mark.django_db
H0 = datetime(2026, 11, 2, 0, tzinfo=UTC)
H = timedelta(hours=1)
DAY = date(2026, 11, 2)

POOL_LOG = (
    b"started_at,ended_at,workload,provider,model,input_tokens,output_tokens,pool\n"
    b"2026-11-02T00:05:00Z,2026-11-02T00:05:02Z,chat,vllm,llama-70b,2000,1000,gpu\n"
    b"2026-11-02T00:10:00Z,2026-11-02T00:10:02Z,evals,vllm,llama-70b,900,100,gpu\n"
    b"2026-11-02T02:00:00Z,2026-11-02T02:00:09Z,evals,vllm,llama-70b,400,100,gpu\n"
)


def _ingest(content: bytes, name: str, kind: str = "token_log") -> Upload:
    upload = upload_create(source=io.BytesIO(content), original_name=name, kind=kind, enqueue=False)
    return upload_ingest(upload_id=upload.pk)


def _bill_upload() -> Upload:
    return Upload.objects.create(
        kind=Upload.Kind.BILLING,
        original_name="bill.csv",
        sha256="b" * 64,
        status=Upload.Status.SUCCEEDED,
        file="x",
    )


def _charge(upload: Upload, *, start: datetime, cost: str, **kw: Any) -> BillingCharge:
    defaults = {
        "provider": "aws",
        "charge_category": "Usage",
        "currency": "USD",
        "period_end": start + H,
        "line": 2,
    }
    defaults.update(kw)
    return BillingCharge.objects.create(
        upload=upload, period_start=start, billed_cost=Decimal(cost), **defaults
    )


def test_pool_bill_is_spread_by_tokens_with_an_idle_hour() -> None:
    _ingest(POOL_LOG, "pool.csv")
    bill = _bill_upload()
    for i in range(3):
        _charge(
            bill,
            start=H0 + i * H,
            cost="98.32",
            resource_id="i-1",
            meter_kind="gpu_instance",
            instance_type="p5.48xlarge",
        )
    _charge(bill, start=H0, cost="5.00", resource_id="i-other")  # another machine: not ours
    ServingPool.objects.create(name="gpu", resource_ids=["i-1"])

    [report] = pool_reports(start=DAY, end=DAY)
    result = report.attribution
    # Hour 0: chat 3,000 and evals 1,000 tokens -> 73.74 / 24.58; hour 1 idle; hour 2 evals.
    assert report.by_workload == {"evals": Decimal("122.90"), "chat": Decimal("73.74")}
    assert result.idle == Decimal("98.32")
    assert result.billed == Decimal("294.96")
    assert result.attributed + result.idle == result.billed
    assert report.instance_types == ["p5.48xlarge"]
    assert report.upload_ids == [bill.pk]

    # The pool's requests are costed from the bill only: no price card, not "unpriced"; the
    # read model gives each workload its share and keeps idle apart.
    spend = spend_report(SpendFilters(start=DAY, end=DAY)).breakdown("workload")
    assert spend.unpriced_models == []
    assert spend.api_spend_usd == Decimal(0)
    assert {r.key: r.gpu_cost_usd for r in spend.rows} == {
        "evals": Decimal("122.90"),
        "chat": Decimal("73.74"),
    }
    assert spend.idle_gpu_usd == Decimal("98.32")
    assert spend.total_usd == Decimal("294.96")


def test_pool_found_by_tag_and_requests_by_model() -> None:
    _ingest(POOL_LOG.replace(b",gpu\n", b",\n"), "nopool.csv")  # the log names no pool
    bill = _bill_upload()
    _charge(bill, start=H0, cost="10.00", tags={"pool": "gpu"})
    ServingPool.objects.create(
        name="gpu", tag_key="pool", tag_value="gpu", models_served=["llama-70b"]
    )
    [report] = pool_reports(start=DAY, end=DAY)
    assert report.by_workload == {"chat": Decimal("7.50"), "evals": Decimal("2.50")}
    assert report.attribution.idle == Decimal("0.00")


def test_reconciliation_flags_what_differs() -> None:
    logs = _ingest(SAMPLE_CSV, "sample.csv")
    bill = _bill_upload()
    # gpt-4o: the logs say 0.0175 (0.01 logged + 0.0075 priced); billed the same.
    _charge(
        bill,
        start=H0,
        cost="0.0105",
        provider="openai",
        meter_kind="token",
        period_end=H0 + 24 * H,
        tags={"model": "gpt-4o"},
        token_class="input",
    )
    _charge(
        bill,
        start=H0,
        cost="0.007",
        provider="openai",
        meter_kind="token",
        period_end=H0 + 24 * H,
        meter_model="gpt-4o",
        token_class="output",
    )
    # gpt-4o-mini: estimate 0.0750003, billed 0.10 -> +33.3 %.
    _charge(
        bill,
        start=H0,
        cost="0.10",
        provider="openai",
        meter_kind="token",
        period_end=H0 + 24 * H,
        tags={"model": "gpt-4o-mini"},
    )
    # Billed with no request in the logs.
    _charge(
        bill,
        start=H0,
        cost="1.00",
        provider="anthropic",
        meter_kind="token",
        period_end=H0 + 24 * H,
        tags={"model": "claude-haiku-4-5"},
    )

    rows = {(r.provider, r.model): r for r in reconciliation(start=DAY, end=DAY)}
    ok = rows[("openai", "gpt-4o")]
    assert (ok.billed, ok.estimated, ok.variance, ok.flagged) == (
        Decimal("0.0175"),
        Decimal("0.0175"),
        Decimal(0),
        False,
    )
    assert ok.bill_upload_ids == [bill.pk] and ok.log_upload_ids == [logs.pk]
    mini = rows[("openai", "gpt-4o-mini")]
    assert mini.estimated == Decimal("0.0750003")
    assert mini.flagged
    assert round(mini.variance_percent, 2) == Decimal("33.33")
    missing = rows[("anthropic", "claude-haiku-4-5")]
    assert missing.estimated is None and missing.flagged
    # Flagged rows first, largest variance first.
    assert [r.model for r in reconciliation(start=DAY, end=DAY)][:2] == [
        "claude-haiku-4-5",
        "gpt-4o-mini",
    ]
    # A 40 % threshold no longer flags gpt-4o-mini.
    relaxed = {
        r.model: r for r in reconciliation(start=DAY, end=DAY, threshold_percent=Decimal(40))
    }
    assert not relaxed["gpt-4o-mini"].flagged


def test_unknown_meters_are_listed_not_dropped() -> None:
    from audit_app.selectors_billing import unknown_meters

    bill = _bill_upload()
    _charge(bill, start=H0, cost="3.50", meter_kind="unknown", sku="USE1-MysteryModel-units")
    _charge(bill, start=H0 + H, cost="1.25", meter_kind="unknown", sku="USE1-MysteryModel-units")
    _charge(bill, start=H0, cost="9.00", meter_kind="other", sku="TimedStorage-ByteHrs")
    [meter] = unknown_meters(start=DAY, end=DAY)
    assert (meter.sku, meter.lines, meter.billed, meter.upload_ids) == (
        "USE1-MysteryModel-units",
        2,
        Decimal("4.75"),
        [bill.pk],
    )
