"""The audit trail page: administrators see who did what, and when."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponseBase
from django.views.generic import TemplateView

from audit_app.lib.query_params import choice_param
from audit_app.models import AuditEvent
from audit_app.views.query import QueryParamsMixin


class AuditTrailView(QueryParamsMixin, TemplateView):
    template_name = "audit/audit_trail.html"

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not request.user.is_authenticated or not request.user.is_staff:
            raise PermissionDenied("The audit trail is for administrators.")
        return super().dispatch(request, *args, **kwargs)

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        action = self.param(choice_param, "action", AuditEvent.Action.values, default="")
        events = AuditEvent.objects.select_related("actor")
        if action:
            events = events.filter(action=action)
        context.update(events=events[:500], actions=AuditEvent.Action.choices, action=action)
        return context
