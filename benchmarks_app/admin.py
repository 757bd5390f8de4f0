from __future__ import annotations

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest

from benchmarks_app.models import BenchmarkPoint, BenchmarkRun, Gate


class BenchmarkPointInline(admin.TabularInline):
    """The run's points, read only (their artifacts can hold 100k per-request records)."""

    model = BenchmarkPoint
    fields = ("index", "label", "load", "input_len", "output_len", "dataset", "upload")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(BenchmarkRun)
class BenchmarkRunAdmin(admin.ModelAdmin):
    """Run fields are edited on the run page or with PATCH, which record the edit in the audit
    trail and recompute the points' metrics; here they are shown only."""

    list_display = ("id", "name", "tool", "model", "created_at")
    search_fields = ("name", "model")
    inlines = (BenchmarkPointInline,)
    readonly_fields = (
        "upload",
        "telemetry_upload",
        "tool",
        "model",
        "fields",
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
