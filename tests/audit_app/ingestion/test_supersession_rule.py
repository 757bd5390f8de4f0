"""Restatement or split export: which earlier charges a landing billing upload replaces.

A split export (two files of one account and month with other charges) adds up; a restatement
(the same charges again, amounts changed, or a month-to-date rewrite that adds days) replaces;
a file sharing some charges but too few to tell counts beside the other and is recorded as a
possible restatement. The split files are the FOCUS 1.3 draft's multi-model example (Solora
Atlas models, 104.50) and a hand-made Saturn half of the same account and month (94.50), see
tests/fixtures/billing/README.md. Totals are added up by hand in comments and with the csv module.
"""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest
from django.core.management import call_command

from audit_app.costs.bills import bills_summary, upload_billing
from audit_app.ingestion.supersession import Verdict, restatement_verdict
from audit_app.ingestion.uploads import upload_delete
from audit_app.models import BillingCharge, PossibleRestatement
from tests.audit_app.ingestion.billing_exports.bills import (
    billed_total_by_csv,
    focus_csv,
    focus_row,
    ingest_bill,
)
from tests.support.paths import FIXTURES_DIR

ATLAS = (FIXTURES_DIR / "real" / "billing" / "focus-1.3-spec_multi-model-usage.csv").read_bytes()
SATURN = (FIXTURES_DIR / "billing" / "focus-1.3_split-saturn.csv").read_bytes()


def _lines(content: bytes) -> list[bytes]:
    return content.rstrip(b"\n").split(b"\n")


def _current_uploads() -> set[int]:
    return set(
        BillingCharge.objects.filter(superseded_by__isnull=True).values_list("upload_id", flat=True)
    )


# --- The rule itself (pure) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("earlier_keys", "shared_keys", "shared_days", "verdict"),
    [
        (10, 10, True, Verdict.RESTATES),  # the same charges again
        (10, 8, True, Verdict.RESTATES),  # 8/10 = 80 %: the threshold itself restates
        (10, 7, True, Verdict.UNSURE),  # 70 %
        (3, 2, True, Verdict.UNSURE),  # 67 %
        (5, 4, True, Verdict.RESTATES),  # 80 %
        (1, 1, True, Verdict.RESTATES),
        (10, 1, True, Verdict.UNSURE),  # one shared charge is still a question
        (10, 0, True, Verdict.SEPARATE),  # disjoint: a split export
        (10, 10, False, Verdict.SEPARATE),  # the same charges on other days: another day's file
    ],
)
def test_restatement_verdict(
    earlier_keys: int, shared_keys: int, shared_days: bool, verdict: Verdict
) -> None:
    assert (
        restatement_verdict(
            earlier_keys=earlier_keys, shared_keys=shared_keys, shared_days=shared_days
        )
        == verdict
    )


# --- Split exports add up -------------------------------------------------------------------------


