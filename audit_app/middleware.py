"""Login required everywhere, except what is explicitly public.

Pages redirect anonymous visitors to the login page. The JSON API answers 401 instead of a
redirect (a script cannot follow a login form), so API views are left to DRF's authentication,
whose default permission also requires a signed-in user with a role.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.middleware import LoginRequiredMiddleware as DjangoLoginRequired
from django.http import HttpRequest, HttpResponse

# The Swagger UI is a page, so it keeps the redirect; everything else under /api/ is JSON.
_API_PREFIX = "/api/"
_API_PAGES = ("/api/docs/",)


class LoginRequiredMiddleware(DjangoLoginRequired):
    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., HttpResponse],
        view_args: tuple[Any, ...],
        view_kwargs: dict[str, Any],
    ) -> HttpResponse | None:
        path = request.path_info
        if path.startswith(_API_PREFIX) and not path.startswith(_API_PAGES):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)
