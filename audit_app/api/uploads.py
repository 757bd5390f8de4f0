"""Uploads API: create (multipart, 202), list, detail (with a billing upload's contents),
delete, and the decisions whether a billing upload restates another (supersede, keep both)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from audit_app.access.permissions import (
    ALL_ROLES,
    SUPERSESSION_ROLES,
    UPLOAD_DELETE_RULE,
    UPLOADER_ROLES,
    upload_delete_refusal,
)
from audit_app.api.fields import ExactMoneyField
from audit_app.api.pagination import PAGE_PARAMETERS, PageOutput, paginate
from audit_app.costs.bills import upload_billing
from audit_app.ingestion.live.selectors import stream_batches
from audit_app.ingestion.supersession import supersession_keep_both, supersession_mark
from audit_app.ingestion.uploads import (
    AUTO_KIND,
    UPLOAD_KINDS,
    too_large_message,
    upload_create,
    upload_delete,
)
from audit_app.lib.upload_handlers import upload_too_large
from audit_app.models import Upload


class UploadInput(serializers.Serializer):
    file = serializers.FileField()
    kind = serializers.ChoiceField(
        choices=UPLOAD_KINDS,
        default=AUTO_KIND,
        help_text=(
            "`auto` (default) files it as a token log or a billing export by its content; "
            "a file sent as the other kind is refused, naming the kind it is."
        ),
        error_messages={
            "invalid_choice": (
                "{input!r} is not an upload kind: use auto, token_log or billing (benchmark "
                "artifacts go to POST /api/v1/benchmark-runs/)."
            )
        },
    )
    format = serializers.CharField(default="auto")


class RejectOutput(serializers.Serializer):
    line = serializers.IntegerField()
    field = serializers.CharField()
    value = serializers.CharField()
    reason = serializers.CharField()


class UploadOutput(serializers.ModelSerializer):
    uploaded_by = serializers.CharField(source="uploaded_by.username", default=None)
    billing_source = serializers.CharField(
        source="billing_source.name",
        default=None,
        help_text="The billing source that pulled this export (null: sent by hand).",
    )
    progress_percent = serializers.IntegerField()
    logged_cost_usd = ExactMoneyField()
    rejects = RejectOutput(many=True)
    notes = serializers.ListField(
        child=serializers.CharField(),
        help_text="Sentences about how a token log landed, e.g. workloads folded over a limit.",
    )
    url = serializers.SerializerMethodField()
    raw_file_url = serializers.SerializerMethodField()
    stream_source = serializers.CharField(
        help_text=(
            "A live stream's source (`otlp`, `litellm`): the upload holds what that source's "
            "records received on `stream_day` (UTC) landed, and has no file. Empty for a file."
        )
    )
    stream_day = serializers.DateField(allow_null=True)
    last_received_at = serializers.DateTimeField(
        allow_null=True, help_text="A stream's last record received (null for a file)."
    )

    class Meta:
        model = Upload
        fields = [
            "id",
            "url",
            "original_name",
            "kind",
            "requested_format",
            "format",
            "status",
            "size_bytes",
            "sha256",
            "uploaded_by",
            "billing_source",
            "source_object",
            "created_at",
            "started_at",
            "finished_at",
            "attempts",
            "bytes_read",
            "progress_percent",
            "rows_read",
            "rows_accepted",
            "rows_rejected",
            "requests",
            "input_tokens",
            "output_tokens",
            "cached_input_tokens",
            "logged_cost_usd",
            "error",
            "rejects",
            "notes",
            "raw_file_url",
            "stream_source",
            "stream_day",
            "last_received_at",
        ]

    def get_url(self, upload: Upload) -> str:
        return reverse("api-upload-detail", args=[upload.pk], request=self.context.get("request"))

    @extend_schema_field(serializers.URLField(allow_null=True))
    def get_raw_file_url(self, upload: Upload) -> str | None:
        """The file as uploaded; null for a live stream, which has none."""
        if not upload.file:
            return None
        return reverse("upload-raw", args=[upload.pk], request=self.context.get("request"))


class UploadPageOutput(PageOutput):
    results = UploadOutput(many=True)


class UploadPeriodOutput(serializers.Serializer):
    provider = serializers.CharField()
    account = serializers.CharField(help_text="Billing account ('' when the export had none).")
    period_start = serializers.DateField()
    period_end = serializers.DateField(help_text="Exclusive.")
    cost_basis = serializers.ChoiceField(choices=["actual", "amortized"])
    lines = serializers.IntegerField()
    billed_cost = serializers.DictField(child=serializers.CharField())
    effective_cost = serializers.DictField(child=serializers.CharField())
    current = serializers.BooleanField(help_text="False once a newer upload restates it.")
    superseded_by_upload_id = serializers.IntegerField(allow_null=True)


class ReplacedPeriodOutput(serializers.Serializer):
    upload_id = serializers.IntegerField()
    upload_name = serializers.CharField()
    provider = serializers.CharField()
    account = serializers.CharField()
    period_start = serializers.DateField()
    period_end = serializers.DateField()
    lines = serializers.IntegerField()
    billed_before = serializers.DictField(
        child=serializers.CharField(), help_text="Billed cost per currency in the earlier upload."
    )
    billed_after = serializers.DictField(
        child=serializers.CharField(), help_text="Billed cost per currency in this upload."
    )
    changed = serializers.BooleanField(help_text="Whether this upload changed the period's cost.")


class PossibleRestatementOutput(serializers.Serializer):
    """Another billing upload of the same periods this one may restate or be restated by: too
    few shared charges to call it a restatement, too many to call it a split export."""

    other_upload_id = serializers.IntegerField()
    other_upload_name = serializers.CharField()
    this_upload_is = serializers.ChoiceField(
        choices=["newer", "older"], help_text="Which of the two landed later."
    )
    earlier_charge_keys = serializers.IntegerField(
        help_text="Distinct charge keys of the older upload in the periods they share."
    )
    shared_charge_keys = serializers.IntegerField(help_text="How many of them the newer holds.")
    decision = serializers.ChoiceField(
        choices=["", "supersedes", "superseded", "keep_both"],
        help_text=(
            "Said of this upload: `supersedes` (it replaces the other), `superseded`, "
            "`keep_both`, or empty while nobody decided (both count)."
        ),
    )
    decided_by = serializers.CharField(allow_null=True)
    decided_at = serializers.DateTimeField(allow_null=True)


class PoolMatchOutput(serializers.Serializer):
    pool = serializers.CharField()
    currency = serializers.CharField()
    lines = serializers.IntegerField()
    billed_cost = serializers.CharField()
    effective_cost = serializers.CharField(allow_null=True)


class UnknownMeterOutput(serializers.Serializer):
    provider = serializers.CharField()
    sku = serializers.CharField()
    currency = serializers.CharField()
    lines = serializers.IntegerField()
    billed_cost = serializers.CharField()


class UploadBillingOutput(serializers.Serializer):
    """A landed billing upload: totals, periods (and which still count), accounts, pools,
    unknown meters and restatements. Money is exact decimal text per currency."""

    billed_cost = serializers.DictField(child=serializers.CharField())
    effective_cost = serializers.DictField(child=serializers.CharField())
    cost_basis = serializers.ChoiceField(choices=["actual", "amortized"])
    notes = serializers.ListField(child=serializers.CharField())
    superseded = serializers.ChoiceField(
        choices=["", "partly", "wholly"], help_text="Whether newer uploads restate its periods."
    )
    superseding_upload_ids = serializers.ListField(child=serializers.IntegerField())
    periods = UploadPeriodOutput(many=True)
    billing_accounts = serializers.ListField(child=serializers.CharField())
    sub_accounts = serializers.ListField(child=serializers.CharField())
    sub_account_count = serializers.IntegerField()
    pools = PoolMatchOutput(many=True)
    unknown_meter_lines = serializers.IntegerField()
    unknown_meters = UnknownMeterOutput(many=True)
    replaced = ReplacedPeriodOutput(many=True)
    possible_restatements = PossibleRestatementOutput(many=True)


class SetAsideBatchOutput(serializers.Serializer):
    """A micro-batch a landing set aside instead of landing, and why."""

    batch = serializers.IntegerField()
    records = serializers.IntegerField()
    error = serializers.CharField()


class StreamBatchesOutput(serializers.Serializer):
    """A stream upload's micro-batches (records as the receivers accepted them)."""

    batches = serializers.IntegerField(help_text="Requests received (each one batch).")
    received = serializers.IntegerField(help_text="Records received, landed or not.")
    landed = serializers.IntegerField(help_text="Records counted.")
    duplicates = serializers.IntegerField(help_text="Records sent again, counted once.")
    pending = serializers.IntegerField(help_text="Records received, waiting to land.")
    pending_batches = serializers.IntegerField()
    rejected = serializers.IntegerField(help_text="Records refused at receipt.")
    ignored = serializers.IntegerField(help_text="Spans that were not LLM calls.")
    set_aside = serializers.IntegerField(
        help_text="Records of batches a landing set aside (counted as rejected)."
    )
    set_aside_batches = SetAsideBatchOutput(many=True)


