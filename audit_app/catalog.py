"""The hardware and price catalog shipped with the app (``audit_app/data/hardware-catalog.csv``).

A copy of the reference catalog, with a source and date on every row. This pure module reads
it into dataclasses; a data migration seeds price cards from the ``api`` rows.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from pathlib import Path

CATALOG_PATH = Path(__file__).resolve().parent / "data" / "hardware-catalog.csv"
# Catalog prices are observations ("seen on this date"), not start dates: a seeded card applies
# to every request on or after this floor, so older logs are priced too. Admins add dated cards
# when a price changes.
SEED_VALID_FROM = date(2020, 1, 1)
_CACHED_NOTE = re.compile(r"cached input (\d+(?:\.\d+)?)", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True)
class PriceCardSpec:
    provider: str
    model: str
    input_usd_per_mtok: Decimal
    output_usd_per_mtok: Decimal
    cached_input_usd_per_mtok: Decimal | None
    batch_input_usd_per_mtok: Decimal | None
    batch_output_usd_per_mtok: Decimal | None
    valid_from: date
    source: str
    source_date: str


def price_card_specs(path: Path = CATALOG_PATH) -> list[PriceCardSpec]:
    """One spec per ``api`` row with token prices; policy rows (no prices) are skipped."""
    specs: list[PriceCardSpec] = []
    with open(path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["kind"] != "api" or not row["usd_per_million_input_tokens"]:
                continue
            input_price = Decimal(row["usd_per_million_input_tokens"])
            output_price = Decimal(row["usd_per_million_output_tokens"] or "0")
            discount = row["batch_discount_pct"]
            factor = (Decimal(100) - Decimal(discount)) / Decimal(100) if discount else None
            cached = _CACHED_NOTE.search(row["notes"] or "")
            specs.append(
                PriceCardSpec(
                    provider=row["provider"],
                    model=row["name"],
                    input_usd_per_mtok=input_price,
                    output_usd_per_mtok=output_price,
                    cached_input_usd_per_mtok=Decimal(cached.group(1)) if cached else None,
                    batch_input_usd_per_mtok=input_price * factor if factor else None,
                    batch_output_usd_per_mtok=output_price * factor if factor else None,
                    valid_from=SEED_VALID_FROM,
                    source=row["source"][:300],
                    source_date=row["source_date"][:64],
                )
            )
    return specs
