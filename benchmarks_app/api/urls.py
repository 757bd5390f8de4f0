from __future__ import annotations

from django.urls import path

from benchmarks_app.api import views

urlpatterns = [
    path("benchmark-runs/", views.RunListCreateApi.as_view(), name="api-benchmark-runs"),
    path(
        "benchmark-runs/<int:run_id>/",
        views.RunDetailApi.as_view(),
        name="api-benchmark-run-detail",
    ),
    path("gates/", views.GateCreateApi.as_view(), name="api-gates"),
    path("gates/<int:gate_id>/", views.GateDetailApi.as_view(), name="api-gate-detail"),
]
