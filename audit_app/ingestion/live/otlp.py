"""Receiving one OTLP/HTTP trace export (`POST /v1/traces`): inflate and decode the body
(`otlp_wire`), keep its gen_ai spans as one live batch (`receive.live_receive`, source "otlp"),
and answer with the ExportTraceServiceResponse in the request's encoding.

Refusals propagate as exceptions for the view to answer: `otlp_wire.ExportRefused` (400, 413,
415: nothing is kept), `receive.LiveOverloaded` (429) and the database's OperationalError
(503).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from audit_app.access.permissions import Actor
from audit_app.ingestion.live.otlp_wire import export_response, inflate, parse_export
from audit_app.ingestion.live.receive import Received, live_receive
from audit_app.models import LiveBatch


@dataclass(frozen=True, kw_only=True)
class OtlpAnswer:
    """The response body (in the request's encoding) and what was kept."""

    body: bytes
    received: Received


def otlp_receive(
    *, body: bytes, content_type: str, content_encoding: str, user: Actor
) -> OtlpAnswer:
    """Keep the gen_ai spans of one export request; `content_type` is `otlp_wire.PROTOBUF` or
    `otlp_wire.JSON`. Nothing is stored when no span was accepted."""
    payload = inflate(
        body, content_encoding=content_encoding, limit=settings.LIVE_MAX_REQUEST_BYTES
    )
    parsed = parse_export(payload, content_type=content_type)
    received = live_receive(
        source=LiveBatch.Source.OTLP,
        requests=parsed.requests,
        rows_read=parsed.rows_read,
        rejects=parsed.rejects,
        ignored=parsed.ignored,
        user=user,
    )
    return OtlpAnswer(
        body=export_response(
            rejects=parsed.rejects, ignored=parsed.ignored, content_type=content_type
        ),
        received=received,
    )
