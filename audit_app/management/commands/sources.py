"""List billing sources with their last poll, last change and last error, or poll them now."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit_app.derived import derived_refresh
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.sources import PollResult, next_poll_at, source_poll, where
from audit_app.models import BillingSource

ALL = "__all__"


def _when(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def source_row(source: BillingSource) -> dict[str, Any]:
    """A source as the command prints it (never its secret key)."""
    return {
        "id": source.pk,
        "name": source.name,
        "kind": source.kind,
        "where": where(source),
        "prefix": source.prefix,
        "format": source.format,
        "start_date": source.start_date.isoformat() if source.start_date else None,
        "has_api_key": bool(source.api_key),
        "poll_every_minutes": source.poll_every_minutes,
        "enabled": source.enabled,
        "last_polled_at": _when(source.last_polled_at),
        "next_poll_at": _when(next_poll_at(source)),
        "last_changed_at": _when(source.last_changed_at),
        "last_error": source.last_error,
        "consecutive_failures": source.consecutive_failures,
        "uploads": source.uploads.count(),
    }


class Command(BaseCommand):
    help = (
        "List billing sources (as a table or, with --json, a list): last poll, last change and "
        "last error. --poll polls every enabled source now (--poll NAME: that one, enabled or "
        "not) and ingests what is new in-process; exits non-zero if a source could not be read."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true")
        parser.add_argument(
            "--poll", nargs="?", const=ALL, metavar="NAME", help="Poll now (all, or NAME)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["poll"] is None:
            self._list(as_json=options["json"])
            return
        results = [self._poll(source) for source in self._to_poll(options["poll"])]
        derived_refresh()  # the command returns with classes and recommendations fresh
        if options["json"]:
            self.stdout.write(json.dumps([report for _, report in results]))
        else:
            for result, report in results:
                self._print_poll(result, report)
        failed = [result.source_name for result, _ in results if not result.ok]
        if failed:
            raise CommandError(
                f"{len(failed)} of {len(results)} sources could not be read: {', '.join(failed)}"
            )

    def _to_poll(self, name: str) -> list[BillingSource]:
        sources = BillingSource.objects.select_related("created_by").order_by("name", "pk")
        if name == ALL:
            return list(sources.filter(enabled=True))
        found = list(sources.filter(name=name))
        if not found:
            known = ", ".join(sources.values_list("name", flat=True)) or "none"
            raise CommandError(f"No billing source is named {name!r}; known: {known}.")
        return found

    def _poll(self, source: BillingSource) -> tuple[PollResult, dict[str, Any]]:
        result = source_poll(source, enqueue=False)
        ingested = []
        for upload_id in result.uploads:
            upload = upload_ingest(upload_id=upload_id)
            ingested.append({"id": upload.pk, "status": upload.status, "error": upload.error})
        return result, {**result.as_dict(), "ingested": ingested}

    def _print_poll(self, result: PollResult, report: dict[str, Any]) -> None:
        if result.provider:
            self.stdout.write(
                f"{result.source_name}: days {result.window or 'none complete yet'}, "
                f"{result.pages_read} pages read, {result.unchanged} unchanged, "
                f"{len(result.uploads)} new uploads, {len(result.duplicates)} already uploaded"
            )
        else:
            self._print_listing(result)
        for upload in report["ingested"]:
            error = f": {upload['error']}" if upload["error"] else ""
            self.stdout.write(f"  upload {upload['id']}: {upload['status']}{error}")
        for message in (*result.refused, *result.errors):
            self.stdout.write(f"  {message}")

    def _print_listing(self, result: PollResult) -> None:
        self.stdout.write(
            f"{result.source_name}: {result.listed} objects, {result.unchanged} unchanged, "
            f"{len(result.uploads)} new uploads, {len(result.duplicates)} already uploaded"
        )

    def _list(self, *, as_json: bool) -> None:
        rows = [source_row(s) for s in BillingSource.objects.order_by("name", "pk")]
        if as_json:
            self.stdout.write(json.dumps(rows))
            return
        self.stdout.write(
            f"{'source':<24} {'kind':<7} {'last poll':<17} {'last change':<17} {'fails':>5} where"
        )
        for row in rows:
            self.stdout.write(
                f"{row['name'][:24]:<24} {row['kind']:<7} {_short(row['last_polled_at']):<17} "
                f"{_short(row['last_changed_at']):<17} {row['consecutive_failures']:>5} "
                f"{row['where']}{'' if row['enabled'] else ' (disabled)'}"
            )
            if row["last_error"]:
                self.stdout.write(f"  last error: {row['last_error']}")


def _short(moment: str | None) -> str:
    """2026-12-01T12:00:00+00:00 -> 2026-12-01 12:00."""
    return moment[:16].replace("T", " ") if moment else "never"