class UploadDetailOutput(UploadOutput):
    billing = serializers.SerializerMethodField()
    stream = serializers.SerializerMethodField()

    class Meta(UploadOutput.Meta):
        fields = [*UploadOutput.Meta.fields, "billing", "stream"]

    @extend_schema_field(StreamBatchesOutput(allow_null=True))
    def get_stream(self, upload: Upload) -> dict[str, Any] | None:
        """A stream upload's micro-batch totals; null for a file upload."""
        batches = stream_batches(upload=upload)
        return None if batches is None else dict(StreamBatchesOutput(batches).data)

    @extend_schema_field(UploadBillingOutput(allow_null=True))
    def get_billing(self, upload: Upload) -> dict[str, Any] | None:
        """A landed billing upload's contents; null for other uploads and until it lands."""
        if upload.kind != Upload.Kind.BILLING or upload.status != Upload.Status.SUCCEEDED:
            return None
        return dict(UploadBillingOutput(upload_billing(upload).as_json()).data)


class UploadInUseOutput(serializers.Serializer):
    """Why an upload cannot be deleted: the gates comparing its benchmark runs."""

    detail = serializers.CharField()
    # The metaclass moves declared fields off the class, so `Serializer.errors` is not shadowed.
    errors = serializers.DictField(  # type: ignore[assignment]
        child=serializers.ListField(child=serializers.CharField())
    )
    gates = serializers.ListField(child=serializers.IntegerField(), help_text="Gate ids.")
    runs = serializers.ListField(
        child=serializers.IntegerField(), help_text="Ids of this upload's runs they compare."
    )


