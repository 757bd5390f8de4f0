"""List spend anomalies per workload × model × day, with their cause."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit_app.budgets.anomaly_service import (
    ANOMALY_SORTS,
    anomaly_payload,
    anomaly_query,
    anomaly_rows,
)
from audit_app.lib.query_params import ParameterError


class Command(BaseCommand):
    help = (
        "Print spend anomalies (default: the 30 days ending on the last complete day with data; "
        "complete days only) as a "
        "table or, with --json, a list of {day, workload, model, spend_usd, expected_usd, "
        "score, cause: {volume_usd, mix_usd, price_usd}}."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--start", help="YYYY-MM-DD (default: 29 days before --end)")
        parser.add_argument("--end", help="YYYY-MM-DD (default: the last complete day with data)")
        parser.add_argument("--sort", choices=ANOMALY_SORTS, help="day (default), change or score")
        parser.add_argument("--min-usd", help="only changes of at least this many USD")

    def handle(self, *args: Any, **options: Any) -> None:
        params = {
            "start": options["start"] or "",
            "end": options["end"] or "",
            "sort": options["sort"] or "",
            "min_usd": options["min_usd"] or "",
        }
        try:
            query = anomaly_query(params)
        except ParameterError as exc:
            raise CommandError(str(exc)) from None
        start, end = query.start, query.end
        rows = [anomaly_payload(row) for row in anomaly_rows(query)]
        if options["json"]:
            self.stdout.write(json.dumps(rows))
            return
        self.stdout.write(
            f"{'day':<10} {'workload':<24} {'model':<24} {'spend_usd':>12} {'expected':>12} "
            f"{'score':>7} {'volume':>12} {'mix':>12} {'price':>12}"
        )
        for row in rows:
            cause = row["cause"]
            score = "" if row["score"] is None else f"{row['score']:.1f}"
            self.stdout.write(
                f"{row['day']:<10} {row['workload'][:24]:<24} {row['model'][:24]:<24} "
                f"{row['spend_usd']:>12} {row['expected_usd']:>12} {score:>7} "
                f"{cause['volume_usd']:>12} {cause['mix_usd']:>12} {cause['price_usd']:>12}"
            )
        self.stdout.write(f"{len(rows)} anomalies from {start} to {end}")
