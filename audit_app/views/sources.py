"""Sources page: the billing sources with their last poll, last change and last error (red), the
uploads each created, and for finops analysts a form to add one (a folder, URL or bucket, or an
OpenAI or Anthropic cost API with its admin key) and a "Poll now" button. Every role reads;
finops analysts write (`SOURCE_WRITER_ROLES`), others are refused with a 403."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views import View

from audit_app.access.permissions import ALL_ROLES, SOURCE_WRITER_ROLES, RoleRequiredMixin
from audit_app.ingestion.formats import BILLING, FORMAT_LABELS, FORMATS_BY_KIND
from audit_app.ingestion.source_changes import SourceRefused, source_create
from audit_app.ingestion.sources import (
    RefusedObject,
    SourceUploads,
    next_poll_at,
    refused_objects,
    source_poll_now,
    source_uploads,
    where,
)
from audit_app.lib.errors import ErrorKind
from audit_app.lib.masking import mask_url_credentials
from audit_app.models import BillingSource

# The form's fields -> the service's, where they differ.
FIELD_OF = {"pattern": "prefix"}


class SourceForm(forms.Form):
    """The Sources page's form: plain fields sent as the API's JSON object, so the one check is
    the service's (`source_values`); its refusals are shown beside the field they name."""

    name = forms.CharField(label="Name", max_length=100)
    kind = forms.ChoiceField(label="Kind", choices=BillingSource.Kind.choices, initial="folder")
    location = forms.CharField(
        label="Location",
        max_length=1000,
        required=False,
        help_text=(
            "A folder's absolute path (under BILLING_SOURCE_ROOTS), a URL, or a bucket; for "
            "OpenAI and Anthropic the API's base URL (empty: the provider's public one)."
        ),
    )
    # The source's `prefix` ("prefix" is taken by Django's forms).
    pattern = forms.CharField(
        label="Pattern or prefix",
        required=False,
        max_length=500,
        help_text='Folder: a file pattern ("*.csv", "**/*.csv"); S3: a key prefix ("focus/").',
    )
    endpoint_url = forms.CharField(
        label="S3 endpoint URL",
        required=False,
        help_text="Only for another S3-compatible store (MinIO, R2, ...).",
    )
    region = forms.CharField(label="S3 region", required=False)
    access_key_id = forms.CharField(label="S3 access key id", required=False)
    secret_access_key = forms.CharField(
        label="S3 secret access key",
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text=(
            "Without keys: at AWS, the server's own AWS credentials; at another endpoint, "
            "unsigned requests."
        ),
    )
    api_key = forms.CharField(
        label="Admin key (OpenAI, Anthropic)",
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="The organization's admin key that reads its costs and usage; never shown.",
    )
    start_date = forms.DateField(
        label="Read from (OpenAI, Anthropic)",
        required=False,
        help_text="YYYY-MM-DD: the first day the first poll reads (empty: the first day of "
        "the previous month).",
    )
    format = forms.ChoiceField(
        label="Format",
        choices=[(name, FORMAT_LABELS[name]) for name in FORMATS_BY_KIND[BILLING]],
        initial="auto",
    )
    poll_every_minutes = forms.IntegerField(label="Poll every (minutes)", initial=60, min_value=1)
    enabled = forms.BooleanField(label="Enabled", required=False, initial=True)

    def source_data(self) -> dict[str, Any]:
        """The API's JSON object from the cleaned fields (call after is_valid)."""
        data = {FIELD_OF.get(name, name): self.cleaned_data.get(name) for name in self.fields}
        return {**data, "enabled": bool(self.cleaned_data.get("enabled"))}

    def refuse(self, field: str, message: str) -> None:
        """Show a service refusal beside the form field it names."""
        name = {source: form for form, source in FIELD_OF.items()}.get(field, field)
        self.add_error(name if name in self.fields else None, message)


@dataclass(frozen=True, kw_only=True)
class SourceRow:
    """One source as the page shows it."""

    source: BillingSource
    where: str
    endpoint: str  # masked
    next_poll_at: datetime | None
    uploads: SourceUploads
    refused: tuple[RefusedObject, ...]


def _rows() -> list[SourceRow]:
    return [
        SourceRow(
            source=source,
            where=where(source),
            endpoint=mask_url_credentials(source.endpoint_url),
            next_poll_at=next_poll_at(source),
            uploads=source_uploads(source),
            refused=refused_objects(source),
        )
        for source in BillingSource.objects.order_by("name", "pk")
    ]


class SourceListView(RoleRequiredMixin, View):
    template_name = "audit/sources.html"
    roles_by_method = {"GET": ALL_ROLES, "POST": SOURCE_WRITER_ROLES}

    def get(self, request: HttpRequest) -> HttpResponse:
        return self._render(request, SourceForm())

    def post(self, request: HttpRequest) -> HttpResponse:
        form = SourceForm(request.POST)
        if not form.is_valid():
            return self._render(request, form, status=400)
        try:
            source = source_create(user=request.user, data=form.source_data())
        except SourceRefused as exc:
            if exc.kind is ErrorKind.FORBIDDEN:
                raise PermissionDenied(str(exc)) from None
            form.refuse(exc.field, str(exc))
            return self._render(request, form, status=400)
        messages.success(
            request, f"Billing source {source.name} added; it is polled within a minute."
        )
        return HttpResponseRedirect(reverse("sources"))

    def _render(self, request: HttpRequest, form: SourceForm, *, status: int = 200) -> HttpResponse:
        context = {
            "rows": _rows(),
            "form": form,
            "can_write": self.may("POST"),
        }
        return render(request, self.template_name, context, status=status)


class SourcePollView(RoleRequiredMixin, View):
    """POST from the Sources page's "Poll now" button: queue a poll of the source."""

    roles_by_method = {"*": SOURCE_WRITER_ROLES}

    def post(self, request: HttpRequest, source_id: int) -> HttpResponse:
        source = get_object_or_404(BillingSource, pk=source_id)
        if source_poll_now(source=source, user=request.user):
            messages.success(
                request, f"Poll of {source.name} queued; its row shows the outcome once it ran."
            )
        else:
            messages.error(
                request,
                f"The poll of {source.name} could not be queued (the task broker is away); "
                "the schedule polls it when due.",
            )
        return HttpResponseRedirect(reverse("sources") + f"#source-{source.pk}")
