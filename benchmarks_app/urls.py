from __future__ import annotations

from django.urls import path

from benchmarks_app import views

urlpatterns = [
    path("", views.BenchmarkListView.as_view(), name="benchmarks"),
    path("runs/<int:run_id>/", views.RunDetailView.as_view(), name="benchmark-run"),
    path("gates/<int:gate_id>/", views.GateView.as_view(), name="gate"),
]
