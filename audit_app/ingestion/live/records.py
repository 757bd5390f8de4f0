"""Received records as stored between receipt and landing, and the key that tells a re-sent
record from a new one.

Pure: no Django. A `LiveBatch` keeps its accepted records as zlib-compressed JSON, one list per
record in `FIELDS` order, times as integer nanoseconds since the epoch (UTC) and costs as
decimal strings, so decoding gives back exactly the canonical requests that were received.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from audit_app.ingestion.token_logs.base import CanonicalRequest

FORMAT_VERSION = 1
FIELDS = (
    "started_at",
    "ended_at",
    "first_token_at",
    "workload",
    "team",
    "end_user",
    "caller",
    "provider",
    "model",
    "operation",
    "streaming",
    "batch_api",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "cost_usd",
    "status",
    "request_id",
    "pool",
    "line",
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
KEY_MAX_LENGTH = 255


def _nanos(moment: datetime | None) -> int | None:
    if moment is None:
        return None
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def _moment(nanos: int | None) -> datetime | None:
    if nanos is None:
        return None
    return _EPOCH + timedelta(microseconds=nanos // 1000)


def encode_requests(requests: Sequence[CanonicalRequest]) -> bytes:
    """The records as one compressed blob (`decode_requests` reverses it)."""
    rows = []
    for r in requests:
        rows.append(
            [
                _nanos(r.started_at),
                _nanos(r.ended_at),
                _nanos(r.first_token_at),
                r.workload,
                r.team,
                r.end_user,
                r.caller,
                r.provider,
                r.model,
                r.operation,
                r.streaming,
                r.batch_api,
                r.input_tokens,
                r.output_tokens,
                r.cached_input_tokens,
                None if r.cost_usd is None else str(r.cost_usd),
                r.status,
                r.request_id,
                r.pool,
                r.line,
            ]
        )
    payload = json.dumps({"v": FORMAT_VERSION, "rows": rows}, separators=(",", ":"))
    return zlib.compress(payload.encode(), level=1)


def decode_requests(blob: bytes | memoryview) -> list[CanonicalRequest]:
    document = json.loads(zlib.decompress(bytes(blob)))
    if document.get("v") != FORMAT_VERSION:
        raise ValueError(f"unknown live record format {document.get('v')!r}")
    out = []
    for row in document["rows"]:
        values = dict(zip(FIELDS, row, strict=True))
        started_at = _moment(values["started_at"])
        ended_at = _moment(values["ended_at"])
        assert started_at is not None and ended_at is not None
        out.append(
            CanonicalRequest(
                **{
                    **values,
                    "started_at": started_at,
                    "ended_at": ended_at,
                    "first_token_at": _moment(values["first_token_at"]),
                    "cost_usd": None if values["cost_usd"] is None else Decimal(values["cost_usd"]),
                }
            )
        )
    return out


def record_key(request: CanonicalRequest) -> str:
    """What makes a record the same record when a client sends it again: its id (OTel
    `<traceId>/<spanId>`, LiteLLM's call `id`), else a digest of everything it says. Keys
    longer than the column are replaced by their digest."""
    key = request.request_id
    if not key:
        fields = [_nanos(request.started_at), _nanos(request.ended_at), request.model]
        fields += [request.workload, request.input_tokens, request.output_tokens]
        fields += [request.caller, request.end_user, str(request.cost_usd)]
        return "sha256:" + hashlib.sha256(json.dumps(fields).encode()).hexdigest()
    if len(key) > KEY_MAX_LENGTH:
        return "sha256:" + hashlib.sha256(key.encode()).hexdigest()
    return key
