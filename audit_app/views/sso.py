"""Single sign-on pages: the start (redirect to the issuer), the callback, and the page of a
user whose groups map to no role. Sign-out is the library's view, which ends the issuer's
session too (`audit_app.access.oidc.provider_logout_url`).

The flow is mozilla-django-oidc's views; what they would answer with a traceback or a silent
redirect (a wrong or stale ``state``, a refused code, a token that fails a check, the issuer
unreachable) is a page saying what happened, an audit event and a failed-login count here
(`audit_app.access.oidc.sso_refusal_record`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.generic import TemplateView, View
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
    OIDCLogoutView,
)

from audit_app.access.oidc import sso_enabled, sso_refusal_record
from audit_app.access.oidc_discovery import SsoRefused, issuer_discover
from audit_app.access.oidc_roles import role_map
from audit_app.access.permissions import user_roles

# A sign-in answered later than this after it started is refused (its state is stale).
STATE_MAX_AGE_SECONDS = 15 * 60
TOO_MANY = "Too many failed sign-ins from this address; try again in {} seconds."


def sso_only(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """``view`` while single sign-on is configured; 404 while OIDC_ISSUER is unset."""

    @wraps(view)
    def gated(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not sso_enabled():
            raise Http404("Single sign-on is not configured.")
        return view(request, *args, **kwargs)

    return gated


_local_sign_out = auth_views.LogoutView.as_view()
_sso_sign_out = OIDCLogoutView.as_view()


def sign_out(request: HttpRequest) -> HttpResponse:
    """Sign-out (POST): ends the session here and, with single sign-on configured and the session
    signed in through it, the issuer's too (`audit_app.access.oidc.provider_logout_url`)."""
    view = _sso_sign_out if sso_enabled() else _local_sign_out
    response: HttpResponse = view(request)
    return response


def refused_page(request: HttpRequest, refusal: SsoRefused) -> HttpResponse:
    """The page of a refused sign-in, after recording it; 429 once the address is locked."""
    lock = sso_refusal_record(request, refusal)
    if lock is not None:
        message, status = TOO_MANY.format(lock.retry_after), 429
    else:
        message = str(refusal)
        status = 503 if refusal.reason == "issuer_unavailable" else 403
    response = render(request, "registration/sso_refused.html", {"message": message}, status=status)
    if lock is not None:
        response["Retry-After"] = str(lock.retry_after)
    return response


class SsoStartView(OIDCAuthenticationRequestView):
    """``/oidc/authenticate/``: a new state, nonce and PKCE verifier in the session, and a
    redirect to the issuer's authorization endpoint (from its discovery document)."""

    def __init__(self, **kwargs: Any) -> None:
        View.__init__(self, **kwargs)  # the library's reads endpoints from settings
        self.OIDC_RP_CLIENT_ID = settings.OIDC_CLIENT_ID

    def get(self, request: HttpRequest) -> HttpResponse:
        try:
            self.OIDC_OP_AUTH_ENDPOINT = issuer_discover().authorization_endpoint
        except SsoRefused as refusal:
            return refused_page(request, refusal)
        response: HttpResponse = super().get(request)
        return response


class SsoCallbackView(OIDCAuthenticationCallbackView):
    """``/oidc/callback/``: the issuer's answer; signs the user in or says why not."""

    def get(self, request: HttpRequest) -> HttpResponse:
        try:
            self._check_answer(request)
            response: HttpResponse = super().get(request)
        except SsoRefused as refusal:
            return refused_page(request, refusal)
        except SuspiciousOperation as exc:  # the library's own checks
            return refused_page(request, SsoRefused(str(exc), reason="suspicious"))
        return response

    def _check_answer(self, request: HttpRequest) -> None:
        states = request.session.get("oidc_states")
        states = states if isinstance(states, dict) else {}
        state = request.GET.get("state", "")
        if request.GET.get("error"):
            states.pop(state, None)
            request.session["oidc_states"] = states
            error = request.GET.get("error_description") or request.GET["error"]
            raise SsoRefused(
                f"The identity provider did not sign you in: {error[:200]}.",
                reason="provider_error",
            )
        if not request.GET.get("code") or not state:
            raise SsoRefused(
                "This address takes the identity provider's answer to a sign-in; it was opened "
                "without one. Start again from the sign-in page.",
                reason="not_an_answer",
            )
        entry = states.get(state)
        if not isinstance(entry, dict):
            raise SsoRefused(
                "The answer's state matches no sign-in this browser started (it is stale, "
                "was already used, or was forged). Start again from the sign-in page.",
                reason="wrong_state",
            )
        if time.time() - float(entry.get("added_on", 0)) > STATE_MAX_AGE_SECONDS:
            states.pop(state, None)
            request.session["oidc_states"] = states
            raise SsoRefused(
                "The sign-in took longer than 15 minutes. Start again from the sign-in page.",
                reason="stale_state",
            )

    def login_failure(self) -> HttpResponse:
        raise SsoRefused("The identity provider's answer signed no one in.", reason="no_user")

    @property
    def success_url(self) -> str:
        if not user_roles(self.user):
            return reverse("sso-no-role")
        url: str = super().success_url
        return url


class SsoNoRoleView(TemplateView):
    """A signed-in user none of whose groups maps to a role: what they hold and whom to ask."""

    template_name = "registration/sso_no_role.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        mapping = role_map()
        context.update(
            roles=sorted(user_roles(self.request.user)),
            groups_claim=settings.OIDC_ROLES_CLAIM,
            mapped_groups=[
                (group, ", ".join(sorted(roles))) for group, roles in sorted(mapping.items())
            ],
            claimed=self.request.session.get("sso_groups") or [],
        )
        return context
