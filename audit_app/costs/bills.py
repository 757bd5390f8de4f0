"""Reads over billing exports as uploaded: the bills as they stand once restated exports are
resolved (`bills_summary`, behind `manage.py bills` and `GET /api/v1/bills/`), and what one
billing upload holds (`upload_billing`, behind its page and the upload API).

A bill period is one (provider, billing account, billing period) of actual-cost charges, or of
amortized-cost charges (`cost_basis`): only its current charges count, those no restated export
replaced (`audit_app.ingestion.supersession`); a split export's uploads count together. Billed
cost comes from actual-cost charges alone. Effective cost comes from the amortized export when
one covers the period (it spreads commitment purchases over usage; the actual export leaves its
commitment rows without one), else from the actual one; lines without an effective cost (AWS CUR
without amortized columns) add nothing to it. Billed cost on lines dated after the last complete
day (`reporting.days`) is also given apart as scheduled: a bill may charge ahead, and no spend
figure counts it until its day completes.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import Count, Max, Q, QuerySet, Sum

from audit_app.costs.billing import pool_charges
from audit_app.costs.restatements import PossibleRestatementOf, possible_restatements
from audit_app.lib.days import complete_until
from audit_app.lib.formatting import decimal_text, money_json
from audit_app.lib.results_cache import cached
from audit_app.models import BillingCharge, ServingPool, Upload

ACTUAL = "actual"
AMORTIZED = "amortized"
MAX_LISTED_SUB_ACCOUNTS = 50
MAX_LISTED_UNKNOWN_METERS = 100

Money = dict[str, Decimal]


def _add(total: Money, currency: str, amount: Decimal | None) -> None:
    if amount is not None:
        total[currency] = total.get(currency, Decimal(0)) + amount


def _basis(amortized: bool) -> str:
    return AMORTIZED if amortized else ACTUAL


# --- The bills as they stand ---------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class BillPeriod:
    """One account's billing period of one cost basis, as its current charges state it."""

    provider: str
    account: str
    period_start: datetime
    period_end: datetime  # exclusive
    cost_basis: str
    billed_cost: Money  # empty for an amortized period: it holds no billed cost
    effective_cost: Money
    upload_id: int  # the newest upload whose charges count
    superseded_upload_ids: list[int]
    scheduled_cost: Money = field(default_factory=dict)  # billed, dated after the last complete day
    # Every upload whose charges count: more than one for a split export (`supersession`).
    upload_ids: list[int] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "account": self.account,
            "period_start": self.period_start.date().isoformat(),
            "period_end": self.period_end.date().isoformat(),
            "cost_basis": self.cost_basis,
            "billed_cost": money_json(self.billed_cost),
            "scheduled_cost": money_json(self.scheduled_cost),
            "effective_cost": money_json(self.effective_cost),
            "upload_id": self.upload_id,
            "upload_ids": self.upload_ids,
            "superseded_upload_ids": self.superseded_upload_ids,
        }


@dataclass(frozen=True, kw_only=True)
class BillsSummary:
    billed_cost: Money
    effective_cost: Money
    periods: list[BillPeriod]
    scheduled_cost: Money = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """What `manage.py bills --json` prints and `GET /api/v1/bills/` answers."""
        return {
            "billed_cost": money_json(self.billed_cost),
            "scheduled_cost": money_json(self.scheduled_cost),
            "effective_cost": money_json(self.effective_cost),
            "periods": [period.as_json() for period in self.periods],
        }


@dataclass
class _PeriodParts:
    period_end: datetime | None = None
    billed: Money = field(default_factory=dict)
    scheduled: Money = field(default_factory=dict)
    effective: Money = field(default_factory=dict)
    current_upload_ids: set[int] = field(default_factory=set)
    superseded_upload_ids: set[int] = field(default_factory=set)


def bills_summary() -> BillsSummary:
    """Every bill period of the landed billing uploads, current charges only (cached per data
    version and day: it reads every charge)."""
    until = complete_until()
    return cached("bills_summary", f"{until:%Y-%m-%d}", lambda: _bills_summary(until))


