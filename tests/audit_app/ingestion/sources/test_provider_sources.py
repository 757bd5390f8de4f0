"""`openai` and `anthropic` billing sources end to end: `manage.py sources --poll NAME` against
the local provider API server (several pages, through the outbound client), then the bills,
spend by model and workload, a second poll, a restated day, a 429 then success, a 401 and a
malformed page. Expected figures are worked out by hand in each test."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from audit_app.costs.bills import bills_summary, upload_billing
from audit_app.ingestion.sources import poll_wait
from audit_app.models import BillingCharge, BillingSource, DailyRollup, ProviderUsage, Upload
from audit_app.reporting.filters import SpendFilters
from audit_app.reporting.spend import spend_breakdown
from tests.support.provider_api_server import Cost, ProviderApiServer, Usage

pytestmark = pytest.mark.django_db

TODAY = timezone.now().date()
DAYS = [TODAY - timedelta(days=n) for n in (4, 3, 2, 1)]  # four complete days


@pytest.fixture
def provider_api_server() -> Iterator[ProviderApiServer]:
    with ProviderApiServer() as server:
        yield server


def _openai_data(server: ProviderApiServer) -> None:
    """Per day: gpt-4o $1.25 input + $2.50 output (proj_web), gpt-4o-mini $0.30 (proj_batch),
    web search $0.10 (proj_web, no model); usage of gpt-4o by two keys, gpt-4o-mini in batch,
    and an unknown model with no cost."""
    costs, usage = [], []
    for day in DAYS:
        costs += [
            Cost(
                day=day,
                amount=Decimal("1.25"),
                line_item="gpt-4o-2024-08-06, input",
                project_id="proj_web",
            ),
            Cost(
                day=day,
                amount=Decimal("2.50"),
                line_item="gpt-4o-2024-08-06, output",
                project_id="proj_web",
            ),
            Cost(
                day=day,
                amount=Decimal("0.30"),
                line_item="gpt-4o-mini-2024-07-18, input",
                project_id="proj_batch",
            ),
            Cost(
                day=day,
                amount=Decimal("0.10"),
                line_item="web search tool calls",
                project_id="proj_web",
            ),
        ]
        usage += [
            Usage(
                day=day,
                model="gpt-4o-2024-08-06",
                project_id="proj_web",
                api_key_id="key_a",
                requests=100,
                input_tokens=90_000,
                cached_input_tokens=10_000,
                output_tokens=20_000,
            ),
            Usage(
                day=day,
                model="gpt-4o-2024-08-06",
                project_id="proj_web",
                api_key_id="key_b",
                requests=50,
                input_tokens=30_000,
                output_tokens=10_000,
            ),
            Usage(
                day=day,
                model="gpt-4o-mini-2024-07-18",
                project_id="proj_batch",
                api_key_id="key_c",
                batch=True,
                requests=10,
                input_tokens=1_000,
                output_tokens=100,
            ),
            Usage(
                day=day,
                model="my-model-x",
                project_id="proj_web",
                api_key_id="key_a",
                requests=5,
                input_tokens=1_000,
                output_tokens=100,
            ),
        ]
    server.set_data("openai", costs=costs, usage=usage)


def _source(server: ProviderApiServer, kind: str = "openai", **fields: Any) -> BillingSource:
    values = {
        "name": f"{kind}-prod",
        "kind": kind,
        "location": server.base_url(kind),
        "api_key": server.key(kind),
        "format": f"{kind}-costs-api",
        "start_date": DAYS[0],
        **fields,
    }
    return BillingSource.objects.create(**values)


def _poll(name: str) -> str:
    out = io.StringIO()
    call_command("sources", "--poll", name, stdout=out)
    return out.getvalue()


def _billed() -> Decimal:
    return sum(
        (
            c.billed_cost
            for c in BillingCharge.objects.filter(
                superseded_by__isnull=True, upload__status=Upload.Status.SUCCEEDED
            )
        ),
        Decimal(0),
    )


def _spend(group_by: str) -> dict[str, Decimal]:
    filters = SpendFilters(start=DAYS[0], end=DAYS[-1])
    return {
        row.key: row.api_spend_usd
        for row in spend_breakdown(group_by=group_by, filters=filters).rows
    }


def test_an_openai_source_lands_every_page_to_the_cent(
    provider_api_server: ProviderApiServer,
) -> None:
    _openai_data(provider_api_server)
    _source(provider_api_server)

    out = _poll("openai-prod")

    # 4 days at 2 a page: 2 cost pages and 2 usage pages, each through the outbound client.
    assert len(provider_api_server.asked("openai", "costs")) == 2
    assert len(provider_api_server.asked("openai", "usage")) == 2
    assert f"days {DAYS[0]}..{DAYS[-1]}, 4 pages read" in out
    upload = Upload.objects.get()
    assert (upload.status, upload.format) == ("succeeded", "openai-costs-api")
    assert upload.source_object == f"{DAYS[0]}..{DAYS[-1]}"
    # Bills: 4 days x (1.25 + 2.50 + 0.30 + 0.10) = 16.60, billed and effective.
    assert _billed() == Decimal("16.60")
    summary = bills_summary()
    assert summary.billed_cost == {"USD": Decimal("16.60")}
    assert summary.effective_cost == {"USD": Decimal("16.60")}
    # Spend by model: the report's cost where no token log covers the days.
    by_model = _spend("model")
    assert by_model["gpt-4o-2024-08-06"] == Decimal("15.00")  # 4 x 3.75
    assert by_model["gpt-4o-mini-2024-07-18"] == Decimal("1.20")  # 4 x 0.30
    assert by_model["web search tool calls"] == Decimal("0.40")  # 4 x 0.10
    # The unknown model is listed, unpriced, never dropped: 5 requests a day.
    filters = SpendFilters(start=DAYS[0], end=DAYS[-1])
    rows = {row.key: row for row in spend_breakdown(group_by="model", filters=filters).rows}
    assert rows["my-model-x"].unpriced_requests == 20
    assert rows["my-model-x"].api_spend_usd == 0
    # Workloads are projects: proj_web 4 x (3.75 + 0.10), proj_batch 4 x 0.30.
    by_workload = _spend("workload")
    assert by_workload["proj_web"] == Decimal("15.40")
    assert by_workload["proj_batch"] == Decimal("1.20")
    # Tokens: gpt-4o input 4 x (90,000 + 10,000 cached + 30,000) = 520,000.
    gpt4o = DailyRollup.objects.filter(model="gpt-4o-2024-08-06")
    assert sum(r.input_tokens for r in gpt4o) == 520_000
    assert sum(r.cached_input_tokens for r in gpt4o) == 40_000
    assert sum(r.requests for r in gpt4o) == 600


def test_a_second_poll_adds_nothing(provider_api_server: ProviderApiServer) -> None:
    _openai_data(provider_api_server)
    _source(provider_api_server)
    _poll("openai-prod")

    out = _poll("openai-prod")

    assert Upload.objects.count() == 1
    assert "1 unchanged, 0 new uploads" in out
    assert _billed() == Decimal("16.60")
    assert sum(_spend("workload").values()) == Decimal("16.60")


def test_a_restated_day_replaces_its_figures_and_shows_on_the_upload(
    provider_api_server: ProviderApiServer, finops_user: Any
) -> None:
    _openai_data(provider_api_server)
    source = _source(provider_api_server)
    _poll("openai-prod")
    restated = DAYS[-1]
    # The provider revises the last day: gpt-4o input 1.25 -> 2.00, the rest as before.
    provider_api_server.restate(
        "openai",
        restated,
        costs=[
            Cost(
                day=restated,
                amount=Decimal("2.00"),
                line_item="gpt-4o-2024-08-06, input",
                project_id="proj_web",
            ),
            Cost(
                day=restated,
                amount=Decimal("2.50"),
                line_item="gpt-4o-2024-08-06, output",
                project_id="proj_web",
            ),
            Cost(
                day=restated,
                amount=Decimal("0.30"),
                line_item="gpt-4o-mini-2024-07-18, input",
                project_id="proj_batch",
            ),
            Cost(
                day=restated,
                amount=Decimal("0.10"),
                line_item="web search tool calls",
                project_id="proj_web",
            ),
        ],
    )

    _poll("openai-prod")

    first, second = Upload.objects.order_by("pk")
    assert second.status == "succeeded"
    # 16.60 + 0.75, never both days added.
    assert _billed() == Decimal("17.35")
    assert sum(_spend("workload").values()) == Decimal("17.35")
    assert _spend("model")["gpt-4o-2024-08-06"] == Decimal("15.75")
    # The second poll read the last three complete days again (look-back), and shows the one
    # day whose cost changed, before and after.
    assert second.source_object == f"{DAYS[1]}..{DAYS[-1]}"
    changed = upload_billing(second).restated
    assert [(r.period_start.date(), r.billed_before, r.billed_after) for r in changed] == [
        (restated, {"USD": Decimal("4.15")}, {"USD": Decimal("4.90")})
    ]
    client = Client()
    client.force_login(finops_user)
    page = client.get(f"/uploads/{second.pk}/").content.decode()
    restated_table = page.split('data-billing="restated"')[1].split("</table>")[0]
    assert f"{restated:%Y-%m-%d}" in restated_table
    assert "$4.15" in restated_table and "$4.90" in restated_table
    # The earlier upload keeps its first day current (4 usage lines and the web search cost
    # of that day), the days read again moved on.
    current = ProviderUsage.objects.filter(upload=first, superseded_by__isnull=True)
    assert {row.day for row in current} == {DAYS[0]} and current.count() == 5
    source.refresh_from_db()
    assert source.last_changed_at is not None and source.last_error == ""


def test_a_429_then_success_lands_once(provider_api_server: ProviderApiServer) -> None:
    _openai_data(provider_api_server)
    _source(provider_api_server)
    provider_api_server.fail(429, times=2, retry_after="0", provider="openai")

    _poll("openai-prod")

    assert Upload.objects.get().status == "succeeded"
    assert _billed() == Decimal("16.60")
    assert BillingSource.objects.get().consecutive_failures == 0


def test_a_429_storm_marks_the_source_and_lands_nothing(
    provider_api_server: ProviderApiServer,
) -> None:
    _openai_data(provider_api_server)
    _source(provider_api_server, poll_every_minutes=60)
    provider_api_server.fail(429, times=50, retry_after="0", provider="openai")

    with pytest.raises(CommandError):
        _poll("openai-prod")

    source = BillingSource.objects.get()
    assert not Upload.objects.exists() and not BillingCharge.objects.exists()
    assert source.consecutive_failures == 1 and "429" in source.last_error
    assert poll_wait(source) == timedelta(minutes=2)  # the usual failure backoff


def test_a_refused_key_is_one_sentence_and_waits_its_interval(
    provider_api_server: ProviderApiServer, caplog: pytest.LogCaptureFixture
) -> None:
    _openai_data(provider_api_server)
    wrong = "sk-admin-wrong-0000000000000000"
    _source(provider_api_server, api_key=wrong, poll_every_minutes=90)
    caplog.set_level(logging.DEBUG)

    with pytest.raises(CommandError) as raised:
        _poll("openai-prod")

    source = BillingSource.objects.get()
    assert not Upload.objects.exists()
    assert "openai-prod" in source.last_error and "401" in source.last_error
    assert source.last_error.count(".") >= 1 and "\n" not in source.last_error
    assert source.consecutive_failures == 1
    assert poll_wait(source) == timedelta(minutes=90)  # never faster than its interval
    assert wrong not in source.last_error and wrong not in str(raised.value)
    assert wrong not in caplog.text


def test_a_malformed_page_names_the_field_and_lands_nothing(
    provider_api_server: ProviderApiServer,
) -> None:
    _openai_data(provider_api_server)
    _source(provider_api_server)

    def drop_amount(page: dict[str, Any]) -> None:
        del page["data"][0]["results"][0]["amount"]

    provider_api_server.break_page("openai", "costs", 2, drop_amount)

    with pytest.raises(CommandError):
        _poll("openai-prod")

    source = BillingSource.objects.get()
    assert "amount" in source.last_error
    assert not Upload.objects.exists() and not BillingCharge.objects.exists()
    assert not ProviderUsage.objects.exists()
    assert "complete_through" not in source.seen  # the next poll reads the same days again


def test_an_anthropic_source_lands_its_workspaces(provider_api_server: ProviderApiServer) -> None:
    """Per day: Sonnet input $3.2150 in workspace wrk_a, output $1.20; usage with cache reads
    and writes by one key. Anthropic gives no request counts: the cost-matched rows count 0."""
    costs, usage = [], []
    for day in DAYS[2:]:
        costs += [
            Cost(
                day=day,
                amount=Decimal("3.2150"),
                line_item="Claude Sonnet 4 Usage - Input Tokens",
                model="claude-sonnet-4-20250514",
                token_type="uncached_input_tokens",
                project_id="wrk_a",
            ),
            Cost(
                day=day,
                amount=Decimal("1.20"),
                line_item="Claude Sonnet 4 Usage - Output Tokens",
                model="claude-sonnet-4-20250514",
                token_type="output_tokens",
                project_id="wrk_a",
            ),
        ]
        usage.append(
            Usage(
                day=day,
                model="claude-sonnet-4-20250514",
                project_id="wrk_a",
                api_key_id="apikey_01",
                input_tokens=50_000,
                cached_input_tokens=5_000,
                cache_write_5m_tokens=1_000,
                output_tokens=8_000,
            )
        )
    provider_api_server.set_data("anthropic", costs=costs, usage=usage)
    _source(provider_api_server, kind="anthropic")

    _poll("anthropic-prod")

    # 2 days x (3.2150 + 1.20) = 8.83
    assert _billed() == Decimal("8.83")
    assert _spend("workload") == {"wrk_a": Decimal("8.83")}
    rows = DailyRollup.objects.filter(provider="anthropic")
    # input = uncached + cache reads + cache writes = 56,000 a day
    assert sum(r.input_tokens for r in rows) == 112_000
    assert sum(r.cache_creation_input_tokens for r in rows) == 2_000
    assert {c.meter_model for c in BillingCharge.objects.all()} == {"claude-sonnet-4-20250514"}


def test_the_poll_json_never_holds_the_key(provider_api_server: ProviderApiServer) -> None:
    _openai_data(provider_api_server)
    _source(provider_api_server)
    out = io.StringIO()
    call_command("sources", "--poll", "openai-prod", "--json", stdout=out)
    listing = io.StringIO()
    call_command("sources", "--json", stdout=listing)

    report = json.loads(out.getvalue())[0]
    assert report["window"] == f"{DAYS[0]}..{DAYS[-1]}" and report["pages_read"] == 4
    key = provider_api_server.key("openai")
    assert key not in out.getvalue() and key not in listing.getvalue()
    assert json.loads(listing.getvalue())[0]["has_api_key"] is True


def test_no_complete_day_yet_reads_nothing(provider_api_server: ProviderApiServer) -> None:
    _source(provider_api_server, start_date=TODAY)

    out = _poll("openai-prod")

    assert "none complete yet" in out
    assert provider_api_server.requests == []
    assert not Upload.objects.exists()
