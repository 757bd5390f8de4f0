"""What the savings plan's options are priced against, read once per refresh: the price cards,
the catalog's API listings and its instances with their throughput assumptions; and the
smallest monthly saving an option must make to be proposed."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import cast

from django.conf import settings

from audit_app.costs.price_cards import price_book
from audit_app.costs.pricing import PriceBook
from audit_app.models import HardwareTarget, ThroughputAssumption
from audit_app.recommendations.options import (
    ApiListing,
    HardwareOffer,
    Instance,
    Throughput,
)


@dataclass(frozen=True, kw_only=True)
class OptionTargets:
    """What the option builders price against: the price cards, the catalog's API listings
    and its instances with their throughput assumptions. Read once per refresh."""

    prices: PriceBook
    listings: tuple[ApiListing, ...]
    offers: tuple[HardwareOffer, ...]
    # Every catalogued instance by name, with or without a throughput assumption.
    instances: dict[str, Instance] = field(default_factory=dict)


def option_targets() -> OptionTargets:
    listings = tuple(
        ApiListing(
            provider=row.provider,
            name=row.name,
            # The filter below leaves only rows with an input price.
            usd_per_million_input_tokens=cast(Decimal, row.usd_per_million_input_tokens),
            usd_per_million_output_tokens=row.usd_per_million_output_tokens,
            source=row.source,
            source_date=row.source_date,
        )
        for row in HardwareTarget.objects.filter(
            kind="api", usd_per_million_input_tokens__isnull=False
        )
    )
    instances: dict[str, Instance] = {}
    for row in HardwareTarget.objects.filter(kind="instance", usd_per_hour__isnull=False):
        # Names can repeat across providers: the first in the catalog's order serves.
        instances.setdefault(
            row.name,
            Instance(
                name=row.name,
                accelerator=row.accelerator,
                accelerator_count=row.accelerator_count,
                usd_per_hour=cast(Decimal, row.usd_per_hour),  # the filter: not null
                source=row.source,
                source_date=row.source_date,
            ),
        )
    offers = tuple(
        HardwareOffer(
            instance=instances[assumption.instance],
            throughput=Throughput(
                model_class=assumption.model_class,
                tokens_per_second=assumption.tokens_per_second,
                source=assumption.source,
                source_date=assumption.source_date,
                notes=assumption.notes,
            ),
        )
        for assumption in ThroughputAssumption.objects.order_by("pk")
        if assumption.instance in instances
    )
    return OptionTargets(prices=price_book(), listings=listings, offers=offers, instances=instances)


def min_savings() -> Decimal:
    """RECOMMENDATION_MIN_SAVINGS_USD: options saving less a month are not proposed."""
    return Decimal(str(settings.RECOMMENDATION_MIN_SAVINGS_USD))
