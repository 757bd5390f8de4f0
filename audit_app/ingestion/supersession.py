"""Restated billing exports: a newer upload of an account's billing period replaces the older.

Cloud exports rewrite the current month's file every day, so the same charges arrive again and
again. Charges are grouped by a key, (provider, billing account, billing period start,
amortized): when a billing upload lands, the current charges of every *other* landed upload
with one of its keys get `superseded_by` = the new upload and stop counting. Only those keys:
an older upload of October and November restated by a November-only file keeps its October
charges current. Amortized-cost exports restate amortized ones only (they never hold billed
cost, see `audit_app.ingestion.billing_exports.azure`).

`superseded_by` links form a chain per key (A -> B -> C, C current). Deleting an upload splices
it out: charges it had superseded are handed to whatever superseded it, or become current
when nothing did, so deleting the newest upload brings the previous one back.

Both run inside the caller's transaction and first lock one `BillingPeriodKey` row per key, so
on PostgreSQL two uploads of the same period land (or one lands while another is deleted) one
after the other, each seeing what the other committed; keys are locked in one sorted order so
two landings cannot deadlock.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from django.db.models import Q

from audit_app.models import BillingCharge, BillingPeriodKey, Upload


class Key(NamedTuple):
    provider: str
    billing_account: str
    billing_period_start: datetime
    amortized: bool

    def filter(self) -> Q:
        return Q(**self._asdict())


def _keys_of(upload: Upload) -> list[Key]:
    rows = (
        BillingCharge.objects.filter(upload=upload)
        .values_list("provider", "billing_account", "billing_period_start", "amortized")
        .distinct()
        .order_by()
    )
    return sorted(Key(*row) for row in rows)


def _lock(keys: list[Key]) -> None:
    """Make sure each key has its row, then hold those rows until the transaction ends."""
    if not keys:
        return
    BillingPeriodKey.objects.bulk_create(
        [BillingPeriodKey(**key._asdict()) for key in keys], ignore_conflicts=True
    )
    matches = Q(pk__in=[])
    for key in keys:
        matches |= key.filter()
    list(BillingPeriodKey.objects.select_for_update().filter(matches).order_by("pk"))


def charges_supersede(*, upload: Upload) -> None:
    """The landing upload replaces the current charges of earlier uploads with its keys.

    Call inside the transaction that marks `upload` succeeded, after its charges are written.
    """
    keys = _keys_of(upload)
    _lock(keys)
    for key in keys:
        BillingCharge.objects.filter(
            key.filter(),
            superseded_by__isnull=True,
            upload__status=Upload.Status.SUCCEEDED,
        ).exclude(upload=upload).update(superseded_by=upload)


def charges_release(*, upload: Upload) -> None:
    """Before `upload` is deleted: what it superseded goes to its own successor, else back to
    current. Call inside the deleting transaction."""
    keys = _keys_of(upload)
    _lock(keys)
    # Read after locking: an upload that landed meanwhile may have superseded this one.
    successors = (
        BillingCharge.objects.filter(upload=upload)
        .values_list(
            "provider", "billing_account", "billing_period_start", "amortized", "superseded_by"
        )
        .distinct()
        .order_by()
    )
    for provider, account, period_start, amortized, successor in successors:
        key = Key(provider, account, period_start, amortized)
        BillingCharge.objects.filter(key.filter(), superseded_by=upload).update(
            superseded_by=successor
        )
