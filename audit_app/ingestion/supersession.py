"""Restated billing exports: a newer upload that restates an older one's charges replaces them.

Charges are grouped by a period key, (provider, billing account, billing period start,
amortized). When a billing upload lands, each other landed upload with current charges of one of
its period keys is compared with it on that key (`restatement_verdict`, the rule and its
threshold in `docs/methods.md`, "Restated and split billing exports"): a restatement's charges
replace the older ones (`superseded_by` = the new upload); a split export (other charges of the
same account and month) counts beside them; a case in between counts beside them too and is
recorded as a `PossibleRestatement` for a person to decide (`supersession_mark`,
`supersession_keep_both`).

`superseded_by` links form a chain per key (A -> B -> C, C current). Deleting an upload splices
it out: charges it had superseded are handed to whatever superseded it, or become current
when nothing did, so deleting the newest upload brings the previous one back.

Every write runs inside the caller's transaction (or its own) and first locks one
`BillingPeriodKey` row per key, so on PostgreSQL two uploads of the same period land (or one
lands, is decided on or deleted while another is) one after the other, each seeing what the
other committed; keys are locked in one sorted order so two writers cannot deadlock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import NamedTuple

from django.db import transaction
from django.db.models import Q, QuerySet
from django.db.models.functions import TruncDate
from django.utils import timezone

from audit_app.access.audit import audit_record
from audit_app.access.permissions import Actor
from audit_app.lib.errors import DomainError, ErrorKind
from audit_app.lib.results_cache import data_changed
from audit_app.models import (
    AuditEvent,
    BillingCharge,
    BillingPeriodKey,
    PossibleRestatement,
    Upload,
)

# What one charge is, whatever it cost and whichever day it ran: the sub-account, the service,
# the SKU or meter, the charge's description (which names the SKU where the meter does not: a
# FOCUS `SkuMeter` of "Input Tokens" is every model's), the resource and the charge category.
CHARGE_KEY_FIELDS = (
    "account_id",
    "service",
    "sku",
    "description",
    "resource_id",
    "charge_category",
)
# A newer upload restates an older one when it holds at least this share of the older one's
# distinct charge keys (as a fraction: numerator, denominator).
RESTATEMENT_MIN_SHARE = (4, 5)


class Key(NamedTuple):
    provider: str
    billing_account: str
    billing_period_start: datetime
    amortized: bool

    def filter(self) -> Q:
        return Q(**self._asdict())


class Verdict(StrEnum):
    RESTATES = "restates"  # the newer upload's charges replace the older one's
    SEPARATE = "separate"  # both count: other charges (a split export) or other days
    UNSURE = "unsure"  # both count, and a person is asked


def restatement_verdict(*, earlier_keys: int, shared_keys: int, shared_days: bool) -> Verdict:
    """Whether a newer upload restates an older one on one period key. Pure.

    ``earlier_keys``: the older upload's distinct charge keys there; ``shared_keys``: how many
    of them the newer upload holds too; ``shared_days``: whether both hold a charge starting on
    the same UTC day. No shared charge key, or no shared day, is a separate export; at least
    RESTATEMENT_MIN_SHARE of the older keys is a restatement; anything between is unsure.
    """
    if shared_keys == 0 or not shared_days:
        return Verdict.SEPARATE
    numerator, denominator = RESTATEMENT_MIN_SHARE
    if shared_keys * denominator >= earlier_keys * numerator:
        return Verdict.RESTATES
    return Verdict.UNSURE


@dataclass(frozen=True, kw_only=True)
class Overlap:
    earlier_keys: int
    shared_keys: int
    shared_days: bool

    @property
    def verdict(self) -> Verdict:
        return restatement_verdict(
            earlier_keys=self.earlier_keys,
            shared_keys=self.shared_keys,
            shared_days=self.shared_days,
        )


def charges_overlap(earlier: QuerySet[BillingCharge], newer: QuerySet[BillingCharge]) -> Overlap:
    """How far two sets of charges of one period key hold the same charges (counted by the
    database: INTERSECT of distinct charge keys and of charge days)."""
    earlier_keys = earlier.values_list(*CHARGE_KEY_FIELDS)
    newer_keys = newer.values_list(*CHARGE_KEY_FIELDS)
    day = TruncDate("period_start", tzinfo=UTC)
    earlier_days = earlier.annotate(day=day).values_list("day")
    newer_days = newer.annotate(day=day).values_list("day")
    return Overlap(
        earlier_keys=earlier_keys.distinct().count(),
        shared_keys=earlier_keys.intersection(newer_keys).count(),
        shared_days=earlier_days.intersection(newer_days).exists(),
    )


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


def _current(key: Key) -> QuerySet[BillingCharge]:
    """The charges of `key` that count: of landed uploads, superseded by nothing."""
    return BillingCharge.objects.filter(
        key.filter(), superseded_by__isnull=True, upload__status=Upload.Status.SUCCEEDED
    )


def charges_supersede(*, upload: Upload) -> None:
    """The landing upload replaces the current charges it restates, and records the earlier
    uploads it may restate (`restatement_verdict`).

    Call inside the transaction that marks `upload` succeeded, after its charges are written.
    """
    keys = _keys_of(upload)
    _lock(keys)
    unsure: dict[int, list[int]] = {}
    for key in keys:
        mine = BillingCharge.objects.filter(key.filter(), upload=upload)
        others = _current(key).exclude(upload=upload)
        earlier_ids = others.values_list("upload_id", flat=True).distinct().order_by("upload_id")
        for earlier_id in list(earlier_ids):
            theirs = others.filter(upload_id=earlier_id)
            overlap = charges_overlap(theirs, mine)
            if overlap.verdict == Verdict.RESTATES:
                theirs.update(superseded_by=upload)
            elif overlap.verdict == Verdict.UNSURE:
                counts = unsure.setdefault(earlier_id, [0, 0])
                counts[0] += overlap.earlier_keys
                counts[1] += overlap.shared_keys
    for earlier_id, (earlier_keys, shared_keys) in sorted(unsure.items()):
        PossibleRestatement.objects.update_or_create(
            upload=upload,
            earlier_id=earlier_id,
            defaults={"earlier_keys": earlier_keys, "shared_keys": shared_keys},
        )


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


# --- Decided by a person -------------------------------------------------------------------------


class SupersessionRefused(DomainError):
    """A decision about two billing uploads that their state refuses."""

    kind = ErrorKind.CONFLICT


def _shared_keys(one: Upload, other: Upload) -> list[Key]:
    """The period keys both uploads hold; refuses uploads that are not two landed billing
    exports sharing one."""
    if one.pk == other.pk:
        raise SupersessionRefused(
            f"Upload {one.pk} cannot restate itself: name another upload.",
            kind=ErrorKind.INVALID,
        )
    for upload in (one, other):
        if upload.kind != Upload.Kind.BILLING or upload.status != Upload.Status.SUCCEEDED:
            raise SupersessionRefused(
                f"Upload {upload.pk} ({upload.original_name}) is not a landed billing export, "
                "so it restates nothing and nothing restates it."
            )
    shared = sorted(set(_keys_of(one)) & set(_keys_of(other)))
    if not shared:
        raise SupersessionRefused(
            f"Uploads {one.pk} and {other.pk} share no billing period (provider, billing "
            "account, period and cost basis), so neither can restate the other."
        )
    return shared


def _still_there(*uploads: Upload) -> None:
    """Read after locking: an upload deleted meanwhile has no charges left to decide on."""
    found = set(Upload.objects.filter(pk__in=[u.pk for u in uploads]).values_list("pk", flat=True))
    for upload in uploads:
        if upload.pk not in found:
            raise SupersessionRefused(
                f"Upload {upload.pk} was deleted meanwhile.", kind=ErrorKind.NOT_FOUND
            )


def _charges(key: Key, upload: Upload) -> QuerySet[BillingCharge]:
    return BillingCharge.objects.filter(key.filter(), upload=upload)


def _record_decision(
    *, one: Upload, other: Upload, decision: str, user: Actor
) -> PossibleRestatement:
    """The pair's row (in whichever order it was recorded) with `decision`, said of ``one``
    superseding ``other`` (SUPERSEDES) or of both counting (KEEP_BOTH)."""
    pair = PossibleRestatement.objects.filter(
        Q(upload=one, earlier=other) | Q(upload=other, earlier=one)
    ).first()
    if pair is None:
        pair = PossibleRestatement(upload=one, earlier=other)
    if decision == PossibleRestatement.Decision.SUPERSEDES and pair.upload_id != one.pk:
        decision = PossibleRestatement.Decision.SUPERSEDED  # said of the row's own order
    pair.decision = decision
    pair.decided_by = user if user is not None and user.is_authenticated else None
    pair.decided_at = timezone.now()
    pair.save()
    return pair


@transaction.atomic
def supersession_mark(*, superseding: Upload, superseded: Upload, user: Actor) -> int:
    """A person says ``superseding`` restates ``superseded``: on every period key they share,
    the current charges of ``superseded`` stop counting in favour of ``superseding``'s. Where
    ``superseded`` had superseded ``superseding`` the link is turned round. Audited; derived
    results refresh. Returns the number of charges whose supersession changed.

    Refused (SupersessionRefused) for uploads that are not landed billing exports sharing a
    period, and when ``superseding`` itself counts on none of the shared keys (a third upload
    superseded it there: decide about that one instead).
    """
    shared = _shared_keys(superseding, superseded)
    _lock(shared)
    _still_there(superseding, superseded)
    changed = 0
    counts_somewhere = False
    for key in shared:
        mine = _charges(key, superseding)
        theirs = _charges(key, superseded)
        turned = mine.filter(superseded_by=superseded)
        if turned.exists() and theirs.filter(superseded_by__isnull=True).exists():
            changed += turned.update(superseded_by=None)
        if not mine.filter(superseded_by__isnull=False).exists():
            counts_somewhere = True
            changed += theirs.filter(superseded_by__isnull=True).update(superseded_by=superseding)
    if not counts_somewhere:
        successor = (
            BillingCharge.objects.filter(upload=superseding, superseded_by__isnull=False)
            .values_list("superseded_by", flat=True)
            .first()
        )
        raise SupersessionRefused(
            f"Upload {superseding.pk} no longer counts for any billing period it shares with "
            f"upload {superseded.pk}: upload {successor} supersedes it there. Decide about "
            f"upload {successor} instead."
        )
    _record_decision(
        one=superseding,
        other=superseded,
        decision=PossibleRestatement.Decision.SUPERSEDES,
        user=user,
    )
    audit_record(
        actor=user,
        action=AuditEvent.Action.RESTATEMENT_DECIDED,
        obj=superseding,
        summary=(
            f"marked upload {superseding.pk} ({superseding.original_name}) as superseding "
            f"upload {superseded.pk} ({superseded.original_name})"
        ),
        details={
            "decision": "supersedes",
            "upload": superseding.pk,
            "other": superseded.pk,
            "charges_changed": changed,
        },
    )
    if changed:
        data_changed()
    return changed


@transaction.atomic
def supersession_keep_both(*, upload: Upload, other: Upload, user: Actor) -> int:
    """A person says neither upload restates the other: on every period key they share, the
    charges one had superseded of the other count again. Audited; derived results refresh.
    Returns the number of charges that count again."""
    shared = _shared_keys(upload, other)
    _lock(shared)
    _still_there(upload, other)
    changed = 0
    for key in shared:
        changed += _charges(key, other).filter(superseded_by=upload).update(superseded_by=None)
        changed += _charges(key, upload).filter(superseded_by=other).update(superseded_by=None)
    _record_decision(
        one=upload, other=other, decision=PossibleRestatement.Decision.KEEP_BOTH, user=user
    )
    audit_record(
        actor=user,
        action=AuditEvent.Action.RESTATEMENT_DECIDED,
        obj=upload,
        summary=(
            f"kept both upload {upload.pk} ({upload.original_name}) and upload {other.pk} "
            f"({other.original_name}) counting"
        ),
        details={
            "decision": "keep_both",
            "upload": upload.pk,
            "other": other.pk,
            "charges_changed": changed,
        },
    )
    if changed:
        data_changed()
    return changed
