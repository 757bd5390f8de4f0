"""The cost and usage admin APIs of OpenAI and Anthropic: `read_report` reads every page of a
provider's cost and usage endpoints for a window of days and returns them as one `Report`, or
raises one of the `ProviderApiError` family; nothing is returned half-read.

Endpoints, fields, units and the reference pages: `docs/formats.md`, section "Provider cost and
usage APIs".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import date

from django.conf import settings

from audit_app.ingestion.provider_apis import anthropic, openai
from audit_app.ingestion.provider_apis.base import (
    CostLine,
    ProviderApiError,
    ProviderMalformed,
    ProviderRateLimited,
    ProviderRefused,
    ProviderUnavailable,
    Report,
    UsageLine,
)
from audit_app.ingestion.provider_apis.http import Client, quiet
from audit_app.lib.outbound import OutboundPolicy, policy_from_settings

__all__ = [
    "DEFAULT_BASE_URLS",
    "KINDS",
    "CostLine",
    "ProviderApiError",
    "ProviderMalformed",
    "ProviderRateLimited",
    "ProviderRefused",
    "ProviderUnavailable",
    "Report",
    "UsageLine",
    "read_report",
]

DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com/v1",
}
KINDS = tuple(DEFAULT_BASE_URLS)
_READERS = {"openai": openai, "anthropic": anthropic}


def read_report(
    *,
    kind: str,
    base_url: str,
    api_key: str,
    start: date,
    end: date,
    source_name: str,
    policy: OutboundPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
    max_retries: int = 4,
) -> Report:
    """Every cost and usage result of the days [start, end) from the provider ``kind``."""
    reader = _READERS.get(kind)
    if reader is None:
        raise ValueError(f"{kind!r} is not a provider API kind; use one of {', '.join(KINDS)}.")
    if end <= start:
        raise ValueError(f"the window ends ({end}) on or before it starts ({start}).")
    if not api_key.strip():
        raise ValueError(f'source "{source_name}" has no admin key.')
    chosen = policy or policy_from_settings(max_bytes=settings.PROVIDER_API_MAX_PAGE_BYTES)
    client = Client(
        provider=kind,
        base_url=base_url or DEFAULT_BASE_URLS[kind],
        source_name=source_name,
        headers=reader.headers(api_key),
        policy=quiet(chosen),
        sleep=sleep,
        max_retries=max(0, max_retries),
        max_wait=float(settings.PROVIDER_API_MAX_WAIT_SECONDS),
        secret=api_key,
    )
    costs, cost_pages = reader.read_costs(client, start, end)
    usage, usage_pages = reader.read_usage(client, start, end)
    return Report(
        provider=kind,
        start=start,
        end=end,
        costs=tuple(costs),
        usage=tuple(usage),
        pages_read=cost_pages + usage_pages,
    )
