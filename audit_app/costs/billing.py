"""Reads over billing charges: self-hosted pool attribution and invoice reconciliation.

No double counting (`docs/methods.md`, "Cost attribution"): API usage is costed from token logs
(the log's cost, else a price card) because logs say which workload spent it; API bill lines are
used to reconcile those estimates, never added to them. Self-hosted usage is costed only from
GPU bills, spread over the workloads a pool served; its requests are never priced from price
cards.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import TruncDate

from audit_app.costs.attribution import PoolAttribution, attribute_pool, spread_over_hours
from audit_app.costs.model_names import canonical_model, served_names
from audit_app.costs.pricing import normalize_model
from audit_app.costs.providers import normalize_provider, usage_provider
from audit_app.costs.rollups import hosted_pooled_q, priced_groups, rollups_in_range
from audit_app.lib.days import complete_until
from audit_app.lib.query_params import QueryParams, bool_param, decimal_param
from audit_app.lib.results_cache import cached
from audit_app.models import BillingCharge, HourlyRollup, ServingPool, Upload

DEFAULT_THRESHOLD_PERCENT = Decimal(5)
MAX_THRESHOLD_PERCENT = Decimal(100_000)


def parse_threshold(params: QueryParams) -> Decimal:
    """Reconciliation's flag threshold in percent (page and API): 0 to MAX_THRESHOLD_PERCENT."""
    return decimal_param(
        params,
        "threshold",
        default=DEFAULT_THRESHOLD_PERCENT,
        minimum=Decimal(0),
        maximum=MAX_THRESHOLD_PERCENT,
    )


def parse_flagged(params: QueryParams) -> bool:
    """``flagged=1`` / ``true`` keeps reconciliation's flagged rows alone (page and API)."""
    return bool_param(params, "flagged")


_MODEL_BOUNDARY = frozenset("-:@.")


def _bounds(start: date, end: date) -> tuple[datetime, datetime]:
    return (
        datetime.combine(start, time.min, tzinfo=UTC),
        datetime.combine(end + timedelta(days=1), time.min, tzinfo=UTC),
    )


def _billed_charges() -> QuerySet[BillingCharge]:
    """Charges of landed uploads, not superseded by a restated export, and not from an
    amortized-cost export (whose billed cost is 0 by construction)."""
    return BillingCharge.objects.filter(
        upload__status=Upload.Status.SUCCEEDED, superseded_by__isnull=True, amortized=False
    )


def charges_in_range(*, start: date, end: date) -> QuerySet[BillingCharge]:
    """Billed charges over start..end (`_billed_charges`)."""
    low, high = _bounds(start, end)
    return _billed_charges().filter(period_start__lt=high, period_end__gt=low)


def scheduled_charges(*, until: datetime) -> QuerySet[BillingCharge]:
    """Billed charges running past ``until`` (`lib.days.complete_until`): the part of
    each after it is scheduled, not yet spent."""
    return _billed_charges().filter(period_end__gt=until)


def pooled_models() -> dict[str, str]:
    """Model name -> pool, for requests logged without a pool."""
    mapping: dict[str, str] = {}
    for pool in ServingPool.objects.all():
        for model in served_names(pool.models_served):
            mapping[model] = pool.name
    return mapping


def pool_rollups(pool: ServingPool, queryset: QuerySet[HourlyRollup]) -> QuerySet[HourlyRollup]:
    served = Q(pool=pool.name)
    if pool.models_served:
        names = served_names(pool.models_served)
        served |= Q(pool="", model__in=names) & ~hosted_pooled_q(names)
    return queryset.filter(served)


def pool_charges(pool: ServingPool, queryset: QuerySet[BillingCharge]) -> QuerySet[BillingCharge]:
    matches = Q(resource_id__in=list(pool.resource_ids)) if pool.resource_ids else Q(pk__in=[])
    if pool.tag_key:
        matches |= Q(**{f"tags__{pool.tag_key}": pool.tag_value})
    return queryset.filter(matches)


# Who used a pool in an hour, as finely as the spend read model needs to group GPU cost.
TrafficKey = tuple[str, str, str, str]  # (workload, team, provider, model)


@dataclass(frozen=True, kw_only=True)
class PoolReport:
    pool: ServingPool
    currency: str
    attribution: PoolAttribution[TrafficKey]  # hours of the window through the last complete day
    instance_types: list[str]
    upload_ids: list[int]
    scheduled: Decimal = Decimal("0.00")  # the pool's bill after the last complete day
    hours_scheduled: int = 0

    @property
    def by_workload(self) -> dict[str, Decimal]:
        """Cents attributed to each workload (largest first), from the same rounded lines."""
        totals: dict[str, Decimal] = defaultdict(Decimal)
        for key, amount in self.attribution.by_workload.items():
            totals[key[0]] += amount
        return dict(sorted(totals.items(), key=lambda item: (-item[1], item[0])))


