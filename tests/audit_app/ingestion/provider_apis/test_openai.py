"""OpenAI's Costs and Completions usage APIs read through the real HTTP client from the local
server: every page, exact amounts, the documented header and query, restated days, unknown
models kept, and cached and cache-write input taken out of uncached input."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from audit_app.ingestion.provider_apis import Report, read_report
from audit_app.ingestion.provider_apis.openai import model_of_line_item
from tests.support.provider_api_server import Cost, ProviderApiServer, Usage

D1, D2, D3, D4, D5 = (date(2025, 3, day) for day in range(1, 6))
END = date(2025, 3, 6)
GPT4O = "gpt-4o-2024-08-06"
MINI = "gpt-4o-mini-2024-07-18"
COSTS = [
    Cost(day=D1, amount=Decimal("1.25"), line_item=f"{GPT4O}, input", project_id="proj_a"),
    Cost(day=D1, amount=Decimal("3.50"), line_item=f"{GPT4O}, output", project_id="proj_a"),
    Cost(day=D1, amount=Decimal("0.0375"), line_item=f"{MINI}, input"),
    Cost(day=D2, amount=Decimal("2.10"), line_item=f"{GPT4O}, input", project_id="proj_b"),
    Cost(day=D3, amount=Decimal("0.05"), line_item="Web search tool calls", project_id="proj_a"),
    Cost(
        day=D5,
        amount=Decimal("0.000123456789012345678"),
        line_item=f"{GPT4O}, input",
        project_id="proj_a",
    ),
]
USAGE = [
    Usage(
        day=D1,
        model=GPT4O,
        project_id="proj_a",
        api_key_id="key_1",
        requests=10,
        input_tokens=1000,
        cached_input_tokens=200,
        cache_write_5m_tokens=50,
        output_tokens=300,
    ),
    Usage(
        day=D1,
        model=GPT4O,
        project_id="proj_a",
        api_key_id="key_1",
        batch=True,
        requests=4,
        input_tokens=400,
        output_tokens=100,
    ),
    Usage(day=D2, model=MINI, api_key_id="key_2", requests=7, input_tokens=700, output_tokens=70),
    Usage(
        day=D5,
        model="gpt-9-preview",
        project_id="proj_b",
        api_key_id="key_1",
        requests=1,
        input_tokens=11,
        output_tokens=5,
    ),
]


def _read(server: ProviderApiServer, **kwargs: object) -> Report:
    options = {
        "kind": "openai",
        "base_url": server.base_url("openai"),
        "api_key": server.openai_key,
        "start": D1,
        "end": END,
        "source_name": "openai-prod",
        "sleep": lambda seconds: None,
        **kwargs,
    }
    return read_report(**options)  # type: ignore[arg-type]


def test_every_page_is_read_and_the_totals_are_exact(
    provider_api_server: ProviderApiServer,
) -> None:
    provider_api_server.set_data("openai", costs=COSTS, usage=USAGE)
    report = _read(provider_api_server)
    # 5 days, 2 buckets a page: 3 pages for each endpoint.
    assert report.pages_read == 6
    # 1.25 + 3.50 + 0.0375 + 2.10 + 0.05 + 0.000123456789012345678, by hand:
    assert sum(line.amount for line in report.costs) == Decimal("6.937623456789012345678")
    assert provider_api_server.cost_total("openai", D1, END) == Decimal("6.937623456789012345678")
    assert {line.currency for line in report.costs} == {"USD"}
    assert len(report.costs) == 6
    # The amount with more digits than a float holds arrives exactly.
    assert [line.amount for line in report.costs if line.day == D5] == [
        Decimal("0.000123456789012345678")
    ]
    usage = report.usage
    assert len(usage) == 4  # batch and non-batch of one model stay apart
    assert sum(u.requests for u in usage) == 10 + 4 + 7 + 1
    assert sum(u.input_tokens for u in usage) == 1000 + 400 + 700 + 11
    assert sum(u.cached_input_tokens for u in usage) == 200
    assert sum(u.cache_write_tokens for u in usage) == 50
    assert sum(u.output_tokens for u in usage) == 300 + 100 + 70 + 5


def test_each_line_keeps_its_day_model_project_and_key(
    provider_api_server: ProviderApiServer,
) -> None:
    provider_api_server.set_data("openai", costs=COSTS, usage=USAGE)
    report = _read(provider_api_server)
    first = next(c for c in report.costs if c.line_item == f"{GPT4O}, output")
    assert (first.day, first.model, first.project_id, first.amount) == (
        D1,
        GPT4O,
        "proj_a",
        Decimal("3.50"),
    )
    assert first.raw["amount"]["currency"] == "usd"
    no_project = next(c for c in report.costs if c.line_item == f"{MINI}, input")
    assert (no_project.project_id, no_project.model) == ("", MINI)
    search = next(c for c in report.costs if c.day == D3)
    assert (search.line_item, search.model) == ("Web search tool calls", "")
    batch = next(u for u in report.usage if u.batch)
    assert (batch.day, batch.model, batch.api_key_id, batch.requests) == (D1, GPT4O, "key_1", 4)
    plain = next(u for u in report.usage if u.day == D1 and u.batch is False)
    # The server answers input_tokens 1250 (uncached 1000 + cached 200 + written 50).
    assert plain.raw["input_tokens"] == 1250
    assert (plain.input_tokens, plain.cached_input_tokens, plain.cache_write_tokens) == (
        1000,
        200,
        50,
    )


def test_an_unknown_model_is_kept(provider_api_server: ProviderApiServer) -> None:
    provider_api_server.set_data("openai", costs=COSTS, usage=USAGE)
    report = _read(provider_api_server)
    unknown = [u for u in report.usage if u.model == "gpt-9-preview"]
    assert [(u.day, u.project_id, u.requests, u.input_tokens) for u in unknown] == [
        (D5, "proj_b", 1, 11)
    ]


def test_the_header_and_query_are_as_documented(provider_api_server: ProviderApiServer) -> None:
    provider_api_server.set_data("openai", costs=COSTS, usage=USAGE)
    _read(provider_api_server)
    costs = provider_api_server.asked("openai", "costs")
    usage = provider_api_server.asked("openai", "usage")
    assert len(costs) == len(usage) == 3
    for recorded in costs + usage:
        assert recorded.headers["Authorization"] == f"Bearer {provider_api_server.openai_key}"
        assert "x-api-key" not in {name.lower() for name in recorded.headers}
    # 2025-03-01T00:00:00Z is 20148 days after the epoch: 20148 × 86400; the end 5 days on.
    window = {
        "start_time": ["1740787200"],
        "end_time": ["1741219200"],
        "bucket_width": ["1d"],
        "limit": ["31"],
    }
    assert costs[0].query == {**window, "group_by[]": ["line_item", "project_id"]}
    assert usage[0].query == {
        **window,
        "group_by[]": ["model", "project_id", "api_key_id", "batch"],
    }
    cursors = [r.query.pop("page") for r in costs[1:]]
    assert len({c[0] for c in cursors}) == 2
    assert all(r.query == costs[0].query for r in costs[1:])


def test_a_restated_day_is_seen_on_the_next_read(provider_api_server: ProviderApiServer) -> None:
    provider_api_server.set_data("openai", costs=COSTS, usage=USAGE)
    before = _read(provider_api_server)
    provider_api_server.restate(
        "openai",
        D2,
        costs=[
            Cost(day=D2, amount=Decimal("2.60"), line_item=f"{GPT4O}, input", project_id="proj_b")
        ],
        usage=[Usage(day=D2, model=MINI, api_key_id="key_2", requests=9, input_tokens=900)],
    )
    after = _read(provider_api_server)
    day_two = [(c.line_item, c.amount) for c in after.costs if c.day == D2]
    assert day_two == [(f"{GPT4O}, input", Decimal("2.60"))]
    assert sum(c.amount for c in after.costs) - sum(c.amount for c in before.costs) == Decimal(
        "0.50"
    )
    assert [(u.requests, u.input_tokens) for u in after.usage if u.day == D2] == [(9, 900)]


def test_the_model_is_the_line_items_text_before_its_comma() -> None:
    assert model_of_line_item("gpt-4o-2024-08-06, input") == "gpt-4o-2024-08-06"
    assert model_of_line_item("ft:gpt-4o-mini:acme, cached input") == "ft:gpt-4o-mini:acme"
    assert model_of_line_item("Image models") == ""
    assert model_of_line_item("") == ""
