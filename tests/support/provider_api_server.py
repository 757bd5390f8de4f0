"""A local server answering as OpenAI's and Anthropic's cost and usage admin APIs do.

It serves `GET /openai/v1/organization/costs`, `/openai/v1/organization/usage/completions`,
`/anthropic/v1/organizations/cost_report` and `/anthropic/v1/organizations/usage_report/messages`
in the documented shapes (see `docs/formats.md`, "Provider cost and usage APIs") from the
`Cost` and `Usage` entries a test sets, grouped by the `group_by[]` asked (other dimensions
summed, answered null), a few daily buckets a page so paging is exercised. It checks each
provider's auth headers and query parameters as documented (answering 401 or 400 as they do,
the 401 body echoing the key as sent) and records every request. Switches: `restate` a day,
`fail` the next requests (429 with Retry-After, 5xx), `forbid` (403), `break_page`, `loop`.

Use it as the `provider_api_server` fixture, or from a script:
``with ProviderApiServer() as server: server.base_url("openai")``; ``python -m
tests.support.provider_api_server`` serves sample data until interrupted.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

OPENAI_KEY = "sk-admin-local-openai-0123456789"
ANTHROPIC_KEY = "sk-ant-admin01-local-anthropic-0123456789"
ANTHROPIC_VERSION = "2023-06-01"
PREFIXES = {"openai": "/openai/v1", "anthropic": "/anthropic/v1"}
ENDPOINTS = {
    ("openai", "/organization/costs"): "costs",
    ("openai", "/organization/usage/completions"): "usage",
    ("anthropic", "/organizations/cost_report"): "costs",
    ("anthropic", "/organizations/usage_report/messages"): "usage",
}
GROUPS = {
    ("openai", "costs"): {"project_id", "line_item", "api_key_id"},
    ("openai", "usage"): {"project_id", "user_id", "api_key_id", "model", "batch", "service_tier"},
    ("anthropic", "costs"): {"workspace_id", "description"},
    ("anthropic", "usage"): {"api_key_id", "workspace_id", "model", "service_tier"},
}
LIMITS = {("openai", "costs"): 180, ("openai", "usage"): 31}  # Anthropic: 31 for both
PARAMS = {
    "openai": {"start_time", "end_time", "bucket_width", "group_by[]", "limit", "page"},
    "anthropic": {"starting_at", "ending_at", "bucket_width", "group_by[]", "limit", "page"},
}
_NUMBER = re.compile(r'"@number:(-?[0-9.]+(?:E[-+]?[0-9]+)?)@"')


@dataclass(frozen=True, kw_only=True)
class Cost:
    """One day's cost of one line, in dollars (Anthropic's answer gives it in cents)."""

    day: date
    amount: Decimal
    line_item: str = ""  # OpenAI line_item; Anthropic description
    project_id: str = ""  # OpenAI project_id; Anthropic workspace_id ("" answers null)
    model: str = ""  # Anthropic's model field (OpenAI names the model in line_item)
    token_type: str = ""
    cost_type: str = "tokens"
    service_tier: str = "standard"


@dataclass(frozen=True, kw_only=True)
class Usage:
    """One day's usage of one model × project × key; ``input_tokens`` is uncached input."""

    day: date
    model: str
    project_id: str = ""  # OpenAI project_id; Anthropic workspace_id
    api_key_id: str = ""
    batch: bool = False  # Anthropic: service_tier "batch" (else "standard")
    requests: int = 0  # OpenAI num_model_requests (Anthropic's report has none)
    input_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_5m_tokens: int = 0
    cache_write_1h_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class Recorded:
    """One request as received."""

    provider: str
    endpoint: str  # "costs" | "usage" | "" (an unknown path)
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    status: int


@dataclass
class _Fault:
    status: int
    times: int
    retry_after: str | None
    provider: str | None


