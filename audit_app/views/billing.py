"""Reconciliation page: billed token charges against the token-log estimate."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

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
    unknown_meters,
)


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


class ReconciliationView(RoleRequiredMixin, View):
    template_name = "audit/reconciliation.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        error = None
        try:
            filters = parse_filters(request.GET)
            threshold = parse_threshold(request.GET.get("threshold"))
        except FilterError as exc:
            filters, threshold, error = parse_filters({}), DEFAULT_THRESHOLD_PERCENT, str(exc)
        rows = reconciliation(start=filters.start, end=filters.end, threshold_percent=threshold)
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
                        " ".join(map(str, r.bill_upload_ids)),
                        " ".join(map(str, r.log_upload_ids)),
                    ]
                    for r in rows
                ),
            )
        days = [
            filters.start + timedelta(days=i) for i in range((filters.end - filters.start).days + 1)
        ]
        billed: dict[Any, Decimal] = defaultdict(Decimal)
        estimated: dict[Any, Decimal] = defaultdict(Decimal)
        for row in rows:
            if row.currency == "USD":
                billed[row.day] += row.billed
                estimated[row.day] += row.estimated or Decimal(0)
        context = {
            "filters": filters,
            "filter_error": error,
            "choices": filter_choices(),
            "threshold": threshold,
            "rows": rows,
            "flagged": sum(1 for r in rows if r.flagged),
            "unknown_meters": unknown_meters(start=filters.start, end=filters.end),
            "figure": charts.build_reconciliation_figure(
                days=days, billed=[billed[d] for d in days], estimated=[estimated[d] for d in days]
            ),
        }
        return render(request, self.template_name, context)
