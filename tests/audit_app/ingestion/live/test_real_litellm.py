"""A real LiteLLM proxy (1.106.12, mock models) and the real openai SDK against the live
receivers, through both routes: LiteLLM's `generic_api` callback, configured by README.md's
block verbatim, and LiteLLM's own OpenTelemetry callback; then apps instrumented with
opentelemetry-instrumentation-openai-v2 and with OpenLLMetry calling the proxy.

Each call's truth is what LiteLLM answered the client: the response id, its usage, the
`x-litellm-response-cost` header (or a streamed answer's usage `cost`). After `land_live` every
call counts once, with those tokens and that cost, in the workload its tags or metadata name;
`claude-sonnet` (an alias of anthropic/claude-3-5-sonnet-20241022, which LiteLLM 1.106.12 does
not price: it logs 0) is priced by its deployment model's price card, and streamed calls count
as streamed. The clients run from their own virtualenv (tests/support/llm_clients.py).
"""

from __future__ import annotations

import io
import json
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db.models import Sum

from audit_app.access.tokens import api_token_issue
from audit_app.ingestion.live.records import decode_requests
from audit_app.models import HourlyRollup, LiveBatch, LiveRecordKey, PriceCard, Upload
from audit_app.reporting.filters import SpendFilters
from audit_app.reporting.spend import spend_breakdown
from tests.support.llm_clients import (
    MASTER_KEY,
    RunningProxy,
    client_calls,
    clients_venv,
    proxy_running,
)
from tests.support.paths import TESTS_DIR

pytestmark = [pytest.mark.serial, pytest.mark.django_db(transaction=True)]

README = TESTS_DIR.parent / "README.md"
README_MARKER = "<!-- litellm-proxy-config -->"
CALLS = 200
WORKLOADS = ("support-bot", "nightly-summaries", "search-rerank", "agent-planner")
ALIAS, ALIAS_DEPLOYMENT = "claude-sonnet", "claude-3-5-sonnet-20241022"
MODELS = f"""\
model_list:
  - model_name: gpt-4o
    litellm_params:
      model: openai/gpt-4o
      api_key: sk-fake-openai-key
      mock_response: "Here is the summary you asked for."
  - model_name: {ALIAS}
    litellm_params:
      model: anthropic/{ALIAS_DEPLOYMENT}
      api_key: sk-ant-fake-key
      mock_response: "A short answer."
general_settings:
  master_key: {MASTER_KEY}
"""
# The product's price card for the deployment model: Anthropic's list price for Claude 3.5
# Sonnet, USD per million input and output tokens (the shipped catalog has no retired models).
ALIAS_CARD = (Decimal(3), Decimal(15))
MILLION = Decimal(1_000_000)
NANO = Decimal("0.000000001")


# --- The calls and what LiteLLM answered ------------------------------------------------------


