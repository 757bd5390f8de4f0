"""A card's long-context tier applies at its own threshold (272k for the
GPT-5.x family, 128k, 200k, ...), not only at 200k. Ingest counts each request above its own
card's threshold and the rollup keeps it; pricing applies a tier only to tokens counted there.

Every expected cost is worked out by hand beside it (USD per million tokens)."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from datetime import UTC, date, datetime
from decimal import Decimal

import pandas as pd
import pytest
from django.core.management import call_command

from audit_app.costs.price_cards import (
    long_context_thresholds,
    prices_sync_first_start,
    tier_mismatches,
)
from audit_app.costs.pricing import (
    LONG_CONTEXT_THRESHOLD_TOKENS,
    MIXED_THRESHOLDS,
    Price,
    TokenUsage,
    counting_threshold,
    tier_applies,
    token_cost,
)
from audit_app.ingestion.daily import daily_from_hourly
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.rollups import IngestAggregate
from audit_app.ingestion.token_logs.base import CanonicalRequest
from audit_app.ingestion.token_logs.frame import requests_to_frame
from audit_app.ingestion.uploads import upload_create
from audit_app.models import DailyRollup, HourlyRollup, PriceCard
from audit_app.reporting.filters import SpendFilters
from audit_app.reporting.spend import spend_breakdown
from tests.support.canonical_requests import canonical_request

DAY = date(2026, 11, 20)
PROVIDER = "example-ai"

# A GPT-5.x-style card: the tier starts above 272,000 input tokens.
GPT5_STYLE = Price(
    card_id=1,
    provider=PROVIDER,
    model="tier-272k",
    valid_from=date(2020, 1, 1),
    input=Decimal("2.50"),
    cached_input=Decimal("0.25"),
    output=Decimal("15"),
    long_context_threshold=272_000,
    long_context_input=Decimal("5"),
    long_context_cached_input=Decimal("0.50"),
    long_context_output=Decimal("22.50"),
)


# --- Pricing (pure) -------------------------------------------------------------------------
def test_a_272k_tier_prices_the_tokens_counted_above_272k() -> None:
    # Two requests: 250,000 input and 1,000 output (below the tier), 300,000 input (100,000 of
    # them cached) and 2,000 output (above it).
    usage = TokenUsage(
        input_tokens=550_000,
        cached_input_tokens=100_000,
        output_tokens=3_000,
        requests=2,
        long_context_input_tokens=300_000,
        long_context_cached_input_tokens=100_000,
        long_context_output_tokens=2_000,
        long_context_threshold=272_000,
    )
    # ordinary: 250,000 x 2.50 + 1,000 x 15 = 625,000 + 15,000 = 640,000
    # long: 200,000 x 5 + 100,000 x 0.50 + 2,000 x 22.50 = 1,000,000 + 50,000 + 45,000
    #       = 1,095,000
    # (640,000 + 1,095,000) / 1M = $1.735
    assert token_cost(GPT5_STYLE, usage) == Decimal("1.735")


def test_tokens_counted_at_another_threshold_are_priced_at_the_ordinary_prices() -> None:
    usage = TokenUsage(
        input_tokens=300_000,
        cached_input_tokens=0,
        output_tokens=0,
        long_context_input_tokens=300_000,
        long_context_threshold=200_000,  # counted before the card had its tier
    )
    assert token_cost(GPT5_STYLE, usage) == Decimal("0.75")  # 300,000 x 2.50 / 1M
    mixed = TokenUsage(**{**usage.__dict__, "long_context_threshold": MIXED_THRESHOLDS})
    assert token_cost(GPT5_STYLE, mixed) == Decimal("0.75")


def test_the_counting_threshold_is_the_cards_tier_else_200k() -> None:
    assert counting_threshold(GPT5_STYLE) == 272_000
    assert counting_threshold(None) == LONG_CONTEXT_THRESHOLD_TOKENS == 200_000
    no_tier = Price(
        card_id=2,
        provider=PROVIDER,
        model="flat",
        valid_from=date(2020, 1, 1),
        input=Decimal(1),
        output=Decimal(1),
    )
    assert counting_threshold(no_tier) == 200_000
    assert not tier_applies(no_tier, 200_000)
    assert tier_applies(GPT5_STYLE, 272_000)
    assert not tier_applies(GPT5_STYLE, 200_000)
    # The dataset's "above 199,999" is the 200k tier rows counted before this change carry.
    above_199_999 = Price(**{**GPT5_STYLE.__dict__, "long_context_threshold": 199_999})
    assert tier_applies(above_199_999, 199_999)
    assert tier_applies(above_199_999, 200_000)


# --- Rollups (pure) -------------------------------------------------------------------------
def _frame(rows: list[tuple[str, int, int]]) -> pd.DataFrame:
    return requests_to_frame(
        [
            _request(model, input_tokens, output_tokens, line=i + 1)
            for i, (model, input_tokens, output_tokens) in enumerate(rows)
        ]
    )


def test_ingest_counts_each_request_above_its_own_models_threshold() -> None:
    thresholds = {"tier-272k": 272_000, "tier-128k": 128_000}
    seen: list[tuple[str, str, date]] = []

    def lookup(provider: str, model: str, day: date) -> int:
        seen.append((provider, model, day))
        return thresholds.get(model, LONG_CONTEXT_THRESHOLD_TOKENS)

    aggregate = IngestAggregate()
    rows = [
        ("tier-272k", 250_000, 10),
        ("tier-272k", 300_000, 20),
        ("tier-128k", 150_000, 30),
        ("tier-128k", 100_000, 40),
        ("flat", 250_000, 50),
        ("flat", 150_000, 60),
    ]
    aggregate.add_frame(_frame(rows), lookup)
    assert sorted(seen) == sorted((PROVIDER, m, DAY) for m in ("tier-272k", "tier-128k", "flat"))
    got = {
        key.model: (
            t.long_context_threshold_tokens,
            t.unlogged_long_context_input_tokens,
            t.unlogged_long_context_output_tokens,
        )
        for key, t in aggregate.rollups.items()
    }
    assert got == {
        "tier-272k": (272_000, 300_000, 20),
        "tier-128k": (128_000, 150_000, 30),
        "flat": (200_000, 250_000, 50),
    }


def test_rollups_of_different_thresholds_merge_to_mixed() -> None:
    first, second, same = IngestAggregate(), IngestAggregate(), IngestAggregate()
    first.add_frame(_frame([("m", 300_000, 1)]), lambda p, m, d: 272_000)
    second.add_frame(_frame([("m", 300_000, 1)]), lambda p, m, d: 200_000)
    same.add_frame(_frame([("m", 100, 1)]), lambda p, m, d: 272_000)
    [merged] = first.merge(same).rollups.values()
    assert merged.long_context_threshold_tokens == 272_000
    [merged] = first.merge(second).rollups.values()
    assert merged.long_context_threshold_tokens == MIXED_THRESHOLDS
    assert merged.unlogged_long_context_input_tokens == 600_000


def test_daily_rollups_keep_the_threshold_and_mark_mixed_ones() -> None:
    hour = datetime(2026, 11, 20, 9, tzinfo=UTC)
    base = {
        "workload": "w",
        "team": "",
        "provider": PROVIDER,
        "model": "m",
        "pool": "",
        "operation": "",
        "batch_api": False,
        **{f: 0 for f in ("requests", "errors", "streaming_requests", "input_tokens")},
        **{f: 0 for f in ("output_tokens", "cached_input_tokens", "logged_requests")},
        "logged_cost_usd": Decimal(0),
        **{f: 0 for f in ("unlogged_input_tokens", "unlogged_cached_input_tokens")},
        "unlogged_output_tokens": 0,
        "cache_creation_input_tokens": 0,
        "unlogged_cache_creation_input_tokens": 0,
        "unlogged_long_context_input_tokens": 0,
        "unlogged_long_context_cached_input_tokens": 0,
        "unlogged_long_context_cache_creation_input_tokens": 0,
        "unlogged_long_context_output_tokens": 0,
        **{f: b"" for f in ("ttft_histogram", "latency_histogram", "tpot_histogram")},
    }
    rows = [
        {**base, "hour": hour, "long_context_threshold_tokens": 128_000},
        {**base, "hour": hour.replace(hour=10), "long_context_threshold_tokens": 128_000},
    ]
    [daily] = daily_from_hourly(rows)
    assert daily["long_context_threshold_tokens"] == 128_000
    rows[1]["long_context_threshold_tokens"] = 272_000
    [daily] = daily_from_hourly(rows)
    assert daily["long_context_threshold_tokens"] == MIXED_THRESHOLDS


# --- Ingest and read, end to end ------------------------------------------------------------
def _card(model: str, threshold: int | None, prices: tuple[str, ...]) -> PriceCard:
    base_in, base_out, long_in, long_out = (Decimal(p) for p in prices)
    return PriceCard.objects.create(
        provider=PROVIDER,
        model=model,
        valid_from=date(2026, 1, 1),
        input_usd_per_mtok=base_in,
        output_usd_per_mtok=base_out,
        cached_input_usd_per_mtok=Decimal("0.25") if model == "tier-272k" else None,
        long_context_threshold_tokens=threshold,
        long_context_input_usd_per_mtok=long_in if threshold else None,
        long_context_output_usd_per_mtok=long_out if threshold else None,
        long_context_cached_input_usd_per_mtok=(Decimal("0.50") if model == "tier-272k" else None),
    )


def _span(
    i: int, model: str, input_tokens: int, cached: int, output_tokens: int, provider: str = PROVIDER
) -> str:
    start = int(datetime(2026, 11, 20, 9, 0, tzinfo=UTC).timestamp()) * 10**9 + i * 10**9
    attributes: dict[str, object] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": model,
        "gen_ai.usage.input_tokens": input_tokens,
        "gen_ai.usage.output_tokens": output_tokens,
        "workload": "assistant",
    }
    if cached:
        attributes["gen_ai.usage.cache_read.input_tokens"] = cached
    span = {
        "traceId": f"{i + 1:032x}",
        "spanId": f"{i + 1:016x}",
        "name": f"chat {model}",
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 10**9),
        "attributes": [
            {"key": k, "value": {"intValue": str(v)}}
            if isinstance(v, int)
            else {"key": k, "value": {"stringValue": v}}
            for k, v in attributes.items()
        ],
        "status": {},
    }
    return json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]})


def _ingest(spans: list[tuple[str, int, int, int]], *, offset: int = 0) -> None:
    body = "\n".join(_span(offset + i, *s) for i, s in enumerate(spans)) + "\n"
    upload = upload_create(
        source=io.BytesIO(body.encode()), original_name="spans.jsonl", enqueue=False
    )
    upload = upload_ingest(upload_id=upload.pk)
    assert (upload.status, upload.requests) == ("succeeded", len(spans))


def _costs() -> dict[str, Decimal]:
    breakdown = spend_breakdown(group_by="model", filters=SpendFilters(start=DAY, end=DAY))
    assert breakdown.unpriced_models == []
    return {row.key: row.api_spend_usd for row in breakdown.rows}


@pytest.mark.django_db
def test_tiers_at_272k_128k_and_200k_price_exactly() -> None:
    _card("tier-272k", 272_000, ("2.50", "15", "5", "22.50"))
    _card("tier-128k", 128_000, ("1", "4", "2", "8"))
    _card("tier-200k", 200_000, ("3", "15", "6", "22.50"))
    _ingest(
        [
            ("tier-272k", 250_000, 0, 1_000),
            ("tier-272k", 300_000, 100_000, 2_000),
            ("tier-128k", 150_000, 0, 500),
            ("tier-128k", 100_000, 0, 500),
            ("tier-200k", 250_000, 0, 1_000),
            ("tier-200k", 150_000, 0, 1_000),
        ]
    )
    assert _costs() == {
        # 250k below the tier: 250,000 x 2.50 + 1,000 x 15 = 640,000; 300k above it:
        # 200,000 x 5 + 100,000 x 0.50 + 2,000 x 22.50 = 1,095,000. 1,735,000 / 1M
        "tier-272k": Decimal("1.735"),
        # 150k above: 150,000 x 2 + 500 x 8 = 304,000; 100k below: 100,000 x 1 + 500 x 4
        # = 102,000. 406,000 / 1M
        "tier-128k": Decimal("0.406"),
        # 250k above: 250,000 x 6 + 1,000 x 22.50 = 1,522,500; 150k below: 150,000 x 3
        # + 1,000 x 15 = 465,000. 1,987,500 / 1M
        "tier-200k": Decimal("1.9875"),
    }
    for model in (HourlyRollup, DailyRollup):
        stored = dict(model.objects.values_list("model", "long_context_threshold_tokens"))
        assert stored == {"tier-272k": 272_000, "tier-128k": 128_000, "tier-200k": 200_000}
    assert tier_mismatches() == []


@pytest.mark.django_db
def test_a_tier_added_after_ingest_is_listed_and_not_applied_until_re_ingest() -> None:
    card = _card("tier-272k", None, ("2.50", "15", "5", "22.50"))
    _ingest([("tier-272k", 300_000, 0, 0)])  # counted above 200k: no tier on the card yet
    card.long_context_threshold_tokens = 272_000
    card.long_context_input_usd_per_mtok = Decimal("5")
    card.save()
    assert _costs() == {"tier-272k": Decimal("0.75")}  # 300,000 x 2.50 / 1M, the ordinary price
    [mismatch] = tier_mismatches()
    assert (mismatch.model, mismatch.counted_at, mismatch.tier_threshold) == (
        "tier-272k",
        200_000,
        272_000,
    )
    assert (mismatch.first_day, mismatch.last_day) == (DAY, DAY)
    out = io.StringIO()
    call_command("prices_sync", "--dry-run", stdout=out)
    assert (
        "example-ai/tier-272k 2026-11-20..2026-11-20: long-context tokens counted above 200000 "
        "input tokens, the card's tier starts above 272000; priced at the ordinary prices"
    ) in out.getvalue()
    # The same request ingested again is counted at the card's threshold. Its rollup meets the
    # old one on the read (one model, one day): mixed, so both are priced at the ordinary price.
    _ingest([("tier-272k", 300_000, 0, 0)], offset=1)
    assert _costs() == {"tier-272k": Decimal("1.50")}  # 2 x 300,000 x 2.50 / 1M
    assert long_context_thresholds()(PROVIDER, "tier-272k", DAY) == 272_000


@pytest.mark.django_db
def test_the_packaged_datasets_gpt_5_and_128k_tiers_apply_after_a_sync() -> None:
    report = prices_sync_first_start()
    assert report is not None
    data = report.as_dict()
    assert "long_context_tiers_not_applied" not in data
    assert data["long_context_counted_at_another_threshold"] == []
    # OpenAI lists GPT-5.4 at $2.50 / $15, and prompts above 272k at $5 / $22.50; Vertex lists
    # Gemini 1.5 Pro at $1.25 / $5, and prompts above 128k at $2.50 / $10.
    spans = [
        ("openai", "gpt-5.4", 250_000, 1_000),
        ("openai", "gpt-5.4", 300_000, 2_000),
        ("gcp.vertex_ai", "gemini-1.5-pro", 150_000, 1_000),
        ("gcp.vertex_ai", "gemini-1.5-pro", 100_000, 1_000),
    ]
    body = "\n".join(
        _span(i, model, input_tokens, 0, output_tokens, provider=provider)
        for i, (provider, model, input_tokens, output_tokens) in enumerate(spans)
    )
    upload = upload_create(
        source=io.BytesIO((body + "\n").encode()), original_name="spans.jsonl", enqueue=False
    )
    assert upload_ingest(upload_id=upload.pk).status == "succeeded"
    assert _costs() == {
        # 250,000 x 2.50 + 1,000 x 15 = 640,000; 300,000 x 5 + 2,000 x 22.50 = 1,545,000
        "gpt-5.4": Decimal("2.185"),
        # 150,000 x 2.50 + 1,000 x 10 = 385,000; 100,000 x 1.25 + 1,000 x 5 = 130,000
        "gemini-1.5-pro": Decimal("0.515"),
    }
    assert tier_mismatches() == []


def _request(
    model: str,
    input_tokens: int,
    output_tokens: int,
    *,
    day: date = DAY,
    cached: int = 0,
    creation: int = 0,
    cost: Decimal | None = None,
    line: int = 1,
) -> CanonicalRequest:
    return canonical_request(
        started_at=datetime(day.year, day.month, day.day, 9, 0, tzinfo=UTC),
        provider=PROVIDER,
        model=model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_input_tokens=cached,
        cache_creation_input_tokens=creation,
        cost_usd=cost,
        line=line,
    )


def test_only_unlogged_requests_above_the_threshold_count_every_token_kind_apart() -> None:
    aggregate = IngestAggregate()
    rows = [
        # Unlogged, above 200,000: every kind of token counted apart.
        _request("m", 250_000, 500, cached=40_000, creation=10_000),
        _request("m", 200_001, 1),
        # Exactly at the threshold is not above it.
        _request("m", 200_000, 3, cached=1, creation=2),
        # Logged: its cost is known, nothing to price.
        _request("m", 300_000, 9, cached=7, creation=8, cost=Decimal("1")),
    ]
    aggregate.add_frame(requests_to_frame(rows))  # no lookup: 200,000 for every request
    [t] = aggregate.rollups.values()
    assert t.long_context_threshold_tokens == LONG_CONTEXT_THRESHOLD_TOKENS == 200_000
    assert t.unlogged_long_context_input_tokens == 250_000 + 200_001
    assert t.unlogged_long_context_cached_input_tokens == 40_000
    assert t.unlogged_long_context_cache_creation_input_tokens == 10_000
    assert t.unlogged_long_context_output_tokens == 500 + 1
    # The unlogged totals hold all three unlogged requests.
    assert t.unlogged_input_tokens == 250_000 + 200_001 + 200_000
    assert t.unlogged_cache_creation_input_tokens == 10_000 + 2


def test_chunks_counted_at_different_thresholds_add_up_to_mixed() -> None:
    aggregate = IngestAggregate()
    aggregate.add_frame(_frame([("m", 300_000, 1)]), lambda p, m, d: 272_000)
    aggregate.add_frame(_frame([("m", 300_000, 1)]), lambda p, m, d: 272_000)
    [t] = aggregate.rollups.values()
    assert t.long_context_threshold_tokens == 272_000  # same threshold: kept
    aggregate.add_frame(_frame([("m", 300_000, 1)]), lambda p, m, d: 200_000)
    assert t.long_context_threshold_tokens == MIXED_THRESHOLDS
    assert t.unlogged_long_context_input_tokens == 3 * 300_000  # above both


def test_two_spellings_of_a_provider_in_one_chunk_merge_their_thresholds() -> None:
    # "OpenAI" and "openai" fall into one rollup (the provider's stored name), but a lookup
    # that tells them apart gives their groups different thresholds: the rollup holds both
    # kinds of rows, so it is mixed, whichever group comes first.
    def lookup(provider: str, model: str, day: date) -> int:
        return 272_000 if provider == "OpenAI" else 128_000

    for spellings in (("OpenAI", "openai"), ("openai", "OpenAI")):
        rows = [
            replace(_request("m", 300_000, 1, line=i + 1), provider=spelling)
            for i, spelling in enumerate(spellings)
        ]
        aggregate = IngestAggregate()
        aggregate.add_frame(requests_to_frame(rows), lookup)
        [(key, t)] = aggregate.rollups.items()
        assert key.provider == "openai"
        assert t.requests == 2
        assert t.long_context_threshold_tokens == MIXED_THRESHOLDS
        assert t.unlogged_long_context_input_tokens == 2 * 300_000  # above both


def test_thresholds_are_looked_up_per_model_and_day_over_several_days() -> None:
    second = date(2026, 11, 21)
    # A card whose tier moved from 272k to 128k on the second day, and one that did not.
    table = {
        ("a", DAY): 272_000,
        ("a", second): 128_000,
        ("b", DAY): 200_000,
        ("b", second): 200_000,
    }
    seen: list[tuple[str, date]] = []

    def lookup(provider: str, model: str, day: date) -> int:
        seen.append((model, day))
        return table[(model, day)]

    aggregate = IngestAggregate()
    rows = [_request(m, 250_000, 1, day=d) for m, d in [*table, ("a", DAY)]]
    aggregate.add_frame(requests_to_frame(rows), lookup)
    assert sorted(seen) == sorted(table)  # once per (model, day)
    got = {
        (key.model, key.hour.date()): (
            t.long_context_threshold_tokens,
            t.unlogged_long_context_input_tokens,
        )
        for key, t in aggregate.rollups.items()
    }
    # 250,000 input tokens: below 272k, above 128k and 200k; ("a", DAY) twice.
    assert got == {
        ("a", DAY): (272_000, 0),
        ("a", second): (128_000, 250_000),
        ("b", DAY): (200_000, 250_000),
        ("b", second): (200_000, 250_000),
    }