class UploadListCreateApi(APIView):
    """List uploads (newest first) or upload a file to ingest (finops and engineer roles)."""

    parser_classes = [MultiPartParser, FormParser]
    roles_by_method = {"GET": ALL_ROLES, "POST": UPLOADER_ROLES}

    @extend_schema(
        parameters=PAGE_PARAMETERS, responses=UploadPageOutput, operation_id="v1_uploads_list"
    )
    def get(self, request: Request) -> Response:
        page = paginate(Upload.objects.select_related("uploaded_by", "billing_source"), request)
        body = UploadPageOutput(page.envelope(page.items), context={"request": request})
        return Response(body.data)

    @extend_schema(
        request={"multipart/form-data": UploadInput},
        responses={202: UploadOutput, 507: None},
        description=(
            "Stores the file and queues its ingest (202, status `queued`). If the task broker "
            "is down the upload is still stored and stays `queued` with a note in `error`; a "
            "worker queues it once the broker is back. 507 when the upload storage is full "
            "(nothing is kept)."
        ),
    )
    def post(self, request: Request) -> Response:
        payload = request.data  # parses the body, running the size-limit upload handler
        if upload_too_large(request._request):
            raise ValidationError({"file": [too_large_message(settings.UPLOAD_MAX_BYTES)]})
        data = UploadInput(data=payload)
        data.is_valid(raise_exception=True)
        file = data.validated_data["file"]
        upload = upload_create(
            source=file,
            original_name=file.name,
            kind=data.validated_data["kind"],
            requested_format=data.validated_data["format"],
            user=request.user,
        )
        body = UploadOutput(upload, context={"request": request}).data
        return Response(body, status=status.HTTP_202_ACCEPTED)