def _bills_summary(until: datetime) -> BillsSummary:
    rows = (
        BillingCharge.objects.filter(upload__status=Upload.Status.SUCCEEDED)
        .values(
            "provider",
            "billing_account",
            "billing_period_start",
            "amortized",
            "upload_id",
            "superseded_by",
            "currency",
        )
        .annotate(
            billed=Sum("billed_cost"),
            scheduled=Sum("billed_cost", filter=Q(period_start__gte=until)),
            effective=Sum("effective_cost"),
            period_end=Max("billing_period_end"),
        )
        .order_by()
    )
    parts: dict[tuple[str, str, datetime, bool], _PeriodParts] = defaultdict(_PeriodParts)
    for row in rows:
        part = parts[
            (row["provider"], row["billing_account"], row["billing_period_start"], row["amortized"])
        ]
        if row["superseded_by"] is not None:
            part.superseded_upload_ids.add(row["upload_id"])
            continue
        part.current_upload_ids.add(row["upload_id"])
        if not row["amortized"]:
            _add(part.billed, row["currency"], row["billed"])
            _add(part.scheduled, row["currency"], row["scheduled"])
        _add(part.effective, row["currency"], row["effective"])
        if part.period_end is None or row["period_end"] > part.period_end:
            part.period_end = row["period_end"]

    periods = []
    for (provider, account, start, amortized), part in parts.items():
        if not part.current_upload_ids or part.period_end is None:
            continue  # only superseded charges: cannot happen through the services
        periods.append(
            BillPeriod(
                provider=provider,
                account=account,
                period_start=start,
                period_end=part.period_end,
                cost_basis=_basis(amortized),
                billed_cost=part.billed,
                effective_cost=part.effective,
                upload_id=max(part.current_upload_ids),
                upload_ids=sorted(part.current_upload_ids),
                superseded_upload_ids=sorted(part.superseded_upload_ids),
                scheduled_cost=part.scheduled,
            )
        )
    periods.sort(key=lambda p: (p.period_start, p.provider, p.account, p.cost_basis))

    billed: Money = {}
    scheduled: Money = {}
    effective: Money = {}
    amortized_keys = {
        (p.provider, p.account, p.period_start) for p in periods if p.cost_basis == AMORTIZED
    }
    for period in periods:
        for currency, amount in period.billed_cost.items():
            _add(billed, currency, amount)
        for currency, amount in period.scheduled_cost.items():
            _add(scheduled, currency, amount)
        key = (period.provider, period.account, period.period_start)
        if period.cost_basis == AMORTIZED or key not in amortized_keys:
            for currency, amount in period.effective_cost.items():
                _add(effective, currency, amount)
    return BillsSummary(
        billed_cost=billed, effective_cost=effective, periods=periods, scheduled_cost=scheduled
    )


# --- One billing upload ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class UploadPeriod:
    """A billing period the upload holds, and whether its charges still count."""

    provider: str
    account: str
    period_start: datetime
    period_end: datetime
    cost_basis: str
    lines: int
    billed_cost: Money
    effective_cost: Money
    superseded_by_id: int | None
    superseded_by_name: str

    @property
    def current(self) -> bool:
        return self.superseded_by_id is None


@dataclass(frozen=True, kw_only=True)
class ReplacedPeriod:
    """A billing period of an earlier upload that this upload superseded."""

    upload_id: int
    upload_name: str
    provider: str
    account: str
    period_start: datetime
    period_end: datetime
    lines: int
    # Billed cost per currency of the period: as the earlier upload had it, and as this one has
    # it (a restated day of a provider report shows here when they differ).
    billed_before: Money = field(default_factory=dict)
    billed_after: Money = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return self.billed_before != self.billed_after


@dataclass(frozen=True, kw_only=True)
class PoolMatch:
    pool: str
    currency: str
    lines: int
    billed_cost: Decimal
    effective_cost: Decimal | None


