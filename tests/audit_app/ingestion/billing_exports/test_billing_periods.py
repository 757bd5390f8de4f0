"""Each billing line's billing period and billing account, the key restated exports replace by.

Expected values are read off the files by hand: the FOCUS sample copy, the CUR 2.0 and Azure
MCA fixtures, and the small tables written inline.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest

from audit_app.ingestion.billing_exports import aws_cur, azure, focus
from audit_app.ingestion.billing_exports.base import BillingLine, BillingReject, billing_month
from tests.audit_app.ingestion.billing_exports.bills import FIXTURES, FOCUS_SAMPLE

SEP_2023 = datetime(2023, 9, 1, tzinfo=UTC)
OCT_2023 = datetime(2023, 10, 1, tzinfo=UTC)


def read(module: object, data: bytes) -> tuple[list[BillingLine], list[BillingReject]]:
    lines: list[BillingLine] = []
    rejects: list[BillingReject] = []
    for chunk in module.read(io.BytesIO(data), chunk_rows=1000):  # type: ignore[attr-defined]
        lines.extend(chunk.lines)
        rejects.extend(chunk.rejects)
    return lines, rejects


def _utc(year: int, month: int, day: int = 1) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


@pytest.mark.parametrize(
    ("moment", "start", "end"),
    [
        (datetime(2024, 9, 18, 22, tzinfo=UTC), _utc(2024, 9), _utc(2024, 10)),
        (datetime(2026, 12, 31, 23, 59, tzinfo=UTC), _utc(2026, 12), _utc(2027, 1)),
        (_utc(2026, 1), _utc(2026, 1), _utc(2026, 2)),
    ],
)
def test_billing_month_is_the_utc_calendar_month(
    moment: datetime, start: datetime, end: datetime
) -> None:
    assert billing_month(moment) == (start, end)


# --- FOCUS ---------------------------------------------------------------------------------------


def test_focus_sample_lines_carry_the_exports_billing_period_and_account() -> None:
    lines, rejects = read(focus, FOCUS_SAMPLE.read_bytes())
    assert rejects == []
    first = lines[0]
    # Line 2: "1234567890123", BillingPeriodEnd 2024-10-01, BillingPeriodStart 2024-09-01; its
    # SubAccountId 51738928782 stays the account_id.
    assert (first.billing_account, first.account_id) == ("1234567890123", "51738928782")
    assert (first.billing_period_start, first.billing_period_end) == (
        datetime(2024, 9, 1, tzinfo=UTC),
        datetime(2024, 10, 1, tzinfo=UTC),
    )
    periods = {(line.provider, line.billing_period_start.date().isoformat()) for line in lines}
    assert periods == {
        ("aws", "2024-09-01"),
        ("azure", "2024-09-01"),
        ("oracle", "2024-09-01"),
        ("oracle", "2024-10-01"),
    }


FOCUS_MINIMAL = (
    "BilledCost,BillingCurrency,ChargeCategory,ChargePeriodStart,ChargePeriodEnd,ProviderName"
)


def test_focus_without_period_columns_bills_the_charges_month_under_its_sub_account() -> None:
    data = (
        f"{FOCUS_MINIMAL},SubAccountId\n"
        "1.00,USD,Usage,2026-12-31T23:00:00Z,2027-01-01T00:00:00Z,AWS,111122223333\n"
    ).encode()
    [line], _ = read(focus, data)
    assert (line.billing_period_start, line.billing_period_end) == (
        datetime(2026, 12, 1, tzinfo=UTC),
        datetime(2027, 1, 1, tzinfo=UTC),
    )
    assert line.billing_account == "111122223333"


def test_focus_without_any_account_has_an_empty_one() -> None:
    data = f"{FOCUS_MINIMAL}\n1.00,USD,Usage,2026-11-02,2026-11-03,AWS\n".encode()
    [line], _ = read(focus, data)
    assert line.billing_account == ""
    assert line.billing_period_start == datetime(2026, 11, 1, tzinfo=UTC)


def test_focus_empty_period_cells_fall_back_to_the_month() -> None:
    data = (
        f"{FOCUS_MINIMAL},BillingPeriodStart,BillingPeriodEnd,BillingAccountId\n"
        "1.00,USD,Usage,2026-11-02,2026-11-03,AWS,NULL,NULL,acct\n"
    ).encode()
    [line], _ = read(focus, data)
    assert (line.billing_period_start, line.billing_account) == (
        datetime(2026, 11, 1, tzinfo=UTC),
        "acct",
    )


@pytest.mark.parametrize(
    ("start", "end", "field", "reason"),
    [
        ("soon", "2026-12-01", "BillingPeriodStart", "`BillingPeriodStart` is not a date or"),
        ("2026-11-01", "", "BillingPeriodEnd", "`BillingPeriodEnd` is empty."),
        (
            "2026-11-01",
            "2026-10-01",
            "BillingPeriodEnd",
            "`BillingPeriodEnd` (2026-10-01T00:00:00+00:00) does not end after "
            "`BillingPeriodStart` (2026-11-01T00:00:00+00:00).",
        ),
    ],
)
def test_focus_bad_billing_period_rejects_the_row_naming_the_column(
    start: str, end: str, field: str, reason: str
) -> None:
    data = (
        f"{FOCUS_MINIMAL},BillingPeriodStart,BillingPeriodEnd\n"
        f"1.00,USD,Usage,2026-11-02,2026-11-03,AWS,{start},{end}\n"
    ).encode()
    lines, [reject] = read(focus, data)
    assert lines == []
    assert (reject.line, reject.field) == (2, field)
    assert reject.reason.startswith(reason)


# --- AWS CUR ---------------------------------------------------------------------------------


def test_legacy_cur_reads_the_bill_columns() -> None:
    # The real legacy sample's spelling: bill/PayerAccountId, bill/BillingPeriodStartDate and
    # bill/BillingPeriodEndDate with milliseconds and Z.
    data = (
        b"bill/PayerAccountId,bill/BillingPeriodStartDate,bill/BillingPeriodEndDate,"
        b"lineItem/UsageAccountId,lineItem/LineItemType,lineItem/UsageStartDate,"
        b"lineItem/UsageEndDate,lineItem/UnblendedCost,lineItem/CurrencyCode\n"
        b"123412340534,2023-11-01T00:00:00.000Z,2023-12-01T00:00:00.000Z,999999999999,Usage,"
        b"2023-11-01T00:00:00Z,2023-11-02T00:00:00Z,0.25,USD\n"
    )
    [line], _ = read(aws_cur, data)
    assert (line.billing_account, line.account_id) == ("123412340534", "999999999999")
    assert (line.billing_period_start, line.billing_period_end) == (
        datetime(2023, 11, 1, tzinfo=UTC),
        datetime(2023, 12, 1, tzinfo=UTC),
    )


def test_cur2_reads_the_snake_case_bill_columns() -> None:
    data = (
        b"bill_payer_account_id,bill_billing_period_start_date,bill_billing_period_end_date,"
        b"line_item_usage_account_id,line_item_line_item_type,line_item_usage_start_date,"
        b"line_item_usage_end_date,line_item_unblended_cost,line_item_currency_code\n"
        b"999988887777,2025-03-01T00:00:00Z,2025-04-01T00:00:00Z,111122223333,Usage,"
        b"2025-03-31T23:00:00Z,2025-04-01T00:00:00Z,1.50,USD\n"
    )
    [line], _ = read(aws_cur, data)
    assert line.billing_account == "999988887777"
    assert (line.billing_period_start, line.billing_period_end) == (
        datetime(2025, 3, 1, tzinfo=UTC),
        datetime(2025, 4, 1, tzinfo=UTC),
    )


def test_cur2_fixture_without_period_columns_bills_each_usage_month_under_the_payer() -> None:
    lines, _ = read(aws_cur, (FIXTURES / "cur2_bedrock-gpu.csv").read_bytes())
    # Every row has bill_payer_account_id 999988887777 and starts in March 2025.
    assert {line.billing_account for line in lines} == {"999988887777"}
    assert {line.billing_period_start for line in lines} == {datetime(2025, 3, 1, tzinfo=UTC)}
    assert {line.billing_period_end for line in lines} == {datetime(2025, 4, 1, tzinfo=UTC)}


# --- Azure ---------------------------------------------------------------------------------------

EA_HEADER = (
    "SubscriptionId,Date,MeterCategory,MeterName,Quantity,CostInBillingCurrency,ChargeType,"
    "PricingModel,BillingCurrencyCode,BillingAccountId,BillingPeriodStartDate,BillingPeriodEndDate"
)


def test_azure_ea_period_end_is_the_last_day_read_as_the_midnight_after() -> None:
    # As in the real EA sample: 9/2/2023, BillingPeriodStartDate 9/1/2023, End 9/30/2023.
    data = (
        f"{EA_HEADER}\n"
        "e18e1552-sub,9/2/2023,Storage,LRS Data Stored,1,0.000305367,Usage,OnDemand,CAD,"
        "12345678,9/1/2023,9/30/2023\n"
    ).encode()
    [line], _ = read(azure, data)
    assert (line.billing_period_start, line.billing_period_end) == (SEP_2023, OCT_2023)
    assert (line.billing_account, line.account_id) == ("12345678", "e18e1552-sub")


def test_azure_mca_camel_case_period_columns() -> None:
    data = (
        b"subscriptionId,date,meterCategory,meterName,quantity,costInBillingCurrency,"
        b"billingCurrency,billingAccountId,billingPeriodStartDate,billingPeriodEndDate\n"
        b"sub-1,2024-11-05,Cognitive Services,gpt-4o-mini-0718-Inp-glbl Tokens,1,0.10,EUR,"
        b"a1b2:c3d4_2019-05-31,2024-11-01,2024-11-30\n"
    )
    [line], _ = read(azure, data)
    assert (line.billing_period_start, line.billing_period_end) == (
        datetime(2024, 11, 1, tzinfo=UTC),
        datetime(2024, 12, 1, tzinfo=UTC),
    )
    assert line.billing_account == "a1b2:c3d4_2019-05-31"


def test_azure_mca_fixture_without_period_columns_bills_the_month_of_the_date() -> None:
    lines, _ = read(azure, (FIXTURES / "azure-mca_openai-eur.csv").read_bytes())
    # billingAccountId a1b2:c3d4_2019-05-31 on every row; dates 11/01/2024 and 11/02/2024.
    assert {line.billing_account for line in lines} == {"a1b2:c3d4_2019-05-31"}
    assert {line.billing_period_start for line in lines} == {datetime(2024, 11, 1, tzinfo=UTC)}


def test_azure_without_billing_account_uses_the_subscription() -> None:
    data = (
        b"SubscriptionId,Date,MeterName,CostInBillingCurrency,BillingCurrencyCode\n"
        b"sub-9,9/2/2023,LRS Data Stored,0.50,CAD\n"
    )
    [line], _ = read(azure, data)
    assert line.billing_account == "sub-9"
    assert (line.billing_period_start, line.billing_period_end) == (SEP_2023, OCT_2023)
