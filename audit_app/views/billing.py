"""Reconciliation page: billed token charges against the token-log estimate."""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views import View

from audit_app import charts
from audit_app.csv_export import csv_response
from audit_app.filters import FilterError, parse_filters
from audit_app.permissions import RoleRequiredMixin
from audit_app.selectors import filter_choices
from audit_app.selectors_billing import (
    DEFAULT_THRESHOLD_PERCENT,
    reconciliation,
    reconciliation_totals,
    unknown_meters,
)

_TRUE = ("1", "true")
_FALSE = ("0", "false", "")


def parse_threshold(raw: str | None) -> Decimal:
    """The flag threshold in percent; a bad value raises FilterError naming it."""
    if raw in (None, ""):
        return DEFAULT_THRESHOLD_PERCENT
    try:
        value = Decimal(raw)
    except InvalidOperation:
        raise FilterError("threshold", f"threshold={raw!r} is not a number") from None
    if not value.is_finite() or value < 0:
        raise FilterError("threshold", f"threshold={raw!r} must be 0 or more")
    return value


def parse_flagged(raw: str | None) -> bool:
    """``flagged=1`` / ``true`` keeps the flagged rows alone; ``0`` / ``false`` / absent keeps
    all. Anything else raises FilterError naming the parameter."""
    value = (raw or "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise FilterError("flagged", f"flagged={raw!r} must be 1, true, 0 or false")


class ReconciliationView(RoleRequiredMixin, View):
    template_name = "audit/reconciliation.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        error = None
        try:
            filters = parse_filters(request.GET)
            threshold = parse_threshold(request.GET.get("threshold"))
            flagged_only = parse_flagged(request.GET.get("flagged"))
        except FilterError as exc:
            filters, threshold, error = parse_filters({}), DEFAULT_THRESHOLD_PERCENT, str(exc)
            flagged_only = False
        rows = reconciliation(
            start=filters.start,
            end=filters.end,
            threshold_percent=threshold,
            flagged_only=flagged_only,
        )
        if request.GET.get("export") == "csv":
            return csv_response(
                filename=f"reconciliation-{filters.start}-{filters.end}.csv",
                header=[
                    "day",
                    "provider",
                    "model",
                    "currency",
                    "billed",
                    "estimated",
                    "variance",
                    "variance_percent",
                    "flagged",
                    "note",
                    "bill_uploads",
                    "log_uploads",
                ],
                rows=(
                    [
                        r.day.isoformat(),
                        r.provider,
                        r.model,
                        r.currency,
                        r.billed,
                        r.estimated,
                        r.variance,
                        r.variance_percent,
                        r.flagged,
                        r.note,
                        " ".join(map(str, r.bill_upload_ids)),
                        " ".join(map(str, r.log_upload_ids)),
                    ]
                    for r in rows
                ),
            )
        days = [
            filters.start + timedelta(days=i) for i in range((filters.end - filters.start).days + 1)
        ]
        # Days without a USD row get no bar (None), so a range billed only in other currencies
        # says so in words instead of drawing bars of zeros.
        billed: dict[date, Decimal] = defaultdict(Decimal)
        estimated: dict[date, Decimal] = defaultdict(Decimal)
        for row in rows:
            if row.currency == "USD":
                billed[row.day] += row.billed
                estimated[row.day] += row.estimated or Decimal(0)
        context = {
            "filters": filters,
            "filter_error": error,
            "choices": filter_choices(),
            "threshold": threshold,
            "flagged_only": flagged_only,
            "rows": rows,
            "totals": reconciliation_totals(rows),
            "flagged": sum(1 for r in rows if r.flagged),
            "unknown_meters": unknown_meters(start=filters.start, end=filters.end),
            "figure": charts.build_reconciliation_figure(
                days=days,
                billed=[billed.get(d) for d in days],
                estimated=[estimated.get(d) for d in days],
            ),
        }
        return render(request, self.template_name, context)