@dataclass(frozen=True, kw_only=True)
class UploadMeter:
    provider: str
    sku: str
    currency: str
    lines: int
    billed_cost: Decimal


@dataclass(frozen=True, kw_only=True)
class UploadBilling:
    """What a billing upload holds, for its page and the upload API."""

    billed_cost: Money
    effective_cost: Money
    cost_basis: str
    notes: list[str]
    periods: list[UploadPeriod]
    billing_accounts: list[str]
    sub_accounts: list[str]  # the first MAX_LISTED_SUB_ACCOUNTS
    sub_account_count: int
    pools: list[PoolMatch]
    unknown_meter_lines: int
    unknown_meters: list[UploadMeter]  # the first MAX_LISTED_UNKNOWN_METERS, largest first
    replaced: list[ReplacedPeriod]
    possible_restatements: list[PossibleRestatementOf] = field(default_factory=list)

    @property
    def restated(self) -> list[ReplacedPeriod]:
        """The replaced periods whose billed cost this upload changed."""
        return [r for r in self.replaced if r.changed]

    @property
    def superseded(self) -> str:
        """ "wholly", "partly" or "" (every period still counts)."""
        superseded = [p for p in self.periods if not p.current]
        if not superseded:
            return ""
        return "wholly" if len(superseded) == len(self.periods) else "partly"

    @property
    def superseding_upload_ids(self) -> list[int]:
        return sorted({p.superseded_by_id for p in self.periods if p.superseded_by_id})

    @property
    def superseding_uploads(self) -> list[tuple[int, str]]:
        """(id, file name) of each upload that restates some of this upload's periods."""
        names = {p.superseded_by_id: p.superseded_by_name for p in self.periods}
        return [(pk, names[pk]) for pk in self.superseding_upload_ids]

    @property
    def open_restatements(self) -> list[PossibleRestatementOf]:
        return [p for p in self.possible_restatements if p.open]

    @property
    def decided_restatements(self) -> list[PossibleRestatementOf]:
        return [p for p in self.possible_restatements if not p.open]

    @property
    def totals(self) -> list[tuple[str, Decimal | None, Decimal | None]]:
        """(currency, billed, effective) as landed; None where the upload has no such cost."""
        currencies = sorted(set(self.billed_cost) | set(self.effective_cost))
        return [(c, self.billed_cost.get(c), self.effective_cost.get(c)) for c in currencies]

    def as_json(self) -> dict[str, Any]:
        return {
            "billed_cost": money_json(self.billed_cost),
            "effective_cost": money_json(self.effective_cost),
            "cost_basis": self.cost_basis,
            "notes": self.notes,
            "superseded": self.superseded,
            "superseding_upload_ids": self.superseding_upload_ids,
            "periods": [
                {
                    "provider": p.provider,
                    "account": p.account,
                    "period_start": p.period_start.date().isoformat(),
                    "period_end": p.period_end.date().isoformat(),
                    "cost_basis": p.cost_basis,
                    "lines": p.lines,
                    "billed_cost": money_json(p.billed_cost),
                    "effective_cost": money_json(p.effective_cost),
                    "current": p.current,
                    "superseded_by_upload_id": p.superseded_by_id,
                }
                for p in self.periods
            ],
            "billing_accounts": self.billing_accounts,
            "sub_accounts": self.sub_accounts,
            "sub_account_count": self.sub_account_count,
            "pools": [
                {
                    "pool": m.pool,
                    "currency": m.currency,
                    "lines": m.lines,
                    "billed_cost": decimal_text(m.billed_cost),
                    "effective_cost": (
                        None if m.effective_cost is None else decimal_text(m.effective_cost)
                    ),
                }
                for m in self.pools
            ],
            "unknown_meter_lines": self.unknown_meter_lines,
            "unknown_meters": [
                {
                    "provider": m.provider,
                    "sku": m.sku,
                    "currency": m.currency,
                    "lines": m.lines,
                    "billed_cost": decimal_text(m.billed_cost),
                }
                for m in self.unknown_meters
            ],
            "replaced": [
                {
                    "upload_id": r.upload_id,
                    "upload_name": r.upload_name,
                    "provider": r.provider,
                    "account": r.account,
                    "period_start": r.period_start.date().isoformat(),
                    "period_end": r.period_end.date().isoformat(),
                    "lines": r.lines,
                    "billed_before": money_json(r.billed_before),
                    "billed_after": money_json(r.billed_after),
                    "changed": r.changed,
                }
                for r in self.replaced
            ],
            "possible_restatements": [
                {
                    "other_upload_id": p.other_id,
                    "other_upload_name": p.other_name,
                    "this_upload_is": "newer" if p.newer else "older",
                    "earlier_charge_keys": p.earlier_keys,
                    "shared_charge_keys": p.shared_keys,
                    "decision": p.decision,
                    "decided_by": p.decided_by or None,
                    "decided_at": p.decided_at.isoformat() if p.decided_at else None,
                }
                for p in self.possible_restatements
            ],
        }


