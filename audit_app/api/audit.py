"""Audit trail API (administrators only)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit_app.api.pagination import PAGE_PARAMETERS, PageOutput, paginate
from audit_app.lib.query_params import choice_param
from audit_app.models import AuditEvent


class AuditEventOutput(serializers.ModelSerializer):
    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "created_at",
            "actor_name",
            "action",
            "object_type",
            "object_id",
            "summary",
            "details",
        ]


class AuditEventPageOutput(PageOutput):
    results = AuditEventOutput(many=True)


class AuditEventListApi(APIView):
    """Who did what and when, newest first (filter with ?action=)."""

    permission_classes = [IsAdminUser]

    @extend_schema(
        parameters=[
            OpenApiParameter("action", str, enum=AuditEvent.Action.values),
            *PAGE_PARAMETERS,
        ],
        responses=AuditEventPageOutput,
        operation_id="v1_audit_events_list",
    )
    def get(self, request: Request) -> Response:
        events = AuditEvent.objects.all()
        action = choice_param(request.query_params, "action", AuditEvent.Action.values, default="")
        if action:
            events = events.filter(action=action)
        page = paginate(events, request)
        return Response(AuditEventPageOutput(page.envelope(page.items)).data)
