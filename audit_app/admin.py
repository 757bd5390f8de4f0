from __future__ import annotations

from typing import Any

from django.contrib import admin

from audit_app.models import (
    ApiToken,
    BillingCharge,
    HourlyRollup,
    PriceCard,
    ServingPool,
    Upload,
    Workload,
    WorkloadDay,
)


@admin.register(Upload)
class UploadAdmin(admin.ModelAdmin):
    list_display = ("original_name", "kind", "format", "status", "rows_accepted", "created_at")
    list_filter = ("kind", "status", "format")
    search_fields = ("original_name", "sha256")
    readonly_fields = ("sha256", "size_bytes", "created_at", "started_at", "finished_at")


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("prefix", "user", "name", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("prefix", "key_hash", "created_at", "last_used_at")
    search_fields = ("user__username", "name", "prefix")


@admin.register(PriceCard)
class PriceCardAdmin(admin.ModelAdmin):
    list_display = (
        "provider",
        "model",
        "valid_from",
        "input_usd_per_mtok",
        "output_usd_per_mtok",
        "cached_input_usd_per_mtok",
        "batch_input_usd_per_mtok",
        "batch_output_usd_per_mtok",
        "source_date",
    )
    list_filter = ("provider",)
    search_fields = ("provider", "model", "source")
    ordering = ("provider", "model", "-valid_from")


@admin.register(Workload)
class WorkloadAdmin(admin.ModelAdmin):
    list_display = ("name", "latency_slo_ms", "created_at")
    search_fields = ("name",)
    readonly_fields = ("created_at",)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Derived data: written only by ingestion, so it is shown, never edited here."""

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(HourlyRollup)
class HourlyRollupAdmin(ReadOnlyAdmin):
    list_display = ("hour", "workload", "provider", "model", "requests", "logged_cost_usd")
    list_filter = ("provider",)
    search_fields = ("workload", "model")
    date_hierarchy = "hour"


@admin.register(WorkloadDay)
class WorkloadDayAdmin(ReadOnlyAdmin):
    list_display = ("day", "workload", "requests", "upload")
    search_fields = ("workload",)


@admin.register(ServingPool)
class ServingPoolAdmin(admin.ModelAdmin):
    list_display = ("name", "tag_key", "tag_value", "capacity_tokens_per_hour")
    search_fields = ("name",)


@admin.register(BillingCharge)
class BillingChargeAdmin(ReadOnlyAdmin):
    list_display = ("period_start", "provider", "sku", "billed_cost", "currency", "upload")
    list_filter = ("provider", "charge_category", "meter_kind", "currency")
    search_fields = ("sku", "resource_id", "meter_model")