@dataclass
class _UploadPeriodParts:
    lines: int = 0
    period_end: datetime | None = None
    billed: Money = field(default_factory=dict)
    effective: Money = field(default_factory=dict)
    superseded_by_id: int | None = None
    superseded_by_name: str = ""


def _money_of(totals: dict[str, str]) -> Money:
    return {currency: Decimal(amount) for currency, amount in totals.items()}


def _upload_periods(charges: QuerySet[BillingCharge]) -> list[UploadPeriod]:
    """The upload's (provider, account, period, cost basis) parts with their line counts,
    totals and whether a newer upload superseded them, by period start."""
    parts: dict[tuple[str, str, datetime, bool], _UploadPeriodParts] = defaultdict(
        _UploadPeriodParts
    )
    for row in (
        charges.values(
            "provider",
            "billing_account",
            "billing_period_start",
            "amortized",
            "superseded_by",
            "superseded_by__original_name",
            "currency",
        )
        .annotate(
            n=Count("id"),
            billed=Sum("billed_cost"),
            effective=Sum("effective_cost"),
            end=Max("billing_period_end"),
        )
        .order_by()
    ):
        part = parts[
            (row["provider"], row["billing_account"], row["billing_period_start"], row["amortized"])
        ]
        part.lines += row["n"]
        if part.period_end is None or row["end"] > part.period_end:
            part.period_end = row["end"]
        part.superseded_by_id = row["superseded_by"]
        part.superseded_by_name = row["superseded_by__original_name"] or ""
        _add(part.billed, row["currency"], row["billed"])
        _add(part.effective, row["currency"], row["effective"])
    return sorted(
        (
            UploadPeriod(
                provider=provider,
                account=account,
                period_start=start,
                period_end=part.period_end or start,
                cost_basis=_basis(amortized),
                lines=part.lines,
                billed_cost=part.billed,
                effective_cost=part.effective,
                superseded_by_id=part.superseded_by_id,
                superseded_by_name=part.superseded_by_name,
            )
            for (provider, account, start, amortized), part in parts.items()
        ),
        key=lambda p: (p.period_start, p.provider, p.account),
    )


def _pool_matches(charges: QuerySet[BillingCharge]) -> list[PoolMatch]:
    """Per serving pool and currency, the upload's lines that pool's filters match."""
    pools = []
    for pool in ServingPool.objects.all():
        for pool_row in (
            pool_charges(pool, charges)
            .values("currency")
            .annotate(n=Count("id"), billed=Sum("billed_cost"), effective=Sum("effective_cost"))
            .order_by("currency")
        ):
            pools.append(
                PoolMatch(
                    pool=pool.name,
                    currency=pool_row["currency"],
                    lines=pool_row["n"],
                    billed_cost=pool_row["billed"],
                    effective_cost=pool_row["effective"],
                )
            )
    return pools


