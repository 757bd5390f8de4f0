from __future__ import annotations

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest

from benchmarks_app.models import BenchmarkRun, Gate


@admin.register(BenchmarkRun)
class BenchmarkRunAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "tool", "model", "created_at")
    search_fields = ("name", "model")
    readonly_fields = (
        "upload",
        "telemetry_upload",
        "tool",
        "artifact",
        "metrics",
        "assumptions",
        "created_by",
        "created_at",
    )


@admin.register(Gate)
class GateAdmin(admin.ModelAdmin):
    """Gates are immutable records: shown, never added, changed or deleted here."""

    list_display = ("id", "verdict", "baseline", "candidate", "created_by", "created_at")
    list_filter = ("verdict",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False
