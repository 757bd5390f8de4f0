"""Billing through the CLI on the real exports, and the reconciliation / pools API."""

from __future__ import annotations

import csv
import json
from decimal import Decimal
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from tests.audit_app.costs.test_billing_selectors import (  # noqa: F401 (shared fixtures)
    DAY,
    H0,
    POOL_LOG,
    SAMPLE_CSV,
    H,
    _bill_upload,
    _charge,
    _ingest,
)
from tests.support.paths import FIXTURES_DIR

pytestmark = pytest.mark.django_db
REAL = FIXTURES_DIR / "real" / "billing"
REAL_FILES = {
    "focus-1.0_official-sample_1000rows.csv": ("focus", "BilledCost", "BillingCurrency"),
    "aws-cur-legacy_anonymous-sample_1281rows.csv": (
        "aws-cur",
        "lineItem/UnblendedCost",
        "lineItem/CurrencyCode",
    ),
    "azure-ea-costdetails_anonymous-sample_27rows.csv": (
        "azure",
        "CostInBillingCurrency",
        "BillingCurrencyCode",
    ),
}


def _independent_totals(path: Path, cost_column: str, currency_column: str) -> dict[str, str]:
    totals: dict[str, Decimal] = {}
    with open(path, newline="", encoding="utf-8-sig") as handle:
        for row in csv.DictReader(handle):
            raw = row.get(cost_column, "")
            amount = Decimal(raw) if raw not in ("", "NULL") else Decimal(0)
            currency = row[currency_column].upper()
            totals[currency] = totals.get(currency, Decimal(0)) + amount
    return {c: str(v.quantize(Decimal("0.01"))) for c, v in totals.items()}


