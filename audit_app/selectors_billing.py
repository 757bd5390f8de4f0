"""Reads over billing charges: self-hosted pool attribution and invoice reconciliation.

No double counting (DESIGN §3.4): API usage is costed from token logs (the log's cost, else a
price card) because logs say which workload spent it; API bill lines are used to reconcile those
estimates, never added to them. Self-hosted usage is costed only from GPU bills, spread over the
workloads a pool served; its requests are never priced from price cards.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import TruncDate

from audit_app.attribution import PoolAttribution, attribute_pool, spread_over_hours
from audit_app.models import BillingCharge, HourlyRollup, ServingPool, Upload
from audit_app.pricing import normalize_model, normalize_provider
from audit_app.results_cache import cached
from audit_app.selectors import priced_groups, rollups_in_range

DEFAULT_THRESHOLD_PERCENT = Decimal(5)
_MODEL_BOUNDARY = frozenset("-:@.")


def _bounds(start: date, end: date) -> tuple[datetime, datetime]:
    return (
        datetime.combine(start, time.min, tzinfo=UTC),
        datetime.combine(end + timedelta(days=1), time.min, tzinfo=UTC),
    )


def charges_in_range(*, start: date, end: date) -> QuerySet[BillingCharge]:
    """Billed charges over start..end: of landed uploads, not superseded by a restated export,
    and not from an amortized-cost export (whose billed cost is 0 by construction)."""
    low, high = _bounds(start, end)
    return BillingCharge.objects.filter(
        upload__status=Upload.Status.SUCCEEDED,
        superseded_by__isnull=True,
        amortized=False,
        period_start__lt=high,
        period_end__gt=low,
    )


def pooled_models() -> dict[str, str]:
    """Model name -> pool, for requests logged without a pool."""
    mapping: dict[str, str] = {}
    for pool in ServingPool.objects.all():
        for model in pool.models_served:
            mapping[str(model)] = pool.name
    return mapping


def pool_rollups(pool: ServingPool, queryset: QuerySet[HourlyRollup]) -> QuerySet[HourlyRollup]:
    served = Q(pool=pool.name)
    if pool.models_served:
        served |= Q(pool="", model__in=list(pool.models_served))
    return queryset.filter(served)


def pool_charges(pool: ServingPool, queryset: QuerySet[BillingCharge]) -> QuerySet[BillingCharge]:
    matches = Q(resource_id__in=list(pool.resource_ids)) if pool.resource_ids else Q(pk__in=[])
    if pool.tag_key:
        matches |= Q(**{f"tags__{pool.tag_key}": pool.tag_value})
    return queryset.filter(matches)


@dataclass(frozen=True, kw_only=True)
class PoolReport:
    pool: ServingPool
    currency: str
    attribution: PoolAttribution
    instance_types: list[str]
    upload_ids: list[int]


def pool_reports(*, start: date, end: date) -> list[PoolReport]:
    """Each pool's bill over start..end, spread hour by hour over the workloads it served
    (cached per data version: it reads every hourly charge and rollup of the pools)."""
    return cached("pool_reports", f"{start}|{end}", lambda: _pool_reports(start, end))


def _pool_reports(start: date, end: date) -> list[PoolReport]:
    low, high = _bounds(start, end)
    reports = []
    rollups = rollups_in_range(start=start, end=end)
    for pool in ServingPool.objects.all():
        charges = pool_charges(pool, charges_in_range(start=start, end=end))
        by_currency: dict[str, list[tuple[datetime, datetime, Decimal]]] = defaultdict(list)
        instance_types: set[str] = set()
        upload_ids: set[int] = set()
        for charge in charges.only(
            "period_start", "period_end", "billed_cost", "currency", "instance_type", "upload_id"
        ):
            by_currency[charge.currency].append(
                (charge.period_start, charge.period_end, charge.billed_cost)
            )
            if charge.instance_type:
                instance_types.add(charge.instance_type)
            upload_ids.add(charge.upload_id)
        tokens: dict[datetime, dict[str, int]] = defaultdict(dict)
        for row in (
            pool_rollups(pool, rollups)
            .values("hour", "workload")
            .annotate(i=Sum("input_tokens"), o=Sum("output_tokens"))
            .order_by()
        ):
            tokens[row["hour"]][row["workload"]] = row["i"] + row["o"]
        for currency, items in sorted(by_currency.items()):
            hourly = {h: c for h, c in spread_over_hours(items).items() if low <= h < high}
            reports.append(
                PoolReport(
                    pool=pool,
                    currency=currency,
                    attribution=attribute_pool(
                        hourly_cost=hourly,
                        hourly_tokens=tokens,
                        capacity_tokens_per_hour=pool.capacity_tokens_per_hour,
                    ),
                    instance_types=sorted(instance_types),
                    upload_ids=sorted(upload_ids),
                )
            )
    return reports


def attributed_gpu_cost_by_workload(reports: list[PoolReport]) -> dict[str, Decimal]:
    """USD attributed to each workload across pools (other currencies are not converted)."""
    totals: dict[str, Decimal] = defaultdict(Decimal)
    for report in reports:
        if report.currency == "USD":
            for workload, amount in report.attribution.by_workload.items():
                totals[workload] += amount
    return dict(totals)


# --- Reconciliation -----------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class ReconciliationRow:
    provider: str
    model: str
    day: date
    currency: str
    billed: Decimal
    estimated: Decimal | None  # None: the logs have no request for this provider/model/day
    bill_upload_ids: list[int]
    log_upload_ids: list[int]
    threshold_percent: Decimal
    unpriced_requests: int = 0  # log requests of this line with no cost and no price card

    @property
    def note(self) -> str:
        if self.estimated is None:
            return "no requests in the token logs"
        if self.unpriced_requests:
            return f"{self.unpriced_requests} logged requests have no price card"
        if not self.billed:
            return "not on the bill"
        return ""

    @property
    def variance(self) -> Decimal:
        return self.billed - (self.estimated or Decimal(0))

    @property
    def variance_percent(self) -> Decimal | None:
        if not self.estimated:
            return None
        return self.variance / self.estimated * 100

    @property
    def flagged(self) -> bool:
        percent = self.variance_percent
        if percent is None:
            return bool(self.billed or self.estimated)
        return abs(percent) > self.threshold_percent


def _bill_provider(charge: dict[str, Any]) -> str:
    provider = charge["provider"]
    service = (charge["service"] or "").lower()
    if provider == "aws" and "bedrock" in service:
        return "aws-bedrock"
    if provider == "azure":
        return "azure-openai"
    if provider == "gcp" and "vertex" in service:
        return "gcp-vertex"
    return normalize_provider(provider)


def _same_model(bill_model: str, log_model: str) -> bool:
    if bill_model == log_model:
        return True
    shorter, longer = sorted((bill_model, log_model), key=len)
    return bool(shorter) and longer.startswith(shorter) and longer[len(shorter)] in _MODEL_BOUNDARY


@dataclass
class _Side:
    amount: Decimal = Decimal(0)
    uploads: set[int] = field(default_factory=set)
    unpriced_requests: int = 0


def reconciliation(
    *, start: date, end: date, threshold_percent: Decimal = DEFAULT_THRESHOLD_PERCENT
) -> list[ReconciliationRow]:
    """Billed token charges vs the token-log estimate per provider x model x day."""
    bills: dict[tuple[str, str, date, str], _Side] = defaultdict(_Side)
    charges = (
        charges_in_range(start=start, end=end)
        .filter(meter_kind="token")
        .annotate(day=TruncDate("period_start"), log_model=KeyTextTransform("model", "tags"))
        .values("provider", "service", "day", "currency", "meter_model", "log_model", "upload_id")
        .annotate(billed=Sum("billed_cost"))
        .order_by()
    )
    for charge in charges:
        if not start <= charge["day"] <= end:
            continue
        model = normalize_model(charge["log_model"] or charge["meter_model"])
        side = bills[(_bill_provider(charge), model, charge["day"], charge["currency"])]
        side.amount += charge["billed"]
        side.uploads.add(charge["upload_id"])

    estimates: dict[tuple[str, str, date], _Side] = defaultdict(_Side)
    pooled = set(pooled_models())
    rollups = rollups_in_range(start=start, end=end).filter(pool="").exclude(model__in=pooled)
    for group in priced_groups(rollups, ["provider", "model", "day", "upload_id"]):
        provider, model, day, upload_id = group.dims
        side = estimates[(normalize_provider(provider), normalize_model(model), day)]
        side.amount += group.spend_usd
        side.uploads.add(upload_id)
        side.unpriced_requests += group.unpriced_requests

    # Each log model goes to the bill line whose model names it most closely: equal, else the
    # longest bill model it extends at a boundary (gpt-4o-2024-08-06 -> gpt-4o, never
    # gpt-4o-mini -> gpt-4o when a gpt-4o-mini line exists).
    attached: dict[tuple[str, str, date, str], list[tuple[str, str, date]]] = defaultdict(list)
    unmatched: list[tuple[str, str, date]] = []
    for key in estimates:
        provider, model, day = key
        candidates = [
            b
            for b in bills
            if b[0] == provider
            and b[2] == day
            and _same_model(b[1], model)
            and len(b[1]) <= len(model)
        ]
        usd = [b for b in candidates if b[3] == "USD"] or candidates
        if usd:
            attached[max(usd, key=lambda b: len(b[1]))].append(key)
        else:
            unmatched.append(key)

    rows: list[ReconciliationRow] = []
    for bill_key, bill in bills.items():
        provider, model, day, currency = bill_key
        keys = attached.get(bill_key, [])
        estimate = sum((estimates[k].amount for k in keys), Decimal(0)) if keys else None
        rows.append(
            ReconciliationRow(
                provider=provider,
                model=model,
                day=day,
                currency=currency,
                billed=bill.amount,
                estimated=estimate if currency == "USD" or estimate is None else None,
                bill_upload_ids=sorted(bill.uploads),
                log_upload_ids=sorted({u for k in keys for u in estimates[k].uploads}),
                threshold_percent=threshold_percent,
            )
        )
    for key in unmatched:
        side = estimates[key]
        if not side.amount:
            continue
        provider, model, day = key
        rows.append(
            ReconciliationRow(
                provider=provider,
                model=model,
                day=day,
                currency="USD",
                billed=Decimal(0),
                estimated=side.amount,
                bill_upload_ids=[],
                log_upload_ids=sorted(side.uploads),
                threshold_percent=threshold_percent,
            )
        )
    rows.sort(key=lambda r: (not r.flagged, -abs(r.variance), r.day, r.provider, r.model))
    return rows


@dataclass(frozen=True, kw_only=True)
class UnknownMeter:
    provider: str
    sku: str
    currency: str
    lines: int
    billed: Decimal
    upload_ids: list[int]


def unknown_meters(*, start: date, end: date) -> list[UnknownMeter]:
    """AI-looking meters the parser could not read: kept with their raw text, listed here."""
    rows = (
        charges_in_range(start=start, end=end)
        .filter(meter_kind="unknown")
        .values("provider", "sku", "currency", "upload_id")
        .annotate(n=Count("id"), billed=Sum("billed_cost"))
        .order_by()
    )
    merged: dict[tuple[str, str, str], list[Any]] = {}
    for row in rows:
        entry = merged.setdefault(
            (row["provider"], row["sku"], row["currency"]), [0, Decimal(0), set()]
        )
        entry[0] += row["n"]
        entry[1] += row["billed"]
        entry[2].add(row["upload_id"])
    return sorted(
        (
            UnknownMeter(
                provider=p, sku=s, currency=c, lines=v[0], billed=v[1], upload_ids=sorted(v[2])
            )
            for (p, s, c), v in merged.items()
        ),
        key=lambda m: -abs(m.billed),
    )
