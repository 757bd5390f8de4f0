"""Selectors: every non-trivial read the audit app makes. They return frozen dataclasses."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Count, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from audit_app.models import HourlyRollup, PriceCard, Upload
from audit_app.pricing import Price, PriceBook, TokenUsage, token_cost


@dataclass(frozen=True, kw_only=True)
class UploadsPerDay:
    days: list[date]
    counts_by_kind: dict[str, list[int]]  # kind label -> one count per day, aligned with days
    total: int


def uploads_per_day(*, days: int = 30, today: date | None = None) -> UploadsPerDay:
    """Uploads created on each of the last ``days`` days (UTC), per kind, zeros included."""
    last_day = today or timezone.now().date()
    first_day = last_day - timedelta(days=days - 1)
    day_list = [first_day + timedelta(days=i) for i in range(days)]
    rows = (
        Upload.objects.filter(created_at__date__gte=first_day, created_at__date__lte=last_day)
        .annotate(day=TruncDate("created_at"))
        .values("day", "kind")
        .annotate(n=Count("id"))
    )
    by_kind: dict[str, dict[date, int]] = defaultdict(dict)
    for row in rows:
        by_kind[row["kind"]][row["day"]] = row["n"]
    labels = dict(Upload.Kind.choices)
    counts = {
        labels[kind]: [by_kind[kind].get(day, 0) for day in day_list]
        for kind in Upload.Kind.values
        if kind in by_kind
    }
    if not counts:
        # An empty database still draws a chart: a flat line of zeros over the window.
        counts = {"Uploads": [0] * days}
    total = sum(sum(values) for values in counts.values())
    return UploadsPerDay(days=day_list, counts_by_kind=counts, total=total)


def upload_list(*, limit: int = 200) -> list[Upload]:
    return list(Upload.objects.select_related("uploaded_by")[:limit])


# --- Spend -----------------------------------------------------------------------------------
GROUP_BY_FIELDS = {
    "workload": "workload",
    "team": "team",
    "model": "model",
    "provider": "provider",
    "pool": "pool",
    "day": "day",
}


@dataclass(frozen=True, kw_only=True)
class SpendRow:
    key: str
    requests: int
    input_tokens: int
    output_tokens: int
    logged_cost_usd: Decimal  # the logs' own cost
    estimated_cost_usd: Decimal  # tokens without a logged cost, priced from price cards
    unpriced_requests: int  # no logged cost and no price card: not in any $ figure

    @property
    def spend_usd(self) -> Decimal:
        return self.logged_cost_usd + self.estimated_cost_usd


@dataclass(frozen=True, kw_only=True)
class UnpricedModel:
    provider: str
    model: str
    requests: int
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True, kw_only=True)
class SpendBreakdown:
    group_by: str
    rows: list[SpendRow]
    unpriced_models: list[UnpricedModel]

    @property
    def total_usd(self) -> Decimal:
        return sum((row.spend_usd for row in self.rows), Decimal(0))


def price_book() -> PriceBook:
    return PriceBook(
        Price(
            card_id=card.pk,
            provider=card.provider,
            model=card.model,
            valid_from=card.valid_from,
            input=card.input_usd_per_mtok,
            output=card.output_usd_per_mtok,
            cached_input=card.cached_input_usd_per_mtok,
            batch_input=card.batch_input_usd_per_mtok,
            batch_output=card.batch_output_usd_per_mtok,
        )
        for card in PriceCard.objects.all()
    )


def rollups_in_range(
    *, start: date | None = None, end: date | None = None, **filters: Any
) -> QuerySet[HourlyRollup]:
    """Rollups of succeeded uploads whose hour falls on days start..end (inclusive, UTC)."""
    queryset = HourlyRollup.objects.filter(upload__status=Upload.Status.SUCCEEDED)
    if start is not None:
        queryset = queryset.filter(hour__gte=datetime.combine(start, time.min, tzinfo=UTC))
    if end is not None:
        queryset = queryset.filter(
            hour__lt=datetime.combine(end + timedelta(days=1), time.min, tzinfo=UTC)
        )
    clean = {k: v for k, v in filters.items() if v not in (None, "")}
    return queryset.filter(**clean)


def spend_breakdown(
    *, group_by: str, queryset: QuerySet[HourlyRollup] | None = None
) -> SpendBreakdown:
    """Spend per workload / team / model / provider / pool / day, priced at read time."""
    if group_by not in GROUP_BY_FIELDS:
        raise ValueError(f"group_by must be one of {', '.join(GROUP_BY_FIELDS)}")
    queryset = rollups_in_range() if queryset is None else queryset
    dimension = GROUP_BY_FIELDS[group_by]
    grouped = (
        queryset.annotate(day=TruncDate("hour"))
        .values(*{dimension, "provider", "model", "day", "batch_api"})
        .annotate(
            n_requests=Sum("requests"),
            n_input=Sum("input_tokens"),
            n_output=Sum("output_tokens"),
            logged=Sum("logged_cost_usd"),
            n_logged=Sum("logged_requests"),
            un_input=Sum("unlogged_input_tokens"),
            un_cached=Sum("unlogged_cached_input_tokens"),
            un_output=Sum("unlogged_output_tokens"),
        )
    )
    book = price_book()
    rows: dict[str, dict[str, Any]] = {}
    unpriced: dict[tuple[str, str], list[int]] = {}
    for g in grouped:
        key = g[dimension].isoformat() if dimension == "day" else g[dimension]
        row = rows.setdefault(
            key,
            {
                "requests": 0,
                "input": 0,
                "output": 0,
                "logged": Decimal(0),
                "estimated": Decimal(0),
                "unpriced": 0,
            },
        )
        row["requests"] += g["n_requests"]
        row["input"] += g["n_input"]
        row["output"] += g["n_output"]
        row["logged"] += g["logged"] or Decimal(0)
        unlogged_requests = g["n_requests"] - g["n_logged"]
        if not unlogged_requests:
            continue
        price = book.find(provider=g["provider"], model=g["model"], day=g["day"])
        if price is None:
            row["unpriced"] += unlogged_requests
            totals = unpriced.setdefault((g["provider"], g["model"]), [0, 0, 0])
            totals[0] += unlogged_requests
            totals[1] += g["un_input"]
            totals[2] += g["un_output"]
            continue
        usage = TokenUsage(
            input_tokens=g["un_input"],
            cached_input_tokens=g["un_cached"],
            output_tokens=g["un_output"],
            batch_api=g["batch_api"],
        )
        row["estimated"] += token_cost(price, usage)
    spend_rows = [
        SpendRow(
            key=key,
            requests=v["requests"],
            input_tokens=v["input"],
            output_tokens=v["output"],
            logged_cost_usd=v["logged"],
            estimated_cost_usd=v["estimated"],
            unpriced_requests=v["unpriced"],
        )
        for key, v in rows.items()
    ]
    spend_rows.sort(key=lambda r: (r.key if group_by == "day" else "", -r.spend_usd, r.key))
    unpriced_models = [
        UnpricedModel(provider=p, model=m, requests=t[0], input_tokens=t[1], output_tokens=t[2])
        for (p, m), t in sorted(unpriced.items(), key=lambda item: -item[1][1])
    ]
    return SpendBreakdown(group_by=group_by, rows=spend_rows, unpriced_models=unpriced_models)