def pool_reports(*, start: date, end: date) -> list[PoolReport]:
    """Each pool's bill over start..end, spread hour by hour over the traffic it served, up to
    the last complete day; the hours after it are scheduled (cached per data version and day:
    it reads every hourly charge and rollup of the pools)."""
    until = complete_until()
    return cached(
        "pool_reports", f"{start}|{end}|{until:%Y-%m-%d}", lambda: _pool_reports(start, end, until)
    )


def _scheduled(pool: ServingPool, until: datetime) -> dict[str, tuple[Decimal, int]]:
    """Currency -> (cost, hours) of the pool's bill after ``until``."""
    by_currency: dict[str, list[tuple[datetime, datetime, Decimal]]] = defaultdict(list)
    for charge in pool_charges(pool, scheduled_charges(until=until)).only(
        "period_start", "period_end", "billed_cost", "currency"
    ):
        by_currency[charge.currency].append(
            (charge.period_start, charge.period_end, charge.billed_cost)
        )
    found = {}
    for currency, items in by_currency.items():
        later = [cost for hour, cost in spread_over_hours(items).items() if hour >= until]
        found[currency] = (sum(later, Decimal(0)).quantize(Decimal("0.01")), len(later))
    return found


def _pool_reports(start: date, end: date, until: datetime) -> list[PoolReport]:
    low, high = _bounds(start, end)
    high = min(high, until)
    reports = []
    rollups = rollups_in_range(start=start, end=end)
    for pool in ServingPool.objects.all():
        charges = pool_charges(pool, charges_in_range(start=start, end=end))
        scheduled = _scheduled(pool, until)
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
        tokens: dict[datetime, dict[TrafficKey, int]] = defaultdict(dict)
        for row in (
            pool_rollups(pool, rollups)
            .values("hour", "workload", "team", "provider", "model")
            .annotate(i=Sum("input_tokens"), o=Sum("output_tokens"))
            .order_by()
        ):
            key = (row["workload"], row["team"], row["provider"], row["model"])
            tokens[row["hour"]][key] = row["i"] + row["o"]
        for currency in sorted(set(by_currency) | set(scheduled)):
            items = by_currency.get(currency, [])
            hourly = {h: c for h, c in spread_over_hours(items).items() if low <= h < high}
            later, later_hours = scheduled.get(currency, (Decimal("0.00"), 0))
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
                    scheduled=later,
                    hours_scheduled=later_hours,
                )
            )
    return reports


# --- Reconciliation -----------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class ReconciliationRow:
    """One provider x model x day (x bill currency): billed token charges against the estimate
    from the token logs.

    ``estimated`` is None when there is nothing to compare: either the logs have no request for
    the line (the whole bill is unexplained, so the line is flagged), or they have requests but
    no cost for them (no logged cost and no price card, or a bill in another currency than the
    USD estimates): "no estimate", never flagged. A line billed 0 and estimated 0 is never
    flagged either.
    """

    provider: str
    model: str
    day: date
    currency: str
    billed: Decimal
    estimated: Decimal | None
    bill_upload_ids: list[int]
    log_upload_ids: list[int]
    threshold_percent: Decimal
    log_requests: int = 0  # requests of this line in the token logs
    unpriced_requests: int = 0  # of which with no logged cost and no price card

    @property
    def no_estimate(self) -> bool:
        """The logs have requests for this line but no cost to compare with the bill."""
        return self.estimated is None and self.log_requests > 0

    @property
    def note(self) -> str:
        if self.no_estimate:
            if self.currency != "USD":
                return f"no estimate: billed in {self.currency}, token logs are priced in USD"
            return f"no estimate: {self.unpriced_requests} logged requests have no price card"
        if self.estimated is None:
            return "no requests in the token logs"
        if self.unpriced_requests:
            return f"{self.unpriced_requests} logged requests have no price card"
        if not self.billed and self.estimated:
            return "not on the bill"
        return ""

    @property
    def variance(self) -> Decimal | None:
        """Billed minus estimated; the whole bill when the logs have no request; None when
        there is no estimate."""
        if self.no_estimate:
            return None
        return self.billed - (self.estimated or Decimal(0))

    @property
    def variance_percent(self) -> Decimal | None:
        if not self.estimated:
            return None
        return (self.billed - self.estimated) / self.estimated * 100

    @property
    def flagged(self) -> bool:
        if self.no_estimate:
            return False
        percent = self.variance_percent
        if percent is None:  # one side only: flagged unless both are zero
            return bool(self.billed or self.estimated)
        return abs(percent) > self.threshold_percent


