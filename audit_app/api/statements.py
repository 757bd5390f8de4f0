"""Statements API: a month's statement per team (the JSON of `manage.py statement --json`), and
the allocation policy (read by every role, changed by finops analysts, audited).

Finops analysts and managers get every team; an engineer the teams whose directory lists them
(the month's total stays the month's). ``?policy=`` answers under one method for every pool
instead of the stored policy, as ``manage.py statement --policy`` does."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit_app.access.permissions import ALL_ROLES, HasAnyRole
from audit_app.api.spend import MONEY
from audit_app.statements.allocation import Method, Policy
from audit_app.statements.rows import statement_json
from audit_app.statements.services import (
    POLICY_WRITER_ROLES,
    month_statement,
    parse_month,
    policy_change,
    policy_current,
    policy_uniform,
    visible_teams,
)


class AllocationOutput(serializers.Serializer):
    pot = serializers.CharField(help_text='A pool\'s name, or "" for API spend without a team.')
    amount_usd = serializers.DecimalField(**MONEY)
    why = serializers.CharField()


class TeamStatementOutput(serializers.Serializer):
    team = serializers.CharField()
    direct_usd = serializers.DecimalField(**MONEY, help_text="API spend + GPU share.")
    direct_api_usd = serializers.DecimalField(**MONEY)
    direct_gpu_usd = serializers.DecimalField(**MONEY)
    allocated_usd = serializers.DecimalField(**MONEY, help_text="Its part of the shared cost.")
    total_usd = serializers.DecimalField(**MONEY, help_text="direct_usd + allocated_usd.")
    requests = serializers.IntegerField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    end_users = serializers.IntegerField(allow_null=True, help_text="null: none logged.")
    usd_per_1k_requests = serializers.DecimalField(**MONEY, allow_null=True)
    usd_per_1m_tokens = serializers.DecimalField(**MONEY, allow_null=True)
    usd_per_end_user = serializers.DecimalField(**MONEY, allow_null=True)
    previous_total_usd = serializers.DecimalField(**MONEY, allow_null=True)
    allocations = AllocationOutput(many=True)


class PoolPolicyOutput(serializers.Serializer):
    policy = serializers.ChoiceField(choices=[m.value for m in Method])
    owner_team = serializers.CharField(allow_null=True)


class StatementOutput(serializers.Serializer):
    month = serializers.CharField(help_text="YYYY-MM.")
    complete = serializers.BooleanField(help_text="false: month to date, never sent.")
    policy = serializers.ChoiceField(choices=[m.value for m in Method])
    owner_team = serializers.CharField(allow_null=True)
    pool_policies = serializers.DictField(child=PoolPolicyOutput())
    total_usd = serializers.DecimalField(**MONEY, help_text="The month's total: the teams' sum.")
    shared_usd = serializers.DecimalField(**MONEY, help_text="Of which shared cost.")
    teams = TeamStatementOutput(many=True)


class PolicyInput(serializers.Serializer):
    pool = serializers.CharField(
        allow_blank=True, default="", help_text='A serving pool\'s name; "" for the global rule.'
    )
    policy = serializers.ChoiceField(
        choices=[m.value for m in Method],
        allow_blank=True,
        help_text='"" removes a pool\'s override (it follows the global rule again).',
    )
    owner_team = serializers.CharField(allow_blank=True, default="", help_text="For owner.")


def _policy_json(policy: Policy) -> dict[str, Any]:
    return {
        "policy": str(policy.default.method),
        "owner_team": policy.default.owner or None,
        "pool_policies": {
            pool: {"policy": str(rule.method), "owner_team": rule.owner or None}
            for pool, rule in sorted(policy.pools.items())
        },
    }


class PolicyOutput(serializers.Serializer):
    policy = serializers.ChoiceField(choices=[m.value for m in Method])
    owner_team = serializers.CharField(allow_null=True)
    pool_policies = serializers.DictField(child=PoolPolicyOutput())


class StatementApi(APIView):
    """The month's statement per team (``?month=YYYY-MM``; default: the last month with data
    that is over): every team's totals add up to the month's total to the cent. Money is a
    decimal string, as `manage.py statement --json` prints it."""

    permission_classes = [HasAnyRole]
    roles_by_method = {"GET": ALL_ROLES}

    @extend_schema(
        parameters=[
            OpenApiParameter("month", str, description="YYYY-MM."),
            OpenApiParameter("policy", str, enum=[m.value for m in Method]),
        ],
        responses=StatementOutput,
    )
    def get(self, request: Request) -> Response:
        first = parse_month(request.query_params.get("month"))
        asked = request.query_params.get("policy")
        statement = month_statement(first, policy=policy_uniform(asked) if asked else None)
        teams = statement.visible_to(visible_teams(request.user))
        return Response(statement_json(statement, teams))


class StatementPolicyApi(APIView):
    """GET: how shared cost is allocated (every role). POST (finops): set the global rule
    (``pool`` "") or a pool's override; audited, and every month's statements follow."""

    permission_classes = [HasAnyRole]
    roles_by_method = {"GET": ALL_ROLES, "POST": POLICY_WRITER_ROLES}

    @extend_schema(responses=PolicyOutput)
    def get(self, request: Request) -> Response:
        return Response(_policy_json(policy_current()))

    @extend_schema(request=PolicyInput, responses=PolicyOutput)
    def post(self, request: Request) -> Response:
        data = PolicyInput(data=request.data)
        data.is_valid(raise_exception=True)
        asked = data.validated_data
        policy = policy_change(
            actor=request.user,
            pool=asked["pool"],
            method=asked["policy"],
            owner=asked["owner_team"],
        )
        return Response(_policy_json(policy))