@dataclass
class ProviderApiServer:
    """The server, its data and switches; start it with ``with`` (or `start` / `stop`)."""

    openai_key: str = OPENAI_KEY
    anthropic_key: str = ANTHROPIC_KEY
    page_size: int = 2  # daily buckets a page at most (below any limit asked)
    costs: dict[str, list[Cost]] = field(default_factory=lambda: {"openai": [], "anthropic": []})
    usage: dict[str, list[Usage]] = field(default_factory=lambda: {"openai": [], "anthropic": []})
    requests: list[Recorded] = field(default_factory=list)
    forbidden: set[str] = field(default_factory=set)
    looping: set[tuple[str, str]] = field(default_factory=set)
    broken: dict[tuple[str, str, int], Callable[[dict[str, Any]], None]] = field(
        default_factory=dict
    )
    _faults: list[_Fault] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    # --- Running ---------------------------------------------------------------------------

    def start(self) -> ProviderApiServer:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ProviderApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def root(self) -> str:
        assert self._httpd is not None, "the server is not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def base_url(self, provider: str) -> str:
        """What a source's base URL is set to (in place of https://api.openai.com/v1 …)."""
        return self.root + PREFIXES[provider]

    def key(self, provider: str) -> str:
        return self.openai_key if provider == "openai" else self.anthropic_key

    # --- Data and switches -----------------------------------------------------------------

    def set_data(
        self, provider: str, *, costs: list[Cost] | None = None, usage: list[Usage] | None = None
    ) -> None:
        with self._lock:
            if costs is not None:
                self.costs[provider] = list(costs)
            if usage is not None:
                self.usage[provider] = list(usage)

    def restate(
        self,
        provider: str,
        day: date,
        *,
        costs: list[Cost] | None = None,
        usage: list[Usage] | None = None,
    ) -> None:
        """Replace one day's figures (as a provider restates a day between two polls)."""
        with self._lock:
            if costs is not None:
                kept = [c for c in self.costs[provider] if c.day != day]
                self.costs[provider] = kept + [replace(c, day=day) for c in costs]
            if usage is not None:
                kept_usage = [u for u in self.usage[provider] if u.day != day]
                self.usage[provider] = kept_usage + [replace(u, day=day) for u in usage]

    def fail(
        self,
        status: int,
        *,
        times: int = 1,
        retry_after: str | None = None,
        provider: str | None = None,
    ) -> None:
        """Answer ``status`` to the next ``times`` authorised requests (of ``provider``)."""
        with self._lock:
            self._faults.append(_Fault(status, times, retry_after, provider))

    def forbid(self, provider: str) -> None:
        """Answer 403 (a valid key without the permission) from now on."""
        self.forbidden.add(provider)

    def break_page(
        self, provider: str, endpoint: str, page: int, mutate: Callable[[dict[str, Any]], None]
    ) -> None:
        """Let ``mutate`` change page ``page`` (1 = first) of an endpoint before it is sent."""
        self.broken[(provider, endpoint, page)] = mutate

    def loop(self, provider: str, endpoint: str) -> None:
        """Answer every page of an endpoint with has_more and the first page's cursor."""
        self.looping.add((provider, endpoint))

    def asked(self, provider: str, endpoint: str) -> list[Recorded]:
        return [r for r in self.requests if r.provider == provider and r.endpoint == endpoint]

    # --- Expected figures ------------------------------------------------------------------

    def cost_total(self, provider: str, start: date, end: date) -> Decimal:
        """The dollars of the days [start, end)."""
        return sum((c.amount for c in self.costs[provider] if start <= c.day < end), Decimal("0"))

    def usage_totals(self, provider: str, start: date, end: date) -> dict[str, int]:
        """Requests and each kind of token of the days [start, end)."""
        totals = dict.fromkeys(("requests", "input", "output", "cached_input", "cache_write"), 0)
        for u in self.usage[provider]:
            if start <= u.day < end:
                totals["requests"] += u.requests if provider == "openai" else 0
                totals["input"] += u.input_tokens
                totals["output"] += u.output_tokens
                totals["cached_input"] += u.cached_input_tokens
                totals["cache_write"] += u.cache_write_5m_tokens + u.cache_write_1h_tokens
        return totals

    # --- Answering -------------------------------------------------------------------------

    def answer(
        self, path: str, query: dict[str, list[str]], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        provider, endpoint = _route(path)
        status, extra, body = self._answer(provider, endpoint, query, headers)
        with self._lock:
            self.requests.append(Recorded(provider, endpoint, path, query, headers, status))
        return status, extra, body

    def _answer(
        self, provider: str, endpoint: str, query: dict[str, list[str]], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        if not endpoint:
            return _error(provider, 404, "not_found_error", "Not found")
        refusal = self._auth_refusal(provider, headers)
        if refusal is not None:
            return refusal
        fault = self._take_fault(provider)
        if fault is not None:
            extra = {"Retry-After": fault.retry_after} if fault.retry_after else {}
            status, _, body = _error(provider, fault.status, "rate_limit_error", "Slow down")
            return status, extra, body
        try:
            asked = _query(provider, endpoint, query)
        except ValueError as exc:
            return _error(provider, 400, "invalid_request_error", str(exc))
        with self._lock:
            page = self._page(provider, endpoint, asked)
        text = _NUMBER.sub(r"\1", json.dumps(page, default=_exact))
        return 200, {"Content-Type": "application/json"}, text.encode()

    def _auth_refusal(
        self, provider: str, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes] | None:
        lowered = {k.lower(): v for k, v in headers.items()}
        if provider == "openai":
            sent = lowered.get("authorization", "")
            if sent != f"Bearer {self.openai_key}":
                shown = sent.removeprefix("Bearer ")
                return _error(
                    provider, 401, "invalid_request_error", f"Incorrect API key provided: {shown}"
                )
        else:
            if lowered.get("anthropic-version") != ANTHROPIC_VERSION:
                return _error(
                    provider, 400, "invalid_request_error", "anthropic-version: header is required"
                )
            sent = lowered.get("x-api-key", "")
            if sent != self.anthropic_key:
                return _error(provider, 401, "authentication_error", f"invalid x-api-key {sent}")
        if provider in self.forbidden:
            return _error(provider, 403, "permission_error", "This key may not read costs")
        return None

    def _take_fault(self, provider: str) -> _Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.times > 0 and fault.provider in (None, provider):
                    fault.times -= 1
                    return fault
        return None

    def _page(self, provider: str, endpoint: str, asked: _Asked) -> dict[str, Any]:
        days = [asked.start + timedelta(days=n) for n in range((asked.end - asked.start).days)]
        first = 0 if asked.cursor is None else days.index(asked.cursor)
        size = min(asked.limit, self.page_size)
        shown = days[first : first + size]
        has_more = first + size < len(days)
        number = 1 + first // size
        next_day: date | None
        if (provider, endpoint) in self.looping:
            has_more, next_day = True, days[min(size, len(days) - 1)]
        else:
            next_day = days[first + size] if has_more else None
        buckets = [self._bucket(provider, endpoint, day, asked.group_by) for day in shown]
        page = _envelope(provider, buckets, has_more, next_day)
        mutate = self.broken.get((provider, endpoint, number))
        if mutate is not None:
            mutate(page)
        return page

    def _bucket(
        self, provider: str, endpoint: str, day: date, group_by: list[str]
    ) -> dict[str, Any]:
        if endpoint == "costs":
            results = _cost_results(
                provider, [c for c in self.costs[provider] if c.day == day], group_by
            )
        else:
            results = _usage_results(
                provider, [u for u in self.usage[provider] if u.day == day], group_by
            )
        begins = datetime(day.year, day.month, day.day, tzinfo=UTC)
        ends = begins + timedelta(days=1)
        if provider == "openai":
            return {
                "object": "bucket",
                "start_time": int(begins.timestamp()),
                "end_time": int(ends.timestamp()),
                "results": results,
            }
        return {"starting_at": _rfc3339(begins), "ending_at": _rfc3339(ends), "results": results}


# --- Queries -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Asked:
    start: date
    end: date
    group_by: list[str]
    limit: int
    cursor: date | None


def _route(path: str) -> tuple[str, str]:
    for provider, prefix in PREFIXES.items():
        if path.startswith(prefix + "/"):
            return provider, ENDPOINTS.get((provider, path[len(prefix) :]), "")
    return "", ""


def _one(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    if values is None:
        return None
    if len(values) != 1:
        raise ValueError(f"{name} is given {len(values)} times")
    return values[0]


def _query(provider: str, endpoint: str, query: dict[str, list[str]]) -> _Asked:
    unknown = sorted(set(query) - PARAMS[provider])
    if unknown:
        raise ValueError(f"unknown parameter {unknown[0]}")
    if (_one(query, "bucket_width") or "1d") != "1d":
        raise ValueError("this server answers bucket_width=1d only")
    group_by = query.get("group_by[]", [])
    wrong = [g for g in group_by if g not in GROUPS[(provider, endpoint)]]
    if wrong:
        raise ValueError(f"group_by[] cannot be {wrong[0]}")
    ceiling = LIMITS.get((provider, endpoint), 31)
    limit = int(_one(query, "limit") or 7)
    if not 1 <= limit <= ceiling:
        raise ValueError(f"limit must be between 1 and {ceiling}")
    if provider == "openai":
        start = _unix_day(_one(query, "start_time"), "start_time")
        end_text = _one(query, "end_time")
    else:
        start = _rfc3339_day(_one(query, "starting_at"), "starting_at")
        end_text = _one(query, "ending_at")
    if end_text is None:
        end = start + timedelta(days=limit)
    elif provider == "openai":
        end = _unix_day(end_text, "end_time")
    else:
        end = _rfc3339_day(end_text, "ending_at")
    cursor = _one(query, "page")
    at = None if cursor is None else _cursor_day(cursor)
    if at is not None and not start <= at < end:
        raise ValueError("page is a cursor of another query")
    return _Asked(start, end, group_by, limit, at)


def _unix_day(text: str | None, name: str) -> date:
    if text is None or not text.isdigit() or int(text) % 86400:
        raise ValueError(f"{name} must be Unix seconds at a UTC midnight")
    return datetime.fromtimestamp(int(text), tz=UTC).date()


def _rfc3339_day(text: str | None, name: str) -> date:
    try:
        moment = datetime.fromisoformat(text or "")
    except ValueError:
        raise ValueError(f"{name} must be an RFC 3339 timestamp") from None
    if moment.tzinfo is None or moment.astimezone(UTC).time() != datetime.min.time():
        raise ValueError(f"{name} must be a UTC midnight")
    return moment.astimezone(UTC).date()


def _cursor(day: date) -> str:
    return "page_" + base64.urlsafe_b64encode(f"{day.isoformat()}T00:00:00Z".encode()).decode()


def _cursor_day(cursor: str) -> date:
    try:
        text = base64.urlsafe_b64decode(cursor.removeprefix("page_").encode()).decode()
        return date.fromisoformat(text[:10])
    except ValueError:
        raise ValueError("page is not a cursor this server gave") from None


# --- Pages ---------------------------------------------------------------------------------


def _rfc3339(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _number(value: Decimal) -> str:
    """A placeholder that `ProviderApiServer._answer` turns into the exact JSON number."""
    return f"@number:{value}@"


def _exact(value: Any) -> str:
    if isinstance(value, Decimal):
        return _number(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _envelope(
    provider: str, buckets: list[dict[str, Any]], has_more: bool, next_day: date | None
) -> dict[str, Any]:
    next_page = _cursor(next_day) if next_day is not None else None
    if provider == "openai":
        return {"object": "page", "data": buckets, "has_more": has_more, "next_page": next_page}
    return {"data": buckets, "has_more": has_more, "next_page": next_page}


def _cost_results(provider: str, costs: list[Cost], group_by: list[str]) -> list[dict[str, Any]]:
    sums: dict[tuple[Any, ...], Decimal] = {}
    for c in costs:
        if provider == "openai":
            key: tuple[Any, ...] = (
                c.line_item if "line_item" in group_by else None,
                (c.project_id or None) if "project_id" in group_by else None,
            )
        else:
            described = "description" in group_by
            key = (
                (c.project_id or None) if "workspace_id" in group_by else None,
                c.line_item if described else None,
                c.model if described else None,
                c.token_type if described else None,
                c.cost_type if described else None,
                c.service_tier if described else None,
            )
        sums[key] = sums.get(key, Decimal("0")) + c.amount
    if provider == "openai":
        return [
            {
                "object": "organization.costs.result",
                "amount": {"value": _number(amount), "currency": "usd"},
                "line_item": line_item,
                "project_id": project_id,
            }
            for (line_item, project_id), amount in sums.items()
        ]
    return [
        {
            "currency": "USD",
            "amount": format(amount.scaleb(2), "f"),
            "workspace_id": workspace,
            "description": description,
            "cost_type": cost_type,
            "context_window": "0-200k" if cost_type == "tokens" else None,
            "model": model or None,
            "service_tier": tier,
            "token_type": token_type or None,
        }
        for (workspace, description, model, token_type, cost_type, tier), amount in sums.items()
    ]


def _usage_key(provider: str, u: Usage, group_by: list[str]) -> tuple[Any, ...]:
    tier = "batch" if u.batch else "standard"
    dims: dict[str, Any] = {
        "model": u.model,
        "project_id": u.project_id or None,
        "workspace_id": u.project_id or None,
        "api_key_id": u.api_key_id or None,
        "batch": u.batch,
        "service_tier": tier if provider == "anthropic" else "default",
    }
    names = (
        ("model", "project_id", "api_key_id", "batch", "service_tier")
        if provider == "openai"
        else ("model", "workspace_id", "api_key_id", "service_tier")
    )
    return tuple((name, dims[name] if name in group_by else None) for name in names)


def _usage_results(provider: str, usage: list[Usage], group_by: list[str]) -> list[dict[str, Any]]:
    sums: dict[tuple[Any, ...], list[int]] = {}
    for u in usage:
        row = sums.setdefault(_usage_key(provider, u, group_by), [0] * 6)
        for index, value in enumerate(
            (
                u.requests,
                u.input_tokens,
                u.cached_input_tokens,
                u.cache_write_5m_tokens,
                u.cache_write_1h_tokens,
                u.output_tokens,
            )
        ):
            row[index] += value
    results = []
    for key, (requests, uncached, cached, write_5m, write_1h, output) in sums.items():
        dims = dict(key)
        if provider == "openai":
            results.append(
                {
                    "object": "organization.usage.completions.result",
                    "input_tokens": uncached + cached + write_5m + write_1h,
                    "output_tokens": output,
                    "input_cached_tokens": cached,
                    "input_cache_write_tokens": write_5m + write_1h,
                    "num_model_requests": requests,
                    "project_id": dims["project_id"],
                    "user_id": None,
                    "api_key_id": dims["api_key_id"],
                    "model": dims["model"],
                    "batch": dims["batch"],
                    "service_tier": dims["service_tier"],
                }
            )
        else:
            results.append(
                {
                    "uncached_input_tokens": uncached,
                    "cache_creation": {
                        "ephemeral_1h_input_tokens": write_1h,
                        "ephemeral_5m_input_tokens": write_5m,
                    },
                    "cache_read_input_tokens": cached,
                    "output_tokens": output,
                    "server_tool_use": {"web_search_requests": 0},
                    "api_key_id": dims["api_key_id"],
                    "workspace_id": dims["workspace_id"],
                    "model": dims["model"],
                    "service_tier": dims["service_tier"],
                    "context_window": None,
                }
            )
    return results


def _error(
    provider: str, status: int, kind: str, message: str
) -> tuple[int, dict[str, str], bytes]:
    if provider == "anthropic":
        body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return status, {"Content-Type": "application/json"}, json.dumps(body).encode()


def _handler(server: ProviderApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            parts = urlsplit(self.path)
            query = parse_qs(parts.query, keep_blank_values=True)
            try:
                status, headers, body = server.answer(parts.path, query, dict(self.headers.items()))
            except Exception as exc:  # a test's switch broke the page: say so, as a 500
                status, headers, body = 500, {}, f"{type(exc).__name__}: {exc}".encode()
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return None

    return Handler


@pytest.fixture
def provider_api_server() -> Iterator[ProviderApiServer]:
    with ProviderApiServer() as server:
        yield server


def sample(server: ProviderApiServer, start: date, days: int = 7) -> None:
    """A week of figures for both providers (for trying the server by hand)."""
    for offset in range(days):
        day = start + timedelta(days=offset)
        server.costs["openai"].append(
            Cost(
                day=day,
                amount=Decimal("12.50"),
                line_item="gpt-4o-2024-08-06, input",
                project_id="proj_web",
            )
        )
        server.usage["openai"].append(
            Usage(
                day=day,
                model="gpt-4o-2024-08-06",
                project_id="proj_web",
                api_key_id="key_a",
                requests=120,
                input_tokens=90_000,
                cached_input_tokens=10_000,
                output_tokens=20_000,
            )
        )
        server.costs["anthropic"].append(
            Cost(
                day=day,
                amount=Decimal("3.2150"),
                line_item="Claude Sonnet 4 Usage - Input Tokens",
                model="claude-sonnet-4-20250514",
                token_type="uncached_input_tokens",
            )
        )
        server.usage["anthropic"].append(
            Usage(
                day=day,
                model="claude-sonnet-4-20250514",
                api_key_id="apikey_01",
                input_tokens=50_000,
                cached_input_tokens=5_000,
                cache_write_5m_tokens=1_000,
                output_tokens=8_000,
            )
        )


if __name__ == "__main__":
    with ProviderApiServer() as running:
        sample(running, datetime.now(UTC).date() - timedelta(days=7))
        for name in PREFIXES:
            print(f"{name}: base URL {running.base_url(name)}  admin key {running.key(name)}")
        threading.Event().wait()
