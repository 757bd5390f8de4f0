"""The login page, with failed attempts limited per account and per client address.

Credentials are checked first. A correct password signs in unless its account is locked from
this client address by failed attempts from it (that lock stops password guessing, so it
refuses the correct password too, until its window ends; from any other address the owner
signs in); a lock on the client address, which many users behind one proxy may share, refuses
only wrong passwords (`audit_app.access.auth_failures`; docs/running.md, "Running in production").
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import views as auth_views
from django.http import HttpResponse

from audit_app.access.auth_failures import (
    Lock,
    failure_lock,
    failure_record,
    login_account_key,
    login_address_key,
)
from audit_app.access.client_address import client_address

TOO_MANY_FOR_ACCOUNT = (
    "Too many failed logins for this account from this address; try again in {} seconds."
)
TOO_MANY_FROM_ADDRESS = "Too many failed logins from this address; try again in {} seconds."


class LoginView(auth_views.LoginView):
    redirect_authenticated_user = True

    def post(self, request: Any, *args: Any, **kwargs: Any) -> HttpResponse:
        form = self.get_form()
        username = str(request.POST.get("username", "")).strip()
        address = client_address(request)
        account_key = login_account_key(username, address) if username else None
        if form.is_valid():
            lock = failure_lock(account_key=account_key, address_key=None)
            if lock is None:
                return self.form_valid(form)
        else:
            address_key = login_address_key(address)
            lock = failure_lock(account_key=account_key, address_key=address_key)
            if lock is None:
                failure_record(account_key=account_key, address_key=address_key)
                return self.form_invalid(form)
        return self._too_many(form, lock)

    def _too_many(self, form: Any, lock: Lock) -> HttpResponse:
        message = TOO_MANY_FOR_ACCOUNT if lock.on_account else TOO_MANY_FROM_ADDRESS
        form.errors.clear()
        form.add_error(None, message.format(lock.retry_after))
        response = self.render_to_response(self.get_context_data(form=form), status=429)
        response["Retry-After"] = str(lock.retry_after)
        return response
