"""The option builders, as plain functions: no database, every figure worked out by hand."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from decimal import Decimal
from typing import Any

import pytest

from audit_app.costs.pricing import Price
from audit_app.recommendations.options import (
    WINDOW_DAYS,
    ApiListing,
    HardwareOffer,
    Instance,
    Option,
    TargetKind,
    Throughput,
    Usage,
    batch_option,
    dedicated_price,
    model_class,
    monthly,
    provider_options,
)

LLAMA_70B = "meta-llama/Llama-3.3-70B-Instruct"
MINI_CARD = Price(
    card_id=None,
    provider="openai",
    model="gpt-4o-mini",
    valid_from=date(2026, 1, 1),
    input=Decimal("0.15"),
    output=Decimal("0.60"),
    batch_input=Decimal("0.075"),
    batch_output=Decimal("0.30"),
)


USAGE = Usage(
    provider="openai",
    model="gpt-4o-mini",
    spend=Decimal(300),
    input_tokens=10_000_000,
    output_tokens=2_000_000,
    batch_share=0.0,
)


def _usage(**changes: Any) -> Usage:
    return replace(USAGE, **changes)


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("Llama-3.3-70B-Instruct", "70b"),
        (LLAMA_70B, "70b"),
        ("llama-3.1-8b-instruct", "8b"),
        ("mistral-13b", "8b"),  # up to 13B is the small class
        ("Qwen2.5-72B-Instruct", "70b"),  # "2.5" is a version, not a size
        ("llama-3.1-405b", None),  # above 90B: no class
        ("gpt-4o-mini", None),  # closed models name no size
    ],
)
def test_model_class(model: str, expected: str | None) -> None:
    assert model_class(model) == expected


def test_monthly_scales_the_window_to_730_hours() -> None:
    # $300 over 720 h (30 days): 300 x 730 / 720 = 304.1666...
    assert monthly(Decimal(300), 720) == Decimal("304.1666666666666666666666667")
    assert monthly(Decimal(24), 24) == Decimal(730)


def test_batch_option_halves_the_non_batch_spend() -> None:
    # Discount 1 - 0.075 / 0.15 = 50 % on the $300 not on batch: 300 - 150 = $150 over 720 h;
    # a month of 730 h: 150 x 730 / 720 = 152.08333...
    option = batch_option(_usage(), hours=720, price=MINI_CARD)
    assert option == Option(
        kind=TargetKind.BATCH_API,
        target="openai batch API, gpt-4o-mini",
        projected_monthly=Decimal("152.0833333333333333333333333"),
        assumptions=(
            "Batch price 0.075/0.30 $ per 1M input/output tokens vs 0.15/0.60 from the price "
            "card (gpt-4o-mini, valid from 2026-01-01).",
            "0% of its requests already use the batch API.",
            "Batch results arrive within 24 hours; the workload is asynchronous.",
        ),
        confidence="High: a published price; only the turnaround changes.",
    )


def test_batch_option_discounts_only_what_is_not_on_batch_yet() -> None:
    # $400 with 25 % already on batch: 50 % off the other 400 x 0.75 = $300 -> 400 - 150 = $250;
    # over 730 h that is the month.
    option = batch_option(_usage(spend=Decimal(400), batch_share=0.25), hours=730, price=MINI_CARD)
    assert option is not None
    assert option.projected_monthly == Decimal(250)
    assert option.assumptions[1] == "25% of its requests already use the batch API."


def test_batch_option_output_price_falls_back_to_the_ordinary_one() -> None:
    card = Price(
        card_id=None,
        provider="openai",
        model="gpt-4o-mini",
        valid_from=date(2026, 1, 1),
        input=Decimal("0.15"),
        output=Decimal("0.60"),
        batch_input=Decimal("0.075"),
    )
    option = batch_option(_usage(), hours=720, price=card)
    assert option is not None
    assert option.assumptions[0].startswith("Batch price 0.075/0.60 $ per 1M")


@pytest.mark.parametrize(
    ("usage", "price"),
    [
        (_usage(batch_share=0.99), MINI_CARD),  # already on batch
        (_usage(spend=Decimal(0)), MINI_CARD),  # nothing to discount
        (_usage(), None),  # no price card
        (  # a card without a batch price: no guessed discount
            _usage(),
            Price(
                card_id=None,
                provider="openai",
                model="gpt-4o-mini",
                valid_from=date(2026, 1, 1),
                input=Decimal("0.15"),
                output=Decimal("0.60"),
            ),
        ),
    ],
)
def test_no_batch_option(usage: Usage, price: Price | None) -> None:
    assert batch_option(usage, hours=720, price=price) is None


def _listing(provider: str, name: str, output: Decimal | None = Decimal("0.79")) -> ApiListing:
    return ApiListing(
        provider=provider,
        name=name,
        usd_per_million_input_tokens=Decimal("0.59"),
        usd_per_million_output_tokens=output,
        source="price page",
        source_date="2026-10",
    )


LISTINGS = (
    _listing("Groq", "llama-3.3-70b-versatile"),
    _listing("together_ai", "meta-llama/Llama-3.3-70B-Instruct-Turbo"),  # the same provider
    _listing("Groq", "llama-3.1-8b-instant"),  # another model
)


def test_provider_options_price_the_same_tokens_elsewhere() -> None:
    # 10M input x $0.59 + 2M output x $0.79 per 1M = 5.90 + 1.58 = $7.48 over 730 h: the month.
    usage = _usage(provider="together", model=LLAMA_70B)
    assert provider_options(usage, hours=730, listings=LISTINGS) == [
        Option(
            kind=TargetKind.CHEAPER_PROVIDER,
            target="Groq llama-3.3-70b-versatile",
            projected_monthly=Decimal("7.48"),
            assumptions=(
                "Groq lists llama-3.3-70b-versatile at $0.59 input / $0.79 output per 1M tokens "
                "(source: price page, 2026-10).",
                f"Same token volume: 10,000,000 input and 2,000,000 output tokens in "
                f"{WINDOW_DAYS} days.",
            ),
            confidence="Medium: a published price for the same open model; check quality and "
            "quantisation with an evaluation on that provider (a gate verifies only "
            "dedicated hardware).",
        )
    ]


def test_provider_option_without_an_output_price_charges_input_only() -> None:
    # 10M input x $0.59 = $5.90 over 730 h.
    usage = _usage(provider="together", model=LLAMA_70B)
    listing = _listing("Groq", "llama-3.3-70b-versatile", output=None)
    [option] = provider_options(usage, hours=730, listings=[listing])
    assert option.projected_monthly == Decimal("5.90")


def test_closed_models_have_no_other_provider() -> None:
    listings = [_listing("azure", "gpt-4o-mini")]
    assert provider_options(_usage(), hours=730, listings=listings) == []


def _offer(
    name: str, *, size: str, usd_per_hour: str, count: int | None, tokens_per_second: float
) -> HardwareOffer:
    return HardwareOffer(
        instance=Instance(
            name=name,
            accelerator="H100",
            accelerator_count=count,
            usd_per_hour=Decimal(usd_per_hour),
            source="cloud price list",
            source_date="2026-09",
        ),
        throughput=Throughput(
            model_class=size,
            tokens_per_second=tokens_per_second,
            source="vendor benchmark",
            source_date="2026-08",
            notes="FP8, batch 64",
        ),
    )


OFFERS = (
    _offer("gpu.2x", size="70b", usd_per_hour="8.00", count=2, tokens_per_second=1000.0),
    _offer("gpu.1x", size="8b", usd_per_hour="2.00", count=None, tokens_per_second=2500.0),
)
# 5 hours: 10M output tokens in the second, none in the others.
DEMAND = [0, 10_000_000, 0, 0, 0]


GPU_2X = OFFERS[0].instance
GPU_1X = OFFERS[1].instance


def test_dedicated_price_scales_replicas_to_zero_with_cold_starts() -> None:
    # One replica makes 1,000 x 3,600 = 3.6M tokens an hour: hour 2 needs ceil(10 / 3.6) = 3
    # replicas, the others none. 3 replicas added, each with a 600 s (1/6 h) cold start: 0.5 h.
    # 3 + 0.5 = 3.5 replica-hours x 2 accelerators x $4 ($8 / 2) = $28 over 5 hours;
    # a month: 28 x 730 / 5 = $4,088.
    price = dedicated_price(
        instance=GPU_2X, tokens_per_second=1000.0, demand=DEMAND, always_on=False
    )
    assert price.monthly == Decimal(4088)
    assert (price.replicas, price.peak, price.capacity) == (3, 10_000_000, 10_800_000)


def test_dedicated_price_for_a_small_model_on_one_accelerator() -> None:
    # 2,500 x 3,600 = 9M tokens an hour: hour 2 needs ceil(10 / 9) = 2 replicas, added with
    # 2 x 1/6 h of cold start: 2 + 1/3 replica-hours x 1 accelerator x $2 = $14/3 over 5 hours;
    # a month: 14 / 3 x 730 / 5 = 2,044 / 3 = $681.33.
    price = dedicated_price(
        instance=GPU_1X, tokens_per_second=2500.0, demand=DEMAND, always_on=False
    )
    assert price.monthly.quantize(Decimal("0.01")) == Decimal("681.33")


def test_dedicated_price_always_on_sized_for_the_busiest_hour_with_headroom() -> None:
    # Real-time work: the busiest hour's 10M tokens x 1.2 = 12M need ceil(12 / 3.6) = 4
    # replicas, on every hour: 4 x 5 replica-hours x $8 = $160 over 5 hours; a month:
    # 160 x 730 / 5 = $23,360. Those 4 replicas serve 14.4M tokens an hour.
    price = dedicated_price(
        instance=GPU_2X,
        tokens_per_second=1000.0,
        demand=DEMAND,
        always_on=True,
        headroom=Decimal("0.2"),
    )
    assert price.monthly == Decimal(23360)
    assert (price.replicas, price.peak, price.capacity) == (4, 10_000_000, 14_400_000)


def test_kinds_and_window_are_the_apps() -> None:
    """The pure module spells the model's target kinds and the analysis window by itself."""
    from audit_app.models import Recommendation
    from audit_app.recommendations.pool_options import PoolKind
    from audit_app.workloads.services import WINDOW_DAYS as ANALYSIS_WINDOW_DAYS

    assert sorted([*TargetKind, *PoolKind]) == sorted(Recommendation.TargetKind.values)
    assert WINDOW_DAYS == ANALYSIS_WINDOW_DAYS
