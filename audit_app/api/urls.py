from __future__ import annotations

from django.urls import path

from audit_app.api import views

urlpatterns = [
    path("", views.ApiRootApi.as_view(), name="api-root"),
    path("me/", views.MeApi.as_view(), name="api-me"),
]
