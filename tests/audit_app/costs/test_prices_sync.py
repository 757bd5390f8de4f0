"""`prices_sync`: cards from the price dataset (genai-prices, pinned), never rewriting history.

The expected prices are the dataset file's own numbers (tests/fixtures/prices) or the providers'
list prices, quoted in comments; the catalog's cards are the 41 seeded by migration.
"""

from __future__ import annotations

import io
import json
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from audit_app.costs.dataset import DatasetError
from audit_app.costs.price_cards import prices_sync, prices_sync_first_start
from audit_app.models import PriceCard

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "prices"
UPDATE = FIXTURES / "dataset-update.json"
CATALOG_CARDS = 41


def _run(*args: str) -> dict[str, Any]:
    out = io.StringIO()
    call_command("prices_sync", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_a_file_adds_new_models_and_dated_new_prices_and_keeps_history() -> None:
    report = _run("--file", str(UPDATE))

    assert report["new_models"] == 1  # acme-reasoner-1
    assert report["new_prices"] == 2  # gpt-4o and claude-haiku-4-5 from 2027-01-01
    assert sorted((a["provider"], a["model"], a["valid_from"]) for a in report["added"]) == [
        ("anthropic", "claude-haiku-4-5", "2027-01-01"),
        ("openai", "acme-reasoner-1", "2020-01-01"),
        ("openai", "gpt-4o", "2027-01-01"),
    ]
    assert PriceCard.objects.count() == CATALOG_CARDS + 3
    old, new = PriceCard.objects.filter(provider="openai", model="gpt-4o").order_by("valid_from")
    # The catalog's card is history: untouched ($2.50 / $10, batch at 50 %).
    assert (old.origin, old.input_usd_per_mtok, old.output_usd_per_mtok) == (
        "catalog",
        Decimal("2.5"),
        Decimal("10"),
    )
    assert old.batch_input_usd_per_mtok == Decimal("1.25")
    assert (new.origin, new.valid_from, new.input_usd_per_mtok, new.output_usd_per_mtok) == (
        "dataset",
        date(2027, 1, 1),
        Decimal("2"),
        Decimal("8"),
    )
    assert new.cached_input_usd_per_mtok == Decimal("1")
    assert new.source.startswith("dataset-update.json")
    acme = PriceCard.objects.get(model="acme-reasoner-1")
    assert acme.per_request_usd == Decimal("0.005")  # $5 per 1,000 requests
    assert acme.match_rule == {"starts_with": "acme-reasoner-1"}
    # The catalog's gpt-4o card took the dataset's aliases (no price changed).
    assert old.match_rule == {"or": [{"equals": "gpt-4o"}, {"equals": "gpt-4o-2024-11-20"}]}

    again = _run("--file", str(UPDATE))
    assert (again["added_cards"], again["completed_cards"], again["aliases_added"]) == (0, 0, 0)
    assert PriceCard.objects.count() == CATALOG_CARDS + 3


def test_a_dry_run_reports_and_writes_nothing() -> None:
    report = _run("--file", str(UPDATE), "--dry-run")

    assert (report["dry_run"], report["added_cards"]) == (True, 3)
    assert PriceCard.objects.count() == CATALOG_CARDS
    assert not PriceCard.objects.exclude(match_rule=None).exists()


def test_a_card_edited_by_hand_wins_over_the_dataset() -> None:
    PriceCard.objects.filter(provider="anthropic", model="claude-haiku-4-5").update(
        origin=PriceCard.Origin.LOCAL, input_usd_per_mtok=Decimal("0.9")
    )

    report = _run("--file", str(UPDATE))

    assert report["local_overrides_kept"] == [
        {"provider": "anthropic", "model": "claude-haiku-4-5"}
    ]
    [card] = PriceCard.objects.filter(provider="anthropic", model="claude-haiku-4-5")
    assert (card.input_usd_per_mtok, card.origin) == (Decimal("0.9"), "local")


def test_a_sync_never_deletes_a_card() -> None:
    # The file lists 3 models; the 41 catalog cards (some priced requests already) all stay.
    before = set(PriceCard.objects.values_list("pk", flat=True))
    prices_sync(path=UPDATE)
    assert before <= set(PriceCard.objects.values_list("pk", flat=True))


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("[{not json", "prices.json is not readable JSON"),
        ({"providers": []}, "must hold a list of providers, not a dict"),
        ([{"id": "openai", "models": []}], "does not match the price dataset's schema"),
    ],
)
def test_a_file_that_does_not_parse_is_refused_whole(
    tmp_path: Path, content: object, reason: str
) -> None:
    with pytest.raises(CommandError, match="Price dataset refused, nothing changed") as error:
        call_command("prices_sync", "--file", str(_write(tmp_path, content)))
    assert reason in str(error.value)
    assert PriceCard.objects.count() == CATALOG_CARDS


def test_a_negative_price_refuses_the_whole_file(tmp_path: Path) -> None:
    data = json.loads(UPDATE.read_text())
    data[1]["models"][0]["prices"][1]["prices"]["output_mtok"] = -4
    path = _write(tmp_path, data)

    with pytest.raises(DatasetError) as error:
        prices_sync(path=path)
    assert str(error.value) == (
        "provider 'anthropic', model 'claude-haiku-4-5': price output_mtok is -4, "
        "not a price (>= 0)"
    )
    # The good models of the same file were not added either.
    assert PriceCard.objects.count() == CATALOG_CARDS
    assert not PriceCard.objects.filter(model="acme-reasoner-1").exists()


def test_the_packaged_dataset_seeds_cards_once_on_first_start() -> None:
    report = prices_sync_first_start()

    assert report is not None and report.dataset == "genai-prices 0.2.3"
    assert len(report.added) > 2000  # the dataset prices well over 2,000 models
    assert PriceCard.objects.filter(origin="catalog").count() == CATALOG_CARDS
    # A catalog card learns what it left empty and agrees on: Anthropic lists Claude Sonnet
    # 4.5's 5-minute cache write at $3.75 and prompts over 200k tokens at $6 / $22.50.
    sonnet = PriceCard.objects.get(provider="anthropic", model="claude-sonnet-4-5")
    assert (sonnet.input_usd_per_mtok, sonnet.output_usd_per_mtok) == (Decimal(3), Decimal(15))
    assert sonnet.cache_write_input_usd_per_mtok == Decimal("3.75")
    assert sonnet.long_context_threshold_tokens == 200_000
    assert (sonnet.long_context_input_usd_per_mtok, sonnet.long_context_output_usd_per_mtok) == (
        Decimal(6),
        Decimal("22.5"),
    )
    # Cohere was not in the catalog: Command A is listed at $2.50 / $10.
    command_a = PriceCard.objects.get(provider="cohere", model="command-a")
    assert (command_a.input_usd_per_mtok, command_a.output_usd_per_mtok) == (
        Decimal("2.5"),
        Decimal(10),
    )
    assert prices_sync_first_start() is None  # a second start does not sync again
