"""Reading pages through the real HTTP client: 429 retried after the Retry-After asked, 5xx and
unreachable servers retried with backoff, then one sentence; 401 and 403 refused at once;
a page out of shape refused naming its field and page, with nothing returned; a looping
cursor, a redirect and a wrong base URL stopped. The key is in no message, repr or log line."""

from __future__ import annotations

import logging
import socket
import urllib.error
import urllib.request
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest

from audit_app.ingestion.provider_apis import (
    ProviderApiError,
    ProviderMalformed,
    ProviderRateLimited,
    ProviderRefused,
    ProviderUnavailable,
    read_report,
)
from audit_app.ingestion.provider_apis.http import Client, retry_after_seconds
from audit_app.lib.outbound import OutboundPolicy
from tests.support.outbound_peers import Route, http_peer
from tests.support.provider_api_server import Cost, ProviderApiServer, Usage

START, END = date(2025, 3, 1), date(2025, 3, 6)
SOURCES = {"openai": "openai-prod", "anthropic": "anthropic-prod"}


def _fill(server: ProviderApiServer) -> None:
    for provider in ("openai", "anthropic"):
        server.set_data(
            provider,
            costs=[
                Cost(day=date(2025, 3, day), amount=Decimal("1.10"), line_item="gpt-4o, input")
                for day in range(1, 6)
            ],
            usage=[
                Usage(day=date(2025, 3, day), model="m", requests=2, input_tokens=30)
                for day in range(1, 6)
            ],
        )


def _read(server: ProviderApiServer, provider: str = "openai", **kwargs: Any) -> Any:
    options: dict[str, Any] = {
        "kind": provider,
        "base_url": server.base_url(provider),
        "api_key": server.key(provider),
        "start": START,
        "end": END,
        "source_name": SOURCES[provider],
        "sleep": lambda seconds: None,
        **kwargs,
    }
    return read_report(**options)


def test_429_twice_then_success_waits_what_retry_after_asks(
    provider_api_server: ProviderApiServer, caplog: pytest.LogCaptureFixture
) -> None:
    _fill(provider_api_server)
    provider_api_server.fail(429, times=2, retry_after="7")
    sleeps: list[float] = []
    with caplog.at_level(logging.DEBUG):
        report = _read(provider_api_server, sleep=sleeps.append)
    assert sleeps == [7.0, 7.0]
    assert sum(c.amount for c in report.costs) == Decimal("5.50")  # 5 days × 1.10
    statuses = [r.status for r in provider_api_server.asked("openai", "costs")]
    assert statuses == [429, 429, 200, 200, 200]
    assert "retry 1 of 4 in 7 s" in caplog.text
    assert provider_api_server.openai_key not in caplog.text


def test_without_retry_after_the_waits_double(provider_api_server: ProviderApiServer) -> None:
    _fill(provider_api_server)
    provider_api_server.fail(503, times=3)
    sleeps: list[float] = []
    report = _read(provider_api_server, "anthropic", sleep=sleeps.append)
    assert sleeps == [1.0, 2.0, 4.0]
    assert sum(u.input_tokens for u in report.usage) == 150  # 5 days × 30


def test_a_wait_past_the_cap_ends_the_read(
    provider_api_server: ProviderApiServer, settings: Any
) -> None:
    settings.PROVIDER_API_MAX_WAIT_SECONDS = 30
    _fill(provider_api_server)
    provider_api_server.fail(429, times=1, retry_after="3600")
    sleeps: list[float] = []
    with pytest.raises(ProviderRateLimited) as caught:
        _read(provider_api_server, sleep=sleeps.append)
    assert sleeps == []
    assert caught.value.retry_after == 3600.0
    assert str(caught.value) == (
        'OpenAI asked source "openai-prod" to wait 3600 s (429, Retry-After), longer than the '
        "30 s a poll waits; the next poll tries again."
    )


