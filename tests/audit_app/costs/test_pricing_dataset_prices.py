"""What cards learned from the price dataset: cache-write prices, the long-context tier, the
per-request price, and the dataset's match rules in model matching. Pure: no database.

Expected costs are worked out by hand in the comments (prices in USD per million tokens).
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from audit_app.costs.pricing import (
    LONG_CONTEXT_THRESHOLD_TOKENS,
    Price,
    PriceBook,
    TokenUsage,
    rule_matches,
    token_cost,
)

DAY = date(2026, 11, 20)
# Anthropic's list price for Claude Sonnet 4.5: $3 in, $15 out, cache read $0.30, 5-minute
# cache write $3.75; prompts above 200k tokens: $6 in, $22.50 out, $0.60 read, $7.50 write.
SONNET = Price(
    card_id=1,
    provider="anthropic",
    model="claude-sonnet-4-5",
    valid_from=date(2020, 1, 1),
    input=Decimal("3"),
    output=Decimal("15"),
    cached_input=Decimal("0.30"),
    cache_write_input=Decimal("3.75"),
    long_context_threshold=200_000,
    long_context_input=Decimal("6"),
    long_context_output=Decimal("22.50"),
    long_context_cached_input=Decimal("0.60"),
    long_context_cache_write=Decimal("7.50"),
)


def test_cache_writes_are_priced_at_the_cache_write_price() -> None:
    usage = TokenUsage(
        input_tokens=10_000,  # 2,000 uncached + 3,000 read + 5,000 written
        cached_input_tokens=3_000,
        cache_creation_input_tokens=5_000,
        output_tokens=1_000,
    )
    # 2,000 x 3 + 3,000 x 0.30 + 5,000 x 3.75 + 1,000 x 15 = 6,000 + 900 + 18,750 + 15,000
    # = 40,650 per million = $0.04065
    assert token_cost(SONNET, usage) == Decimal("0.04065")


def test_a_card_without_a_cache_write_price_prices_writes_as_input() -> None:
    card = Price(
        card_id=2,
        provider="openai",
        model="gpt-4.1",
        valid_from=date(2020, 1, 1),
        input=Decimal("2"),
        output=Decimal("8"),
    )
    usage = TokenUsage(
        input_tokens=1_000, cached_input_tokens=0, cache_creation_input_tokens=400, output_tokens=0
    )
    assert token_cost(card, usage) == Decimal("0.002")  # 1,000 x $2 / 1M


def test_long_context_requests_are_priced_at_the_tier_the_rest_at_the_base() -> None:
    # Two requests: one of 250k input (10k read from cache) and 2k output, one of 1k input and
    # 500 output. Only the first is above 200k.
    usage = TokenUsage(
        input_tokens=251_000,
        cached_input_tokens=10_000,
        output_tokens=2_500,
        requests=2,
        long_context_input_tokens=250_000,
        long_context_cached_input_tokens=10_000,
        long_context_output_tokens=2_000,
    )
    # long: 240,000 x 6 + 10,000 x 0.60 + 2,000 x 22.50 = 1,440,000 + 6,000 + 45,000 = 1,491,000
    # base: 1,000 x 3 + 500 x 15 = 3,000 + 7,500 = 10,500
    # (1,491,000 + 10,500) / 1M = $1.5015
    assert token_cost(SONNET, usage) == Decimal("1.5015")


def test_a_tier_does_not_price_tokens_counted_at_another_threshold() -> None:
    # Tokens counted above 200k (TokenUsage's default threshold, rows ingested before the card
    # had its 272k tier) are priced at the card's base prices.
    card = Price(
        card_id=3,
        provider="openai",
        model="gpt-5.4",
        valid_from=date(2020, 1, 1),
        input=Decimal("2.50"),
        output=Decimal("15"),
        long_context_threshold=272_000,
        long_context_input=Decimal("5"),
    )
    usage = TokenUsage(
        input_tokens=300_000,
        cached_input_tokens=0,
        output_tokens=0,
        long_context_input_tokens=300_000,
    )
    assert LONG_CONTEXT_THRESHOLD_TOKENS == 200_000
    assert token_cost(card, usage) == Decimal("0.75")  # 300,000 x 2.50 / 1M: base price


def test_a_per_request_price_is_added_per_request() -> None:
    card = Price(
        card_id=4,
        provider="perplexity",
        model="sonar",
        valid_from=date(2020, 1, 1),
        input=Decimal("1"),
        output=Decimal("1"),
        per_request=Decimal("0.005"),
    )
    usage = TokenUsage(input_tokens=1_000, cached_input_tokens=0, output_tokens=1_000, requests=3)
    # 2,000 x $1 / 1M = $0.002, + 3 x $0.005 = $0.015 -> $0.017
    assert token_cost(card, usage) == Decimal("0.017")


@pytest.mark.parametrize(
    ("rule", "name", "expected"),
    [
        ({"equals": "gpt-4o"}, "GPT-4o", True),
        ({"equals": "gpt-4o"}, "gpt-4o-mini", False),
        ({"starts_with": "claude-sonnet-4-5"}, "claude-sonnet-4-5-20250929", True),
        ({"ends_with": "-v1:0"}, "anthropic.claude-x-v1:0", True),
        ({"contains": "us.anthropic.claude"}, "us.anthropic.claude-haiku", True),
        ({"regex": "^gemini-2\\.5-pro(?!-tts)"}, "gemini-2.5-pro-tts", False),
        ({"or": [{"equals": "a"}, {"equals": "b"}]}, "b", True),
        ({"and": [{"starts_with": "a"}, {"ends_with": "z"}]}, "abc", False),
    ],
)
def test_rule_matches(rule: dict[str, object], name: str, expected: bool) -> None:
    assert rule_matches(rule, name) is expected


def test_an_unknown_rule_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown match rule 'glob'"):
        rule_matches({"glob": "*"}, "x")


def _card(card_id: int, model: str, input_price: str, rule: dict[str, object] | None) -> Price:
    return Price(
        card_id=card_id,
        provider="aws-bedrock",
        model=model,
        valid_from=date(2020, 1, 1),
        input=Decimal(input_price),
        output=Decimal("5"),
        match_rule=rule,
    )


def test_dataset_rules_tell_bedrock_global_from_regional_prices() -> None:
    # AWS lists Claude Haiku 4.5 at $1.00 / MTok input through the global cross-region profile
    # and 10 % more ($1.10) through a regional one (us., eu., ...).
    book = PriceBook(
        [
            _card(1, "anthropic.claude-haiku-4-5", "1.00", None),  # the catalog's card
            _card(
                2,
                "global.anthropic.claude-haiku-4-5-20251001-v1:0",
                "1.00",
                {"contains": "global.anthropic.claude-haiku-4-5-20251001"},
            ),
            _card(
                3,
                "regional.anthropic.claude-haiku-4-5-20251001-v1:0",
                "1.10",
                {
                    "or": [
                        {"starts_with": "anthropic.claude-haiku-4-5-20251001"},
                        {"contains": "us.anthropic.claude-haiku-4-5-20251001"},
                    ]
                },
            ),
        ]
    )

    def found(model: str) -> Price | None:
        return book.find(provider="bedrock", model=model, day=DAY)

    assert found("global.anthropic.claude-haiku-4-5-20251001-v1:0").card_id == 2  # type: ignore[union-attr]
    assert found("us.anthropic.claude-haiku-4-5-20251001-v1:0").card_id == 3  # type: ignore[union-attr]
    # A name no rule knows still takes the catalog card by prefix.
    assert found("anthropic.claude-haiku-4-5-v2").card_id == 1  # type: ignore[union-attr]
    assert book.prices_model(provider="aws.bedrock", model="anthropic.claude-haiku-4-5")
    assert not book.prices_model(provider="vllm", model="anthropic.claude-haiku-4-5")
