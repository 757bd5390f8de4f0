"""Price-card matching and token cost, hand-computed."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from audit_app.costs.pricing import (
    Price,
    PriceBook,
    TokenUsage,
    card_model_name,
    normalize_model,
    normalize_provider,
    token_cost,
)


def _price(provider: str, model: str, valid_from: date, inp: str, out: str, **kw: str) -> Price:
    extra = {k: Decimal(v) for k, v in kw.items()}
    return Price(
        card_id=None,
        provider=provider,
        model=model,
        valid_from=valid_from,
        input=Decimal(inp),
        output=Decimal(out),
        **extra,
    )


BOOK = PriceBook(
    [
        _price("openai", "gpt-4o", date(2024, 1, 1), "2.5", "10"),
        _price(
            "openai",
            "gpt-4o-mini",
            date(2024, 1, 1),
            "0.15",
            "0.6",
            batch_input="0.075",
            batch_output="0.3",
        ),
        _price("openai", "gpt-4o-mini", date(2026, 6, 1), "0.12", "0.5"),
        _price("aws-bedrock", "anthropic.claude-haiku-4-5", date(2025, 1, 1), "1", "5"),
        _price(
            "together", "meta-llama/Llama-3.3-70B-Instruct-Turbo", date(2025, 1, 1), "0.88", "0.88"
        ),
        _price("anthropic", "claude-sonnet-4-5", date(2025, 1, 1), "3", "15", cached_input="0.3"),
    ]
)


@pytest.mark.parametrize(
    ("provider", "model", "day", "expected_model", "expected_input"),
    [
        ("openai", "gpt-4o", date(2026, 1, 1), "gpt-4o", "2.5"),
        ("openai", "gpt-4o-2024-08-06", date(2026, 1, 1), "gpt-4o", "2.5"),
        ("openai", "gpt-4o-mini-2024-07-18", date(2026, 1, 1), "gpt-4o-mini", "0.15"),
        ("openai", "gpt-4o-mini", date(2026, 6, 1), "gpt-4o-mini", "0.12"),
        ("openai", "openai/GPT-4o-mini", date(2026, 5, 31), "gpt-4o-mini", "0.15"),
        (
            "bedrock",
            "us.anthropic.claude-haiku-4-5-20251001-v1:0",
            date(2026, 1, 1),
            "anthropic.claude-haiku-4-5",
            "1",
        ),
        (
            "aws.bedrock",
            "bedrock/anthropic.claude-haiku-4-5",
            date(2026, 1, 1),
            "anthropic.claude-haiku-4-5",
            "1",
        ),
        (
            "together_ai",
            "meta-llama/Llama-3.3-70B-Instruct-Turbo",
            date(2026, 1, 1),
            "meta-llama/Llama-3.3-70B-Instruct-Turbo",
            "0.88",
        ),
    ],
)
def test_price_lookup(
    provider: str, model: str, day: date, expected_model: str, expected_input: str
) -> None:
    price = BOOK.find(provider=provider, model=model, day=day)
    assert price is not None
    assert price.model == expected_model
    assert price.input == Decimal(expected_input)


@pytest.mark.parametrize(
    ("provider", "model", "day"),
    [
        ("openai", "gpt-4", date(2026, 1, 1)),  # "gpt-4o" is not a prefix of "gpt-4"
        ("openai", "gpt-4ox", date(2026, 1, 1)),  # no boundary after the card name
        ("openai", "gpt-4o", date(2023, 12, 31)),  # before the card is valid
        ("mystery", "gpt-4o", date(2026, 1, 1)),
        ("openai", "my-finetune", date(2026, 1, 1)),
    ],
)
def test_unknown_models_are_not_priced(provider: str, model: str, day: date) -> None:
    assert BOOK.find(provider=provider, model=model, day=day) is None


def test_token_cost_plain() -> None:
    price = BOOK.find(provider="openai", model="gpt-4o", day=date(2026, 1, 1))
    assert price is not None
    # 1,000 input at $2.50/M + 500 output at $10/M = 0.0025 + 0.005
    usage = TokenUsage(input_tokens=1000, cached_input_tokens=0, output_tokens=500)
    assert token_cost(price, usage) == Decimal("0.0075")


def test_token_cost_cached_and_batch() -> None:
    sonnet = BOOK.find(provider="anthropic", model="claude-sonnet-4-5", day=date(2026, 1, 1))
    assert sonnet is not None
    # 10,000 input of which 8,000 cached: 2,000*3 + 8,000*0.3 + 1,000*15 = 6,000+2,400+15,000
    usage = TokenUsage(input_tokens=10_000, cached_input_tokens=8_000, output_tokens=1_000)
    assert token_cost(sonnet, usage) == Decimal("0.0234")

    mini = BOOK.find(provider="openai", model="gpt-4o-mini", day=date(2026, 1, 1))
    assert mini is not None
    batch = TokenUsage(
        input_tokens=2_000_000, cached_input_tokens=0, output_tokens=1_000_000, batch_api=True
    )
    assert token_cost(mini, batch) == Decimal("0.45")  # 2*0.075 + 1*0.3
    # A card without batch prices charges batch requests the ordinary price.
    gpt4o = BOOK.find(provider="openai", model="gpt-4o", day=date(2026, 1, 1))
    assert gpt4o is not None
    assert token_cost(gpt4o, batch) == Decimal("15")  # 2*2.5 + 1*10


def test_normalisation() -> None:
    assert normalize_provider(" Vertex_AI ") == "gcp-vertex"
    assert normalize_provider("azure.ai.openai") == "azure-openai"
    assert normalize_model("bedrock/global.anthropic.claude-sonnet-4-5") == (
        "anthropic.claude-sonnet-4-5"
    )
    assert normalize_model("meta-llama/Llama-3.3-70B") == "meta-llama/llama-3.3-70b"
    assert card_model_name("anthropic.claude-sonnet-4-5 (global)") == "anthropic.claude-sonnet-4-5"
