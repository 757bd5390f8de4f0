"""Received records as stored between receipt and landing, and the key that tells a re-sent
record from a new one.

Pure: no Django. A `LiveBatch` keeps its accepted records as zlib-compressed JSON, one list per
record in `FIELDS` order, times as integer nanoseconds since the epoch (UTC) and costs as
decimal strings, so decoding gives back exactly the canonical requests that were received.
Landing reads the raw rows instead (`decode_rows`), keys them (`row_key`, the same key as
`record_key`) and turns the new ones into the canonical frame in one go (`rows_to_frame`, the
same frame as `requests_to_frame`): building a `CanonicalRequest` per record and then a frame
from them took most of a micro-batch's time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import zlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd

from audit_app.ingestion.token_logs import frame as canonical
from audit_app.ingestion.token_logs.base import CanonicalRequest

FORMAT_VERSION = 2
# Version 1 rows lack the last field (`cache_creation_input_tokens`, added in version 2): they
# are read with 0 there, so batches received before an upgrade still land.
_V1_FIELD_COUNT = 20
# A stored record's values, in the order of the canonical request's fields (times as integer
# nanoseconds, the cost as text); a change to those fields changes FORMAT_VERSION too.
FIELDS = tuple(field.name for field in dataclasses.fields(CanonicalRequest))
_TIMES = frozenset({"started_at", "ended_at", "first_token_at"})
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


def _stored(name: str, value: Any) -> Any:
    if name in _TIMES:
        return _nanos(value)
    if name == "cost_usd":
        return None if value is None else str(value)
    return value


def encode_requests(requests: Sequence[CanonicalRequest]) -> bytes:
    """The records as one compressed blob (`decode_requests` reverses it)."""
    rows = [[_stored(name, getattr(r, name)) for name in FIELDS] for r in requests]
    payload = json.dumps({"v": FORMAT_VERSION, "rows": rows}, separators=(",", ":"))
    return zlib.compress(payload.encode(), level=1)


def decode_rows(blob: bytes | memoryview) -> list[list[Any]]:
    """The stored records as their raw rows (one list per record, `FIELDS` order): what
    landing reads, keys (`row_key`) and turns into a frame (`rows_to_frame`) without building
    a `CanonicalRequest` per record."""
    document = json.loads(zlib.decompress(bytes(blob)))
    version = document.get("v")
    if version not in (1, FORMAT_VERSION):
        raise ValueError(f"unknown live record format {version!r}")
    rows: list[list[Any]] = document["rows"]
    for row in rows:
        if version == 1 and len(row) == _V1_FIELD_COUNT:
            row.append(0)
        if len(row) != len(FIELDS):
            raise ValueError(f"a live record has {len(row)} fields, not {len(FIELDS)}")
    return rows


def decode_requests(blob: bytes | memoryview) -> list[CanonicalRequest]:
    out = []
    for row in decode_rows(blob):
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
        return _digest(fields)
    return _id_key(key)


def _id_key(key: str) -> str:
    if len(key) > KEY_MAX_LENGTH:
        return "sha256:" + hashlib.sha256(key.encode()).hexdigest()
    return key


def _digest(fields: list[Any]) -> str:
    return "sha256:" + hashlib.sha256(json.dumps(fields).encode()).hexdigest()


_AT = {name: FIELDS.index(name) for name in FIELDS}


def _micros(nanos: int) -> int:
    """A stored time as decoding gives it back: to the microsecond (`_moment`)."""
    return nanos // 1000 * 1000


def row_key(row: Sequence[Any]) -> str:
    """`record_key` of the record a raw row (`decode_rows`) decodes to."""
    key = row[_AT["request_id"]]
    if key:
        return _id_key(key)
    cost = row[_AT["cost_usd"]]
    return _digest(
        [
            _micros(row[_AT["started_at"]]),
            _micros(row[_AT["ended_at"]]),
            row[_AT["model"]],
            row[_AT["workload"]],
            row[_AT["input_tokens"]],
            row[_AT["output_tokens"]],
            row[_AT["caller"]],
            row[_AT["end_user"]],
            str(None if cost is None else Decimal(cost)),
        ]
    )


def _times(values: Sequence[int | None]) -> pd.Series:
    known = np.array([v is not None for v in values], dtype=bool)
    nanos = np.array([v // 1000 * 1000 if v is not None else 0 for v in values], dtype=np.int64)
    times = pd.Series(pd.to_datetime(nanos, unit="ns", utc=True))
    return times.where(known, pd.NaT)


def rows_to_frame(rows: Sequence[Sequence[Any]]) -> pd.DataFrame:
    """The canonical frame of raw rows: equal to `requests_to_frame` of the records they
    decode to (`decode_requests`), built column by column."""
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in FIELDS]
    by_name = dict(zip(FIELDS, columns, strict=True))
    out: dict[str, Any] = {
        canonical.STARTED_AT: _times(by_name["started_at"]),
        canonical.ENDED_AT: _times(by_name["ended_at"]),
        canonical.FIRST_TOKEN_AT: _times(by_name["first_token_at"]),
    }
    for name in canonical.TEXT_COLUMNS:
        out[name] = list(by_name[name])
    out[canonical.STREAMING] = [-1 if v is None else int(v) for v in by_name["streaming"]]
    out[canonical.BATCH_API] = list(by_name["batch_api"])
    out[canonical.IS_ERROR] = [status == "error" for status in by_name["status"]]
    for name in (
        canonical.INPUT_TOKENS,
        canonical.OUTPUT_TOKENS,
        canonical.CACHED_INPUT_TOKENS,
        canonical.CACHE_CREATION_INPUT_TOKENS,
    ):
        out[name] = list(by_name[name])
    out[canonical.COST_NANOS] = [
        canonical.cost_to_nanos(None if v is None else Decimal(v)) for v in by_name["cost_usd"]
    ]
    out[canonical.LINE] = list(by_name["line"])
    return canonical.normalize_frame(pd.DataFrame(out, columns=list(canonical.FRAME_COLUMNS)))
