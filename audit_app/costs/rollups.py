"""Rollups of landed uploads, and their cost from price cards.

The hourly and daily rollups of succeeded uploads over a window (`rollups_in_range`,
`daily_rollups`), and their groups priced (`priced_groups`): a request's logged cost, else its
price card's estimate; self-hosted requests (a serving pool's) are left to the GPU bills
(`costs.billing`), never priced from cards. The reads every report starts from, below them:
the spend read model (`audit_app.reporting.spend`) and the billing reports both build on them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Max, Min, Q, QuerySet, Sum
from django.db.models.functions import TruncDate

from audit_app.costs.model_names import served_names
from audit_app.costs.price_cards import price_book
from audit_app.costs.pricing import MIXED_THRESHOLDS, TokenUsage, token_cost
from audit_app.models import DailyRollup, HourlyRollup, ServingPool, Upload


def hosted_pooled_q(pooled: Iterable[str]) -> Q:
    """Rollups logged without a pool whose model a serving pool runs but which a hosted API
    served (a card prices that provider's model, `PriceBook.prices_model`): they are priced
    from cards, not costed from the pool's GPU bills."""
    book = price_book()
    pairs = (
        HourlyRollup.objects.filter(pool="", model__in=list(pooled))
        .values_list("provider", "model")
        .distinct()
        .order_by()
    )
    hosted = Q(pk__in=[])
    for provider, model in pairs:
        if book.prices_model(provider=provider, model=model):
            hosted |= Q(provider=provider, model=model)
    return hosted


def rollups_in_range(
    *, start: date | None = None, end: date | None = None, **filters: Any
) -> QuerySet[HourlyRollup]:
    """Hourly rollups of succeeded uploads whose hour falls on days start..end (inclusive,
    UTC). Only for views that need the hour; sums per day or range read `daily_rollups`."""
    queryset = HourlyRollup.objects.filter(upload__status=Upload.Status.SUCCEEDED)
    if start is not None:
        queryset = queryset.filter(hour__gte=datetime.combine(start, time.min, tzinfo=UTC))
    if end is not None:
        queryset = queryset.filter(
            hour__lt=datetime.combine(end + timedelta(days=1), time.min, tzinfo=UTC)
        )
    return _filtered(queryset, filters)


def _filtered(queryset: QuerySet[Any], filters: dict[str, Any]) -> QuerySet[Any]:
    """The queryset narrowed by the filters that have a value (empty ones mean "all")."""
    return queryset.filter(**{k: v for k, v in filters.items() if v not in (None, "")})


Rollups = QuerySet[HourlyRollup] | QuerySet[DailyRollup]


def daily_rollups(
    *, start: date | None = None, end: date | None = None, **filters: Any
) -> QuerySet[DailyRollup]:
    """Daily rollups of succeeded uploads on days start..end (inclusive, UTC): the same sums
    as the hourly ones over whole days, in ~24 times fewer rows."""
    queryset = DailyRollup.objects.filter(upload__status=Upload.Status.SUCCEEDED)
    if start is not None:
        queryset = queryset.filter(day__gte=start)
    if end is not None:
        queryset = queryset.filter(day__lte=end)
    return _filtered(queryset, filters)


@dataclass(frozen=True, kw_only=True)
class PricedGroup:
    """Sums of one group of rollups (by the requested dimensions), with its cost priced."""

    dims: tuple[Any, ...]
    requests: int
    input_tokens: int
    output_tokens: int
    logged_cost_usd: Decimal
    estimated_cost_usd: Decimal
    unpriced_requests: int
    unpriced_input_tokens: int
    unpriced_output_tokens: int
    provider: str
    model: str
    self_hosted_requests: int  # costed from GPU bills, not in this group's dollars
    self_hosted: bool = False  # served by a serving pool (by its pool, or its model + provider)

    @property
    def spend_usd(self) -> Decimal:
        return self.logged_cost_usd + self.estimated_cost_usd


def priced_groups(queryset: Rollups, dims: Sequence[str]) -> list[PricedGroup]:
    """Rollups summed per ``dims`` (rollup fields, or ``day``) and priced.

    Pricing needs provider, model, day and batch flag, so groups are finer than ``dims``; each
    comes back with its own dims so callers add them up as they like. Not cached itself (a
    year of daily groups is large): the summaries built from it are.
    """
    fields = list(dict.fromkeys([*dims, "provider", "model", "day", "batch_api", "pool"]))
    # Self-hosted requests are costed from GPU bills (costs.billing), never from cards.
    pooled = {
        model
        for models in ServingPool.objects.values_list("models_served", flat=True)
        for model in served_names(models)
    }
    if queryset.model is HourlyRollup:
        queryset = queryset.annotate(day=TruncDate("hour"))
    grouped = (
        queryset.values(*fields)
        .annotate(
            n_requests=Sum("requests"),
            n_input=Sum("input_tokens"),
            n_output=Sum("output_tokens"),
            logged=Sum("logged_cost_usd"),
            n_logged=Sum("logged_requests"),
            un_input=Sum("unlogged_input_tokens"),
            un_cached=Sum("unlogged_cached_input_tokens"),
            un_output=Sum("unlogged_output_tokens"),
            un_creation=Sum("unlogged_cache_creation_input_tokens"),
            long_input=Sum("unlogged_long_context_input_tokens"),
            long_cached=Sum("unlogged_long_context_cached_input_tokens"),
            long_creation=Sum("unlogged_long_context_cache_creation_input_tokens"),
            long_output=Sum("unlogged_long_context_output_tokens"),
            # One key, one day: one card, so one threshold unless a card changed between
            # uploads of that day (then MIXED_THRESHOLDS: no tier applies).
            threshold_low=Min("long_context_threshold_tokens"),
            threshold_high=Max("long_context_threshold_tokens"),
        )
        .order_by()
    )
    book = price_book()
    out: list[PricedGroup] = []
    for g in grouped:
        unlogged = g["n_requests"] - g["n_logged"]
        estimated = Decimal(0)
        unpriced = unpriced_in = unpriced_out = 0
        # A model a pool serves is self-hosted unless a hosted API served the request.
        self_hosted = bool(g["pool"]) or (
            g["model"] in pooled and not book.prices_model(provider=g["provider"], model=g["model"])
        )
        if unlogged and not self_hosted:
            price = book.find(provider=g["provider"], model=g["model"], day=g["day"])
            if price is None:
                unpriced, unpriced_in, unpriced_out = unlogged, g["un_input"], g["un_output"]
            else:
                estimated = token_cost(price, _unlogged_usage(g, requests=unlogged))
        out.append(
            PricedGroup(
                dims=tuple(g[d] for d in dims),
                requests=g["n_requests"],
                input_tokens=g["n_input"],
                output_tokens=g["n_output"],
                logged_cost_usd=g["logged"] or Decimal(0),
                estimated_cost_usd=estimated,
                unpriced_requests=unpriced,
                unpriced_input_tokens=unpriced_in,
                unpriced_output_tokens=unpriced_out,
                provider=g["provider"],
                model=g["model"],
                self_hosted_requests=unlogged if self_hosted else 0,
                self_hosted=self_hosted,
            )
        )
    return out


def _unlogged_usage(g: Mapping[str, Any], *, requests: int) -> TokenUsage:
    """What a priced group's unlogged requests used, as `token_cost` prices it."""
    return TokenUsage(
        input_tokens=g["un_input"],
        cached_input_tokens=g["un_cached"],
        output_tokens=g["un_output"],
        batch_api=g["batch_api"],
        cache_creation_input_tokens=g["un_creation"],
        requests=requests,
        long_context_input_tokens=g["long_input"],
        long_context_cached_input_tokens=g["long_cached"],
        long_context_cache_creation_input_tokens=g["long_creation"],
        long_context_output_tokens=g["long_output"],
        long_context_threshold=(
            g["threshold_low"] if g["threshold_low"] == g["threshold_high"] else MIXED_THRESHOLDS
        ),
    )
