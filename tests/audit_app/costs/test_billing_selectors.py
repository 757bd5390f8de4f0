"""Pool attribution and reconciliation on the database, against hand-computed figures."""

from __future__ import annotations

import io
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from audit_app.costs.billing import pool_reports, reconciliation
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import BillingCharge, ServingPool, Upload
from audit_app.reporting.filters import SpendFilters
from audit_app.reporting.spend import spend_report
from tests.audit_app.ingestion.ingest_samples import SAMPLE_CSV

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
    from audit_app.costs.billing import unknown_meters

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


def _sample_bill() -> tuple[Upload, Upload]:
    """SAMPLE_CSV's logs (gpt-4o estimated $0.0175, gpt-4o-mini $0.0750003, my-finetune one
    request with no cost and no price card) against a bill of four USD lines."""
    logs = _ingest(SAMPLE_CSV, "sample.csv")
    bill = _bill_upload()
    day = {"start": H0, "period_end": H0 + 24 * H, "meter_kind": "token"}
    _charge(bill, cost="0.0175", provider="openai", tags={"model": "gpt-4o"}, **day)
    _charge(bill, cost="0.10", provider="openai", tags={"model": "gpt-4o-mini"}, **day)
    _charge(bill, cost="0.004", provider="openai", tags={"model": "my-finetune"}, **day)
    _charge(bill, cost="1.00", provider="anthropic", tags={"model": "claude-haiku-4-5"}, **day)
    return logs, bill


def test_an_unpriced_line_has_no_estimate_and_is_never_flagged() -> None:
    logs, bill = _sample_bill()
    rows = {r.model: r for r in reconciliation(start=DAY, end=DAY, threshold_percent=Decimal(0))}
    unpriced = rows["my-finetune"]
    assert (unpriced.billed, unpriced.estimated, unpriced.variance) == (
        Decimal("0.004"),
        None,
        None,
    )
    assert unpriced.variance_percent is None
    assert (unpriced.log_requests, unpriced.unpriced_requests) == (1, 1)
    assert unpriced.no_estimate and not unpriced.flagged
    assert unpriced.note == "no estimate: 1 logged requests have no price card"
    assert unpriced.log_upload_ids == [logs.pk] and unpriced.bill_upload_ids == [bill.pk]
    # A bill line with no request at all in the logs stays flagged, its whole bill the variance.
    missing = rows["claude-haiku-4-5"]
    assert (missing.estimated, missing.variance, missing.flagged) == (None, Decimal("1.00"), True)
    assert (missing.no_estimate, missing.note) == (False, "no requests in the token logs")
    # Flagged first, largest variance first; the unpriced line last (no variance).
    assert [r.model for r in reconciliation(start=DAY, end=DAY)] == [
        "claude-haiku-4-5",
        "gpt-4o-mini",
        "gpt-4o",
        "my-finetune",
    ]


def test_zero_billed_and_zero_estimated_is_not_flagged_and_other_currencies_have_no_estimate() -> (
    None
):
    _ingest(
        b"started_at,ended_at,workload,provider,model,input_tokens,output_tokens,cost_usd\n"
        b"2026-11-02T09:00:00Z,2026-11-02T09:00:01Z,free,mistral,free-model,100,10,0\n"
        b"2026-11-02T09:00:00Z,2026-11-02T09:00:01Z,euro,mistral,euro-model,100,10,0.5\n",
        "mistral.csv",
    )
    bill = _bill_upload()
    day = {"start": H0, "period_end": H0 + 24 * H, "meter_kind": "token", "provider": "mistral"}
    _charge(bill, cost="0", tags={"model": "free-model"}, **day)
    _charge(bill, cost="0.45", currency="EUR", tags={"model": "euro-model"}, **day)
    rows = {r.model: r for r in reconciliation(start=DAY, end=DAY, threshold_percent=Decimal(0))}
    free = rows["free-model"]
    assert (free.billed, free.estimated, free.variance, free.variance_percent) == (
        Decimal(0),
        Decimal(0),
        Decimal(0),
        None,
    )
    assert (free.flagged, free.note) == (False, "")
    euro = rows["euro-model"]
    assert (euro.currency, euro.estimated, euro.variance, euro.flagged) == (
        "EUR",
        None,
        None,
        False,
    )
    assert euro.note == "no estimate: billed in EUR, token logs are priced in USD"


