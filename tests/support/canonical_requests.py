"""Canonical requests built by hand for the aggregation tests: each test names only the fields
it is about."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from audit_app.ingestion.token_logs.base import CanonicalRequest


def canonical_request(*, started_at: datetime, **fields: Any) -> CanonicalRequest:
    """A request at `started_at` with `fields` over plain defaults: no duration or first
    token, workload "w", nothing else named, an openai gpt-4o chat, no tokens, no logged
    cost, status "ok", line 1."""
    defaults: dict[str, Any] = {
        "ended_at": started_at,
        "first_token_at": None,
        "workload": "w",
        "team": "",
        "end_user": "",
        "caller": "",
        "provider": "openai",
        "model": "gpt-4o",
        "operation": "chat",
        "streaming": None,
        "batch_api": False,
        "input_tokens": 0,
        "output_tokens": 0,
        "cached_input_tokens": 0,
        "cost_usd": None,
        "status": "ok",
        "request_id": "",
        "pool": "",
        "line": 1,
    }
    return CanonicalRequest(started_at=started_at, **{**defaults, **fields})
