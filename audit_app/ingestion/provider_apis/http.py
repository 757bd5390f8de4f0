"""Reading a provider's paged answers: one GET through `audit_app.lib.outbound` (no redirects
followed, so the key goes to the base URL's host only), 429, 5xx and network failures retried
with backoff honouring Retry-After, every page to the last with a guard against a cursor that
loops, and the strict field checks each page's reader makes (`Page`).

Its rules in full: `docs/formats.md`, section "Provider cost and usage APIs".
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from decimal import Decimal
from email.utils import parsedate_to_datetime
from typing import Any, NoReturn
from urllib.parse import urlencode

from audit_app.ingestion.provider_apis.base import (
    PROVIDER_LABELS,
    ProviderApiError,
    ProviderMalformed,
    ProviderRateLimited,
    ProviderRefused,
    ProviderUnavailable,
)
from audit_app.lib import outbound

logger = logging.getLogger(__name__)

BACKOFF_FIRST_SECONDS = 1.0  # then 2, 4, 8 … up to the client's max_wait
MAX_PAGES_PER_ENDPOINT = 1000
Params = Sequence[tuple[str, str]]


@dataclass(frozen=True, kw_only=True)
class Client:
    """Where and how one source is read. The headers hold the key: never shown (repr=False)."""

    provider: str
    base_url: str
    source_name: str
    headers: Mapping[str, str] = field(repr=False)
    policy: outbound.OutboundPolicy
    sleep: Callable[[float], None] = time.sleep
    max_retries: int = 4
    max_wait: float = 60.0
    secret: str = field(default="", repr=False)

    @property
    def label(self) -> str:
        return PROVIDER_LABELS.get(self.provider, self.provider)

    def clean(self, text: str) -> str:
        """``text`` with the key masked, whatever put it there."""
        return text.replace(self.secret, "[key]") if self.secret else text


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """The wait a Retry-After header asks for: seconds, or an HTTP date (None if absent or
    unreadable)."""
    if value is None or not value.strip():
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


@dataclass
class _Attempts:
    """What the retries of one page have seen so far."""

    count: int = 0
    status: int | None = None
    clause: str = ""
    retry_after: float | None = None


def _answer(client: Client, path: str, params: Params) -> tuple[int, Mapping[str, str], bytes]:
    url = f"{client.base_url.rstrip('/')}{path}?{urlencode(list(params))}"
    with outbound.opened("GET", url, policy=client.policy, headers=client.headers) as response:
        body = response.read_all() if response.status == 200 else b""
        return response.status, response.headers, body


def fetch_page(client: Client, path: str, params: Params, page: int) -> Mapping[str, Any]:
    """One page as a JSON object, after retrying 429, 5xx and network failures."""
    seen = _Attempts()
    while True:
        try:
            status, headers, body = _answer(client, path, params)
        except outbound.OutboundRefused as exc:
            raise ProviderUnavailable(
                client.clean(
                    f'{client.label} may not be reached for source "{client.source_name}": {exc}.'
                ),
                status=None,
            ) from None
        except outbound.OutboundFailed as exc:
            if "redirect" in str(exc):
                raise ProviderApiError(
                    f"{client.label} redirected {path} for source "
                    f'"{client.source_name}" elsewhere, where the key is not sent: check the '
                    "source's base URL."
                ) from None
            seen.status, seen.clause, seen.retry_after = None, client.clean(str(exc)), None
        else:
            if status == 200:
                return _decoded(client, path, body, page)
            _refuse_unretried(client, path, status)
            seen.status, seen.clause = status, f"answered {status}"
            seen.retry_after = retry_after_seconds(_header(headers, "Retry-After"))
        _wait_or_give_up(client, path, seen)


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name.lower():
            return value
    return None


def _refuse_unretried(client: Client, path: str, status: int) -> None:
    source = f'source "{client.source_name}"'
    if status in (401, 403):
        raise ProviderRefused(
            f"{client.label} refused the admin key for {source} ({status}): "
            "use an organization admin key.",
            status=status,
        )
    if status != 429 and not 500 <= status <= 599:
        raise ProviderApiError(
            f"{client.label} answered {status} to {path} for {source}: check the source's base URL."
        )


def _give_up(client: Client, path: str, seen: _Attempts) -> ProviderApiError:
    source = f'source "{client.source_name}"'
    tries = f"{seen.count} retr{'y' if seen.count == 1 else 'ies'}"
    if seen.status == 429:
        return ProviderRateLimited(
            f"{client.label} kept answering 429 (too many requests) to {path} for {source} "
            f"after {tries}; the next poll tries again.",
            retry_after=seen.retry_after,
        )
    if seen.status is not None:
        return ProviderUnavailable(
            f"{client.label} answered {seen.status} to {path} for {source} after {tries}.",
            status=seen.status,
        )
    return ProviderUnavailable(
        f"{client.label} could not be read at {path} for {source} after {tries}: {seen.clause}.",
        status=None,
    )


def _wait_or_give_up(client: Client, path: str, seen: _Attempts) -> None:
    if seen.status == 429 and seen.retry_after is not None and seen.retry_after > client.max_wait:
        raise ProviderRateLimited(
            f'{client.label} asked source "{client.source_name}" to wait '
            f"{seen.retry_after:g} s (429, Retry-After), longer than the {client.max_wait:g} s "
            "a poll waits; the next poll tries again.",
            retry_after=seen.retry_after,
        )
    if seen.count >= client.max_retries:
        raise _give_up(client, path, seen)
    wait = seen.retry_after
    if wait is None:
        wait = BACKOFF_FIRST_SECONDS * 2**seen.count
    wait = min(wait, client.max_wait)
    seen.count += 1
    logger.warning(
        "%s: %s at %s for source %r; retry %d of %d in %g s",
        client.label,
        seen.clause,
        path,
        client.source_name,
        seen.count,
        client.max_retries,
        wait,
    )
    client.sleep(wait)


def _decoded(client: Client, path: str, body: bytes, page: int) -> Mapping[str, Any]:
    reader = Page(client=client, path=path, number=page)
    try:
        value = json.loads(body, parse_float=Decimal, parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError):
        reader.malformed("(body)", "is not JSON")
    if not isinstance(value, dict):
        reader.malformed("(body)", "is not a JSON object")
    return value


def read_pages(
    client: Client, path: str, params: Params
) -> Iterator[tuple[Page, Mapping[str, Any]]]:
    """Every page of one endpoint, in order, following ``next_page`` while ``has_more``."""
    cursors: set[str] = set()
    cursor: str | None = None
    for number in range(1, MAX_PAGES_PER_ENDPOINT + 1):
        asked = list(params) + ([("page", cursor)] if cursor is not None else [])
        body = fetch_page(client, path, asked, number)
        page = Page(client=client, path=path, number=number)
        yield page, body
        has_more = page.boolean(body, "has_more", "has_more")
        next_page = page.text(body, "next_page", "next_page", required=bool(has_more))
        if not has_more:
            return
        if not next_page:
            page.malformed("next_page", "is empty while has_more is true")
        if next_page in cursors:
            page.malformed("next_page", "repeats a cursor already read (the paging loops)")
        cursors.add(next_page)
        cursor = next_page
    Page(client=client, path=path, number=MAX_PAGES_PER_ENDPOINT).malformed(
        "has_more", f"is still true after {MAX_PAGES_PER_ENDPOINT} pages"
    )


@dataclass(frozen=True, kw_only=True)
class Page:
    """Strict reads of one page's fields; a wrong one is `ProviderMalformed` naming it."""

    client: Client
    path: str
    number: int

    def malformed(self, where: str, problem: str) -> NoReturn:
        client = self.client
        raise ProviderMalformed(
            client.clean(
                f"{client.label} answered page {self.number} of {self.path} for source "
                f'"{client.source_name}" not in the documented shape: {where} {problem}.'
            ),
            field=where,
            page=self.number,
        )

    def _value(self, obj: Mapping[str, Any], key: str, where: str, required: bool) -> Any:
        if key not in obj:
            if required:
                self.malformed(where, "is missing")
            return None
        return obj[key]

    def mapping(self, obj: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
        value = self._value(obj, key, where, True)
        if not isinstance(value, dict):
            self.malformed(where, f"is {_kind(value)}, not an object")
        return value

    def array(self, obj: Mapping[str, Any], key: str, where: str) -> list[Any]:
        value = self._value(obj, key, where, True)
        if not isinstance(value, list):
            self.malformed(where, f"is {_kind(value)}, not an array")
        return value

    def objects(self, obj: Mapping[str, Any], key: str, where: str) -> list[Mapping[str, Any]]:
        items = self.array(obj, key, where)
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                self.malformed(f"{where}[{index}]", f"is {_kind(item)}, not an object")
        return items

    def text(self, obj: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str:
        """A string; null (and, when not ``required``, absence) reads as ""."""
        value = self._value(obj, key, where, required)
        if value is None:
            return ""
        if not isinstance(value, str):
            self.malformed(where, f"is {_kind(value)}, not a string")
        return value

    def constant(self, obj: Mapping[str, Any], key: str, where: str, expected: str) -> None:
        if self.text(obj, key, where) != expected:
            self.malformed(where, f'is {json.dumps(obj.get(key))}, not "{expected}"')

    def boolean(
        self, obj: Mapping[str, Any], key: str, where: str, *, nullable: bool = False
    ) -> bool | None:
        value = self._value(obj, key, where, not nullable)
        if value is None and nullable:
            return None
        if not isinstance(value, bool):
            self.malformed(where, f"is {_kind(value)}, not true or false")
        return value

    def count(self, obj: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> int:
        """A whole number ≥ 0; when not ``required``, absent or null reads as 0."""
        value = self._value(obj, key, where, required)
        if value is None and not required:
            return 0
        if isinstance(value, bool) or not isinstance(value, int):
            self.malformed(where, f"is {_kind(value)}, not a whole number")
        if value < 0:
            self.malformed(where, f"is {value}, below zero")
        return value

    def exact_number(self, obj: Mapping[str, Any], key: str, where: str) -> Decimal:
        """A JSON number, exactly as written."""
        value = self._value(obj, key, where, True)
        if isinstance(value, bool) or not isinstance(value, int | Decimal):
            self.malformed(where, f"is {_kind(value)}, not a number")
        return Decimal(value)

    def decimal_text(self, obj: Mapping[str, Any], key: str, where: str) -> Decimal:
        """A decimal written as a string ("123.45")."""
        text = self.text(obj, key, where)
        try:
            value = Decimal(text.strip())
        except ArithmeticError:
            value = Decimal("NaN")
        if not text.strip() or not value.is_finite():
            self.malformed(where, f"is {json.dumps(text)}, not a decimal number")
        return value

    def unix_day(self, obj: Mapping[str, Any], key: str, where: str) -> date:
        """The UTC day a bucket boundary in Unix seconds starts (it must be a midnight)."""
        seconds = self.count(obj, key, where)
        if seconds % 86400:
            self.malformed(where, f"is {seconds}, not a UTC midnight")
        return datetime.fromtimestamp(seconds, tz=UTC).date()

    def instant(self, obj: Mapping[str, Any], key: str, where: str) -> datetime:
        """An RFC 3339 timestamp (with its offset), in UTC."""
        text = self.text(obj, key, where)
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            self.malformed(where, f"is {json.dumps(text)}, not an RFC 3339 timestamp")
        if moment.tzinfo is None:
            self.malformed(where, f"is {json.dumps(text)}, without a UTC offset")
        return moment.astimezone(UTC)

    def rfc3339_day(self, obj: Mapping[str, Any], key: str, where: str) -> date:
        """The UTC day an RFC 3339 bucket boundary starts (it must be a UTC midnight)."""
        moment = self.instant(obj, key, where)
        if (moment.hour, moment.minute, moment.second, moment.microsecond) != (0, 0, 0, 0):
            self.malformed(where, f"is {json.dumps(obj[key])}, not a UTC midnight")
        return moment.date()


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"the string {json.dumps(value[:40])}"
    if isinstance(value, int | Decimal):
        return f"the number {value}"
    if isinstance(value, list):
        return "an array"
    return "an object"


def plain(value: Any) -> Any:
    """A decoded JSON value with its exact numbers turned back into floats and ints, as
    ``json`` would hold it (for ``raw``, which callers may store as JSON)."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, Decimal):
        return float(value)
    return value


def quiet(policy: outbound.OutboundPolicy) -> outbound.OutboundPolicy:
    """The policy with no redirect followed (the key goes to the configured host only)."""
    return replace(policy, max_redirects=0)


@dataclass(kw_only=True)
class Days:
    """The days asked for, and those one endpoint has answered so far."""

    start: date
    end: date
    seen: set[date] = field(default_factory=set)

    def take(self, page: Page, where: str, day: date, ends: datetime) -> date:
        """``day``, the bucket starting that midnight and ending at ``ends``, once checked:
        a daily bucket inside the window, not seen before."""
        begins = datetime(day.year, day.month, day.day, tzinfo=UTC)
        if not 0 < (ends - begins).total_seconds() <= 86400:
            page.malformed(
                where,
                f"is {day.isoformat()}, but the bucket ends {ends:%Y-%m-%dT%H:%M:%SZ}, not "
                "within that day",
            )
        if not self.start <= day < self.end:
            page.malformed(
                where,
                f"is {day.isoformat()}, outside the days asked ({self.start.isoformat()} to "
                f"{self.end.isoformat()}, the end excluded)",
            )
        if day in self.seen:
            page.malformed(where, f"is {day.isoformat()}, a day already answered")
        self.seen.add(day)
        return day
