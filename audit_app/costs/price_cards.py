"""Price cards: seed them from the shipped catalog (the data migration does the same once)."""

from __future__ import annotations

from django.db import transaction

from audit_app.costs.catalog import price_card_defaults, price_card_specs
from audit_app.models import PriceCard


@transaction.atomic
def price_cards_seed() -> int:
    """Create the catalog's cards that are missing; returns how many were created."""
    created = 0
    for spec in price_card_specs():
        _, was_created = PriceCard.objects.get_or_create(
            provider=spec.provider,
            model=spec.model,
            valid_from=spec.valid_from,
            defaults={**price_card_defaults(spec), "origin": PriceCard.Origin.CATALOG},
        )
        created += was_created
    return created
