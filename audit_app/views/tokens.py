"""The API tokens page: a signed-in user (local or single sign-on) lists, creates and revokes
their own tokens; a new token's key is shown once, on the answer that creates it."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views import View

from audit_app.access.tokens import api_token_issue, api_token_revoke
from audit_app.models import ApiToken

NAME_MAX_LENGTH = ApiToken._meta.get_field("name").max_length or 100


def _owner(request: HttpRequest) -> User:
    """The signed-in user (the login-required middleware sends anyone else to sign in)."""
    if not isinstance(request.user, User):
        raise PermissionDenied("Sign in to manage your API tokens.")
    return request.user


def _page(request: HttpRequest, *, status: int = 200, **context: Any) -> HttpResponse:
    tokens = ApiToken.objects.filter(user=_owner(request)).order_by("-created_at")
    response = render(
        request,
        "audit/api_tokens.html",
        {"tokens": tokens, "name_max_length": NAME_MAX_LENGTH, **context},
        status=status,
    )
    # The page may show a key: no cache keeps it.
    response["Cache-Control"] = "no-store"
    return response


class ApiTokenListView(View):
    def get(self, request: HttpRequest) -> HttpResponse:
        return _page(request)

    def post(self, request: HttpRequest) -> HttpResponse:
        name = str(request.POST.get("name", "")).strip()
        if len(name) > NAME_MAX_LENGTH:
            return _page(
                request,
                error=f"The name is {len(name)} characters long; at most {NAME_MAX_LENGTH}.",
                status=400,
            )
        issued = api_token_issue(user=_owner(request), name=name)
        return _page(request, issued=issued)


class ApiTokenRevokeView(View):
    def post(self, request: HttpRequest, token_id: int) -> HttpResponse:
        token = ApiToken.objects.filter(pk=token_id, user=_owner(request)).first()
        if token is None:
            raise Http404("You have no such token.")
        api_token_revoke(token=token)
        messages.success(request, f"Token {token.prefix}… is revoked.")
        return redirect("api-tokens")