@dataclass(frozen=True, kw_only=True)
class ReconciliationTotal:
    """Sums of reconciliation rows for one currency (and one provider, or all when "").

    ``billed`` counts every row; ``estimated`` and ``variance`` only rows with an estimate (a
    row with no request in the logs has an estimate of nothing, so its whole bill is variance);
    ``billed_no_estimate`` is the bill of "no estimate" rows. So billed = estimated + variance
    + billed_no_estimate.
    """

    provider: str
    currency: str
    rows: int
    flagged: int
    billed: Decimal
    estimated: Decimal | None  # None: no row of the group has an estimate
    variance: Decimal
    billed_no_estimate: Decimal

    @property
    def variance_percent(self) -> Decimal | None:
        if not self.estimated:
            return None
        return self.variance / self.estimated * 100


@dataclass(frozen=True, kw_only=True)
class ReconciliationTotals:
    overall: list[ReconciliationTotal]  # one per currency
    by_provider: list[ReconciliationTotal]  # one per provider and currency


def reconciliation_totals(rows: list[ReconciliationRow]) -> ReconciliationTotals:
    """Totals of the given rows per currency, and per provider and currency (never adding
    amounts of different currencies)."""
    overall: dict[str, list[ReconciliationRow]] = defaultdict(list)
    by_provider: dict[tuple[str, str], list[ReconciliationRow]] = defaultdict(list)
    for row in rows:
        overall[row.currency].append(row)
        by_provider[(row.provider, row.currency)].append(row)
    return ReconciliationTotals(
        overall=[_total("", currency, overall[currency]) for currency in sorted(overall)],
        by_provider=[
            _total(provider, currency, by_provider[(provider, currency)])
            for provider, currency in sorted(by_provider)
        ],
    )


def _total(provider: str, currency: str, rows: list[ReconciliationRow]) -> ReconciliationTotal:
    estimates = [r.estimated for r in rows if r.estimated is not None]
    return ReconciliationTotal(
        provider=provider,
        currency=currency,
        rows=len(rows),
        flagged=sum(1 for r in rows if r.flagged),
        billed=sum((r.billed for r in rows), Decimal(0)),
        estimated=sum(estimates, Decimal(0)) if estimates else None,
        variance=sum((r.variance for r in rows if r.variance is not None), Decimal(0)),
        billed_no_estimate=sum((r.billed for r in rows if r.no_estimate), Decimal(0)),
    )


def _same_model(bill_model: str, log_model: str) -> bool:
    if bill_model == log_model:
        return True
    shorter, longer = sorted((bill_model, log_model), key=len)
    return bool(shorter) and longer.startswith(shorter) and longer[len(shorter)] in _MODEL_BOUNDARY


@dataclass
class _Side:
    # The model as shown: the stored (canonical) name, where the key is its matching form.
    name: str = ""
    amount: Decimal = Decimal(0)
    uploads: set[int] = field(default_factory=set)
    requests: int = 0
    unpriced_requests: int = 0


_BillKey = tuple[str, str, date, str]  # provider, model, day, currency
_LogKey = tuple[str, str, date]  # provider, model, day (estimates are in USD)


def _billed_token_sides(start: date, end: date) -> dict[_BillKey, _Side]:
    """Billed token charges over start..end per usage provider, model, day and currency."""
    bills: dict[_BillKey, _Side] = defaultdict(_Side)
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
        provider = usage_provider(provider=charge["provider"], service=charge["service"])
        named = charge["log_model"] or charge["meter_model"]
        side = bills[(provider, normalize_model(named), charge["day"], charge["currency"])]
        side.name = side.name or canonical_model(named, provider)
        side.amount += charge["billed"]
        side.uploads.add(charge["upload_id"])
    return bills


def _estimated_sides(start: date, end: date) -> dict[_LogKey, _Side]:
    """The token logs' estimate over start..end per provider, model and day, leaving out
    self-hosted traffic (costed from GPU bills, never reconciled against token charges)."""
    estimates: dict[_LogKey, _Side] = defaultdict(_Side)
    pooled = set(pooled_models())
    # A provider report's own rollups (days no token log covers) are the invoice side, never
    # an estimate of it (`audit_app.ingestion.provider_usage`).
    rollups = (
        rollups_in_range(start=start, end=end)
        .filter(pool="")
        .exclude(upload__kind=Upload.Kind.BILLING)
        .exclude(Q(model__in=pooled) & ~hosted_pooled_q(pooled))
    )
    for group in priced_groups(rollups, ["provider", "model", "day", "upload_id"]):
        provider, model, day, upload_id = group.dims
        side = estimates[(normalize_provider(provider), normalize_model(model), day)]
        side.name = side.name or model
        side.amount += group.spend_usd
        side.uploads.add(upload_id)
        side.requests += group.requests
        side.unpriced_requests += group.unpriced_requests
    return estimates


