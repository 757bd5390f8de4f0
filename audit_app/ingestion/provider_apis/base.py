"""What the provider cost and usage readers return, and the errors they raise.

Pure dataclasses: one cost result (`CostLine`) and one usage result (`UsageLine`) per bucket
result the provider answered, and the `Report` of a window. Every error's text is one sentence
naming the source and never the key. Fields and units: `docs/formats.md`, section "Provider
cost and usage APIs".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any

PROVIDER_LABELS = {"openai": "OpenAI", "anthropic": "Anthropic"}


@dataclass(frozen=True, kw_only=True)
class CostLine:
    """One cost result of a daily bucket; ``amount`` is in ``currency`` (dollars for USD)."""

    day: date
    provider: str
    line_item: str
    model: str
    project_id: str
    project_name: str
    amount: Decimal
    currency: str
    service_tier: str = ""
    token_type: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, kw_only=True)
class UsageLine:
    """One usage result of a daily bucket; ``input_tokens`` is uncached input only."""

    day: date
    provider: str
    model: str
    project_id: str
    api_key_id: str
    batch: bool | None
    service_tier: str
    requests: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cache_write_tokens: int
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, kw_only=True)
class Report:
    """Every cost and usage result of the days [start, end), read to the last page."""

    provider: str
    start: date
    end: date
    costs: tuple[CostLine, ...]
    usage: tuple[UsageLine, ...]
    pages_read: int


class ProviderApiError(Exception):
    """A provider's API could not be read; str() is one sentence naming the source, never the
    key. Raised as itself for an answer none of the subclasses covers (a 404 from a wrong base
    URL, a 400, a redirect). Each pickles whole (its attributes are keyword defaults restored
    from its state), so it may cross a Celery result backend."""


class ProviderRefused(ProviderApiError):
    """401 or 403: the provider refused the key."""

    def __init__(self, message: str, *, status: int = 401) -> None:
        super().__init__(message)
        self.status = status


class ProviderRateLimited(ProviderApiError):
    """429 after every retry, or a Retry-After longer than the longest wait allowed."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ProviderUnavailable(ProviderApiError):
    """5xx or a network failure after every retry (``status`` None when nothing answered)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ProviderMalformed(ProviderApiError):
    """A page not in the documented shape: ``field`` names what is wrong, ``page`` which page
    (1 for the first page of an endpoint)."""

    def __init__(self, message: str, *, field: str = "", page: int = 0) -> None:
        super().__init__(message)
        self.field = field
        self.page = page