def test_429_on_every_retry_is_rate_limited(provider_api_server: ProviderApiServer) -> None:
    _fill(provider_api_server)
    provider_api_server.fail(429, times=100, retry_after="2")
    sleeps: list[float] = []
    with pytest.raises(ProviderRateLimited) as caught:
        _read(provider_api_server, sleep=sleeps.append, max_retries=3)
    assert sleeps == [2.0, 2.0, 2.0]
    assert caught.value.retry_after == 2.0
    assert str(caught.value) == (
        "OpenAI kept answering 429 (too many requests) to /organization/costs for source "
        '"openai-prod" after 3 retries; the next poll tries again.'
    )


def test_a_5xx_storm_is_unavailable_after_the_retries(
    provider_api_server: ProviderApiServer,
) -> None:
    _fill(provider_api_server)
    provider_api_server.fail(503, times=100)
    sleeps: list[float] = []
    with pytest.raises(ProviderUnavailable) as caught:
        _read(provider_api_server, "anthropic", sleep=sleeps.append)
    assert sleeps == [1.0, 2.0, 4.0, 8.0]
    assert caught.value.status == 503
    assert len(provider_api_server.asked("anthropic", "costs")) == 5
    assert str(caught.value) == (
        'Anthropic answered 503 to /organizations/cost_report for source "anthropic-prod" '
        "after 4 retries."
    )


def test_an_unreachable_server_is_unavailable_after_the_retries() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sleeps: list[float] = []
    with pytest.raises(ProviderUnavailable) as caught:
        read_report(
            kind="openai",
            base_url=f"http://127.0.0.1:{port}/v1",
            api_key="sk-admin-unreachable",
            start=START,
            end=END,
            source_name="openai-prod",
            sleep=sleeps.append,
            max_retries=2,
        )
    assert sleeps == [1.0, 2.0]
    assert caught.value.status is None
    assert str(caught.value).startswith(
        'OpenAI could not be read at /organization/costs for source "openai-prod" after 2 '
        "retries: the server could not be reached"
    )


@pytest.mark.parametrize(
    ("provider", "status", "label"),
    [
        ("openai", 401, "OpenAI"),
        ("anthropic", 401, "Anthropic"),
        ("anthropic", 403, "Anthropic"),
        ("openai", 403, "OpenAI"),
    ],
)
def test_a_refused_key_is_one_sentence_without_the_key(
    provider_api_server: ProviderApiServer,
    caplog: pytest.LogCaptureFixture,
    provider: str,
    status: int,
    label: str,
) -> None:
    _fill(provider_api_server)
    key = provider_api_server.key(provider)
    if status == 403:
        provider_api_server.forbid(provider)
    else:
        key = "sk-admin-WRONG-0123456789abcdef"
    sleeps: list[float] = []
    with caplog.at_level(logging.DEBUG), pytest.raises(ProviderRefused) as caught:
        _read(provider_api_server, provider, api_key=key, sleep=sleeps.append)
    assert caught.value.status == status
    assert str(caught.value) == (
        f'{label} refused the admin key for source "{SOURCES[provider]}" ({status}): use an '
        "organization admin key."
    )
    assert sleeps == []
    for text in (str(caught.value), repr(caught.value), repr(caught.value.args), caplog.text):
        assert key not in text


