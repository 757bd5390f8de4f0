"""Azure amortized-cost exports: recognised by their commitment rows, landed as effective cost
(billed 0), noted on the upload, left out of reconciliation, and never restating an actual-cost
export (or the other way round).

Hand-made files in tests/fixtures/billing/ (sums worked out in the comments):
- azure-ea_actual-cost.csv (EA, CAD): reservation-covered GPU usage at 0, storage 2.40, the
  reservation purchase 1,500.00, tokens 0.30.
- azure-ea_amortized-cost.csv (EA, CAD, same day): the covered usage carries 49.20, storage
  2.40, unused reservation 12.30, tokens 0.30, the purchase at 0.
- azure-mca_amortized-cost.csv (MCA camelCase, EUR): savings-plan usage 1.10, tokens 0.50.
"""

from __future__ import annotations

import io
import json
from datetime import date
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command

from audit_app.costs.billing import reconciliation, unknown_meters
from audit_app.costs.bills import bills_summary, upload_billing
from audit_app.ingestion.billing_exports import azure
from audit_app.ingestion.billing_exports.azure import AMORTIZED_NOTE, CostBasisEvidence
from audit_app.ingestion.billing_exports.base import BillingLine
from audit_app.models import BillingCharge
from tests.audit_app.ingestion.billing_exports.bills import FIXTURES, ingest_bill

EA_ACTUAL = FIXTURES / "azure-ea_actual-cost.csv"
EA_AMORTIZED = FIXTURES / "azure-ea_amortized-cost.csv"
MCA_AMORTIZED = FIXTURES / "azure-mca_amortized-cost.csv"
SEP_2 = date(2023, 9, 2)

HEADER = (
    "SubscriptionId,Date,MeterName,CostInBillingCurrency,ChargeType,PricingModel,BillingCurrency"
)


def lines_of(data: bytes) -> list[BillingLine]:
    return [line for chunk in azure.read(io.BytesIO(data), chunk_rows=100) for line in chunk.lines]


def evidence_of(*rows: str) -> CostBasisEvidence:
    evidence = CostBasisEvidence()
    evidence.add(lines_of("\n".join([HEADER, *rows, ""]).encode()))
    return evidence


# --- Recognising the export ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("charge_type", "pricing_model", "commitment"),
    [
        ("Usage", "Reservation", "used"),
        ("Usage", "SavingsPlan", "used"),
        ("", "reservation", "used"),
        ("UnusedReservation", "Reservation", "unused"),
        ("UnusedSavingsPlan", "SavingsPlan", "unused"),
        ("Purchase", "Reservation", "purchase"),
        ("Purchase", "SavingsPlan", "purchase"),
        ("Purchase", "OnDemand", ""),
        ("Usage", "OnDemand", ""),
        ("Usage", "Spot", ""),
        ("Refund", "Reservation", ""),
    ],
)
def test_commitment_of_each_azure_row(
    charge_type: str, pricing_model: str, commitment: str
) -> None:
    [line] = lines_of(f"{HEADER}\nsub,9/2/2023,m,1.00,{charge_type},{pricing_model},USD\n".encode())
    assert line.commitment == commitment


@pytest.mark.parametrize(
    ("rows", "amortized"),
    [
        # Covered usage with a cost: only an amortized export spreads the purchase over it.
        (["s,9/2/2023,vm,49.20,Usage,Reservation,CAD"], True),
        # Unused commitment with a cost appears in amortized data only.
        (["s,9/2/2023,vm,12.30,UnusedReservation,Reservation,CAD"], True),
        # A free purchase beside covered usage: the purchase was spread, so amortized.
        (
            [
                "s,9/2/2023,vm,0,Usage,SavingsPlan,CAD",
                "s,9/2/2023,vm,0,Purchase,SavingsPlan,CAD",
            ],
            True,
        ),
        # Actual cost: covered usage at 0 and the purchase at its price.
        (
            [
                "s,9/2/2023,vm,0,Usage,Reservation,CAD",
                "s,9/2/2023,vm,1500.00,Purchase,Reservation,CAD",
            ],
            False,
        ),
        # A free purchase alone says nothing.
        (["s,9/2/2023,vm,0,Purchase,Reservation,CAD"], False),
        # No commitment at all: an ordinary pay-as-you-go export.
        (["s,9/2/2023,disk,2.40,Usage,OnDemand,CAD"], False),
    ],
)
def test_cost_basis_evidence(rows: list[str], amortized: bool) -> None:
    assert evidence_of(*rows).amortized is amortized


@pytest.mark.parametrize(
    ("path", "amortized"),
    [(EA_ACTUAL, False), (EA_AMORTIZED, True), (MCA_AMORTIZED, True)],
)
def test_the_fixture_files(path: object, amortized: bool) -> None:
    evidence = CostBasisEvidence()
    evidence.add(lines_of(path.read_bytes()))  # type: ignore[attr-defined]
    assert evidence.amortized is amortized


def test_evidence_adds_up_across_chunks() -> None:
    data = "\n".join(
        [
            HEADER,
            "s,9/2/2023,vm,0,Usage,SavingsPlan,CAD",
            "s,9/2/2023,disk,1,Usage,OnDemand,CAD",
            "s,9/2/2023,vm,0,Purchase,SavingsPlan,CAD",
            "",
        ]
    ).encode()
    evidence = CostBasisEvidence()
    for chunk in azure.read(io.BytesIO(data), chunk_rows=1):
        evidence.add(chunk.lines)
    assert evidence.amortized


