"""The hardware and price catalog shipped with the app
(``audit_app/costs/data/hardware-catalog.csv``).

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


def price_card_defaults(spec: PriceCardSpec) -> dict[str, object]:
    """A spec's non-key fields, for `get_or_create(provider=, model=, valid_from=, defaults=)`."""
    return {
        "input_usd_per_mtok": spec.input_usd_per_mtok,
        "output_usd_per_mtok": spec.output_usd_per_mtok,
        "cached_input_usd_per_mtok": spec.cached_input_usd_per_mtok,
        "batch_input_usd_per_mtok": spec.batch_input_usd_per_mtok,
        "batch_output_usd_per_mtok": spec.batch_output_usd_per_mtok,
        "source": spec.source,
        "source_date": spec.source_date,
    }


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


THROUGHPUT_PATH = CATALOG_PATH.parent / "throughput-assumptions.csv"


def _decimal_or_none(raw: str) -> Decimal | None:
    raw = (raw or "").strip()
    return Decimal(raw) if raw else None


def hardware_rows(path: Path = CATALOG_PATH) -> list[dict[str, object]]:
    """Every catalog row as model field values (kind, provider, name, prices, source, date)."""
    rows: list[dict[str, object]] = []
    with open(path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            count = (row["accelerator_count"] or "").strip()
            tdp = (row["tdp_watts_per_accelerator"] or "").strip()
            rows.append(
                {
                    "kind": row["kind"],
                    "provider": row["provider"],
                    "name": row["name"],
                    "accelerator": row["accelerator"] or "",
                    "accelerator_count": int(count) if count.isdigit() else None,
                    "usd_per_hour": _decimal_or_none(row["usd_per_hour"]),
                    "usd_per_million_input_tokens": _decimal_or_none(
                        row["usd_per_million_input_tokens"]
                    ),
                    "usd_per_million_output_tokens": _decimal_or_none(
                        row["usd_per_million_output_tokens"]
                    ),
                    "batch_discount_pct": _decimal_or_none(row["batch_discount_pct"]),
                    "tdp_watts_per_accelerator": int(tdp) if tdp.isdigit() else None,
                    "source": row["source"][:500],
                    "source_date": row["source_date"][:100],
                    "notes": row["notes"] or "",
                }
            )
    return rows


def throughput_rows(path: Path = THROUGHPUT_PATH) -> list[dict[str, object]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return [
            {
                "instance": row["instance"],
                "model_class": row["model_class"],
                "tokens_per_second": float(row["tokens_per_second"]),
                "source": row["source"][:500],
                "source_date": row["source_date"],
                "confidence": row["confidence"],
                "notes": row["notes"],
            }
            for row in csv.DictReader(handle)
        ]


_SOURCE_DATE = re.compile(r"(\d{4})-(\d{2})(?:-(\d{2}))?")


def source_age_days(source_date: str, today: date) -> int | None:
    """Days since a row's source date (YYYY-MM[-DD] anywhere in the text); None if undated."""
    match = _SOURCE_DATE.search(source_date or "")
    if not match:
        return None
    year, month, day = int(match.group(1)), int(match.group(2)), int(match.group(3) or 1)
    try:
        return (today - date(year, month, day)).days
    except ValueError:
        return None