@pytest.mark.django_db
def test_two_split_focus_files_of_one_account_and_month_both_count() -> None:
    # The files on their own: 50.00 + 50.00 + 2.25 + 2.25 and 40.00 + 45.00 + 4.50 + 5.00.
    assert billed_total_by_csv(ATLAS) == Decimal("104.50")
    assert billed_total_by_csv(SATURN) == Decimal("94.50")
    atlas = ingest_bill(ATLAS, "atlas.csv")
    saturn = ingest_bill(SATURN, "saturn.csv")

    summary = bills_summary()
    # 104.50 + 94.50; before split exports were told apart the second replaced the first (94.50).
    assert summary.billed_cost == {"USD": Decimal("199.00")}
    [period] = summary.periods
    assert (period.account, period.upload_ids, period.superseded_upload_ids) == (
        "acct-1001",
        [atlas.pk, saturn.pk],
        [],
    )
    assert _current_uploads() == {atlas.pk, saturn.pk}
    assert not PossibleRestatement.objects.exists()
    assert upload_billing(atlas).superseded == ""
    out = io.StringIO()
    call_command("bills", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "billed:    USD 199"
    assert lines[4].split()[-2:] == [f"{atlas.pk},{saturn.pk}", "-"]


@pytest.mark.django_db
def test_a_restated_half_replaces_its_own_half_only_and_deleting_it_splices() -> None:
    atlas = ingest_bill(ATLAS, "atlas.csv")
    saturn = ingest_bill(SATURN, "saturn.csv")
    # The same four Atlas charges, the first one's BilledCost 50.00 -> 55.00.
    restated_content = ATLAS.replace(b"\n50.00,acct-1001,", b"\n55.00,acct-1001,", 1)
    assert billed_total_by_csv(restated_content) == Decimal("109.50")
    restated = ingest_bill(restated_content, "atlas-restated.csv")

    # 109.50 (Atlas as restated) + 94.50 (Saturn)
    assert bills_summary().billed_cost == {"USD": Decimal("204.00")}
    assert BillingCharge.objects.filter(upload=atlas, superseded_by=restated).count() == 4
    assert not BillingCharge.objects.filter(upload=saturn, superseded_by__isnull=False).exists()
    assert [r.upload_id for r in upload_billing(restated).replaced] == [atlas.pk]

    upload_delete(upload=restated)
    # Back to 104.50 + 94.50
    assert bills_summary().billed_cost == {"USD": Decimal("199.00")}
    assert _current_uploads() == {atlas.pk, saturn.pk}


@pytest.mark.django_db
def test_one_file_of_both_halves_restates_each_of_them() -> None:
    atlas = ingest_bill(ATLAS, "atlas.csv")
    saturn = ingest_bill(SATURN, "saturn.csv")
    both = b"\n".join([*_lines(ATLAS), *_lines(SATURN)[1:]]) + b"\n"
    combined = ingest_bill(both, "combined.csv")
    # Every charge of each half is in the combined file: both are replaced, 199.00 counted once.
    assert bills_summary().billed_cost == {"USD": Decimal("199.00")}
    assert _current_uploads() == {combined.pk}
    assert BillingCharge.objects.filter(superseded_by=combined).count() == 8
    assert {r.upload_id for r in upload_billing(combined).replaced} == {atlas.pk, saturn.pk}


# --- Restatements replace -------------------------------------------------------------------------

NOV = ("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z")


def _charge(billed: str, day: int, meter: str) -> dict[str, str]:
    return focus_row(
        billed=billed,
        start=f"2026-11-{day:02d}T00:00:00Z",
        end=f"2026-11-{day + 1:02d}T00:00:00Z",
        period=NOV,
        usage_type=meter,
    )


@pytest.mark.django_db
def test_a_month_to_date_rewrite_adds_days_and_replaces_the_earlier_file() -> None:
    first = ingest_bill(
        focus_csv(_charge("10.00", 1, "gpu-hours"), _charge("2.00", 1, "storage")), "mtd-1.csv"
    )
    second = ingest_bill(
        focus_csv(
            _charge("10.00", 1, "gpu-hours"),
            _charge("2.00", 1, "storage"),
            _charge("11.00", 2, "gpu-hours"),
            _charge("3.00", 2, "storage"),
            _charge("1.00", 2, "egress"),  # a charge new on day 2
        ),
        "mtd-2.csv",
    )
    # The second file alone: 10.00 + 2.00 + 11.00 + 3.00 + 1.00
    assert bills_summary().billed_cost == {"USD": Decimal("27.00")}
    assert BillingCharge.objects.filter(upload=first, superseded_by=second).count() == 2
    assert not PossibleRestatement.objects.exists()


@pytest.mark.django_db
def test_the_same_charges_on_other_days_are_another_days_file_not_a_restatement() -> None:
    ingest_bill(focus_csv(_charge("5.00", 1, "gpu-hours")), "day-1.csv")
    ingest_bill(focus_csv(_charge("6.00", 2, "gpu-hours")), "day-2.csv")
    # 5.00 + 6.00: no day in common, so nothing restates.
    assert bills_summary().billed_cost == {"USD": Decimal("11.00")}
    assert not BillingCharge.objects.filter(superseded_by__isnull=False).exists()


# --- Between the two: flagged, both count ---------------------------------------------------------


def _partly_overlapping() -> bytes:
    """The Atlas 5.5 input and output charges (2 of Atlas's 4) with the Saturn file's four."""
    atlas = _lines(ATLAS)
    return b"\n".join([atlas[0], atlas[1], atlas[2], *_lines(SATURN)[1:]]) + b"\n"


@pytest.mark.django_db
def test_a_partly_overlapping_file_counts_beside_the_earlier_one_and_is_flagged() -> None:
    content = _partly_overlapping()
    rows = list(csv.DictReader(io.StringIO(content.decode())))
    assert [r["ChargeDescription"] for r in rows[:2]] == [
        "Input tokens for Solora Atlas 5.5",
        "Output tokens for Solora Atlas 5.5",
    ]
    atlas = ingest_bill(ATLAS, "atlas.csv")
    mixed = ingest_bill(content, "mixed.csv")

    # Both count: 104.50 + (50.00 + 50.00 + 94.50)
    assert bills_summary().billed_cost == {"USD": Decimal("299.00")}
    assert _current_uploads() == {atlas.pk, mixed.pk}
    question = PossibleRestatement.objects.get()
    # Atlas holds 4 distinct charges (one per description); the mixed file 2 of them (50 %).
    assert (question.upload_id, question.earlier_id) == (mixed.pk, atlas.pk)
    assert (question.earlier_keys, question.shared_keys, question.decision) == (4, 2, "")
    [seen_from_atlas] = upload_billing(atlas).possible_restatements
    assert (seen_from_atlas.other_id, seen_from_atlas.newer, seen_from_atlas.open) == (
        mixed.pk,
        False,
        True,
    )
    [seen_from_mixed] = upload_billing(mixed).open_restatements
    assert (seen_from_mixed.other_id, seen_from_mixed.newer) == (atlas.pk, True)
