from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from audit_app.costs.catalog import source_age_days
from audit_app.ingestion.source_changes import FIELDS
from audit_app.lib.masking import mask_url_credentials
from audit_app.models import (
    AllocationRule,
    ApiToken,
    BillingCharge,
    BillingSource,
    HardwareTarget,
    HourlyRollup,
    PriceCard,
    ProviderUsage,
    Recommendation,
    RecommendationEvent,
    ServingPool,
    StatementDelivery,
    Team,
    ThroughputAssumption,
    Upload,
    Workload,
    WorkloadClassification,
    WorkloadDay,
    WorkloadOverride,
)


@admin.register(Upload)
class UploadAdmin(admin.ModelAdmin):
    list_display = ("original_name", "kind", "format", "status", "rows_accepted", "created_at")
    list_filter = ("kind", "status", "format")
    search_fields = ("original_name", "sha256")
    readonly_fields = ("sha256", "size_bytes", "created_at", "started_at", "finished_at")

    # Deleting here goes through the same service as the page and the API, so a deleted bill
    # hands its restated periods back to the upload before it (and the audit trail and the
    # raw file follow), instead of a bare cascade.
    def delete_model(self, request: HttpRequest, obj: Upload) -> None:
        from audit_app.ingestion.uploads import upload_delete

        upload_delete(upload=obj, user=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Upload]) -> None:
        from audit_app.ingestion.uploads import upload_delete

        for upload in queryset:
            upload_delete(upload=upload, user=request.user)


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
        "origin",
        "source_date",
    )
    list_filter = ("origin", "provider")
    search_fields = ("provider", "model", "source")
    ordering = ("provider", "model", "-valid_from")
    readonly_fields = ("origin",)

    # A card entered or edited by hand is a local override: it wins over the price dataset,
    # and `prices_sync` never adds cards over it (audit_app.costs.price_sync).
    def save_model(self, request: HttpRequest, obj: PriceCard, form: Any, change: bool) -> None:
        obj.origin = PriceCard.Origin.LOCAL
        super().save_model(request, obj, form, change)


@admin.register(Workload)
class WorkloadAdmin(admin.ModelAdmin):
    list_display = ("name", "latency_slo_ms", "created_at")
    search_fields = ("name",)
    readonly_fields = ("created_at",)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Derived data: written only by ingestion, so it is shown, never edited here."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
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


STALE_AFTER_DAYS = 180


@admin.register(HardwareTarget)
class HardwareTargetAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "kind",
        "provider",
        "usd_per_hour",
        "usd_per_million_input_tokens",
        "usd_per_million_output_tokens",
        "source_date",
        "price_age",
    )
    list_filter = ("kind", "provider")
    search_fields = ("name", "provider", "source")

    @admin.display(description="Price age")
    def price_age(self, obj: HardwareTarget) -> str:
        age = source_age_days(obj.source_date, timezone.now().date())
        if age is None:
            return "undated: check the source"
        if age > STALE_AFTER_DAYS:
            return f"STALE: {age} days old (over {STALE_AFTER_DAYS})"
        return f"{age} days"

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        today = timezone.now().date()
        stale = sum(
            1
            for t in HardwareTarget.objects.only("source_date")
            if (age := source_age_days(t.source_date, today)) is None or age > STALE_AFTER_DAYS
        )
        if stale:
            self.message_user(
                request,
                f"{stale} catalog prices are older than {STALE_AFTER_DAYS} days or undated: "
                "check them before trusting a recommendation.",
                level=messages.WARNING,
            )
        return super().changelist_view(request, extra_context)


@admin.register(ThroughputAssumption)
class ThroughputAssumptionAdmin(admin.ModelAdmin):
    list_display = ("instance", "model_class", "tokens_per_second", "confidence", "source_date")
    search_fields = ("instance", "source")


class RecommendationEventInline(admin.TabularInline):
    model = RecommendationEvent
    extra = 0
    can_delete = False
    readonly_fields = ("from_status", "to_status", "user", "note", "created_at")


@admin.register(Recommendation)
class RecommendationAdmin(admin.ModelAdmin):
    list_display = ("workload", "pool", "target", "savings_monthly_usd", "status", "updated_at")
    list_filter = ("status", "target_kind")
    inlines = [RecommendationEventInline]
    readonly_fields = ("status",)


@admin.register(WorkloadClassification)
class WorkloadClassificationAdmin(ReadOnlyAdmin):
    list_display = ("workload", "workload_class", "confidence", "classified_at")
    list_filter = ("workload_class",)


