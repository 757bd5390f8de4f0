"""Query parameters on pages, read with the parsers of audit_app.lib.query_params.

A bad value does not stop a page: the parameter's default is used, the page says which value was
refused (``filter_error``) and answers 400. A CSV export never falls back to defaults: it answers
400 with the message, so a script cannot save the wrong range without noticing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.views import View
from django.views.generic.base import TemplateResponseMixin

from audit_app.lib.query_params import ParameterError, QueryParams, choice_param

P = ParamSpec("P")
T = TypeVar("T")


class QueryParamsMixin(TemplateResponseMixin, View):
    param_errors: list[str]

    def setup(self, request: HttpRequest, *args: Any, **kwargs: Any) -> None:
        super().setup(request, *args, **kwargs)
        self.param_errors = []

    def param(
        self,
        parse: Callable[Concatenate[QueryParams, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """``parse(request.GET, ...)``; on a bad value, the message is kept and the default
        (what ``parse`` gives without the parameter) returned."""
        try:
            return parse(self.request.GET, *args, **kwargs)
        except ParameterError as exc:
            self.param_errors.append(str(exc))
            return parse({}, *args, **kwargs)

    def wants_csv(self) -> bool:
        return self.param(choice_param, "export", ("csv",), default="") == "csv"

    def csv_refused(self) -> HttpResponse | None:
        """A 400 naming the refused values, or None when every parameter was good."""
        if not self.param_errors:
            return None
        return HttpResponseBadRequest(
            "; ".join(self.param_errors), content_type="text/plain; charset=utf-8"
        )

    def render_to_response(self, context: dict[str, Any], **response_kwargs: Any) -> HttpResponse:
        context["filter_error"] = "; ".join(self.param_errors)
        if self.param_errors:
            response_kwargs["status"] = 400
        return super().render_to_response(context, **response_kwargs)