def call_plan(count: int = CALLS, *, tags_in_header: bool = False) -> list[dict[str, Any]]:
    """`count` calls over four workloads, one in five to the alias, one in three streamed; the
    workload named three ways in turn: a `workload:` tag in `metadata.tags`, the same tag in
    the request's own `tags` (LiteLLM's request_tags; with `tags_in_header`, in the
    `x-litellm-tags` header instead, as LiteLLM's OTel spans never carry the body's `tags`), a
    `workload` metadata key."""
    plan = []
    for i in range(count):
        workload = WORKLOADS[i % len(WORKLOADS)]
        metadata: dict[str, Any] = {"team": f"team-{i % 3}"}
        call: dict[str, Any] = {
            "model": ALIAS if i % 5 == 0 else "gpt-4o",
            "stream": (i // 4) % 3 == 0,
            "workload": workload,
            "metadata": metadata,
        }
        form = (i // 2) % 3
        if form == 0:
            metadata["tags"] = [f"workload:{workload}"]
        elif form == 1 and tags_in_header:
            call["headers"] = {"x-litellm-tags": f"workload:{workload}"}
        elif form == 1:
            call["tags"] = [f"workload:{workload}"]
        else:
            metadata["workload"] = workload
        plan.append(call)
    return plan


@dataclass(frozen=True)
class Answered:
    """One call as LiteLLM answered it."""

    id: str
    workload: str
    model: str
    stream: bool
    input_tokens: int
    output_tokens: int
    cost: Decimal


def answered(plan: list[dict[str, Any]], answers: list[dict[str, Any]]) -> list[Answered]:
    assert len(answers) == len(plan)
    out = []
    for call, answer in zip(plan, answers, strict=True):
        assert answer["id"] and answer["prompt_tokens"] and answer["completion_tokens"], answer
        # LiteLLM states no cost for a call it cannot price (the alias), nor a zero one.
        assert (answer["cost"] is None) == (call["model"] == ALIAS), answer
        out.append(
            Answered(
                id=answer["id"],
                workload=call["workload"],
                model=call["model"],
                stream=call["stream"],
                input_tokens=answer["prompt_tokens"],
                output_tokens=answer["completion_tokens"],
                cost=Decimal(answer["cost"] or 0),
            )
        )
    assert len({a.id for a in out}) == len(out), "LiteLLM answered a call id twice"
    return out


# --- Waiting and landing -----------------------------------------------------------------------


def wait_for(check: Callable[[], Any], *, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"{what} did not happen within {timeout:.0f} s")


def waiting_ids(source: str) -> set[str]:
    """The request ids of the records received from ``source`` and not landed yet."""
    ids: set[str] = set()
    for batch in LiveBatch.objects.filter(source=source, landed_at__isnull=True):
        ids.update(r.request_id for r in decode_requests(bytes(batch.records)))
    return ids


def received_records(source: str) -> int:
    return LiveBatch.objects.filter(source=source).aggregate(n=Sum("record_count"))["n"] or 0


def wait_until_quiet(source: str, *, minimum: int, quiet: float, timeout: float) -> int:
    """The records received from ``source`` once at least ``minimum`` came and none came for
    ``quiet`` seconds (an exporter's batches arrive on its own schedule)."""
    deadline = time.monotonic() + timeout
    seen, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        count = received_records(source)
        if count != seen:
            seen, since = count, time.monotonic()
        elif count >= minimum and time.monotonic() - since >= quiet:
            return count
        time.sleep(0.25)
    raise AssertionError(f"only {seen} {source} records arrived (wanted {minimum} or more)")


def land() -> dict[str, Any]:
    out = io.StringIO()
    call_command("land_live", "--json", stdout=out)
    report: dict[str, Any] = json.loads(out.getvalue())
    return report


# --- What the product shows --------------------------------------------------------------------


@dataclass
class Expected:
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    streamed: int = 0
    logged_cost: Decimal = Decimal(0)
    estimated_cost: Decimal = Decimal(0)


def expected_by_workload(calls: list[Answered]) -> dict[str, Expected]:
    """Per workload, worked out from LiteLLM's answers: a call LiteLLM priced (cost > 0) keeps
    that cost; one it could not price (the alias: 0) is its tokens at the deployment model's
    card."""
    out: dict[str, Expected] = defaultdict(Expected)
    for call in calls:
        row = out[call.workload]
        row.requests += 1
        row.input_tokens += call.input_tokens
        row.output_tokens += call.output_tokens
        row.streamed += call.stream
        if call.cost > 0:
            row.logged_cost += call.cost
        else:
            assert call.model == ALIAS, call
            row.estimated_cost += (
                call.input_tokens * ALIAS_CARD[0] + call.output_tokens * ALIAS_CARD[1]
            ) / MILLION
    return dict(out)


def shown_by_workload(day: Any) -> dict[str, Expected]:
    """The same figures as the product shows them: money and tokens from the spend read
    model, streamed calls from the rollups."""
    report = spend_breakdown(group_by="workload", filters=SpendFilters(start=day, end=day))
    out = {
        row.key: Expected(
            requests=row.requests,
            input_tokens=row.input_tokens,
            output_tokens=row.output_tokens,
            logged_cost=row.logged_cost_usd,
            estimated_cost=row.estimated_cost_usd,
        )
        for row in report.rows
    }
    streamed = HourlyRollup.objects.values("workload").annotate(n=Sum("streaming_requests"))
    for row in streamed:
        out[row["workload"]].streamed = row["n"]
    return out


def assert_shown_as_answered(calls: list[Answered]) -> None:
    expected = expected_by_workload(calls)
    [day] = {u.stream_day for u in Upload.objects.exclude(stream_day=None)}
    shown = shown_by_workload(day)
    assert set(shown) == set(WORKLOADS)
    for name in WORKLOADS:
        want, got = expected[name], shown[name]
        assert (got.requests, got.input_tokens, got.output_tokens, got.streamed) == (
            want.requests,
            want.input_tokens,
            want.output_tokens,
            want.streamed,
        ), name
        assert got.logged_cost == want.logged_cost.quantize(NANO), name
        assert abs(got.estimated_cost - want.estimated_cost) < NANO, name
    # One id per provider's model: LiteLLM's routed "openai/gpt-4o" is stored as OpenAI's.
    models = HourlyRollup.objects.values_list("provider", "model").distinct()
    assert set(models) == {("openai", "gpt-4o"), ("anthropic", ALIAS_DEPLOYMENT)}


# --- The callback route, configured as README.md says -----------------------------------------


def readme_config(endpoint_base: str, token: str) -> str:
    """README.md's LiteLLM block (the YAML fence after its marker) with this server's address
    and token in place of the placeholders."""
    text = README.read_text()
    assert README_MARKER in text, f"README.md lost its {README_MARKER} marker"
    after = text.split(README_MARKER, 1)[1]
    block = re.search(r"```yaml\n(.*?)```", after, re.S)
    assert block, "no ```yaml block after the marker"
    config = block.group(1)
    assert "https://audit.example.com" in config and "isa_..." in config
    return config.replace("https://audit.example.com", endpoint_base).replace("isa_...", token)


@pytest.fixture(scope="module")
def llm_venv() -> Path:
    return clients_venv()


@pytest.fixture
def token(engineer_user: Any) -> str:
    return api_token_issue(user=engineer_user).key


@pytest.fixture
def alias_card(db: Any) -> None:
    PriceCard.objects.create(
        provider="anthropic",
        model=ALIAS_DEPLOYMENT,
        input_usd_per_mtok=ALIAS_CARD[0],
        output_usd_per_mtok=ALIAS_CARD[1],
        valid_from=date(2024, 10, 22),
    )


@pytest.fixture
def proxy_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "litellm"


def test_the_readme_callback_config_lands_every_call_once_with_litellms_numbers(
    live_server: Any, llm_venv: Path, token: str, proxy_dir: Path, alias_card: None
) -> None:
    config = MODELS + readme_config(live_server.url, token)
    plan = call_plan()
    with proxy_running(llm_venv, config, proxy_dir) as proxy:
        calls = answered(plan, run(llm_venv, proxy, plan))
        ids = {c.id for c in calls}
        try:
            wait_for(lambda: ids <= waiting_ids("litellm"), timeout=60, what="every call posted")
        except AssertionError:
            missing = len(ids - waiting_ids("litellm"))
            log = proxy.log_text()[-3000:]
            raise AssertionError(f"{missing} calls never posted:\n{log}") from None
    report = land()
    posted = received_records("litellm")
    # Every call once by its LiteLLM id; the repeats LiteLLM posts (a call still queued when
    # the next call's post goes out) counted as sent again, never twice.
    assert set(LiveRecordKey.objects.values_list("key", flat=True)) == ids
    assert (report["landed"], report["records"], report["duplicates"]) == (
        CALLS,
        posted,
        posted - CALLS,
    )
    assert_shown_as_answered(calls)


def run(venv: Path, proxy: RunningProxy, plan: list[dict[str, Any]], **kw: Any) -> Any:
    calls = [{k: v for k, v in call.items() if k != "workload"} for call in plan]
    return client_calls(
        venv, base_url=f"{proxy.base_url}/v1", api_key=proxy.master_key, calls=calls, **kw
    )


# --- LiteLLM's own OpenTelemetry callback -----------------------------------------------------


def test_litellms_otel_callback_lands_every_call_once_with_litellms_numbers(
    live_server: Any, llm_venv: Path, token: str, proxy_dir: Path, alias_card: None
) -> None:
    config = MODELS + 'litellm_settings:\n  callbacks: ["otel"]\n'
    env = {
        "OTEL_EXPORTER": "otlp_http",
        "OTEL_ENDPOINT": f"{live_server.url}/api/v1/otlp",
        "OTEL_HEADERS": f"Authorization=Bearer {token}",
        # The test's own pace: the SDK's default exports every 5 s.
        "OTEL_BSP_SCHEDULE_DELAY": "500",
    }
    plan = call_plan(tags_in_header=True)
    with proxy_running(llm_venv, config, proxy_dir, env=env) as proxy:
        calls = answered(plan, run(llm_venv, proxy, plan))
        wait_until_quiet("otlp", minimum=CALLS, quiet=3.0, timeout=90)
    report = land()
    assert report["landed"] == CALLS
    # The proxy's other spans (its server, auth and router spans) are counted, not landed.
    ignored = LiveBatch.objects.aggregate(n=Sum("rows_ignored"))["n"]
    assert ignored >= CALLS
    assert_shown_as_answered(calls)


# --- Apps instrumented with openai-v2 or OpenLLMetry, calling the proxy -----------------------

INSTRUMENTED_CALLS = 16  # a third streamed


@pytest.fixture(scope="module")
def plain_proxy(llm_venv: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProxy]:
    with proxy_running(llm_venv, MODELS, tmp_path_factory.mktemp("litellm-plain")) as proxy:
        yield proxy


# Whether the instrumentation's span says a call streamed: OpenLLMetry writes
# `gen_ai.is_streaming`; openai-v2 2.4b0 writes nothing about it (nor a first-token time), so
# its streamed calls count as not streamed.
@pytest.mark.parametrize(
    ("instrumentation", "says_streaming"), [("openai-v2", False), ("openllmetry", True)]
)
def test_an_instrumented_app_lands_one_row_per_call_with_its_tokens(
    live_server: Any,
    llm_venv: Path,
    plain_proxy: RunningProxy,
    token: str,
    instrumentation: str,
    says_streaming: bool,
) -> None:
    workload = f"{instrumentation}-app"
    plan = [
        {"model": "gpt-4o", "stream": i % 3 == 0, "workload": workload}
        for i in range(INSTRUMENTED_CALLS)
    ]
    otlp = {
        "endpoint": f"{live_server.url}/v1/traces",
        "token": token,
        "resource": {"service.name": "docs-assistant", "workload": workload},
    }
    answers = run(
        llm_venv, plain_proxy, plan, concurrency=4, instrumentation=instrumentation, otlp=otlp
    )
    # The script flushed its exporter before it ended: every span is here.
    report = land()
    assert report["landed"] == INSTRUMENTED_CALLS
    rows = HourlyRollup.objects.aggregate(
        requests=Sum("requests"),
        input_tokens=Sum("input_tokens"),
        output_tokens=Sum("output_tokens"),
        streamed=Sum("streaming_requests"),
    )
    assert rows == {
        "requests": INSTRUMENTED_CALLS,
        "input_tokens": sum(a["prompt_tokens"] for a in answers),
        "output_tokens": sum(a["completion_tokens"] for a in answers),
        "streamed": sum(1 for call in plan if call["stream"]) if says_streaming else 0,
    }
    assert set(HourlyRollup.objects.values_list("workload", flat=True)) == {workload}
    assert set(HourlyRollup.objects.values_list("provider", "model")) == {("openai", "gpt-4o")}
