from __future__ import annotations

from django.urls import path

from benchmarks_app import views

urlpatterns = [
    path("", views.BenchmarkListView.as_view(), name="benchmarks"),
]
