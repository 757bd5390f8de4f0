"""The login page, with failed attempts limited per client address."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import views as auth_views
from django.http import HttpResponse

from audit_app.authentication import failures_over_limit, record_failure

TOO_MANY = "Too many failed logins from this address; wait a minute and try again."


class LoginView(auth_views.LoginView):
    redirect_authenticated_user = True

    def post(self, request: Any, *args: Any, **kwargs: Any) -> HttpResponse:
        key = f"login:{request.META.get('REMOTE_ADDR', 'unknown')}"
        if failures_over_limit(key):
            form = self.get_form()
            form.errors.clear()
            form.add_error(None, TOO_MANY)
            return self.render_to_response(self.get_context_data(form=form), status=429)
        response = super().post(request, *args, **kwargs)
        if not request.user.is_authenticated:
            record_failure(key)
        return response
