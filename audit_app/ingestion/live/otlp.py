"""Receiving one OTLP/HTTP trace export (`POST /v1/traces`): decode its body (`otlp_wire`),
keep its gen_ai spans as one live batch (`receive.live_receive`, source "otlp") and answer with
the ExportTraceServiceResponse in the request's encoding.

Refusals propagate as exceptions for the view to answer: `otlp_wire.MalformedExport` (400:
nothing is kept), `receive.LiveOverloaded` (429) and the database's OperationalError (503).
"""

from __future__ import annotations

from dataclasses import dataclass

from audit_app.access.permissions import Actor
from audit_app.ingestion.live.otlp_wire import export_response, parse_export
from audit_app.ingestion.live.receive import Received, live_receive
from audit_app.models import LiveBatch


@dataclass(frozen=True, kw_only=True)
class OtlpAnswer:
    """The response body (in the request's encoding) and what was kept."""

    body: bytes
    received: Received


def otlp_receive(*, payload: bytes, content_type: str, user: Actor) -> OtlpAnswer:
    """Keep the gen_ai spans of one export request, given its body without content coding;
    `content_type` is `otlp_wire.PROTOBUF` or `otlp_wire.JSON`. Nothing is stored when no span
    was accepted."""
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
            rejects=parsed.rejects,
            ignored=parsed.ignored,
            ignored_names=parsed.ignored_names,
            content_type=content_type,
        ),
        received=received,
    )