@pytest.mark.parametrize("name", list(REAL_FILES))
def test_cli_ingests_each_real_export_to_the_cent(name: str) -> None:
    fmt, cost_column, currency_column = REAL_FILES[name]
    path = REAL / name
    if not path.exists():
        pytest.fail(f"{path} is missing: the real fixtures are part of the repository's checks")
    with open(path, newline="", encoding="utf-8-sig") as handle:
        header = next(csv.reader(handle))
    if cost_column not in header:  # CUR: NetUnblendedCost when the file has it
        cost_column = "lineItem/NetUnblendedCost"
    out = StringIO()
    call_command("ingest", str(path), "--kind", "billing", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["format"] == fmt
    assert report["rows_rejected"] == 0
    assert report["rows_accepted"] == report["rows_read"] > 0
    billed = {
        c: str(Decimal(v).quantize(Decimal("0.01"))) for c, v in report["billed_cost"].items()
    }
    assert billed == _independent_totals(path, cost_column, currency_column)


def test_cli_refuses_a_token_log_forced_as_billing(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    path.write_bytes(SAMPLE_CSV)
    with pytest.raises(CommandError, match="upload"):
        call_command("ingest", str(path), "--kind", "billing", "--json")


def test_reconciliation_and_pools_api(client: Client, finops_user: Any) -> None:
    from audit_app.models import ServingPool

    _ingest(SAMPLE_CSV, "sample.csv")
    _ingest(POOL_LOG, "pool.csv")
    bill = _bill_upload()
    _charge(
        bill,
        start=H0,
        cost="0.10",
        provider="openai",
        meter_kind="token",
        period_end=H0 + 24 * H,
        tags={"model": "gpt-4o-mini"},
    )
    for i in range(3):
        _charge(bill, start=H0 + i * H, cost="98.32", resource_id="i-1")
    ServingPool.objects.create(name="gpu", resource_ids=["i-1"])
    client.force_login(finops_user)

    body = client.get("/api/v1/reconciliation/?start=2026-11-02&end=2026-11-02").json()
    assert body["flagged"] >= 1
    row = next(r for r in body["results"] if r["model"] == "gpt-4o-mini")
    assert (row["billed"], row["estimated"], row["flagged"]) == ("0.100000", "0.075000", True)
    assert row["variance_percent"] == "33.33"
    assert row["bill_upload_ids"] == [bill.pk]

    bad = client.get("/api/v1/reconciliation/?threshold=lots")
    assert bad.status_code == 400
    assert bad.json()["errors"] == {"threshold": ["threshold='lots' is not a number"]}

    pools = client.get("/api/v1/pools/?start=2026-11-02&end=2026-11-02").json()
    assert (pools["count"], pools["next"], pools["previous"]) == (1, None, None)
    [pool] = pools["results"]
    assert pool["name"] == "gpu"
    assert (pool["billed"], pool["attributed"], pool["idle"]) == (
        "294.960000",
        "196.640000",
        "98.320000",
    )
    assert pool["by_workload"] == {"evals": "122.900000", "chat": "73.740000"}
    assert pool["hours_with_traffic"] == 2 and pool["hours_billed"] == 3


def test_reconciliation_page(client: Client, manager_user: Any) -> None:
    _ingest(SAMPLE_CSV, "sample.csv")
    bill = _bill_upload()
    _charge(
        bill,
        start=H0,
        cost="0.10",
        provider="openai",
        meter_kind="token",
        period_end=H0 + 24 * H,
        tags={"model": "gpt-4o-mini"},
    )
    client.force_login(manager_user)
    response = client.get("/reconciliation/?start=2026-11-02&end=2026-11-02")
    html = response.content.decode()
    assert response.status_code == 200
    assert response.context["flagged"] >= 1
    assert f'href="/uploads/{bill.pk}/"' in html
    assert "flagged" in html
    csv_text = client.get("/reconciliation/?start=2026-11-02&end=2026-11-02&export=csv")
    assert b"gpt-4o-mini" in csv_text.content


def test_reconciliation_api_no_estimate_flagged_filter_and_totals(
    client: Client, finops_user: Any
) -> None:
    from tests.audit_app.costs.test_billing_selectors import _sample_bill

    _sample_bill()
    client.force_login(finops_user)
    url = "/api/v1/reconciliation/?start=2026-11-02&end=2026-11-02"
    body = client.get(url).json()
    assert (body["flagged_only"], body["flagged"], body["count"]) == (False, 2, 4)
    assert len(body["results"]) == 4
    unpriced = next(r for r in body["results"] if r["model"] == "my-finetune")
    assert unpriced["estimated"] is None and unpriced["variance"] is None
    assert (unpriced["billed"], unpriced["flagged"], unpriced["variance_percent"]) == (
        "0.004000",
        False,
        None,
    )
    assert unpriced["note"] == "no estimate: 1 logged requests have no price card"
    assert (unpriced["log_requests"], unpriced["unpriced_requests"]) == (1, 1)
    # Hand-computed in test_flagged_only_and_totals_per_provider_and_currency; 6 decimals.
    assert body["totals"]["overall"] == [
        {
            "currency": "USD",
            "rows": 4,
            "flagged": 2,
            "billed": "1.121500",
            "estimated": "0.092500",
            "variance": "1.025000",
            "variance_percent": "1108.10",
            "billed_no_estimate": "0.004000",
        }
    ]
    assert [
        (t["provider"], t["billed"], t["estimated"], t["variance_percent"])
        for t in body["totals"]["by_provider"]
    ] == [("anthropic", "1.000000", None, None), ("openai", "0.121500", "0.092500", "27.03")]

    for value in ("1", "true", "TRUE"):
        flagged = client.get(f"{url}&flagged={value}").json()
        assert flagged["flagged_only"] is True
        assert [r["model"] for r in flagged["results"]] == ["claude-haiku-4-5", "gpt-4o-mini"]
        assert flagged["totals"]["overall"][0]["billed"] == "1.100000"  # 1.00 + 0.10
    assert len(client.get(f"{url}&flagged=false").json()["results"]) == 4
    assert len(client.get(f"{url}&flagged=0").json()["results"]) == 4
    bad = client.get(f"{url}&flagged=yes")
    assert bad.status_code == 400
    assert bad.json()["errors"] == {"flagged": ["flagged='yes' must be 1, true, 0 or false"]}


def test_reconciliation_page_and_csv_show_no_estimate_totals_and_the_flagged_filter(
    client: Client, finops_user: Any
) -> None:
    from tests.audit_app.costs.test_billing_selectors import _sample_bill

    _sample_bill()
    client.force_login(finops_user)
    url = "/reconciliation/?start=2026-11-02&end=2026-11-02"
    response = client.get(url)
    html = response.content.decode()
    assert response.context["flagged"] == 2
    assert len(response.context["rows"]) == 4
    assert ">no estimate<" in html  # the unpriced line's estimate cell
    assert "no estimate: 1 logged requests have no price card" in html
    # Totals: all providers, then each provider.
    assert 'id="reconciliation-totals"' in html
    assert '<td class="num">$1.12</td>' in html  # 1.1215 billed
    assert "+1,108.1 %" in html  # overall variance
    assert "+27.0 %" in html  # openai
    assert "+33.3 %" in html  # gpt-4o-mini's row
    assert "$0.004" not in html and "$0.00</td>" in html  # money reads in cents

    flagged = client.get(url + "&flagged=1")
    assert [r.model for r in flagged.context["rows"]] == ["claude-haiku-4-5", "gpt-4o-mini"]
    flagged_html = flagged.content.decode()
    assert 'name="flagged" value="1" checked' in flagged_html
    assert "flagged=1&amp;export=csv" in flagged_html

    bad = client.get(url + "&flagged=maybe").content.decode()
    assert "flagged=&#x27;maybe&#x27; must be 1, true, 0 or false; showing the defaults" in bad

    rows = list(csv.DictReader(StringIO(client.get(url + "&export=csv").content.decode())))
    by_model = {r["model"]: r for r in rows}
    assert (by_model["my-finetune"]["estimated"], by_model["my-finetune"]["variance"]) == ("", "")
    assert by_model["my-finetune"]["flagged"] == "false"
    # 0.0750003 and 33.3328000021... at most 6 decimals, no trailing zeros.
    assert by_model["gpt-4o-mini"]["estimated"] == "0.075"
    assert by_model["gpt-4o-mini"]["variance_percent"] == "33.3328"
    flagged_csv = client.get(url + "&export=csv&flagged=1").content.decode()
    assert [r["model"] for r in csv.DictReader(StringIO(flagged_csv))] == [
        "claude-haiku-4-5",
        "gpt-4o-mini",
    ]


def test_reconciliation_page_with_no_flagged_rows_says_so(client: Client, finops_user: Any) -> None:
    bill = _bill_upload()
    _charge(
        bill,
        start=H0,
        cost="0",
        provider="openai",
        meter_kind="token",
        period_end=H0 + 24 * H,
        tags={"model": "gpt-4o"},
    )
    client.force_login(finops_user)
    html = client.get("/reconciliation/?start=2026-11-02&end=2026-11-02&flagged=1").content
    assert b"No flagged rows in this range" in html
    assert b"Nothing to reconcile" not in html
