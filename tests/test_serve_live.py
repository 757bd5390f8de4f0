"""`make run`'s embedded default receives live data with no service to install: the real OTLP
SDK exporter and a LiteLLM callback post to the server's own port, the worker's embedded beat
lands them within a landing interval with exact totals (a retried export counted once), and a
folder billing source is pulled on schedule."""

from __future__ import annotations

import json
import shutil
import socket
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import REPO_ROOT, stop_process_group
from tests.test_serve import _embedded_env, _manage, _wait_for_health, start_serve

FOCUS_SAMPLE = REPO_ROOT / "tests/fixtures/real/billing/focus-1.0_official-sample_1000rows.csv"
LITELLM_PAYLOAD = (
    REPO_ROOT
    / "tests/fixtures/real/token_logs/litellm_standard_logging_payload_fake-openai-endpoint.jsonl"
)
MAKE_ENGINEER = (
    "from django.contrib.auth import get_user_model;"
    "from django.contrib.auth.models import Group;"
    "u, _ = get_user_model().objects.get_or_create(username='{name}');"
    "u.groups.add(Group.objects.get_or_create(name='{role}')[0])"
)
SPANS = 40
INPUT_TOKENS, OUTPUT_TOKENS = 700, 90


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _token(env: dict[str, str], name: str, role: str) -> str:
    _manage("shell", "-c", MAKE_ENGINEER.format(name=name, role=role), env=env)
    return _manage("issue_token", name, env=env).split()[-1]


def _api(base: str, token: str, path: str, data: Any = None) -> Any:
    request = urllib.request.Request(
        f"{base}{path}",
        data=None if data is None else json.dumps(data).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="GET" if data is None else "POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _until(check: Callable[[], Any], *, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.3)
    raise AssertionError(f"{what} did not happen within {timeout:.0f} s")


def _export_spans(base: str, token: str) -> None:
    """SPANS gen_ai spans and one HTTP span through the real SDK exporter, and the same export
    sent a second time (a client retrying): the server must count each span once."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": "agent", "workload": "live-agent"})
    )
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    for _ in range(SPANS):
        with tracer.start_as_current_span("chat gpt-4o-mini") as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            span.set_attribute("gen_ai.provider.name", "openai")
            span.set_attribute("gen_ai.request.model", "gpt-4o-mini")
            span.set_attribute("gen_ai.usage.input_tokens", INPUT_TOKENS)
            span.set_attribute("gen_ai.usage.output_tokens", OUTPUT_TOKENS)
    with tracer.start_as_current_span("GET /health"):
        pass
    exporter = OTLPSpanExporter(
        endpoint=f"{base}/v1/traces", headers={"Authorization": f"Bearer {token}"}
    )
    spans = memory.get_finished_spans()
    assert len(spans) == SPANS + 1
    assert exporter.export(spans) is SpanExportResult.SUCCESS
    assert exporter.export(spans) is SpanExportResult.SUCCESS  # the retry
    exporter.shutdown()


@pytest.mark.slow
def test_embedded_serve_lands_live_records_and_pulls_a_billing_source(tmp_path: Path) -> None:
    env = _embedded_env(tmp_path) | {
        "LIVE_LAND_EVERY_SECONDS": "2",
        "BILLING_SOURCES_CHECK_EVERY_SECONDS": "2",
    }
    _manage("migrate", "--noinput", env=env)
    engineer = _token(env, "live-engineer", "engineer")
    finops = _token(env, "live-finops", "finops")
    exports = tmp_path / "sources" / "focus"
    exports.mkdir(parents=True)
    shutil.copy(FOCUS_SAMPLE, exports / "export.csv")

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = tmp_path / "serve.log"
    serve = start_serve(port=port, env=env, log_path=log_path)
    try:
        _wait_for_health(base, serve, log_path)
        _export_spans(base, engineer)
        request = urllib.request.Request(
            f"{base}/api/v1/ingest/litellm/",
            data=LITELLM_PAYLOAD.read_bytes(),
            headers={"Authorization": f"Bearer {engineer}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.loads(response.read())["accepted"] == 1
        source = _api(
            base,
            finops,
            "/api/v1/sources/",
            {"name": "drop", "kind": "folder", "location": str(exports), "prefix": "*.csv"},
        )

        def streams() -> dict[str, Any] | None:
            uploads = _api(base, engineer, "/api/v1/uploads/")["results"]
            found = {u["stream_source"]: u for u in uploads if u["stream_source"]}
            return found if set(found) == {"otlp", "litellm"} else None

        # Beat lands every 2 s here; allow for the worker's start and a busy machine.
        found = _until(streams, timeout=45, what="both streams landing")
        otlp = found["otlp"]
        assert (otlp["requests"], otlp["rows_accepted"]) == (SPANS, SPANS)
        assert otlp["input_tokens"] == SPANS * INPUT_TOKENS  # 28,000: the retry added nothing
        assert otlp["output_tokens"] == SPANS * OUTPUT_TOKENS
        assert found["litellm"]["requests"] == 1
        detail = _api(base, engineer, f"/api/v1/uploads/{otlp['id']}/")
        assert detail["stream"]["duplicates"] == SPANS

        def pulled() -> dict[str, Any] | None:
            polled = _api(base, finops, f"/api/v1/sources/{source['id']}/")
            return polled if polled["upload_count"] == 1 else None

        polled = _until(pulled, timeout=45, what="the folder source's first poll")
        assert polled["last_error"] == "" and polled["last_polled_at"]

        def billed() -> dict[str, Any] | None:
            bills = _api(base, finops, "/api/v1/bills/")
            return bills if bills["count"] else None

        # The FOCUS sample's billed cost (tests/fixtures/real/billing/SOURCES.md).
        assert _until(billed, timeout=45, what="the pulled export landing")["billed_cost"] == {
            "USD": "20.52022672899"
        }
    finally:
        stop_process_group(serve)
