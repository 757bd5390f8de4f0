"""Anthropic's Admin API cost report and Messages usage report, read for a window of days.

`GET /v1/organizations/cost_report` (daily buckets grouped by `workspace_id` and
`description`; each result's `amount` a decimal string in the currency's lowest unit, cents:
"123.45" USD is $1.2345, so it is divided by 100 exactly) and
`GET /v1/organizations/usage_report/messages` (daily buckets grouped by `model`,
`workspace_id`, `api_key_id` and `service_tier`; uncached input, `cache_creation` 5-minute and
1-hour writes, cache reads, output), with `x-api-key: <admin key>` and
`anthropic-version: 2023-06-01`. Shapes as documented in
https://platform.claude.com/docs/en/api/admin/cost_report/retrieve,
https://platform.claude.com/docs/en/api/admin/usage_report/retrieve_messages and
https://platform.claude.com/docs/en/build-with-claude/usage-cost-api. The usage report gives
no request count, so `requests` is 0. A null `workspace_id` is the default workspace ("").

Fields and units in full: `docs/formats.md`, section "Provider cost and usage APIs".
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from audit_app.ingestion.provider_apis.base import CostLine, UsageLine
from audit_app.ingestion.provider_apis.http import Client, Days, Page, plain, read_pages

COSTS_PATH = "/organizations/cost_report"
USAGE_PATH = "/organizations/usage_report/messages"
API_VERSION = "2023-06-01"
COSTS_GROUP_BY = ("workspace_id", "description")
USAGE_GROUP_BY = ("model", "workspace_id", "api_key_id", "service_tier")
BUCKETS_PER_PAGE = 31  # the most a daily page may hold
CURRENCY = "USD"  # the only one documented; its lowest unit is the cent


def headers(api_key: str) -> dict[str, str]:
    return {"x-api-key": api_key, "anthropic-version": API_VERSION, "Accept": "application/json"}


def _rfc3339(day: date) -> str:
    return f"{day.isoformat()}T00:00:00Z"


def params(start: date, end: date, group_by: tuple[str, ...]) -> list[tuple[str, str]]:
    """The query of one endpoint, as the reference names it."""
    return [
        ("starting_at", _rfc3339(start)),
        ("ending_at", _rfc3339(end)),
        ("bucket_width", "1d"),
        *(("group_by[]", name) for name in group_by),
        ("limit", str(BUCKETS_PER_PAGE)),
    ]


def _buckets(
    client: Client, path: str, query: list[tuple[str, str]], days: Days
) -> tuple[list[tuple[Page, date, str, Mapping[str, Any]]], int]:
    """Every result of every bucket, with its page, day and place; and the pages read."""
    found: list[tuple[Page, date, str, Mapping[str, Any]]] = []
    pages = 0
    for page, body in read_pages(client, path, query):
        pages += 1
        for index, bucket in enumerate(page.objects(body, "data", "data")):
            where = f"data[{index}]"
            day = page.rfc3339_day(bucket, "starting_at", f"{where}.starting_at")
            ends = page.instant(bucket, "ending_at", f"{where}.ending_at")
            days.take(page, f"{where}.starting_at", day, ends)
            for number, result in enumerate(page.objects(bucket, "results", f"{where}.results")):
                found.append((page, day, f"{where}.results[{number}]", result))
    return found, pages


def read_costs(client: Client, start: date, end: date) -> tuple[list[CostLine], int]:
    query = params(start, end, COSTS_GROUP_BY)
    found, pages = _buckets(client, COSTS_PATH, query, Days(start=start, end=end))
    return [_cost(page, day, where, result) for page, day, where, result in found], pages


def line_item_of(description: str, cost_type: str, token_type: str) -> str:
    """The result's description; without one, its cost and token types ("tokens,
    output_tokens"), or "" when it has none of them."""
    if description:
        return description
    return ", ".join(part for part in (cost_type, token_type) if part)


def _cost(page: Page, day: date, where: str, result: Mapping[str, Any]) -> CostLine:
    cents = page.decimal_text(result, "amount", f"{where}.amount")
    currency = page.text(result, "currency", f"{where}.currency")
    if currency.upper() != CURRENCY:
        page.malformed(
            f"{where}.currency", f'is "{currency}"; only USD (amounts in cents) is documented'
        )
    cost_type = page.text(result, "cost_type", f"{where}.cost_type", required=False)
    token_type = page.text(result, "token_type", f"{where}.token_type", required=False)
    description = page.text(result, "description", f"{where}.description", required=False)
    return CostLine(
        day=day,
        provider="anthropic",
        line_item=line_item_of(description, cost_type, token_type),
        model=page.text(result, "model", f"{where}.model", required=False),
        project_id=page.text(result, "workspace_id", f"{where}.workspace_id", required=False),
        project_name="",
        amount=cents.scaleb(-2),
        currency=CURRENCY,
        service_tier=page.text(result, "service_tier", f"{where}.service_tier", required=False),
        token_type=token_type or cost_type,
        raw=plain(result),
    )


def read_usage(client: Client, start: date, end: date) -> tuple[list[UsageLine], int]:
    query = params(start, end, USAGE_GROUP_BY)
    found, pages = _buckets(client, USAGE_PATH, query, Days(start=start, end=end))
    return [_usage(page, day, where, result) for page, day, where, result in found], pages


def _usage(page: Page, day: date, where: str, result: Mapping[str, Any]) -> UsageLine:
    creation = page.mapping(result, "cache_creation", f"{where}.cache_creation")
    written = page.count(
        creation, "ephemeral_5m_input_tokens", f"{where}.cache_creation.ephemeral_5m_input_tokens"
    ) + page.count(
        creation, "ephemeral_1h_input_tokens", f"{where}.cache_creation.ephemeral_1h_input_tokens"
    )
    tier = page.text(result, "service_tier", f"{where}.service_tier", required=False)
    return UsageLine(
        day=day,
        provider="anthropic",
        model=page.text(result, "model", f"{where}.model", required=False),
        project_id=page.text(result, "workspace_id", f"{where}.workspace_id", required=False),
        api_key_id=page.text(result, "api_key_id", f"{where}.api_key_id", required=False),
        batch=(tier == "batch") if tier else None,
        service_tier=tier,
        requests=0,
        input_tokens=page.count(result, "uncached_input_tokens", f"{where}.uncached_input_tokens"),
        output_tokens=page.count(result, "output_tokens", f"{where}.output_tokens"),
        cached_input_tokens=page.count(
            result, "cache_read_input_tokens", f"{where}.cache_read_input_tokens"
        ),
        cache_write_tokens=written,
        raw=plain(result),
    )