class UploadDetailApi(APIView):
    """One upload with its progress, totals and first rejects; DELETE removes its data (who may
    is `upload_delete_refusal`, so a refusal names the rule)."""

    # Every role reaches DELETE; `upload_delete_refusal` decides per upload.
    roles_by_method = {"GET": ALL_ROLES, "DELETE": ALL_ROLES}

    @extend_schema(responses=UploadDetailOutput)
    def get(self, request: Request, upload_id: int) -> Response:
        upload = get_object_or_404(
            Upload.objects.select_related("uploaded_by", "billing_source"), pk=upload_id
        )
        return Response(UploadDetailOutput(upload, context={"request": request}).data)

    @extend_schema(
        responses={204: None, 403: None, 409: UploadInUseOutput},
        description=(
            f"Deletes the upload and everything it added. {UPLOAD_DELETE_RULE} 409 while a "
            "benchmark gate compares a run of it (gates are kept for good), naming the gates "
            "and runs; nothing is deleted."
        ),
    )
    def delete(self, request: Request, upload_id: int) -> Response:
        upload = get_object_or_404(Upload.objects.select_related("uploaded_by"), pk=upload_id)
        refusal = upload_delete_refusal(user=request.user, upload=upload)
        if refusal is not None:
            raise PermissionDenied(refusal)
        upload_delete(upload=upload, user=request.user)  # UploadInUse: 409, naming the gates
        return Response(status=status.HTTP_204_NO_CONTENT)


class SupersedeInput(serializers.Serializer):
    supersedes = serializers.IntegerField(
        help_text="The id of the billing upload whose charges this upload replaces."
    )


class KeepBothInput(serializers.Serializer):
    other = serializers.IntegerField(
        help_text="The id of the billing upload that counts beside this one."
    )


class SupersessionOutput(serializers.Serializer):
    """What a decision about two billing uploads changed."""

    upload_id = serializers.IntegerField()
    other_upload_id = serializers.IntegerField()
    decision = serializers.ChoiceField(choices=["supersedes", "keep_both"])
    charges_changed = serializers.IntegerField(
        help_text="Charges that stopped counting (supersedes) or count again (keep_both)."
    )


def _other_upload(upload_id: int, *, field: str) -> Upload:
    other = Upload.objects.filter(pk=upload_id).first()
    if other is None:
        raise ValidationError({field: [f"There is no upload {upload_id}."]})
    return other


class UploadSupersedeApi(APIView):
    """Mark this billing upload as restating another (finops): the other's charges of the
    billing periods they share stop counting. Audited; derived results refresh."""

    roles_by_method = {"POST": SUPERSESSION_ROLES}

    @extend_schema(
        request=SupersedeInput, responses={200: SupersessionOutput, 400: None, 409: None}
    )
    def post(self, request: Request, upload_id: int) -> Response:
        upload = get_object_or_404(Upload, pk=upload_id)
        data = SupersedeInput(data=request.data)
        data.is_valid(raise_exception=True)
        other = _other_upload(data.validated_data["supersedes"], field="supersedes")
        changed = supersession_mark(superseding=upload, superseded=other, user=request.user)
        body = {
            "upload_id": upload.pk,
            "other_upload_id": other.pk,
            "decision": "supersedes",
            "charges_changed": changed,
        }
        return Response(SupersessionOutput(body).data)


class UploadKeepBothApi(APIView):
    """Keep this billing upload and another both counting (finops): undoes a supersession
    between them, either way, and settles a possible restatement. Audited; derived results
    refresh."""

    roles_by_method = {"POST": SUPERSESSION_ROLES}

    @extend_schema(request=KeepBothInput, responses={200: SupersessionOutput, 400: None, 409: None})
    def post(self, request: Request, upload_id: int) -> Response:
        upload = get_object_or_404(Upload, pk=upload_id)
        data = KeepBothInput(data=request.data)
        data.is_valid(raise_exception=True)
        other = _other_upload(data.validated_data["other"], field="other")
        changed = supersession_keep_both(upload=upload, other=other, user=request.user)
        body = {
            "upload_id": upload.pk,
            "other_upload_id": other.pk,
            "decision": "keep_both",
            "charges_changed": changed,
        }
        return Response(SupersessionOutput(body).data)
