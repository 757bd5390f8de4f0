"""Top-level URLs: pages, the API, its schema and docs, admin, login, health and the OTLP
traces receiver."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.decorators import login_not_required, login_required
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from audit_app.access.permissions import RoleRequiredMixin

# Registers the OpenAPI description of token auth with drf-spectacular before the schema view
# (or `manage.py spectacular`, which loads these URLs) describes the API. Not at start-up:
# drf-spectacular costs every process 0.1 s to import, and commands never describe the API.
from audit_app.api import schema  # noqa: F401
from audit_app.api.otlp import OtlpTracesApi
from audit_app.views.auth import LoginView
from audit_app.views.health import healthz
from audit_app.views.sso import SsoCallbackView, SsoNoRoleView, SsoStartView, sign_out, sso_only


class ApiDocsView(RoleRequiredMixin, SpectacularSwaggerSplitView):
    """The Swagger UI is a page: a user without a role is told which roles open it, as on every
    other page (an anonymous visitor is sent to the login form by ``login_required``, as DRF
    views are exempt from the login-required middleware)."""


# Under the API's paths, Django's own 400 and 404 answer in the API's JSON error shape.
handler400 = "audit_app.api.error_pages.bad_request"
handler404 = "audit_app.api.error_pages.not_found"

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/logout/", sign_out, name="logout"),
    # Single sign-on (404 while OIDC_ISSUER is unset), under mozilla-django-oidc's route names.
    path(
        "oidc/authenticate/",
        login_not_required(sso_only(SsoStartView.as_view())),
        name="oidc_authentication_init",
    ),
    path(
        "oidc/callback/",
        login_not_required(sso_only(SsoCallbackView.as_view())),
        name="oidc_authentication_callback",
    ),
    path("oidc/no-role/", sso_only(SsoNoRoleView.as_view()), name="sso-no-role"),
    path("admin/", admin.site.urls),
    # OTLP/HTTP's default traces path, so a collector or SDK needs only the server's address.
    path("v1/traces", OtlpTracesApi.as_view(), name="otlp-traces"),
    path("api/v1/", include("audit_app.api.urls")),
    path("api/v1/", include("benchmarks_app.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The "split" view serves its start-up script as a file, so the CSP can forbid inline code.
    path("api/docs/", login_required(ApiDocsView.as_view(url_name="api-schema")), name="api-docs"),
    path("benchmarks/", include("benchmarks_app.urls")),
    path("", include("audit_app.urls")),
]
