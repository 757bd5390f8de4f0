"""Seed and refresh price cards from the maintained price dataset (genai-prices, pinned)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit_app.costs.dataset import DatasetError
from audit_app.costs.price_cards import prices_sync


class Command(BaseCommand):
    help = (
        "Add the price dataset's new models and new prices as new price cards (never rewriting "
        "or deleting a card; a card edited by hand wins) and report what changed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="Report what would change; write nothing."
        )
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")
        parser.add_argument(
            "--file",
            type=Path,
            help="A JSON file in the dataset's schema (its data.json), not the packaged data.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = prices_sync(path=options["file"], dry_run=options["dry_run"])
        except DatasetError as error:
            raise CommandError(f"Price dataset refused, nothing changed: {error}") from error
        data = report.as_dict()
        if options["json"]:
            self.stdout.write(json.dumps(data))
            return
        verb = "would add" if report.dry_run else "added"
        self.stdout.write(
            f"{data['dataset']}: {verb} {data['added_cards']} cards "
            f"({data['new_models']} new models, {data['new_prices']} new prices); "
            f"completed {data['completed_cards']} kept cards, "
            f"aliases for {data['aliases_added']}."
        )
        for provider, model in report.local_overrides:
            self.stdout.write(f"kept local override: {provider}/{model}")
        for difference in report.differences:
            self.stdout.write(
                f"kept {difference.provider}/{difference.model} from "
                f"{difference.kept_valid_from}: the dataset's price differs"
            )
        for mismatch in report.tier_mismatches:
            counted = mismatch.counted_at or "several thresholds"
            self.stdout.write(
                f"{mismatch.provider}/{mismatch.model} {mismatch.first_day}..{mismatch.last_day}: "
                f"long-context tokens counted above {counted} input tokens, the card's tier "
                f"starts above {mismatch.tier_threshold}; priced at the ordinary prices "
                "(delete and ingest those uploads again to price them at the tier)"
            )
