"""Land the live records waiting now, through the same service as the scheduled task, and print
what landed (for operations and tests; the beat schedule does this every
LIVE_LAND_EVERY_SECONDS by itself)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from audit_app.derived import derived_refresh
from audit_app.ingestion.live.landing import LivePass, live_land
from audit_app.ingestion.live.receive import pending_records
from audit_app.lib.formatting import decimal_text, money


class Command(BaseCommand):
    help = (
        "Land every live record waiting to land (micro-batches, exactly once) and print what "
        "landed per stream upload; then refresh derived results if a refresh is due."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")

    def handle(self, *args: Any, **options: Any) -> None:
        passes = [live_land()]
        while passes[-1].more:
            passes.append(live_land())
        refreshed = derived_refresh()
        report = landing_report(passes, refreshed=refreshed)
        if options["json"]:
            self.stdout.write(json.dumps(report))
            return
        if not report["batches"]:
            self.stdout.write("Nothing was waiting to land.")
        else:
            self.stdout.write(
                f"Landed {report['landed']:,} of {report['records']:,} records "
                f"({report['duplicates']:,} sent again) from {report['batches']:,} batches."
            )
        for stream in report["streams"]:
            self.stdout.write(
                f"  upload {stream['upload_id']} ({stream['source']} stream {stream['day']}): "
                f"{stream['landed']:,} records, {stream['input_tokens']:,} input and "
                f"{stream['output_tokens']:,} output tokens, {money(stream['logged_cost_usd'])} "
                "stated in the records"
            )
        self.stdout.write(
            "Derived results refreshed." if refreshed else "Derived results: no refresh due."
        )


def landing_report(passes: list[LivePass], *, refreshed: bool) -> dict[str, Any]:
    """What the passes landed, summed per stream upload (JSON-ready; money as decimal text)."""
    streams: dict[int, dict[str, Any]] = {}
    for landed in passes:
        for s in landed.streams:
            row = streams.setdefault(
                s.upload_id,
                {
                    "upload_id": s.upload_id,
                    "source": s.source,
                    "day": s.day.isoformat(),
                    "batches": 0,
                    "records": 0,
                    "landed": 0,
                    "duplicates": 0,
                    "input_tokens": 0,
                    "output_tokens": 0,
                    "logged_cost_usd": Decimal(0),
                },
            )
            for name in ("batches", "records", "landed", "duplicates"):
                row[name] += getattr(s, name)
            row["input_tokens"] += s.input_tokens
            row["output_tokens"] += s.output_tokens
            row["logged_cost_usd"] += s.logged_cost_usd
    rows = [{**r, "logged_cost_usd": decimal_text(r["logged_cost_usd"])} for r in streams.values()]
    return {
        "batches": sum(p.batches for p in passes),
        "records": sum(p.records for p in passes),
        "landed": sum(p.landed for p in passes),
        "duplicates": sum(p.duplicates for p in passes),
        "keys_forgotten": sum(p.keys_forgotten for p in passes),
        "pending": pending_records(),
        "streams": rows,
        "derived_refreshed": refreshed,
    }
