"""Statements pages: the month's statement per team (with the policy and "Send now" for finops),
a team's statement with its last 12 months, and the CSV and Excel downloads. Finops analysts
and managers see every team; an engineer sees the teams whose directory lists them."""

from __future__ import annotations

from datetime import date

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseRedirect,
)
from django.shortcuts import render
from django.urls import reverse
from django.views import View

from audit_app.access.permissions import RoleRequiredMixin, has_role
from audit_app.lib.csv_export import csv_response
from audit_app.lib.errors import DomainError
from audit_app.lib.query_params import ParameterError, text_param
from audit_app.models import AllocationRule, ServingPool, StatementDelivery
from audit_app.statements.charts import build_team_months_figure
from audit_app.statements.delivery import XLSX, statements_send
from audit_app.statements.rows import CSV_HEADER, csv_rows
from audit_app.statements.services import (
    POLICY_WRITER_ROLES,
    MonthStatement,
    TeamStatement,
    default_month,
    month_statement,
    parse_month,
    policy_change,
    previous_month,
    team_directory,
    team_history,
    visible_teams,
)
from audit_app.statements.workbook import statement_workbook


def _after(first: date) -> date:
    """The first day of the month after ``first``'s."""
    return date(first.year + first.month // 12, first.month % 12 + 1, 1)


def _month(request: HttpRequest) -> tuple[date, str]:
    """The ?month= asked for, or the default month and why the asked one was refused."""
    try:
        return parse_month(request.GET.get("month") or request.POST.get("month")), ""
    except ParameterError as exc:
        return default_month(), str(exc)


def _visible(request: HttpRequest, statement: MonthStatement) -> tuple[TeamStatement, ...]:
    return statement.visible_to(visible_teams(request.user))


class StatementListView(RoleRequiredMixin, View):
    template_name = "audit/statements.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        first, error = _month(request)
        statement = month_statement(first)
        teams = visible_teams(request.user)
        directory = team_directory()
        shown = statement.visible_to(teams)
        context = {
            "statement": statement,
            "teams": shown,
            "rows": [(t, directory.get(t.team)) for t in shown],
            "sees_all": teams is None,
            "directory": directory,
            "send_day": settings.STATEMENTS_SEND_DAY,
            "month_param": f"{first:%Y-%m}",
            "previous": f"{previous_month(first):%Y-%m}",
            "next": f"{_after(first):%Y-%m}",
            "filter_error": error,
            "can_write": has_role(request.user, POLICY_WRITER_ROLES),
            "rules": AllocationRule.objects.all(),
            "pools": ServingPool.objects.values_list("name", flat=True),
            "methods": AllocationRule.Method.choices,
            "deliveries": StatementDelivery.objects.filter(month=first),
        }
        return render(request, self.template_name, context, status=400 if error else 200)


class StatementPolicyView(RoleRequiredMixin, View):
    """POST (finops): set the global rule or a pool's override; back to the Statements page."""

    roles_by_method = {"*": POLICY_WRITER_ROLES}

    def post(self, request: HttpRequest) -> HttpResponse:
        try:
            policy_change(
                actor=request.user,
                pool=request.POST.get("pool", ""),
                method=request.POST.get("method", ""),
                owner=request.POST.get("owner", ""),
            )
        except DomainError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, "Allocation policy saved; every month follows it.")
        month = request.POST.get("month", "")
        return HttpResponseRedirect(reverse("statements") + (f"?month={month}" if month else ""))


class StatementSendView(RoleRequiredMixin, View):
    """POST (finops): send the month's statements to the team owners now (once each)."""

    roles_by_method = {"*": POLICY_WRITER_ROLES}

    def post(self, request: HttpRequest) -> HttpResponse:
        first, error = _month(request)
        if error:
            messages.error(request, error)
        else:
            try:
                outcomes = statements_send(month=first)
            except DomainError as exc:
                messages.error(request, str(exc))
            else:
                sent = sum(o.outcome == "sent" for o in outcomes)
                failed = [f"{o.team}: {o.outcome}" for o in outcomes if o.outcome.startswith("f")]
                messages.success(
                    request,
                    f"{sent} statement(s) sent; {len(outcomes) - sent - len(failed)} were sent "
                    "already." + (f" Failed: {'; '.join(failed)}" if failed else ""),
                )
        return HttpResponseRedirect(reverse("statements") + f"?month={first:%Y-%m}")


class TeamStatementView(RoleRequiredMixin, View):
    template_name = "audit/statement_team.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        first, error = _month(request)
        try:
            name = text_param(request.GET, "team")
        except ParameterError as exc:
            name, error = "", "; ".join(filter(None, [error, str(exc)]))
        teams = visible_teams(request.user)
        if teams is not None and name not in teams:
            raise PermissionDenied("You may see the statements of your own teams only.")
        statement = month_statement(first)
        team = statement.team(name)
        history = team_history(name, last=first)
        context = {
            "statement": statement,
            "team": team,
            "name": name,
            "entry": team_directory().get(name),
            "month_param": f"{first:%Y-%m}",
            "previous": f"{previous_month(first):%Y-%m}",
            "next": f"{_after(first):%Y-%m}",
            "filter_error": error,
            "parts_tables": [("Workloads", team.bill.workloads), ("Models", team.bill.models)]
            if team
            else [],
            "figure": build_team_months_figure(
                team=name,
                months=[h.month for h in history],
                direct=[h.direct_usd for h in history],
                allocated=[h.allocated_usd for h in history],
            ),
        }
        return render(request, self.template_name, context, status=400 if error else 200)


def _download(request: HttpRequest) -> tuple[MonthStatement, tuple[TeamStatement, ...]] | str:
    try:
        first = parse_month(request.GET.get("month"))
    except ParameterError as exc:
        return str(exc)
    statement = month_statement(first)
    return statement, _visible(request, statement)


class StatementCsvView(RoleRequiredMixin, View):
    def get(self, request: HttpRequest) -> HttpResponse:
        found = _download(request)
        if isinstance(found, str):
            return HttpResponseBadRequest(found, content_type="text/plain; charset=utf-8")
        statement, teams = found
        return csv_response(
            filename=f"statements-{statement.month:%Y-%m}.csv",
            header=CSV_HEADER,
            rows=csv_rows(statement, teams, team_directory()),
        )


class StatementXlsxView(RoleRequiredMixin, View):
    def get(self, request: HttpRequest) -> HttpResponse:
        found = _download(request)
        if isinstance(found, str):
            return HttpResponseBadRequest(found, content_type="text/plain; charset=utf-8")
        statement, teams = found
        response = HttpResponse(
            statement_workbook(statement, teams, team_directory()), content_type=XLSX
        )
        response["Content-Disposition"] = (
            f'attachment; filename="statements-{statement.month:%Y-%m}.xlsx"'
        )
        return response
