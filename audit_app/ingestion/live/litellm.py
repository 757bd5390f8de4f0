"""Receiving what a LiteLLM proxy's `generic_api` logging callback posts: the body's
StandardLoggingPayload records (`token_logs.litellm_payload`) are mapped to canonical requests
and kept as one live batch (`live.receive`) until the landing task lands them.
"""

from __future__ import annotations

from dataclasses import dataclass

from audit_app.access.permissions import Actor
from audit_app.ingestion.live.receive import Received, live_receive
from audit_app.ingestion.token_logs.litellm_payload import PayloadBodyError, read_payloads
from audit_app.lib.errors import DomainError, ErrorKind
from audit_app.models import LiveBatch

BODY_FIELD = "body"


class LitellmBodyInvalid(DomainError):
    """The posted body is not JSON / NDJSON; nothing was kept."""

    kind = ErrorKind.INVALID
    field = BODY_FIELD

    def __init__(self, message: str, *, line: int) -> None:
        super().__init__(message)
        self.line = line

    def facts(self) -> dict[str, object]:
        return {"line": self.line}


@dataclass(frozen=True, kw_only=True)
class LitellmReceived:
    """What the post held (`received`) and the log_format its body was read as."""

    log_format: str
    received: Received


def litellm_receive(*, body: bytes, user: Actor = None) -> LitellmReceived:
    """Keep the LiteLLM calls one callback post carried. Raises `LitellmBodyInvalid` for a body
    that is not JSON / NDJSON and `LiveOverloaded` while the landing backlog is over its limit
    (nothing is kept either way)."""
    try:
        batch = read_payloads(body)
    except PayloadBodyError as error:
        raise LitellmBodyInvalid(str(error), line=error.line) from error
    received = live_receive(
        source=LiveBatch.Source.LITELLM,
        requests=batch.requests,
        rows_read=batch.rows_read,
        rejects=batch.rejects,
        ignored=batch.ignored,
        user=user,
    )
    return LitellmReceived(log_format=batch.log_format, received=received)
