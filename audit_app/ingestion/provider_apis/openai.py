"""OpenAI's organization Costs and Completions usage APIs, read for a window of days.

`GET /v1/organization/costs` (daily buckets grouped by `line_item` and `project_id`; each
result's `amount.value` a number in the currency's unit, `amount.currency` lower-case "usd") and
`GET /v1/organization/usage/completions` (daily buckets grouped by `model`, `project_id`,
`api_key_id` and `batch`), with `Authorization: Bearer <admin key>`. Shapes as documented in
https://platform.openai.com/docs/api-reference/usage/costs,
https://platform.openai.com/docs/api-reference/usage/completions and the official SDK's types
(github.com/openai/openai-python, src/openai/types/admin/organization/usage_costs_response.py
and usage_completions_response.py; array parameters as `group_by[]`, its "brackets" format).
`project_name` is read when a result carries it; the reference does not list it.

Fields and units in full: `docs/formats.md`, section "Provider cost and usage APIs".
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

from audit_app.ingestion.provider_apis.base import CostLine, UsageLine
from audit_app.ingestion.provider_apis.http import Client, Days, Page, plain, read_pages

COSTS_PATH = "/organization/costs"
USAGE_PATH = "/organization/usage/completions"
COSTS_GROUP_BY = ("line_item", "project_id")
USAGE_GROUP_BY = ("model", "project_id", "api_key_id", "batch")
BUCKETS_PER_PAGE = 31  # the most a daily completions page may hold (costs allow 180)
COSTS_RESULT = "organization.costs.result"
USAGE_RESULT = "organization.usage.completions.result"


def headers(api_key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}", "Accept": "application/json"}


def _midnight(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())


def params(start: date, end: date, group_by: tuple[str, ...]) -> list[tuple[str, str]]:
    """The query of one endpoint, as the reference names it."""
    return [
        ("start_time", str(_midnight(start))),
        ("end_time", str(_midnight(end))),
        ("bucket_width", "1d"),
        *(("group_by[]", name) for name in group_by),
        ("limit", str(BUCKETS_PER_PAGE)),
    ]


def model_of_line_item(line_item: str) -> str:
    """The model a line item names before its first comma ("gpt-4o-2024-08-06, input"), or
    "" when it has no comma ("Web search tool calls")."""
    head, comma, _rest = line_item.partition(",")
    return head.strip() if comma else ""


def _buckets(
    client: Client, path: str, query: list[tuple[str, str]], days: Days
) -> tuple[list[tuple[Page, date, str, Mapping[str, Any]]], int]:
    """Every result of every bucket, with its page, day and place; and the pages read."""
    found: list[tuple[Page, date, str, Mapping[str, Any]]] = []
    pages = 0
    for page, body in read_pages(client, path, query):
        pages += 1
        page.constant(body, "object", "object", "page")
        for index, bucket in enumerate(page.objects(body, "data", "data")):
            where = f"data[{index}]"
            page.constant(bucket, "object", f"{where}.object", "bucket")
            day = page.unix_day(bucket, "start_time", f"{where}.start_time")
            ends = datetime.fromtimestamp(
                page.count(bucket, "end_time", f"{where}.end_time"), tz=UTC
            )
            days.take(page, f"{where}.start_time", day, ends)
            for number, result in enumerate(page.objects(bucket, "results", f"{where}.results")):
                found.append((page, day, f"{where}.results[{number}]", result))
    return found, pages


def read_costs(client: Client, start: date, end: date) -> tuple[list[CostLine], int]:
    query = params(start, end, COSTS_GROUP_BY)
    found, pages = _buckets(client, COSTS_PATH, query, Days(start=start, end=end))
    return [_cost(page, day, where, result) for page, day, where, result in found], pages


def _cost(page: Page, day: date, where: str, result: Mapping[str, Any]) -> CostLine:
    page.constant(result, "object", f"{where}.object", COSTS_RESULT)
    amount = page.mapping(result, "amount", f"{where}.amount")
    value = page.exact_number(amount, "value", f"{where}.amount.value")
    currency = page.text(amount, "currency", f"{where}.amount.currency")
    if len(currency) != 3 or not currency.isalpha():
        page.malformed(f"{where}.amount.currency", f'is "{currency}", not an ISO 4217 code')
    line_item = page.text(result, "line_item", f"{where}.line_item", required=False)
    return CostLine(
        day=day,
        provider="openai",
        line_item=line_item,
        model=model_of_line_item(line_item),
        project_id=page.text(result, "project_id", f"{where}.project_id", required=False),
        project_name=page.text(result, "project_name", f"{where}.project_name", required=False),
        amount=value,
        currency=currency.upper(),
        raw=plain(result),
    )


def read_usage(client: Client, start: date, end: date) -> tuple[list[UsageLine], int]:
    query = params(start, end, USAGE_GROUP_BY)
    found, pages = _buckets(client, USAGE_PATH, query, Days(start=start, end=end))
    return [_usage(page, day, where, result) for page, day, where, result in found], pages


def _usage(page: Page, day: date, where: str, result: Mapping[str, Any]) -> UsageLine:
    page.constant(result, "object", f"{where}.object", USAGE_RESULT)
    total_input = page.count(result, "input_tokens", f"{where}.input_tokens")
    cached = page.count(
        result, "input_cached_tokens", f"{where}.input_cached_tokens", required=False
    )
    written = page.count(
        result, "input_cache_write_tokens", f"{where}.input_cache_write_tokens", required=False
    )
    if cached + written > total_input:
        page.malformed(
            f"{where}.input_tokens",
            f"is {total_input}, less than its cached ({cached}) and cache-write ({written}) tokens",
        )
    return UsageLine(
        day=day,
        provider="openai",
        model=page.text(result, "model", f"{where}.model", required=False),
        project_id=page.text(result, "project_id", f"{where}.project_id", required=False),
        api_key_id=page.text(result, "api_key_id", f"{where}.api_key_id", required=False),
        batch=page.boolean(result, "batch", f"{where}.batch", nullable=True),
        service_tier=page.text(result, "service_tier", f"{where}.service_tier", required=False),
        requests=page.count(result, "num_model_requests", f"{where}.num_model_requests"),
        input_tokens=total_input - cached - written,
        output_tokens=page.count(result, "output_tokens", f"{where}.output_tokens"),
        cached_input_tokens=cached,
        cache_write_tokens=written,
        raw=plain(result),
    )
