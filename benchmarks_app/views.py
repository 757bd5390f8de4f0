"""Benchmark gate pages."""

from __future__ import annotations

from django.views.generic import TemplateView

from audit_app.permissions import RoleRequiredMixin


class BenchmarkListView(RoleRequiredMixin, TemplateView):
    template_name = "benchmarks/benchmarks.html"
