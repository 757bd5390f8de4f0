"""Anthropic's cost report and Messages usage report read through the real HTTP client from the
local server: every page, amounts in cents turned into exact dollars, the documented headers and
query, batch from the service tier, cache writes of both lifetimes, restated days, unknown
models kept."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from audit_app.ingestion.provider_apis import ProviderMalformed, Report, read_report
from audit_app.ingestion.provider_apis.anthropic import line_item_of
from tests.support.provider_api_server import Cost, ProviderApiServer, Usage

D1, D2, D3, D4 = (date(2025, 8, day) for day in range(1, 5))
END = date(2025, 8, 5)
SONNET = "claude-sonnet-4-20250514"
UNKNOWN = "claude-opus-5-20991231"
COSTS = [
    Cost(
        day=D1,
        amount=Decimal("1.2345"),
        line_item="Claude Sonnet 4 Usage - Input Tokens",
        model=SONNET,
        token_type="uncached_input_tokens",
    ),
    Cost(
        day=D1,
        amount=Decimal("4.50"),
        line_item="Claude Sonnet 4 Usage - Output Tokens",
        project_id="wrkspc_a",
        model=SONNET,
        token_type="output_tokens",
    ),
    Cost(
        day=D3,
        amount=Decimal("0.10"),
        line_item="Web Search Usage",
        project_id="wrkspc_a",
        cost_type="web_search",
    ),
    Cost(
        day=D4,
        amount=Decimal("2.00"),
        line_item="Claude Opus 5 Usage - Input Tokens",
        project_id="wrkspc_b",
        model=UNKNOWN,
        token_type="uncached_input_tokens",
        service_tier="batch",
    ),
]
USAGE = [
    Usage(
        day=D1,
        model=SONNET,
        project_id="wrkspc_a",
        api_key_id="apikey_1",
        input_tokens=1500,
        cache_write_5m_tokens=500,
        cache_write_1h_tokens=1000,
        cached_input_tokens=200,
        output_tokens=500,
    ),
    Usage(
        day=D2, model=SONNET, api_key_id="apikey_2", batch=True, input_tokens=300, output_tokens=40
    ),
    Usage(
        day=D4,
        model=UNKNOWN,
        project_id="wrkspc_b",
        api_key_id="apikey_1",
        input_tokens=10,
        output_tokens=3,
    ),
]


def _read(server: ProviderApiServer, **kwargs: object) -> Report:
    options = {
        "kind": "anthropic",
        "base_url": server.base_url("anthropic"),
        "api_key": server.anthropic_key,
        "start": D1,
        "end": END,
        "source_name": "anthropic-prod",
        "sleep": lambda seconds: None,
        **kwargs,
    }
    return read_report(**options)  # type: ignore[arg-type]


def test_every_page_is_read_and_cents_become_exact_dollars(
    provider_api_server: ProviderApiServer,
) -> None:
    provider_api_server.set_data("anthropic", costs=COSTS, usage=USAGE)
    report = _read(provider_api_server)
    assert report.pages_read == 4  # 4 days, 2 buckets a page, 2 endpoints
    # 1.2345 + 4.50 + 0.10 + 2.00, by hand:
    assert sum(line.amount for line in report.costs) == Decimal("7.8345")
    input_cost = next(
        c for c in report.costs if c.token_type == "uncached_input_tokens" and c.day == D1
    )
    # The API says "123.45" (cents); that is $1.2345.
    assert input_cost.raw["amount"] == "123.45"
    assert (input_cost.amount, input_cost.currency) == (Decimal("1.2345"), "USD")
    usage = report.usage
    assert sum(u.input_tokens for u in usage) == 1500 + 300 + 10
    assert sum(u.cache_write_tokens for u in usage) == 500 + 1000
    assert sum(u.cached_input_tokens for u in usage) == 200
    assert sum(u.output_tokens for u in usage) == 500 + 40 + 3
    # The usage report has no request count.
    assert {u.requests for u in usage} == {0}


def test_each_line_keeps_its_workspace_tier_and_type(
    provider_api_server: ProviderApiServer,
) -> None:
    provider_api_server.set_data("anthropic", costs=COSTS, usage=USAGE)
    report = _read(provider_api_server)
    default_workspace = next(c for c in report.costs if c.day == D1 and c.project_id == "")
    assert default_workspace.line_item == "Claude Sonnet 4 Usage - Input Tokens"
    assert (default_workspace.model, default_workspace.service_tier) == (SONNET, "standard")
    search = next(c for c in report.costs if c.day == D3)
    assert (search.model, search.token_type, search.project_id) == ("", "web_search", "wrkspc_a")
    batch = next(u for u in report.usage if u.day == D2)
    assert (batch.batch, batch.service_tier, batch.project_id) == (True, "batch", "")
    standard = next(u for u in report.usage if u.day == D1)
    assert (standard.batch, standard.api_key_id) == (False, "apikey_1")
    assert standard.raw["cache_creation"] == {
        "ephemeral_1h_input_tokens": 1000,
        "ephemeral_5m_input_tokens": 500,
    }


def test_an_unknown_model_is_kept(provider_api_server: ProviderApiServer) -> None:
    provider_api_server.set_data("anthropic", costs=COSTS, usage=USAGE)
    report = _read(provider_api_server)
    assert [(c.day, c.amount, c.service_tier) for c in report.costs if c.model == UNKNOWN] == [
        (D4, Decimal("2.00"), "batch")
    ]
    assert [
        (u.day, u.input_tokens, u.output_tokens) for u in report.usage if u.model == UNKNOWN
    ] == [(D4, 10, 3)]


def test_the_headers_and_query_are_as_documented(provider_api_server: ProviderApiServer) -> None:
    provider_api_server.set_data("anthropic", costs=COSTS, usage=USAGE)
    _read(provider_api_server)
    costs = provider_api_server.asked("anthropic", "costs")
    usage = provider_api_server.asked("anthropic", "usage")
    assert len(costs) == len(usage) == 2
    for recorded in costs + usage:
        assert recorded.headers["x-api-key"] == provider_api_server.anthropic_key
        assert recorded.headers["anthropic-version"] == "2023-06-01"
        assert "authorization" not in {name.lower() for name in recorded.headers}
    window = {
        "starting_at": ["2025-08-01T00:00:00Z"],
        "ending_at": ["2025-08-05T00:00:00Z"],
        "bucket_width": ["1d"],
        "limit": ["31"],
    }
    assert costs[0].query == {**window, "group_by[]": ["workspace_id", "description"]}
    assert usage[0].query == {
        **window,
        "group_by[]": ["model", "workspace_id", "api_key_id", "service_tier"],
    }
    assert costs[1].query["page"] != [] and "page" not in costs[0].query


def test_a_restated_day_is_seen_on_the_next_read(provider_api_server: ProviderApiServer) -> None:
    provider_api_server.set_data("anthropic", costs=COSTS, usage=USAGE)
    _read(provider_api_server)
    provider_api_server.restate(
        "anthropic",
        D3,
        costs=[
            Cost(
                day=D3, amount=Decimal("0.35"), line_item="Web Search Usage", cost_type="web_search"
            )
        ],
    )
    after = _read(provider_api_server)
    assert [(c.amount, c.project_id) for c in after.costs if c.day == D3] == [(Decimal("0.35"), "")]
    assert sum(c.amount for c in after.costs) == Decimal("8.0845")  # 7.8345 − 0.10 + 0.35


def test_a_currency_other_than_usd_is_refused(provider_api_server: ProviderApiServer) -> None:
    provider_api_server.set_data("anthropic", costs=COSTS, usage=USAGE)

    def in_euros(page: dict) -> None:
        page["data"][0]["results"][0]["currency"] = "EUR"

    provider_api_server.break_page("anthropic", "costs", 1, in_euros)
    with pytest.raises(ProviderMalformed) as caught:
        _read(provider_api_server)
    assert (caught.value.field, caught.value.page) == ("data[0].results[0].currency", 1)
    assert str(caught.value) == (
        'Anthropic answered page 1 of /organizations/cost_report for source "anthropic-prod" '
        'not in the documented shape: data[0].results[0].currency is "EUR"; only USD (amounts '
        "in cents) is documented."
    )


def test_a_line_without_description_names_its_cost_and_token_types() -> None:
    assert line_item_of("Claude Haiku Usage", "tokens", "output_tokens") == "Claude Haiku Usage"
    assert line_item_of("", "tokens", "output_tokens") == "tokens, output_tokens"
    assert line_item_of("", "web_search", "") == "web_search"
    assert line_item_of("", "", "") == ""
