"""LiteLLM StandardLoggingPayload records for the callback receiver's tests: the real payload
(tests/fixtures/real/token_logs/), variants of it, and the canonical request it maps to, worked
out by hand from the file."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from audit_app.ingestion.token_logs.base import CanonicalRequest
from tests.support.paths import FIXTURES_DIR

REAL_FILE = (
    FIXTURES_DIR
    / "real"
    / "token_logs"
    / "litellm_standard_logging_payload_fake-openai-endpoint.jsonl"
)
REAL_ID = "chatcmpl-9870a859d6df402795f75dc5fca5b2e0"
KEY_HASH = "88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b"
# The real payload, field by field (see test_litellm_payload for why each value is what it is).
REAL_REQUEST = CanonicalRequest(
    started_at=datetime(2025, 2, 11, 0, 56, 19, 683053, tzinfo=UTC),  # 1739235379.683053
    ended_at=datetime(2025, 2, 11, 0, 56, 19, 845330, tzinfo=UTC),  # 1739235379.84533
    first_token_at=None,
    workload=KEY_HASH,
    team="",
    end_user="default_user_id",
    caller=KEY_HASH,
    provider="openai",
    model="my-fake-model",
    operation="chat",
    streaming=True,
    batch_api=False,
    input_tokens=9,
    output_tokens=12,
    cached_input_tokens=0,
    cost_usd=Decimal("0.000037500000000000003"),
    status="success",
    request_id=REAL_ID,
    pool="",
    line=1,
)


def real_payload() -> dict[str, Any]:
    return json.loads(REAL_FILE.read_text(encoding="utf-8"))


def payload(**changes: Any) -> dict[str, Any]:
    """The real payload with the top-level fields in `changes` replaced."""
    record = copy.deepcopy(real_payload())
    record.update(changes)
    return record
