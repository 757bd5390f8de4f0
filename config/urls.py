"""Top-level URLs: pages, the API, its schema and docs, admin, login and health."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from audit_app.views.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("audit_app.api.urls")),
    path("api/v1/", include("benchmarks_app.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The Swagger UI is a page: an anonymous visitor is sent to the login form, not given a 401.
    path(
        "api/docs/",
        login_required(SpectacularSwaggerView.as_view(url_name="api-schema")),
        name="api-docs",
    ),
    path("benchmarks/", include("benchmarks_app.urls")),
    path("", include("audit_app.urls")),
]
