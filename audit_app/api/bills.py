"""Bills API: billed and effective cost over current charges, per billing period."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit_app.api.pagination import PAGE_PARAMETERS, PageOutput, paginate
from audit_app.costs.bills import bills_summary


class BillPeriodOutput(serializers.Serializer):
    provider = serializers.CharField()
    account = serializers.CharField(help_text="Billing account ('' when the export had none).")
    period_start = serializers.DateField()
    period_end = serializers.DateField(help_text="Exclusive.")
    cost_basis = serializers.ChoiceField(
        choices=["actual", "amortized"],
        help_text="`amortized`: from an amortized-cost export; it holds no billed cost.",
    )
    billed_cost = serializers.DictField(child=serializers.CharField())
    scheduled_cost = serializers.DictField(
        child=serializers.CharField(),
        help_text="Of billed_cost, the lines dated after the last complete day: scheduled, in "
        "no spend figure until their day completes.",
    )
    effective_cost = serializers.DictField(child=serializers.CharField())
    upload_id = serializers.IntegerField(help_text="The newest upload whose charges count.")
    upload_ids = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Every upload whose charges count: several for a split export.",
    )
    superseded_upload_ids = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Earlier uploads of this period whose charges a restated export replaced.",
    )


class BillsOutput(PageOutput):
    """Totals over every current period, and one page of the periods (``results``)."""

    billed_cost = serializers.DictField(child=serializers.CharField())
    scheduled_cost = serializers.DictField(
        child=serializers.CharField(),
        help_text="Of billed_cost, the lines dated after the last complete day: scheduled, in "
        "no spend figure until their day completes.",
    )
    effective_cost = serializers.DictField(child=serializers.CharField())
    results = BillPeriodOutput(many=True)


class BillsApi(APIView):
    """Billed and effective cost per currency over current charges: a restated export counts
    instead of the uploads it superseded; the JSON of `manage.py bills --json` with its
    `periods` paginated as `results`."""

    @extend_schema(parameters=PAGE_PARAMETERS, responses=BillsOutput)
    def get(self, request: Request) -> Response:
        summary = bills_summary().as_json()
        page = paginate(summary.pop("periods"), request)
        return Response(BillsOutput({**summary, **page.envelope(page.items)}).data)
