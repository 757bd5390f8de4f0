"""`read_report`, the package's one entry: what it refuses before any request, a whole report
from both providers, raw results that store as JSON, and the local server's own checks of
what a reader sends."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from datetime import date
from decimal import Decimal

import pytest

from audit_app.ingestion.provider_apis import DEFAULT_BASE_URLS, KINDS, read_report
from tests.support.provider_api_server import Cost, ProviderApiServer, Usage

DAY = date(2025, 5, 1)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"kind": "azure"}, "'azure' is not a provider API kind; use one of openai, anthropic."),
        ({"end": DAY}, "the window ends (2025-05-01) on or before it starts (2025-05-01)."),
        ({"api_key": "  "}, 'source "openai-prod" has no admin key.'),
    ],
)
def test_what_cannot_be_asked_is_refused_before_any_request(
    provider_api_server: ProviderApiServer, changes: dict[str, object], message: str
) -> None:
    options: dict[str, object] = {
        "kind": "openai",
        "base_url": provider_api_server.base_url("openai"),
        "api_key": provider_api_server.openai_key,
        "start": DAY,
        "end": date(2025, 5, 2),
        "source_name": "openai-prod",
        **changes,
    }
    with pytest.raises(ValueError) as caught:
        read_report(**options)  # type: ignore[arg-type]
    assert str(caught.value) == message
    assert provider_api_server.requests == []


def test_the_kinds_and_their_default_addresses() -> None:
    assert KINDS == ("openai", "anthropic")
    assert DEFAULT_BASE_URLS == {
        "openai": "https://api.openai.com/v1",
        "anthropic": "https://api.anthropic.com/v1",
    }


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_report_holds_both_endpoints_and_its_raw_results_store_as_json(
    provider_api_server: ProviderApiServer, kind: str
) -> None:
    provider_api_server.set_data(
        kind,
        costs=[Cost(day=DAY, amount=Decimal("0.07"), line_item="m, input", model="m")],
        usage=[Usage(day=DAY, model="m", requests=3, input_tokens=40, output_tokens=9)],
    )
    report = read_report(
        kind=kind,
        base_url=provider_api_server.base_url(kind),
        api_key=provider_api_server.key(kind),
        start=DAY,
        end=date(2025, 5, 2),
        source_name="prod",
    )
    assert (report.provider, report.start, report.end, report.pages_read) == (
        kind,
        DAY,
        date(2025, 5, 2),
        2,
    )
    assert [c.amount for c in report.costs] == [Decimal("0.07")]
    assert [(u.input_tokens, u.output_tokens) for u in report.usage] == [(40, 9)]
    raws = [line.raw for line in report.costs] + [line.raw for line in report.usage]
    for raw in raws:
        assert json.loads(json.dumps(raw)) == raw
    assert provider_api_server.key(kind) not in repr(report)


def _get(url: str, headers: dict[str, str]) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def test_the_server_refuses_what_the_providers_refuse(
    provider_api_server: ProviderApiServer,
) -> None:
    openai = provider_api_server.base_url("openai") + "/organization/costs"
    bearer = {"Authorization": f"Bearer {provider_api_server.openai_key}"}
    # group_by without its brackets is not a parameter the reference names.
    status, body = _get(f"{openai}?start_time=1746057600&group_by=line_item", bearer)
    assert (status, body["error"]["message"]) == (400, "unknown parameter group_by")  # type: ignore[index]
    status, body = _get(f"{openai}?start_time=1746057600&limit=181", bearer)
    assert status == 400
    anthropic = provider_api_server.base_url("anthropic") + "/organizations/cost_report"
    key = {"x-api-key": provider_api_server.anthropic_key}
    status, body = _get(f"{anthropic}?starting_at=2025-05-01T00:00:00Z", key)
    assert (status, body["error"]["type"]) == (400, "invalid_request_error")  # type: ignore[index]
    versioned = {**key, "anthropic-version": "2023-06-01"}
    status, body = _get(f"{anthropic}?starting_at=2025-05-01T00:00:00Z&group_by[]=model", versioned)
    assert (status, body["error"]["message"]) == (400, "group_by[] cannot be model")  # type: ignore[index]
    status, body = _get(f"{anthropic}?starting_at=2025-05-01T00:00:00Z&limit=1", versioned)
    assert (status, body["has_more"], len(body["data"])) == (200, False, 1)  # type: ignore[arg-type]


def test_the_servers_totals_are_its_data(provider_api_server: ProviderApiServer) -> None:
    provider_api_server.set_data(
        "anthropic",
        costs=[
            Cost(day=DAY, amount=Decimal("1.5")),
            Cost(day=date(2025, 5, 2), amount=Decimal("0.25")),
        ],
        usage=[Usage(day=DAY, model="m", requests=5, input_tokens=7, cache_write_1h_tokens=2)],
    )
    assert provider_api_server.cost_total("anthropic", DAY, date(2025, 5, 2)) == Decimal("1.5")
    assert provider_api_server.cost_total("anthropic", DAY, date(2025, 5, 3)) == Decimal("1.75")
    # Anthropic's usage report has no request count.
    assert provider_api_server.usage_totals("anthropic", DAY, date(2025, 5, 2)) == {
        "requests": 0,
        "input": 7,
        "output": 0,
        "cached_input": 0,
        "cache_write": 2,
    }


def test_the_errors_pickle_whole() -> None:
    import pickle

    from audit_app.ingestion.provider_apis import (
        ProviderMalformed,
        ProviderRateLimited,
        ProviderRefused,
        ProviderUnavailable,
    )

    for error, attributes in (
        (ProviderRefused("refused.", status=403), {"status": 403}),
        (ProviderRateLimited("slow.", retry_after=12.5), {"retry_after": 12.5}),
        (ProviderUnavailable("down.", status=502), {"status": 502}),
        (ProviderMalformed("bad.", field="data[0].x", page=3), {"field": "data[0].x", "page": 3}),
    ):
        copy = pickle.loads(pickle.dumps(error))
        assert (type(copy), str(copy)) == (type(error), str(error))
        assert {name: getattr(copy, name) for name in attributes} == attributes
