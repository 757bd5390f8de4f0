from __future__ import annotations

from django.contrib import admin

from audit_app.models import ApiToken, Upload


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