def test_the_servers_refusal_does_hold_the_key(provider_api_server: ProviderApiServer) -> None:
    """What the reader keeps out of its messages is really there to leak."""
    request = urllib.request.Request(
        provider_api_server.base_url("openai") + "/organization/costs?start_time=0",
        headers={"Authorization": "Bearer sk-admin-WRONG-0123456789abcdef"},
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 401
    assert b"sk-admin-WRONG-0123456789abcdef" in caught.value.read()


def _drop(*path: Any) -> Any:
    def mutate(page: dict[str, Any]) -> None:
        target: Any = page
        for step in path[:-1]:
            target = target[step]
        del target[path[-1]]

    return mutate


def _set(value: Any, *path: Any) -> Any:
    def mutate(page: dict[str, Any]) -> None:
        target: Any = page
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value

    return mutate


@pytest.mark.parametrize(
    ("provider", "endpoint", "mutate", "field", "problem"),
    [
        (
            "openai",
            "costs",
            _drop("data", 0, "results", 0, "amount"),
            "data[0].results[0].amount",
            "is missing",
        ),
        (
            "openai",
            "costs",
            _set("1.10", "data", 0, "results", 0, "amount", "value"),
            "data[0].results[0].amount.value",
            'is the string "1.10", not a number',
        ),
        (
            "openai",
            "usage",
            _set(Decimal("2.5"), "data", 1, "results", 0, "num_model_requests"),
            "data[1].results[0].num_model_requests",
            "is the number 2.5, not a whole number",
        ),
        (
            "openai",
            "usage",
            _set(1741046400 + 3600, "data", 0, "start_time"),
            "data[0].start_time",
            "is 1741050000, not a UTC midnight",
        ),
        ("openai", "costs", _drop("has_more"), "has_more", "is missing"),
        ("openai", "costs", _set("list", "object"), "object", 'is "list", not "page"'),
        (
            "openai",
            "costs",
            _set("NaN", "data", 0, "results", 0, "amount", "value"),
            "data[0].results[0].amount.value",
            'is the string "NaN", not a number',
        ),
        (
            "anthropic",
            "usage",
            _drop("data", 0, "results", 0, "cache_creation"),
            "data[0].results[0].cache_creation",
            "is missing",
        ),
        (
            "anthropic",
            "costs",
            _set("12,5", "data", 1, "results", 0, "amount"),
            "data[1].results[0].amount",
            'is "12,5", not a decimal number',
        ),
        (
            "anthropic",
            "usage",
            _set("2025-03-03", "data", 0, "ending_at"),
            "data[0].ending_at",
            'is "2025-03-03", without a UTC offset',
        ),
    ],
)
def test_a_page_out_of_shape_is_refused_naming_the_field_and_page(
    provider_api_server: ProviderApiServer,
    provider: str,
    endpoint: str,
    mutate: Any,
    field: str,
    problem: str,
) -> None:
    _fill(provider_api_server)
    provider_api_server.break_page(provider, endpoint, 2, mutate)
    with pytest.raises(ProviderMalformed) as caught:
        _read(provider_api_server, provider)
    assert (caught.value.field, caught.value.page) == (field, 2)
    paths = {
        ("openai", "costs"): "/organization/costs",
        ("openai", "usage"): "/organization/usage/completions",
        ("anthropic", "costs"): "/organizations/cost_report",
        ("anthropic", "usage"): "/organizations/usage_report/messages",
    }
    label = {"openai": "OpenAI", "anthropic": "Anthropic"}[provider]
    assert str(caught.value) == (
        f"{label} answered page 2 of {paths[(provider, endpoint)]} for source "
        f'"{SOURCES[provider]}" not in the documented shape: {field} {problem}.'
    )


def _bucket_day(day: int) -> Any:
    """Make page 2's second bucket the day ``day`` of March 2025 (03-01 is 1740787200)."""
    begins = 1740787200 + (day - 1) * 86400

    def mutate(page: dict[str, Any]) -> None:
        page["data"][1]["start_time"] = begins
        page["data"][1]["end_time"] = begins + 86400

    return mutate


@pytest.mark.parametrize(
    ("mutate", "problem"),
    [
        (_bucket_day(1), "is 2025-03-01, a day already answered"),
        (
            _bucket_day(10),
            "is 2025-03-10, outside the days asked (2025-03-01 to 2025-03-06, the end excluded)",
        ),
        (
            _set(1740787200 + 5 * 86400, "data", 1, "end_time"),
            "is 2025-03-04, but the bucket ends 2025-03-06T00:00:00Z, not within that day",
        ),
    ],
)
def test_a_bucket_twice_outside_the_window_or_too_long_is_refused(
    provider_api_server: ProviderApiServer, mutate: Any, problem: str
) -> None:
    _fill(provider_api_server)
    # Page 2 holds 2025-03-03 and 2025-03-04.
    provider_api_server.break_page("openai", "costs", 2, mutate)
    with pytest.raises(ProviderMalformed) as caught:
        _read(provider_api_server)
    assert (caught.value.field, caught.value.page) == ("data[1].start_time", 2)
    assert str(caught.value).endswith(f"not in the documented shape: data[1].start_time {problem}.")


def test_a_cursor_that_loops_is_refused(provider_api_server: ProviderApiServer) -> None:
    _fill(provider_api_server)
    provider_api_server.loop("anthropic", "usage")
    with pytest.raises(ProviderMalformed) as caught:
        _read(provider_api_server, "anthropic")
    assert (caught.value.field, caught.value.page) == ("next_page", 2)
    assert "repeats a cursor already read (the paging loops)" in str(caught.value)


def test_a_wrong_base_url_is_named(provider_api_server: ProviderApiServer) -> None:
    with pytest.raises(ProviderApiError) as caught:
        read_report(
            kind="openai",
            base_url=provider_api_server.root + "/elsewhere/v1",
            api_key=provider_api_server.openai_key,
            start=START,
            end=END,
            source_name="openai-prod",
            sleep=lambda s: None,
        )
    assert type(caught.value) is ProviderApiError
    assert str(caught.value) == (
        'OpenAI answered 404 to /organization/costs for source "openai-prod": check the '
        "source's base URL."
    )


def test_a_redirect_is_not_followed_with_the_key(provider_api_server: ProviderApiServer) -> None:
    _fill(provider_api_server)
    target = provider_api_server.base_url("openai") + "/organization/costs"
    routes = {"/v1/organization/costs": Route(status=302, headers={"Location": target})}
    sleeps: list[float] = []
    with http_peer(routes) as peer, pytest.raises(ProviderApiError) as caught:
        read_report(
            kind="openai",
            base_url=peer.base + "/v1",
            api_key=provider_api_server.openai_key,
            start=START,
            end=END,
            source_name="openai-prod",
            sleep=sleeps.append,
        )
    assert provider_api_server.requests == []
    assert sleeps == []
    assert str(caught.value) == (
        'OpenAI redirected /organization/costs for source "openai-prod" elsewhere, where the '
        "key is not sent: check the source's base URL."
    )


def test_a_private_address_not_allowed_is_refused_at_once(
    provider_api_server: ProviderApiServer,
) -> None:
    sleeps: list[float] = []
    with pytest.raises(ProviderUnavailable) as caught:
        _read(provider_api_server, policy=OutboundPolicy(), sleep=sleeps.append)
    assert sleeps == []
    assert provider_api_server.requests == []
    assert "the address 127.0.0.1 is loopback" in str(caught.value)


def test_retry_after_reads_seconds_and_http_dates() -> None:
    assert retry_after_seconds("12") == 12.0
    assert retry_after_seconds(" 1.5 ") == 1.5
    assert retry_after_seconds("-3") == 0.0
    when = datetime(2015, 10, 21, 7, 28, tzinfo=UTC).timestamp()
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=when - 30) == 30.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=when + 30) == 0.0
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds("inf") is None
    assert retry_after_seconds("nan") is None
    assert retry_after_seconds(None) is None


def test_the_client_never_shows_its_key() -> None:
    client = Client(
        provider="openai",
        base_url="https://api.openai.com/v1",
        source_name="openai-prod",
        headers={"Authorization": "Bearer sk-admin-secret-42"},
        policy=OutboundPolicy(),
        secret="sk-admin-secret-42",
    )
    assert "sk-admin-secret-42" not in repr(client)
    assert client.clean("a sk-admin-secret-42 b") == "a [key] b"


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b'{"object": "page", "data": [], "has_more": false, "next_page": NaN}', "is not JSON"),
        (b"<html>maintenance</html>", "is not JSON"),
        (b'[{"object": "page"}]', "is not a JSON object"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_refused(body: bytes, problem: str) -> None:
    routes = {"/v1/organization/costs": Route(status=200, body=body)}
    with http_peer(routes) as peer, pytest.raises(ProviderMalformed) as caught:
        read_report(
            kind="openai",
            base_url=peer.base + "/v1",
            api_key="sk-admin-peer",
            start=START,
            end=END,
            source_name="openai-prod",
            sleep=lambda s: None,
        )
    assert (caught.value.field, caught.value.page) == ("(body)", 1)
    assert str(caught.value).endswith(f"not in the documented shape: (body) {problem}.")
