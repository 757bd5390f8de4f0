"""An OpenTelemetry export of spans from current models of OpenAI,
Anthropic, Google, AWS Bedrock, Mistral, DeepSeek, Groq and Cohere lands with no unpriced model,
and each model costs what its provider lists, once the price cards are synced from the
packaged dataset. OTel spans carry no cost, so every dollar here is priced from a card.

Each expected cost is worked out by hand from the provider's list price (USD per million
tokens), quoted beside it.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from audit_app.costs.price_cards import prices_sync_first_start
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import HourlyRollup
from audit_app.reporting.filters import SpendFilters
from audit_app.reporting.spend import spend_breakdown

pytestmark = pytest.mark.django_db

DAY = date(2026, 11, 20)

# (gen_ai.provider.name, model, input tokens, cache reads, cache writes, output tokens,
#  expected cost in USD)
SPANS = [
    # OpenAI GPT-4.1: $2 input, $0.50 cached input, $8 output.
    # 8,000 x 2 + 2,000 x 0.50 + 1,000 x 8 = 16,000 + 1,000 + 8,000 = 25,000 / 1M
    ("openai", "gpt-4.1-2025-04-14", 10_000, 2_000, 0, 1_000, "0.025"),
    # Anthropic Claude Sonnet 4.5: $3 input, $0.30 cache read, $3.75 cache write (5 min), $15
    # output. 10,000 x 3 + 4,000 x 0.30 + 6,000 x 3.75 + 2,000 x 15
    # = 30,000 + 1,200 + 22,500 + 30,000 = 83,700 / 1M
    ("anthropic", "claude-sonnet-4-5-20250929", 20_000, 4_000, 6_000, 2_000, "0.0837"),
    # Google Gemini 2.5 Pro, prompt above 200k tokens: $2.50 input, $15 output.
    # 300,000 x 2.50 + 1,000 x 15 = 750,000 + 15,000 = 765,000 / 1M
    ("gcp.vertex_ai", "gemini-2.5-pro", 300_000, 0, 0, 1_000, "0.765"),
    # Google Gemini 2.5 Flash (Gemini API): $0.30 input, $2.50 output.
    # 100,000 x 0.30 + 10,000 x 2.50 = 30,000 + 25,000 = 55,000 / 1M
    ("gcp.gemini", "gemini-2.5-flash", 100_000, 0, 0, 10_000, "0.055"),
    # AWS Bedrock, Claude Haiku 4.5 through the global profile: $1 input, $5 output.
    # 10,000 x 1 + 1,000 x 5 = 15,000 / 1M
    (
        "aws.bedrock",
        "global.anthropic.claude-haiku-4-5-20251001-v1:0",
        10_000,
        0,
        0,
        1_000,
        "0.015",
    ),
    # ... and through the US regional profile, 10 % more: $1.10 input, $5.50 output.
    # 10,000 x 1.10 + 1,000 x 5.50 = 11,000 + 5,500 = 16,500 / 1M
    ("aws.bedrock", "us.anthropic.claude-haiku-4-5-20251001-v1:0", 10_000, 0, 0, 1_000, "0.0165"),
    # Mistral Medium 3: $0.40 input, $2 output. 10,000 x 0.40 + 1,000 x 2 = 6,000 / 1M
    ("mistral_ai", "mistral-medium-2505", 10_000, 0, 0, 1_000, "0.006"),
    # DeepSeek chat at its standard (not off-peak) price: $0.27 input, $0.07 cache hit, $1.10
    # output. 5,000 x 0.27 + 5,000 x 0.07 + 1,000 x 1.10 = 1,350 + 350 + 1,100 = 2,800 / 1M
    ("deepseek", "deepseek-chat", 10_000, 5_000, 0, 1_000, "0.0028"),
    # Groq Llama 3.3 70B Versatile: $0.59 input, $0.79 output.
    # 10,000 x 0.59 + 1,000 x 0.79 = 5,900 + 790 = 6,690 / 1M
    ("groq", "llama-3.3-70b-versatile", 10_000, 0, 0, 1_000, "0.00669"),
    # Cohere Command A: $2.50 input, $10 output. 10,000 x 2.50 + 1,000 x 10 = 35,000 / 1M
    ("cohere", "command-a-03-2025", 10_000, 0, 0, 1_000, "0.035"),
]


def _attribute(key: str, value: object) -> dict[str, object]:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def _export() -> bytes:
    """The collector's file exporter output: one OTLP/JSON document per line."""
    lines = []
    start = int(datetime(2026, 11, 20, 9, 0, tzinfo=UTC).timestamp()) * 10**9
    for i, (provider, model, input_tokens, reads, writes, output_tokens, _) in enumerate(SPANS):
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
            "gen_ai.usage.input_tokens": input_tokens,
            "gen_ai.usage.output_tokens": output_tokens,
            "workload": "assistant",
        }
        if reads:
            attributes["gen_ai.usage.cache_read.input_tokens"] = reads
        if writes:
            attributes["gen_ai.usage.cache_creation.input_tokens"] = writes
        span = {
            "traceId": f"{i + 1:032x}",
            "spanId": f"{i + 1:016x}",
            "name": f"chat {model}",
            "startTimeUnixNano": str(start + i * 10**9),
            "endTimeUnixNano": str(start + i * 10**9 + 2 * 10**9),
            "attributes": [_attribute(k, v) for k, v in attributes.items()],
            "status": {},
        }
        document = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}
        lines.append(json.dumps(document))
    return ("\n".join(lines) + "\n").encode()


def test_an_otel_export_of_eight_providers_is_priced_at_list_prices() -> None:
    prices_sync_first_start()
    upload = upload_create(source=io.BytesIO(_export()), original_name="spans.jsonl", enqueue=False)
    upload = upload_ingest(upload_id=upload.pk)
    assert (upload.status, upload.format, upload.requests) == ("succeeded", "otel", len(SPANS))

    breakdown = spend_breakdown(group_by="model", filters=SpendFilters(start=DAY, end=DAY))

    assert breakdown.unpriced_models == []
    costs = {row.key: row.api_spend_usd for row in breakdown.rows}
    assert costs == {model: Decimal(cost) for _, model, *_, cost in SPANS}
    # 0.025 + 0.0837 + 0.765 + 0.055 + 0.015 + 0.0165 + 0.006 + 0.0028 + 0.00669 + 0.035
    assert breakdown.api_spend_usd == Decimal("1.01069")
    # The span's cache writes and the long prompt were counted at ingest.
    sonnet = HourlyRollup.objects.get(model="claude-sonnet-4-5-20250929")
    assert (sonnet.cache_creation_input_tokens, sonnet.unlogged_cache_creation_input_tokens) == (
        6_000,
        6_000,
    )
    pro = HourlyRollup.objects.get(model="gemini-2.5-pro")
    assert (pro.unlogged_long_context_input_tokens, pro.unlogged_long_context_output_tokens) == (
        300_000,
        1_000,
    )
    assert sonnet.unlogged_long_context_input_tokens == 0
