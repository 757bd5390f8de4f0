"""Reconciliation page: billed token charges against the token-log estimate."""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta
from decimal import Decimal

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.views import View

from audit_app.access.permissions import RoleRequiredMixin
from audit_app.costs.billing import (
    ReconciliationRow,
    parse_flagged,
    parse_threshold,
    reconciliation,
    reconciliation_totals,
    unknown_meters,
)
from audit_app.lib.csv_export import csv_response
from audit_app.lib.query_params import int_param
from audit_app.reporting import charts
from audit_app.reporting.filters import SpendFilters, parse_filters
from audit_app.reporting.selectors import filter_choices
from audit_app.views.query import QueryParamsMixin

# The page's table lists this many rows a page (?page=2, ...), flagged and largest variance
# first; the totals, the chart and the CSV cover every row.
ROWS_PER_PAGE = 100


def reconciliation_csv(filters: SpendFilters, rows: list[ReconciliationRow]) -> HttpResponse:
    """Every reconciliation row as CSV (the page's export)."""
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


class ReconciliationView(RoleRequiredMixin, QueryParamsMixin, View):
    template_name = "audit/reconciliation.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        filters = self.param(parse_filters)
        threshold = self.param(parse_threshold)
        flagged_only = self.param(parse_flagged)
        export_csv = self.wants_csv()
        if export_csv and (refused := self.csv_refused()):
            return refused
        rows = reconciliation(
            start=filters.start,
            end=filters.end,
            threshold_percent=threshold,
            flagged_only=flagged_only,
        )
        if export_csv:
            return reconciliation_csv(filters, rows)
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
        paginator = Paginator(rows, ROWS_PER_PAGE)
        page = paginator.page(
            self.param(int_param, "page", default=1, minimum=1, maximum=paginator.num_pages)
        )
        query = filters.query_string(threshold=str(threshold), flagged="1" if flagged_only else "")
        context = {
            "filters": filters,
            "choices": filter_choices(),
            "threshold": threshold,
            "flagged_only": flagged_only,
            "rows": rows,
            "page": page,
            "page_query": query,
            "totals": reconciliation_totals(rows),
            "flagged": sum(1 for r in rows if r.flagged),
            "unknown_meters": unknown_meters(start=filters.start, end=filters.end),
            "figure": charts.build_reconciliation_figure(
                days=days,
                billed=[billed.get(d) for d in days],
                estimated=[estimated.get(d) for d in days],
            ),
        }
        return self.render_to_response(context)
