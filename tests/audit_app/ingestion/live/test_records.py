"""Live records survive storage exactly, and a re-sent record has the same key."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal

from audit_app.ingestion.live.records import (
    decode_requests,
    decode_rows,
    encode_requests,
    record_key,
    row_key,
    rows_to_frame,
)
from audit_app.ingestion.token_logs.base import CanonicalRequest

REQUEST = CanonicalRequest(
    started_at=datetime(2026, 11, 30, 23, 59, 59, 123456, tzinfo=UTC),
    ended_at=datetime(2026, 12, 1, 0, 0, 1, 654321, tzinfo=UTC),
    first_token_at=datetime(2026, 12, 1, 0, 0, 0, 500000, tzinfo=UTC),
    workload="eval-nightly",
    team="ml",
    end_user="u-1",
    caller="svc",
    provider="openai",
    model="gpt-4o-mini",
    operation="chat",
    streaming=True,
    batch_api=False,
    input_tokens=1200,
    output_tokens=300,
    cached_input_tokens=200,
    cost_usd=Decimal("0.000360000"),
    status="success",
    request_id="4bf92f3577b34da6a3ce929d0e0e4736/00f067aa0ba902b7",
    pool="",
    line=7,
)


def test_records_decode_to_exactly_what_was_encoded() -> None:
    other = replace(REQUEST, first_token_at=None, streaming=None, cost_usd=None, request_id="")
    assert decode_requests(encode_requests([REQUEST, other])) == [REQUEST, other]


def test_a_record_is_keyed_by_its_id_else_by_what_it_says() -> None:
    assert record_key(REQUEST) == "4bf92f3577b34da6a3ce929d0e0e4736/00f067aa0ba902b7"
    anonymous = replace(REQUEST, request_id="")
    assert record_key(anonymous) == record_key(replace(anonymous, line=99))
    assert record_key(anonymous).startswith("sha256:")
    assert record_key(anonymous) != record_key(replace(anonymous, output_tokens=301))
    long_id = replace(REQUEST, request_id="x" * 300)
    assert len(record_key(long_id)) == len("sha256:") + 64


def _variety() -> list[CanonicalRequest]:
    """Records that differ in every way the frame and the key care about."""
    return [
        REQUEST,
        replace(REQUEST, first_token_at=None, streaming=None, cost_usd=None, request_id=""),
        replace(REQUEST, streaming=False, batch_api=True, status="error", request_id="x" * 300),
        replace(
            REQUEST,
            started_at=datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            ended_at=datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC),
            cost_usd=Decimal("12.500000001"),
            workload="",
            team="",
            request_id="",
            line=3,
        ),
    ]


def test_raw_rows_key_as_their_records_do() -> None:
    blob = encode_requests(_variety())
    assert [row_key(row) for row in decode_rows(blob)] == [
        record_key(r) for r in decode_requests(blob)
    ]


def test_raw_rows_make_the_frame_their_records_make() -> None:
    import pandas as pd

    from audit_app.ingestion.token_logs.frame import requests_to_frame

    blob = encode_requests(_variety())
    pd.testing.assert_frame_equal(
        rows_to_frame(decode_rows(blob)), requests_to_frame(decode_requests(blob))
    )
    pd.testing.assert_frame_equal(rows_to_frame([]), requests_to_frame([]))


def test_times_keep_microseconds_as_decoding_does() -> None:
    """A receiver may store nanoseconds; decoding keeps microseconds, and so do raw rows."""
    import json
    import zlib

    row = json.loads(zlib.decompress(encode_requests([REQUEST])))["rows"][0]
    row[0] += 789  # nanoseconds past the microsecond
    blob = zlib.compress(json.dumps({"v": 1, "rows": [row]}).encode())
    [decoded] = decode_requests(blob)
    assert rows_to_frame(decode_rows(blob))["started_at"][0] == decoded.started_at
    anonymous = json.loads(zlib.decompress(blob))
    anonymous["rows"][0][17] = ""
    blob = zlib.compress(json.dumps(anonymous).encode())
    assert row_key(decode_rows(blob)[0]) == record_key(decode_requests(blob)[0])