def _unknown_meters(charges: QuerySet[BillingCharge]) -> list[UploadMeter]:
    """Every unknown meter of the upload, the costliest first (all of them, not yet capped)."""
    unknown = (
        charges.filter(meter_kind="unknown")
        .values("provider", "sku", "currency")
        .annotate(n=Count("id"), billed=Sum("billed_cost"))
        .order_by()
    )
    return sorted(
        (
            UploadMeter(
                provider=row["provider"],
                sku=row["sku"],
                currency=row["currency"],
                lines=row["n"],
                billed_cost=row["billed"],
            )
            for row in unknown
        ),
        key=lambda m: (-abs(m.billed_cost), m.provider, m.sku),
    )


def _billed_by_period(charges: QuerySet[BillingCharge]) -> dict[tuple[Any, ...], Money]:
    """Billed cost per (upload, provider, account, period start) and currency."""
    found: dict[tuple[Any, ...], Money] = defaultdict(dict)
    for row in (
        charges.values(
            "upload_id", "provider", "billing_account", "billing_period_start", "currency"
        )
        .annotate(billed=Sum("billed_cost"))
        .order_by()
    ):
        key = (row["upload_id"], row["provider"], row["billing_account"])
        _add(found[(*key, row["billing_period_start"])], row["currency"], row["billed"])
    return found


def _replaced_periods(upload: Upload) -> list[ReplacedPeriod]:
    """The periods of older uploads this upload superseded, with their billed cost before
    and after."""
    replaced = BillingCharge.objects.filter(superseded_by=upload)
    before = _billed_by_period(replaced)
    after = _billed_by_period(BillingCharge.objects.filter(upload=upload))
    return [
        ReplacedPeriod(
            upload_id=row["upload_id"],
            upload_name=row["upload__original_name"],
            provider=row["provider"],
            account=row["billing_account"],
            period_start=row["billing_period_start"],
            period_end=row["end"],
            lines=row["n"],
            billed_before=before.get(
                (
                    row["upload_id"],
                    row["provider"],
                    row["billing_account"],
                    row["billing_period_start"],
                ),
                {},
            ),
            billed_after=after.get(
                (upload.pk, row["provider"], row["billing_account"], row["billing_period_start"]),
                {},
            ),
        )
        for row in replaced.values(
            "upload_id",
            "upload__original_name",
            "provider",
            "billing_account",
            "billing_period_start",
        )
        .annotate(n=Count("id"), end=Max("billing_period_end"))
        .order_by("upload_id", "billing_period_start", "provider", "billing_account")
    ]


def upload_billing(upload: Upload) -> UploadBilling:
    """The billing side of one upload: totals as landed, periods and whether each still counts,
    accounts, serving pools its lines match, unknown meters, what it superseded, and the uploads
    it may restate or be restated by."""
    charges = BillingCharge.objects.filter(upload=upload)
    upload_periods = _upload_periods(charges)
    sub_accounts = charges.exclude(account_id="").values_list("account_id", flat=True)
    meters = _unknown_meters(charges)
    totals = upload.billing_totals or {}
    return UploadBilling(
        billed_cost=_money_of(totals.get("billed", {})),
        effective_cost=_money_of(totals.get("effective", {})),
        cost_basis=totals.get("cost_basis", ACTUAL),
        notes=list(totals.get("notes", [])),
        periods=upload_periods,
        billing_accounts=sorted({p.account for p in upload_periods}),
        sub_accounts=list(sub_accounts.distinct().order_by("account_id")[:MAX_LISTED_SUB_ACCOUNTS]),
        sub_account_count=sub_accounts.distinct().order_by().count(),
        pools=_pool_matches(charges),
        unknown_meter_lines=sum(m.lines for m in meters),
        unknown_meters=meters[:MAX_LISTED_UNKNOWN_METERS],
        replaced=_replaced_periods(upload),
        possible_restatements=possible_restatements(upload),
    )
