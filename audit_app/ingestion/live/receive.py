"""Receiving live records: what a receiver (OTLP, LiteLLM callback) hands over after parsing a
request is stored durably as one `LiveBatch`, in one INSERT, before the request is answered.
Landing happens later (`audit_app.ingestion.live.landing`).

A receiver refuses new records (429 with Retry-After) while more than LIVE_MAX_PENDING_RECORDS
received records wait to land: the landing task is behind, and the client's retry with backoff
is the right answer. A database that cannot be reached is a 503 with Retry-After.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import connection
from django.utils import timezone

from audit_app.access.permissions import Actor
from audit_app.ingestion.live.records import encode_requests
from audit_app.ingestion.reading import RowReject
from audit_app.ingestion.token_logs.base import CanonicalRequest
from audit_app.lib.errors import DomainError, ErrorKind
from audit_app.models import LiveBatch

MAX_STORED_REJECTS = 20


class LiveOverloaded(DomainError):
    """Too many received records wait to land; the client should retry after a while."""

    kind = ErrorKind.BUSY

    def __init__(self, *, pending: int, limit: int, retry_after: int) -> None:
        super().__init__(
            f"{pending:,} received records are waiting to land (the limit is {limit:,}); "
            f"retry after {retry_after} s."
        )
        self.retry_after = retry_after


@dataclass(frozen=True, kw_only=True)
class Received:
    """What a request held: accepted records, refused ones and ones that were not LLM calls."""

    batch_id: int | None
    accepted: int
    rejected: int
    ignored: int
    rejects: tuple[RowReject, ...]


def pending_records() -> int:
    """Received records not landed yet. Every receiver request asks, so it is one plain
    statement (the ORM's aggregate cost more Python time than the query itself)."""
    table = LiveBatch._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COALESCE(SUM(record_count), 0) FROM {table} WHERE landed_at IS NULL"
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def live_receive(
    *,
    source: str,
    requests: Sequence[CanonicalRequest],
    rows_read: int,
    rejects: Sequence[RowReject],
    ignored: int = 0,
    user: Actor = None,
) -> Received:
    """Keep what one request carried; nothing is stored when it held no accepted record (its
    rejects are only answered). Raises LiveOverloaded when the backlog is over its limit."""
    if requests:
        limit = settings.LIVE_MAX_PENDING_RECORDS
        pending = pending_records()
        if pending + len(requests) > limit:
            raise LiveOverloaded(
                pending=pending, limit=limit, retry_after=settings.LIVE_LAND_EVERY_SECONDS
            )
    batch_id = None
    if requests:
        batch = LiveBatch.objects.create(
            source=source,
            received_at=timezone.now(),
            received_by=user if user is not None and user.is_authenticated else None,
            records=encode_requests(requests),
            record_count=len(requests),
            rows_read=rows_read,
            rows_rejected=len(rejects),
            rows_ignored=ignored,
            rejects=[r.as_dict() for r in list(rejects)[:MAX_STORED_REJECTS]],
        )
        batch_id = batch.pk
    return Received(
        batch_id=batch_id,
        accepted=len(requests),
        rejected=len(rejects),
        ignored=ignored,
        rejects=tuple(rejects),
    )