# --- Landing ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_actual_cost_export_lands_billed_cost_without_a_note() -> None:
    upload = ingest_bill(EA_ACTUAL.read_bytes(), "ea-actual.csv")
    # 0 + 2.40 + 1500.00 + 0.30; effective leaves the two commitment rows out: 2.40 + 0.30.
    assert upload.billing_totals == {
        "billed": {"CAD": "1502.7"},  # plain digits, no trailing zeros (decimal_text)
        "effective": {"CAD": "2.7"},
        "cost_basis": "actual",
        "notes": [],
    }
    assert not BillingCharge.objects.filter(amortized=True).exists()


@pytest.mark.django_db
def test_an_amortized_ea_export_lands_as_effective_cost_with_the_note() -> None:
    upload = ingest_bill(EA_AMORTIZED.read_bytes(), "ea-amortized.csv")
    # 49.20 + 2.40 + 12.30 + 0.30 + 0
    assert upload.billing_totals == {
        "billed": {"CAD": "0"},
        "effective": {"CAD": "64.2"},
        "cost_basis": "amortized",
        "notes": [AMORTIZED_NOTE],
    }
    charges = BillingCharge.objects.filter(upload=upload).order_by("line")
    assert [(c.amortized, c.billed_cost, c.effective_cost) for c in charges] == [
        (True, Decimal(0), Decimal("49.20")),
        (True, Decimal(0), Decimal("2.40")),
        (True, Decimal(0), Decimal("12.30")),
        (True, Decimal(0), Decimal("0.30")),
        (True, Decimal(0), Decimal(0)),
    ]
    assert upload_billing(upload).notes == [AMORTIZED_NOTE]
    assert bills_summary().billed_cost == {}
    assert bills_summary().effective_cost == {"CAD": Decimal("64.20")}


@pytest.mark.django_db
def test_an_amortized_mca_export_in_camel_case_is_recognised_too() -> None:
    upload = ingest_bill(MCA_AMORTIZED.read_bytes(), "mca-amortized.csv")
    # 1.10 + 0.50
    assert upload.billing_totals["effective"] == {"EUR": "1.6"}
    assert upload.billing_totals["billed"] == {"EUR": "0"}
    assert upload.billing_totals["notes"] == [AMORTIZED_NOTE]


@pytest.mark.django_db
def test_reconciliation_and_unknown_meters_ignore_an_amortized_export() -> None:
    ingest_bill(EA_AMORTIZED.read_bytes(), "ea-amortized.csv")
    assert reconciliation(start=SEP_2, end=SEP_2) == []
    assert unknown_meters(start=SEP_2, end=SEP_2) == []
    ingest_bill(EA_ACTUAL.read_bytes(), "ea-actual.csv")
    [row] = reconciliation(start=SEP_2, end=SEP_2)
    assert (row.model, row.currency, row.billed) == ("gpt-4o-mini-0718", "CAD", Decimal("0.30"))


@pytest.mark.django_db
def test_actual_and_amortized_exports_of_one_month_never_supersede_each_other() -> None:
    actual = ingest_bill(EA_ACTUAL.read_bytes(), "ea-actual.csv")
    amortized = ingest_bill(EA_AMORTIZED.read_bytes(), "ea-amortized.csv")
    assert not BillingCharge.objects.filter(superseded_by__isnull=False).exists()
    summary = bills_summary()
    # Billed from the actual export alone; effective from the amortized one, which covers the
    # month (the actual export's 2.70 is not added to it).
    assert summary.billed_cost == {"CAD": Decimal("1502.70")}
    assert summary.effective_cost == {"CAD": Decimal("64.20")}
    assert [(p.cost_basis, p.upload_id, p.billed_cost) for p in summary.periods] == [
        ("actual", actual.pk, {"CAD": Decimal("1502.70")}),
        ("amortized", amortized.pk, {}),
    ]


@pytest.mark.django_db
def test_an_amortized_export_restates_the_previous_amortized_one() -> None:
    first = ingest_bill(EA_AMORTIZED.read_bytes(), "ea-amortized.csv")
    restated = EA_AMORTIZED.read_bytes().replace(b",49.20,", b",50.00,")
    second = ingest_bill(restated, "ea-amortized-restated.csv")
    assert BillingCharge.objects.filter(upload=first, superseded_by=second).count() == 5
    # 50.00 + 2.40 + 12.30 + 0.30 + 0
    assert bills_summary().effective_cost == {"CAD": Decimal("65.00")}


@pytest.mark.django_db
def test_ingest_json_carries_the_cost_basis_and_the_note() -> None:
    out = StringIO()
    call_command("ingest", str(EA_AMORTIZED), "--kind", "billing", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["cost_basis"] == "amortized"
    assert report["notes"] == [AMORTIZED_NOTE]
    assert report["billed_cost"] == {"CAD": "0"}
    assert report["effective_cost"] == {"CAD": "64.2"}

    out = StringIO()
    call_command("ingest", str(MCA_AMORTIZED), "--kind", "billing", stdout=out)
    assert f"note: {AMORTIZED_NOTE}" in out.getvalue()


def test_the_note_says_what_the_brief_asks() -> None:
    assert AMORTIZED_NOTE == (
        "This is an amortized-cost export: its costs spread reservation purchases over usage, "
        "so they count as effective cost, not as billed cost; upload the actual-cost export "
        "for invoice figures."
    )
