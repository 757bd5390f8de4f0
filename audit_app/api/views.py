"""API views: one class per operation, explicit serializers, thin over selectors/services."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from audit_app.access.permissions import user_roles


class ApiRootOutput(serializers.Serializer):
    me = serializers.URLField()
    uploads = serializers.URLField()
    spend = serializers.URLField()
    workloads = serializers.URLField()
    schema = serializers.URLField()
    docs = serializers.URLField()


class ApiRootApi(APIView):
    """Entry point: links to what the API offers."""

    @extend_schema(responses=ApiRootOutput, operation_id="api_root")
    def get(self, request: Request) -> Response:
        def link(name: str) -> str:
            return reverse(name, request=request)

        data: dict[str, Any] = {
            "me": link("api-me"),
            "uploads": link("api-uploads"),
            "spend": link("api-spend"),
            "workloads": link("api-workloads"),
            "schema": link("api-schema"),
            "docs": link("api-docs"),
        }
        return Response(ApiRootOutput(data).data)


class MeOutput(serializers.Serializer):
    username = serializers.CharField()
    roles = serializers.ListField(child=serializers.CharField())
    is_staff = serializers.BooleanField()
    auth = serializers.ChoiceField(choices=["session", "token"])


class MeApi(APIView):
    """Who the caller is and which roles they hold."""

    @extend_schema(responses=MeOutput)
    def get(self, request: Request) -> Response:
        user = request.user
        data = {
            "username": user.get_username(),
            "roles": sorted(user_roles(user)),
            "is_staff": user.is_staff,
            "auth": "token" if request.auth is not None else "session",
        }
        return Response(MeOutput(data).data)