def _attach_estimates(
    bills: Mapping[_BillKey, _Side], estimates: Mapping[_LogKey, _Side]
) -> tuple[dict[_BillKey, list[_LogKey]], list[_LogKey]]:
    """Each log model goes to the bill line whose model names it most closely: equal, else the
    longest bill model it extends at a boundary (gpt-4o-2024-08-06 -> gpt-4o, never
    gpt-4o-mini -> gpt-4o when a gpt-4o-mini line exists). Returns the estimates attached to
    each bill line, and those no bill line names."""
    attached: dict[_BillKey, list[_LogKey]] = defaultdict(list)
    unmatched: list[_LogKey] = []
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
    return attached, unmatched


def _billed_row(
    bill_key: _BillKey, bill: _Side, sides: list[_Side], threshold_percent: Decimal
) -> ReconciliationRow:
    """One bill line against the estimates attached to it."""
    provider, _, day, currency = bill_key
    requests = sum(s.requests for s in sides)
    unpriced = sum(s.unpriced_requests for s in sides)
    # An estimate needs at least one request with a cost (logged or priced), in USD.
    has_estimate = requests > unpriced and currency == "USD"
    return ReconciliationRow(
        provider=provider,
        model=bill.name,
        day=day,
        currency=currency,
        billed=bill.amount,
        estimated=sum((s.amount for s in sides), Decimal(0)) if has_estimate else None,
        bill_upload_ids=sorted(bill.uploads),
        log_upload_ids=sorted({u for s in sides for u in s.uploads}),
        threshold_percent=threshold_percent,
        log_requests=requests,
        unpriced_requests=unpriced,
    )


def _unbilled_row(key: _LogKey, side: _Side, threshold_percent: Decimal) -> ReconciliationRow:
    """An estimate no bill line names: nothing billed against it."""
    provider, _, day = key
    return ReconciliationRow(
        provider=provider,
        model=side.name,
        day=day,
        currency="USD",
        billed=Decimal(0),
        estimated=side.amount,
        bill_upload_ids=[],
        log_upload_ids=sorted(side.uploads),
        threshold_percent=threshold_percent,
        log_requests=side.requests,
        unpriced_requests=side.unpriced_requests,
    )


def _reconciliation_order(row: ReconciliationRow) -> tuple[bool, Decimal, date, str, str, str]:
    """Flagged rows first, largest variance first, then the row's key: a stable order to page
    through."""
    return (
        not row.flagged,
        -abs(row.variance or Decimal(0)),
        row.day,
        row.provider,
        row.model,
        row.currency,
    )


def reconciliation(
    *,
    start: date,
    end: date,
    threshold_percent: Decimal = DEFAULT_THRESHOLD_PERCENT,
    flagged_only: bool = False,
) -> list[ReconciliationRow]:
    """Billed token charges vs the token-log estimate per provider x model x day; flagged rows
    first, largest variance first. ``flagged_only`` keeps the flagged rows alone.

    Cached per data version (`results_cache`): it reads every billed token charge and priced
    rollup group of the range, and the page and the API ask for it on every view."""
    key = f"{start}|{end}|{threshold_percent}|{flagged_only}"
    return cached(
        "reconciliation",
        key,
        lambda: _reconciliation(start, end, threshold_percent, flagged_only),
    )


def _reconciliation(
    start: date, end: date, threshold_percent: Decimal, flagged_only: bool
) -> list[ReconciliationRow]:
    bills = _billed_token_sides(start, end)
    estimates = _estimated_sides(start, end)
    attached, unmatched = _attach_estimates(bills, estimates)
    rows = [
        _billed_row(key, bill, [estimates[k] for k in attached.get(key, [])], threshold_percent)
        for key, bill in bills.items()
    ]
    rows.extend(
        _unbilled_row(key, estimates[key], threshold_percent)
        for key in unmatched
        # nothing billed, nothing estimated (or no price): nothing to show
        if estimates[key].amount
    )
    if flagged_only:
        rows = [r for r in rows if r.flagged]
    rows.sort(key=_reconciliation_order)
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
