"""Billing sources API: list and create, read, change and delete one, and poll one now.

Every role reads; finops analysts (and superusers, who hold every role) write. Input is checked
by the service (`audit_app.ingestion.source_changes`), whose refusals name the field
(``location``, ``endpoint_url``, ...) and are answered 400 by `audit_app.api.errors`. The
secret access key and a provider's admin key are write-only: answers say only whether one is
set; a URL's user name, password and query values are masked (sent back masked, they stand for
the stored ones)."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from audit_app.access.permissions import ALL_ROLES, SOURCE_WRITER_ROLES, RolesByMethod
from audit_app.api.pagination import PAGE_PARAMETERS, PageOutput, paginate
from audit_app.ingestion.formats import BILLING, FORMATS_BY_KIND
from audit_app.ingestion.source_changes import (
    shown_fields,
    source_create,
    source_delete,
    source_update,
)
from audit_app.ingestion.sources import (
    next_poll_at,
    refused_objects,
    source_poll_now,
    source_uploads,
)
from audit_app.models import BillingSource


class SourceInput(serializers.Serializer):
    """A source's fields (documentation: the service checks them, naming the field at fault).
    On PATCH every field is optional and the others stay as they are."""

    name = serializers.CharField(max_length=100)
    kind = serializers.ChoiceField(choices=BillingSource.Kind.choices)
    location = serializers.CharField(
        help_text=(
            "folder: an absolute path under BILLING_SOURCE_ROOTS; http: an http(s) URL of one "
            "file; s3: the bucket's name; openai / anthropic: the API's base URL (default the "
            "provider's public one)."
        ),
        required=False,
        allow_blank=True,
    )
    prefix = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text=(
            'folder: a file pattern (glob, default "*", "**/*.csv" for subfolders); s3: a key '
            'prefix, optionally ending in a pattern ("cur/*.csv"); http: empty.'
        ),
    )
    endpoint_url = serializers.CharField(
        required=False, allow_blank=True, help_text="s3: another S3-compatible store's URL."
    )
    region = serializers.CharField(required=False, allow_blank=True)
    access_key_id = serializers.CharField(required=False, allow_blank=True)
    secret_access_key = serializers.CharField(
        required=False,
        allow_blank=True,
        write_only=True,
        help_text=(
            "Write-only. Without keys: at AWS, boto3's own credential chain; at another "
            "endpoint, unsigned requests (S3_AMBIENT_CREDENTIALS signs them with the chain). "
            "Changing kind, location or endpoint_url forgets the stored keys unless the "
            "secret is sent again."
        ),
    )
    format = serializers.ChoiceField(choices=FORMATS_BY_KIND[BILLING], default="auto")
    api_key = serializers.CharField(
        required=False,
        allow_blank=True,
        write_only=True,
        help_text=(
            "openai / anthropic, required: the organization's admin key. Write-only; changing "
            "kind or location forgets it unless it is sent again."
        ),
    )
    start_date = serializers.DateField(
        required=False,
        allow_null=True,
        help_text=(
            "openai / anthropic: the first day the first poll reads (default the first day of "
            "the previous month)."
        ),
    )
    poll_every_minutes = serializers.IntegerField(default=60, min_value=1)
    enabled = serializers.BooleanField(default=True)


class RefusedObjectOutput(serializers.Serializer):
    object = serializers.CharField()
    reason = serializers.CharField()


class SourceUploadOutput(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.URLField()
    original_name = serializers.CharField()
    source_object = serializers.CharField()
    status = serializers.CharField()
    created_at = serializers.DateTimeField()


class SourceOutput(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.URLField()
    poll_url = serializers.URLField()
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=BillingSource.Kind.choices)
    location = serializers.CharField()
    prefix = serializers.CharField()
    endpoint_url = serializers.CharField()
    region = serializers.CharField()
    access_key_id = serializers.CharField()
    has_secret_access_key = serializers.BooleanField()
    has_api_key = serializers.BooleanField(help_text="openai / anthropic: an admin key is set.")
    start_date = serializers.DateField(allow_null=True)
    format = serializers.CharField()
    poll_every_minutes = serializers.IntegerField()
    enabled = serializers.BooleanField()
    created_by = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    last_polled_at = serializers.DateTimeField(allow_null=True)
    next_poll_at = serializers.DateTimeField(
        allow_null=True, help_text="null: disabled, or due at the next check (never polled)."
    )
    last_changed_at = serializers.DateTimeField(
        allow_null=True, help_text="When a poll last took a new or changed object."
    )
    last_error = serializers.CharField(help_text="Empty after a clean poll.")
    last_error_at = serializers.DateTimeField(allow_null=True)
    consecutive_failures = serializers.IntegerField()
    objects_seen = serializers.IntegerField()
    refused_objects = RefusedObjectOutput(
        many=True, help_text="Objects refused as they stand; tried again once they change."
    )
    upload_count = serializers.IntegerField()
    recent_uploads = SourceUploadOutput(many=True, help_text="The newest five.")


class SourcePageOutput(PageOutput):
    results = SourceOutput(many=True)


class SourcePollOutput(SourceOutput):
    """The source as it stands, and whether its poll was queued."""

    queued = serializers.BooleanField()
    poll = serializers.CharField(help_text="What happens next, as a sentence.")


def source_payload(source: BillingSource, request: Request) -> dict[str, Any]:
    creator = source.created_by
    uploads = source_uploads(source)
    return {
        "id": source.pk,
        "url": reverse("api-source-detail", args=[source.pk], request=request),
        "poll_url": reverse("api-source-poll", args=[source.pk], request=request),
        **shown_fields(source),
        **{
            field: getattr(source, field)
            for field in (
                "created_at",
                "last_polled_at",
                "last_changed_at",
                "last_error",
                "last_error_at",
                "consecutive_failures",
            )
        },
        "has_secret_access_key": bool(source.secret_access_key),
        "has_api_key": bool(source.api_key),
        "created_by": creator.get_username() if creator else None,
        "next_poll_at": next_poll_at(source),
        "objects_seen": len(source.seen or {}),
        "refused_objects": [
            {"object": r.name, "reason": r.reason} for r in refused_objects(source)
        ],
        "upload_count": uploads.count,
        "recent_uploads": [
            {
                "id": upload.pk,
                "url": reverse("api-upload-detail", args=[upload.pk], request=request),
                "original_name": upload.original_name,
                "source_object": upload.source_object,
                "status": upload.status,
                "created_at": upload.created_at,
            }
            for upload in uploads.recent
        ],
    }


def _json_object(request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise ValidationError({"non_field_errors": ["Send the source as a JSON object."]})
    return dict(request.data)


def _source(source_id: int) -> BillingSource:
    return get_object_or_404(BillingSource.objects.select_related("created_by"), pk=source_id)


# Every role reads; finops analysts write and poll.
SOURCE_ROLES: RolesByMethod = {
    "GET": ALL_ROLES,
    "POST": SOURCE_WRITER_ROLES,
    "PATCH": SOURCE_WRITER_ROLES,
    "DELETE": SOURCE_WRITER_ROLES,
}


class SourceListCreateApi(APIView):
    """Billing sources by name, each with its last poll, last change and last error; POST
    creates one (finops role), polled at beat's next check."""

    roles_by_method = SOURCE_ROLES

    @extend_schema(
        parameters=PAGE_PARAMETERS, responses=SourcePageOutput, operation_id="v1_sources_list"
    )
    def get(self, request: Request) -> Response:
        page = paginate(
            BillingSource.objects.select_related("created_by").order_by("name", "pk"), request
        )
        results = [source_payload(source, request) for source in page.items]
        return Response(SourcePageOutput(page.envelope(results)).data)

    @extend_schema(request=SourceInput, responses={201: SourceOutput})
    def post(self, request: Request) -> Response:
        source = source_create(user=request.user, data=_json_object(request))
        body = SourceOutput(source_payload(source, request)).data
        return Response(body, status=status.HTTP_201_CREATED)