@admin.register(WorkloadOverride)
class WorkloadOverrideAdmin(ReadOnlyAdmin):
    list_display = ("workload", "workload_class", "user", "created_at", "reason")


class BillingSourceAdminForm(forms.ModelForm):
    """The secret key and the admin key are typed, never shown: left empty on a change, the
    stored one is kept, unless the kind, bucket, endpoint or base URL changes (then the keys are
    forgotten).
    Saving goes through `audit_app.ingestion.source_changes`, so the same checks apply as on
    the API (kind-specific fields, the folder under BILLING_SOURCE_ROOTS, ...)."""

    secret_access_key = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="S3 only. Leave empty to keep the stored key (or to use boto3's own chain).",
    )
    clear_secret_access_key = forms.BooleanField(
        required=False, help_text="Forget the stored secret key."
    )
    api_key = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="OpenAI / Anthropic only: the organization's admin key. Leave empty to keep "
        "the stored key.",
    )

    class Meta:
        model = BillingSource
        fields = FIELDS

    def clean(self) -> dict[str, Any]:
        from audit_app.ingestion.source_changes import (
            FIELDS,
            SourceRefused,
            changed_data,
            source_data,
            source_values,
        )

        cleaned = super().clean() or {}
        data = {field: cleaned.get(field) for field in FIELDS}
        data["enabled"] = bool(data["enabled"])
        if self.instance.pk:
            for secret in ("secret_access_key", "api_key"):
                if not data[secret]:
                    del data[secret]  # kept, unless the source points elsewhere
            data = changed_data(source_data(self.instance), data)
        if cleaned.get("clear_secret_access_key"):
            data["secret_access_key"] = ""
        try:
            values = source_values(data)
        except SourceRefused as exc:
            field = exc.field if exc.field in self.fields else None
            self.add_error(field, str(exc))
            return cleaned
        cleaned.update(asdict(values))
        return cleaned


@admin.register(ProviderUsage)
class ProviderUsageAdmin(admin.ModelAdmin):
    """A provider report's spend rows per day, model, project and key (read only: they come
    from the report's upload)."""

    list_display = (
        "day",
        "provider",
        "model",
        "project_id",
        "api_key_id",
        "requests",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "upload",
        "superseded_by",
    )
    list_filter = ("provider", "day")
    search_fields = ("model", "project_id", "project_name", "api_key_id")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(BillingSource)
class BillingSourceAdmin(admin.ModelAdmin):
    form = BillingSourceAdminForm
    list_display = (
        "name",
        "kind",
        "shown_location",
        "enabled",
        "last_polled_at",
        "last_changed_at",
        "consecutive_failures",
        "last_error",
    )
    list_filter = ("kind", "enabled")
    search_fields = ("name", "location")
    readonly_fields = (
        "created_by",
        "created_at",
        "last_polled_at",
        "last_changed_at",
        "last_error",
        "last_error_at",
        "consecutive_failures",
    )

    @admin.display(description="location")
    def shown_location(self, obj: BillingSource) -> str:
        """The location with a URL's credentials masked."""
        return mask_url_credentials(obj.location)

    def save_model(self, request: HttpRequest, obj: BillingSource, form: Any, change: bool) -> None:
        if not change and obj.created_by_id is None and request.user.is_authenticated:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)


def policy_change(**kwargs: Any) -> None:
    # Statements read spend (numpy, pandas): imported on use so start-up stays light.
    from audit_app.statements.services import policy_change as change

    change(**kwargs)


@admin.register(AllocationRule)
class AllocationRuleAdmin(admin.ModelAdmin):
    """Saved and deleted through the statements service, so every change is audited."""

    list_display = ("__str__", "pool", "method", "owner_team", "updated_by", "updated_at")
    fields = ("pool", "method", "owner_team")

    def save_model(
        self, request: HttpRequest, obj: AllocationRule, form: Any, change: bool
    ) -> None:
        policy_change(actor=request.user, pool=obj.pool, method=obj.method, owner=obj.owner_team)
        obj.pk = AllocationRule.objects.get(pool=obj.pool).pk

    def delete_model(self, request: HttpRequest, obj: AllocationRule) -> None:
        if obj.pool:
            policy_change(actor=request.user, pool=obj.pool, method="")
        else:
            policy_change(actor=request.user, pool="", method=AllocationRule.Method.PROPORTIONAL)


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "display_name", "owner_email", "cost_centre")
    search_fields = ("name", "display_name", "owner_email", "cost_centre")


@admin.register(StatementDelivery)
class StatementDeliveryAdmin(ReadOnlyAdmin):
    list_display = ("month", "team", "target", "status", "attempts", "sent_at", "last_error")
    list_filter = ("status", "month")
