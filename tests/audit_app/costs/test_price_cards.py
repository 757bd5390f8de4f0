"""The price-card service: seeding the cards from the shipped catalog.

The expected count is read from the catalog CSV with the csv module (an `api` row with an input
price is a card; the 5 policy rows without prices are not), not from the code under test.
"""

from __future__ import annotations

import csv
from decimal import Decimal

import pytest

from audit_app.costs.catalog import CATALOG_PATH, price_card_specs
from audit_app.costs.price_cards import price_cards_seed
from audit_app.models import PriceCard

pytestmark = pytest.mark.django_db


def _priced_api_rows() -> list[tuple[str, str]]:
    with open(CATALOG_PATH, newline="", encoding="utf-8") as handle:
        return [
            (row["provider"], row["name"])
            for row in csv.DictReader(handle)
            if row["kind"] == "api" and row["usd_per_million_input_tokens"]
        ]


def test_price_cards_seed_is_idempotent_and_matches_the_migration() -> None:
    assert PriceCard.objects.count() == len(price_card_specs()) == 41
    assert price_cards_seed() == 0
    PriceCard.objects.filter(provider="openai").delete()
    assert price_cards_seed() == PriceCard.objects.filter(provider="openai").count() > 0
    card = PriceCard.objects.get(provider="openai", model="gpt-4o")
    assert (card.input_usd_per_mtok, card.output_usd_per_mtok) == (Decimal("2.5"), Decimal("10"))
    assert card.cached_input_usd_per_mtok == Decimal("1.25")
    assert card.batch_input_usd_per_mtok == Decimal("1.25")  # 50 % batch discount


def test_the_seed_creates_one_card_per_priced_catalog_row() -> None:
    PriceCard.objects.all().delete()

    assert price_cards_seed() == 41
    cards = set(PriceCard.objects.values_list("provider", "model"))
    assert cards == set(_priced_api_rows())
    assert len(_priced_api_rows()) == 41


def test_the_seed_leaves_an_edited_card_alone() -> None:
    PriceCard.objects.filter(provider="openai", model="gpt-4o").update(
        input_usd_per_mtok=Decimal("3")
    )

    assert price_cards_seed() == 0
    card = PriceCard.objects.get(provider="openai", model="gpt-4o")
    assert card.input_usd_per_mtok == Decimal("3")