class SourceDetailApi(APIView):
    """One billing source; PATCH changes the fields given, DELETE removes it (the uploads it
    created stay) (finops role)."""

    roles_by_method = SOURCE_ROLES

    @extend_schema(responses=SourceOutput)
    def get(self, request: Request, source_id: int) -> Response:
        return Response(SourceOutput(source_payload(_source(source_id), request)).data)

    @extend_schema(request=SourceInput(partial=True), responses=SourceOutput)
    def patch(self, request: Request, source_id: int) -> Response:
        source = source_update(
            source=_source(source_id), user=request.user, data=_json_object(request)
        )
        return Response(SourceOutput(source_payload(source, request)).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, source_id: int) -> Response:
        source_delete(source=_source(source_id), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SourcePollApi(APIView):
    """Poll the source now (finops role): the poll is queued for a worker and answered 202;
    read the source again for its outcome (last_polled_at, last_error, recent_uploads)."""

    roles_by_method = SOURCE_ROLES

    @extend_schema(request=None, responses={202: SourcePollOutput})
    def post(self, request: Request, source_id: int) -> Response:
        source = _source(source_id)
        queued = source_poll_now(source=source, user=request.user)
        source.refresh_from_db()
        detail = (
            "The poll is queued; the source shows its outcome once a worker has run it."
            if queued
            else "The task broker could not be reached; the schedule polls the source when due."
        )
        body = {**source_payload(source, request), "queued": queued, "poll": detail}
        return Response(SourcePollOutput(body).data, status=status.HTTP_202_ACCEPTED)
