"""Ingest a file in-process, through the same service as an upload from the page or API, and
refresh derived results before returning."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit_app.derived import derived_refresh
from audit_app.ingestion.formats import AUTO_FORMAT, AUTO_KIND, FORMATS_BY_KIND
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import (
    UPLOAD_KINDS,
    StorageFull,
    UploadRefused,
    upload_create,
)
from audit_app.lib.formatting import money, money_json
from audit_app.models import Upload
from audit_app.reporting.spend import upload_spend

MAX_PRINTED_REJECTS = 100


class Command(BaseCommand):
    help = (
        "Ingest PATH (a token log or billing export) and print what landed; exits non-zero "
        "if it cannot."
    )
    # The system checks (URL conf, admin, DRF schema) are `manage.py check`'s and the server's
    # business; here they cost every ingest most of a second before it starts.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path")
        parser.add_argument(
            "--format",
            default=AUTO_FORMAT,
            choices=FORMATS_BY_KIND[AUTO_KIND],
        )
        parser.add_argument(
            "--kind",
            default=AUTO_KIND,
            choices=UPLOAD_KINDS,
            help="auto (default) detects token log vs billing export from the file.",
        )
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["path"])
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        try:
            with open(path, "rb") as source:
                upload = upload_create(
                    source=source,
                    original_name=path.name,
                    kind=options["kind"],
                    requested_format=options["format"],
                    enqueue=False,
                )
        except (UploadRefused, StorageFull) as exc:
            raise CommandError(f"{path}: {exc}") from None
        upload = upload_ingest(upload_id=upload.pk)
        if upload.status != Upload.Status.SUCCEEDED:
            raise CommandError(f"{path}: {upload.error} (upload {upload.pk})")
        # Returns with classes and recommendations fresh; the refresh task the landing queued
        # then finds nothing due.
        derived_refresh()
        if upload.kind == Upload.Kind.BILLING:
            report = billing_report(upload)
            if options["json"]:
                self.stdout.write(json.dumps(report))
            else:
                self.stdout.write(
                    f"upload {upload.pk} ({report['format']}): {report['rows_accepted']} of "
                    f"{report['rows_read']} rows accepted, {report['rows_rejected']} rejected; "
                    f"billed {report['billed_cost']}"
                )
                for note in report["notes"]:
                    self.stdout.write(f"  note: {note}")
            return
        report = upload_report(upload)
        if options["json"]:
            self.stdout.write(json.dumps(report))
            return
        self.stdout.write(
            f"upload {upload.pk} ({report['format']}): {report['rows_accepted']} of "
            f"{report['rows_read']} rows accepted, {report['rows_rejected']} rejected; "
            f"{report['requests']} requests, {report['input_tokens']} input and "
            f"{report['output_tokens']} output tokens, {money(report['cost_usd'])}"
        )
        for reject in report["rejects"][:10]:
            self.stdout.write(f"  line {reject['line']}: {reject['reason']}")


def upload_report(upload: Upload) -> dict[str, Any]:
    """What `ingest --json` prints: counts, totals, cost and the first rejects."""
    spend = upload_spend(upload_id=upload.pk)
    cost = spend.api_spend_usd.quantize(Decimal("0.000001"))
    return {
        "upload_id": upload.pk,
        "format": upload.format,
        "rows_read": upload.rows_read,
        "rows_accepted": upload.rows_accepted,
        "rows_rejected": upload.rows_rejected,
        "requests": upload.requests,
        "input_tokens": upload.input_tokens,
        "output_tokens": upload.output_tokens,
        "cost_usd": str(cost),
        "unpriced_models": [
            {
                "provider": m.provider,
                "model": m.model,
                "requests": m.requests,
                "input_tokens": m.input_tokens,
                "output_tokens": m.output_tokens,
            }
            for m in spend.unpriced_models
        ],
        "rejects": [
            {"line": r["line"], "reason": r["reason"]} for r in upload.rejects[:MAX_PRINTED_REJECTS]
        ],
    }


def billing_report(upload: Upload) -> dict[str, Any]:
    """What `ingest --kind billing --json` prints: counts, totals per currency, whether the
    costs are actual or amortized, and notes (an amortized-cost export says so)."""
    return {
        "upload_id": upload.pk,
        "format": upload.format,
        "rows_read": upload.rows_read,
        "rows_accepted": upload.rows_accepted,
        "rows_rejected": upload.rows_rejected,
        "billed_cost": _exact(upload.billing_totals.get("billed", {})),
        "effective_cost": _exact(upload.billing_totals.get("effective", {})),
        "cost_basis": upload.billing_totals.get("cost_basis", "actual"),
        "notes": upload.billing_totals.get("notes", []),
        "rejects": [
            {"line": r["line"], "reason": r["reason"]} for r in upload.rejects[:MAX_PRINTED_REJECTS]
        ],
    }


def _exact(amounts: dict[str, str]) -> dict[str, str]:
    """An upload's stored totals per currency, each as `decimal_text`."""
    return money_json({currency: Decimal(amount) for currency, amount in amounts.items()})
