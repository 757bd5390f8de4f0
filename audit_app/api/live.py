"""Live ingestion API: the endpoint a LiteLLM proxy's `generic_api` logging callback posts to.

`POST /api/v1/ingest/litellm/` takes LiteLLM's StandardLoggingPayload records in any of its
`log_format`s (a JSON array, NDJSON or one object; told apart from the body), keeps the calls
they hold for the next landing (`audit_app.ingestion.live.litellm`) and answers 200 with what
it accepted, rejected (the first 20, each naming its line, field and value) and ignored.
Auth is an API token (`Authorization: Bearer <token>` or `Token <token>`, a header LiteLLM sends
from `callback_settings`) of a user who may upload.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from audit_app.access.permissions import UPLOADER_ROLES
from audit_app.access.throttling import AnonRateThrottle
from audit_app.api.push_body import read_push_body
from audit_app.api.uploads import RejectOutput
from audit_app.ingestion.live.litellm import litellm_receive
from audit_app.ingestion.token_logs.litellm_payload import LOG_FORMATS

MAX_ANSWERED_REJECTS = 20


class LitellmIngestOutput(serializers.Serializer):
    log_format = serializers.ChoiceField(
        choices=LOG_FORMATS, help_text="How the body was read: an array, NDJSON or one object."
    )
    accepted = serializers.IntegerField(help_text="Calls kept; they land within seconds.")
    rejected = serializers.IntegerField(help_text="Records refused; the first 20 in `rejects`.")
    ignored = serializers.IntegerField(
        help_text="Failures that never reached a model (no `model`): nothing to count."
    )
    rejects = RejectOutput(many=True)


class LitellmIngestApi(APIView):
    """LiteLLM's generic API callback posts its StandardLoggingPayload batches here (finops
    and engineer roles)."""

    roles_by_method = {"*": UPLOADER_ROLES}
    # The body is read raw within LIVE_MAX_REQUEST_BYTES (`read_push_body`), never parsed by DRF.
    parser_classes: list[type[BaseParser]] = []
    # A proxy posts as often as it flushes (`single` posts once per call); a busy one would run
    # into the per-user API rate. The pending-records limit (429 with Retry-After) guards the
    # server instead; anonymous callers keep their rate.
    throttle_classes: list[type[BaseThrottle]] = [AnonRateThrottle]

    @extend_schema(
        request={"application/json": OpenApiTypes.OBJECT},
        responses={
            200: LitellmIngestOutput,
            400: OpenApiResponse(description="The body is not JSON / NDJSON (names the line)."),
            413: OpenApiResponse(description="Over LIVE_MAX_REQUEST_BYTES, sent or unzipped."),
            429: OpenApiResponse(description="Too many records wait to land; see Retry-After."),
        },
        operation_id="v1_ingest_litellm",
        description=(
            "A JSON array of LiteLLM StandardLoggingPayload records (log_format json_array), "
            "one per line (ndjson) or one object (single); gzip or deflate Content-Encoding "
            "accepted. Nothing is kept on 400, 413 or 429."
        ),
    )
    def post(self, request: Request) -> Response:
        body = read_push_body(request, limit=settings.LIVE_MAX_REQUEST_BYTES)
        outcome = litellm_receive(body=body, user=request.user)
        received = outcome.received
        data = {
            "log_format": outcome.log_format,
            "accepted": received.accepted,
            "rejected": received.rejected,
            "ignored": received.ignored,
            "rejects": [r.as_dict() for r in received.rejects[:MAX_ANSWERED_REJECTS]],
        }
        return Response(LitellmIngestOutput(data).data)