def test_flagged_only_and_totals_per_provider_and_currency() -> None:
    from audit_app.costs.billing import ReconciliationTotal, reconciliation_totals

    _sample_bill()
    flagged = reconciliation(start=DAY, end=DAY, flagged_only=True)
    assert [r.model for r in flagged] == ["claude-haiku-4-5", "gpt-4o-mini"]

    totals = reconciliation_totals(reconciliation(start=DAY, end=DAY))
    # Billed 0.0175 + 0.10 + 0.004 + 1.00 = 1.1215; estimated 0.0175 + 0.0750003 = 0.0925003;
    # variance 0 + 0.0249997 + 1.00 = 1.0249997; billed with no estimate: my-finetune's 0.004.
    # 0.0925003 + 1.0249997 + 0.004 = 1.1215.
    assert totals.overall == [
        ReconciliationTotal(
            provider="",
            currency="USD",
            rows=4,
            flagged=2,
            billed=Decimal("1.1215"),
            estimated=Decimal("0.0925003"),
            variance=Decimal("1.0249997"),
            billed_no_estimate=Decimal("0.004"),
        )
    ]
    # 1.0249997 / 0.0925003 = 11.0810419... -> 1,108.10 %
    assert round(totals.overall[0].variance_percent, 2) == Decimal("1108.10")
    anthropic, openai = totals.by_provider
    assert anthropic == ReconciliationTotal(
        provider="anthropic",
        currency="USD",
        rows=1,
        flagged=1,
        billed=Decimal("1.00"),
        estimated=None,
        variance=Decimal("1.00"),
        billed_no_estimate=Decimal(0),
    )
    assert anthropic.variance_percent is None
    # openai: billed 0.0175 + 0.10 + 0.004 = 0.1215; variance 0.0249997 (gpt-4o-mini).
    assert (openai.provider, openai.rows, openai.flagged, openai.billed) == (
        "openai",
        3,
        1,
        Decimal("0.1215"),
    )
    assert (openai.estimated, openai.variance, openai.billed_no_estimate) == (
        Decimal("0.0925003"),
        Decimal("0.0249997"),
        Decimal("0.004"),
    )
    # 0.0249997 / 0.0925003 = 0.2702661... -> 27.03 %
    assert round(openai.variance_percent, 2) == Decimal("27.03")

    # Totals of the flagged rows alone: 1.00 + 0.10 billed, 0.0750003 estimated.
    [flagged_total] = reconciliation_totals(flagged).overall
    assert (flagged_total.billed, flagged_total.estimated, flagged_total.variance) == (
        Decimal("1.10"),
        Decimal("0.0750003"),
        Decimal("1.0249997"),
    )


def test_totals_never_add_currencies() -> None:
    from audit_app.costs.billing import reconciliation_totals

    bill = _bill_upload()
    day = {"start": H0, "period_end": H0 + 24 * H, "meter_kind": "token", "provider": "openai"}
    _charge(bill, cost="2.00", tags={"model": "gpt-4o"}, **day)
    _charge(bill, cost="3.00", currency="EUR", tags={"model": "gpt-4o-mini"}, **day)
    totals = reconciliation_totals(reconciliation(start=DAY, end=DAY))
    assert [(t.currency, t.billed, t.variance) for t in totals.overall] == [
        ("EUR", Decimal("3.00"), Decimal("3.00")),
        ("USD", Decimal("2.00"), Decimal("2.00")),
    ]
    assert [(t.provider, t.currency) for t in totals.by_provider] == [
        ("openai", "EUR"),
        ("openai", "USD"),
    ]


def test_a_model_served_hosted_and_self_hosted_is_told_apart_by_provider() -> None:
    # The pool runs Llama 3.3 70B; DeepInfra serves the same model name as a hosted API, at
    # its catalog card of $0.23 input and $0.40 output per million tokens.
    model = "meta-llama/Llama-3.3-70B-Instruct"
    log = (
        b"started_at,ended_at,workload,provider,model,input_tokens,output_tokens,pool\n"
        b"2026-11-02T00:05:00Z,2026-11-02T00:05:02Z,chat,hosted_vllm,MODEL,3000,1000,\n"
        b"2026-11-02T00:10:00Z,2026-11-02T00:10:02Z,evals,deepinfra,MODEL,100000,10000,\n"
    ).replace(b"MODEL", model.encode())
    _ingest(log, "mixed.csv")
    bill = _bill_upload()
    _charge(bill, start=H0, cost="10.00", tags={"pool": "gpu"})
    ServingPool.objects.create(name="gpu", tag_key="pool", tag_value="gpu", models_served=[model])

    [report] = pool_reports(start=DAY, end=DAY)
    # Only the self-hosted request shares the GPU bill: chat takes all $10 of hour 0.
    assert report.by_workload == {"chat": Decimal("10.00")}
    spend = spend_report(SpendFilters(start=DAY, end=DAY)).breakdown("workload")
    assert spend.unpriced_models == []
    # evals: 100,000 x 0.23 + 10,000 x 0.40 = 23,000 + 4,000 = 27,000 / 1M = $0.027
    assert {r.key: (r.api_spend_usd, r.gpu_cost_usd) for r in spend.rows} == {
        "chat": (Decimal(0), Decimal("10.00")),
        "evals": (Decimal("0.027"), Decimal(0)),
    }
