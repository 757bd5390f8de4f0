"""What the sign-in page offers: single sign-on (when OIDC_ISSUER is set) and the password
form (hidden by OIDC_ONLY, except at ``?password=1`` for break-glass administrators)."""

from __future__ import annotations

from typing import Any

from django import template
from django.conf import settings

register = template.Library()


@register.simple_tag(takes_context=True)
def sign_in_options(context: dict[str, Any]) -> dict[str, bool]:
    request = context.get("request")
    asked = request is not None and request.GET.get("password") == "1"
    only = bool(settings.OIDC_ISSUER) and settings.OIDC_ONLY
    return {"sso": bool(settings.OIDC_ISSUER), "password": not only or asked, "only": only}
