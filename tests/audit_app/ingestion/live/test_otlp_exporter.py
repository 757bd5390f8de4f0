"""Real clients against the live server: the OpenTelemetry Python SDK's OTLP/HTTP span exporter
(protobuf, as shipped: TracerProvider + BatchSpanProcessor, then force_flush), and an
OTLP/JSON gzip request as a Collector's `otlphttp` exporter with `encoding: json` sends it.

SDK spans, in the order they end (the order of the export): T0 = 2026-11-30T12:00:00Z.
1. `POST /checkout`, an HTTP server span: ignored.
2. A streamed chat: 1200 input (200 cached) / 300 output tokens, first chunk at 0.35 s, 3.35 s
   long, cost 0.0123, workload `checkout-chat`, user shopper-17: accepted.
3. An embedding of 40 tokens that failed (status ERROR), 0.2 s: accepted, 0 output tokens,
   workload = the caller (service.name).
4. A chat with -7 input tokens: refused, named in the answer.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
import requests
from django.db.models import Sum
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.trace import SpanKind, Status, StatusCode

from audit_app.access.tokens import api_token_issue
from audit_app.ingestion.live.landing import live_land
from audit_app.ingestion.live.records import decode_requests
from audit_app.ingestion.token_logs.base import CanonicalRequest
from audit_app.models import HourlyRollup, LiveBatch, Upload
from tests.audit_app.ingestion.live.otlp_samples import (
    EXPECTED_MESSAGE,
    EXPECTED_REQUESTS,
    T0,
    T0_NANOS,
    json_export,
)

pytestmark = pytest.mark.django_db(transaction=True)

MS = 1_000_000


class Recording(SpanExporter):
    """The real exporter, with each export's outcome kept for the test to read."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.results: list[tuple[int, SpanExportResult]] = []
        self.sent: list[list[ReadableSpan]] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        self.results.append((len(spans), result))
        self.sent.append(list(spans))
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


def _provider(exporter: SpanExporter, *, batch: bool = True) -> TracerProvider:
    provider = TracerProvider(
        resource=Resource.create({"service.name": "checkout-assistant", "team": "payments"})
    )
    processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    return provider


def _emit(provider: TracerProvider) -> list[str]:
    """The four spans of the module docstring; returns their `<trace id>/<span id>`s."""
    tracer = provider.get_tracer("checkout.llm")
    ids = []

    def span(name: str, start_ms: int, end_ms: int, attributes: dict[str, Any], **kw: Any) -> None:
        item = tracer.start_span(
            name,
            kind=kw.get("kind", SpanKind.CLIENT),
            start_time=T0_NANOS + start_ms * MS,
            attributes=attributes,
        )
        if kw.get("error"):
            item.set_status(Status(StatusCode.ERROR, "rate limited"))
        item.end(end_time=T0_NANOS + end_ms * MS)
        context = item.get_span_context()
        ids.append(f"{context.trace_id:032x}/{context.span_id:016x}")

    span("POST /checkout", 0, 4000, {"http.request.method": "POST"}, kind=SpanKind.SERVER)
    span(
        "chat gpt-4o",
        0,
        3350,
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.response.model": "gpt-4o-2024-08-06",
            "gen_ai.usage.input_tokens": 1200,
            "gen_ai.usage.output_tokens": 300,
            "gen_ai.usage.cache_read.input_tokens": 200,
            "gen_ai.request.stream": True,
            "gen_ai.response.time_to_first_chunk": 0.35,
            "gen_ai.usage.cost": 0.0123,
            "workload": "checkout-chat",
            "user.id": "shopper-17",
        },
    )
    span(
        "embeddings text-embedding-3-small",
        5000,
        5200,
        {
            "gen_ai.operation.name": "embeddings",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "text-embedding-3-small",
            "gen_ai.usage.input_tokens": 40,
        },
        error=True,
    )
    span(
        "chat gpt-4o",
        6000,
        7000,
        {
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.usage.input_tokens": -7,
            "gen_ai.usage.output_tokens": 1,
        },
    )
    return ids


def _expected(ids: list[str]) -> list[CanonicalRequest]:
    common = {"team": "payments", "caller": "checkout-assistant", "provider": "openai"}
    return [
        CanonicalRequest(
            **common,
            started_at=T0,
            ended_at=T0 + timedelta(seconds=3.35),
            first_token_at=T0 + timedelta(seconds=0.35),
            workload="checkout-chat",
            end_user="shopper-17",
            model="gpt-4o-2024-08-06",
            operation="chat",
            streaming=True,
            batch_api=False,
            input_tokens=1200,
            output_tokens=300,
            cached_input_tokens=200,
            cost_usd=Decimal("0.0123"),
            status="success",
            request_id=ids[1],
            pool="",
            line=2,
        ),
        CanonicalRequest(
            **common,
            started_at=T0 + timedelta(seconds=5),
            ended_at=T0 + timedelta(seconds=5.2),
            first_token_at=None,
            workload="checkout-assistant",
            end_user="",
            model="text-embedding-3-small",
            operation="embedding",
            streaming=None,
            batch_api=False,
            input_tokens=40,
            output_tokens=0,
            cached_input_tokens=0,
            cost_usd=None,
            status="error",
            request_id=ids[2],
            pool="",
            line=3,
        ),
    ]


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip])
def test_the_sdk_exporter_is_answered_and_its_spans_kept(
    live_server: Any, engineer_user: Any, compression: Compression
) -> None:
    key = api_token_issue(user=engineer_user).key
    exporter = Recording(
        OTLPSpanExporter(
            endpoint=f"{live_server.url}/v1/traces",
            headers={"Authorization": f"Bearer {key}"},
            compression=compression,
        )
    )
    provider = _provider(exporter)
    ids = _emit(provider)
    assert provider.force_flush()
    provider.shutdown()

    assert exporter.results == [(4, SpanExportResult.SUCCESS)]
    [batch] = LiveBatch.objects.all()
    assert decode_requests(batch.records) == _expected(ids)
    assert (batch.source, batch.received_by, batch.landed_at) == ("otlp", engineer_user, None)
    assert (batch.record_count, batch.rows_read, batch.rows_rejected, batch.rows_ignored) == (
        2,
        3,
        1,
        1,
    )
    assert batch.rejects == [
        {
            "line": 4,
            "field": "gen_ai.usage.input_tokens",
            "value": "-7",
            "reason": "`gen_ai.usage.input_tokens` cannot be negative, got '-7'.",
        }
    ]


def test_sdk_spans_land_once_with_exact_totals_when_an_export_is_sent_again(
    live_server: Any, engineer_user: Any
) -> None:
    """The micro-batch landing (`live.landing`) puts the two accepted spans into the day's
    stream upload; the same export sent again (a retry after a lost answer) adds nothing."""
    key = api_token_issue(user=engineer_user).key
    exporter = Recording(
        OTLPSpanExporter(
            endpoint=f"{live_server.url}/v1/traces", headers={"Authorization": f"Bearer {key}"}
        )
    )
    provider = _provider(exporter)
    _emit(provider)
    assert provider.force_flush()
    assert exporter.export(exporter.sent[0]) is SpanExportResult.SUCCESS  # the retry
    provider.shutdown()
    live_land()

    upload = Upload.objects.get(stream_source="otlp")
    assert (upload.format, upload.status) == ("otel", Upload.Status.SUCCEEDED)
    # chat 1200 (200 cached) in / 300 out, $0.0123; embedding 40 in / 0 out, no cost.
    assert (upload.requests, upload.input_tokens, upload.output_tokens) == (2, 1240, 300)
    assert (upload.cached_input_tokens, upload.logged_cost_usd) == (200, Decimal("0.0123"))
    # Each export: 3 gen_ai spans read, 1 refused; the second export's 2 records were re-sent.
    assert (upload.rows_read, upload.rows_rejected, upload.rows_accepted) == (6, 2, 2)
    assert [(b.records_landed, b.records_duplicate) for b in LiveBatch.objects.all()] == [
        (2, 0),
        (0, 2),
    ]
    rollups = HourlyRollup.objects.filter(upload=upload).aggregate(
        requests=Sum("requests"), input_tokens=Sum("input_tokens")
    )
    assert rollups == {"requests": 2, "input_tokens": 1240}


def test_the_sdk_exporter_at_the_api_base_endpoint_one_span_a_request(
    live_server: Any, finops_user: Any
) -> None:
    """`OTEL_EXPORTER_OTLP_ENDPOINT=<server>/api/v1/otlp` makes the SDK post to
    `/api/v1/otlp/v1/traces`; a SimpleSpanProcessor sends each span as it ends."""
    key = api_token_issue(user=finops_user).key
    exporter = Recording(
        OTLPSpanExporter(
            endpoint=f"{live_server.url}/api/v1/otlp/v1/traces",
            headers={"Authorization": f"Token {key}"},
        )
    )
    provider = _provider(exporter, batch=False)
    ids = _emit(provider)
    provider.shutdown()

    assert exporter.results == [(1, SpanExportResult.SUCCESS)] * 4
    # Only the two requests that held an accepted span stored anything.
    batches = list(LiveBatch.objects.all())
    assert [decode_requests(b.records) for b in batches] == [
        [replace(r, line=1)] for r in _expected(ids)
    ]
    assert [(b.rows_read, b.rows_rejected, b.rows_ignored) for b in batches] == [(1, 0, 0)] * 2


def test_the_sdk_exporter_configured_by_the_readmes_environment(
    live_server: Any, engineer_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = api_token_issue(user=engineer_user).key
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{live_server.url}/v1/traces")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", f"Authorization=Bearer%20{key}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip")
    exporter = Recording(OTLPSpanExporter())
    provider = _provider(exporter)
    ids = _emit(provider)
    assert provider.force_flush()
    provider.shutdown()
    assert exporter.results == [(4, SpanExportResult.SUCCESS)]
    [batch] = LiveBatch.objects.all()
    assert decode_requests(batch.records) == _expected(ids)


def test_the_sdk_exporter_without_a_valid_token_fails_and_nothing_is_kept(
    live_server: Any, engineer_user: Any
) -> None:
    exporter = Recording(
        OTLPSpanExporter(
            endpoint=f"{live_server.url}/v1/traces",
            headers={"Authorization": "Bearer isa_not-a-real-token"},
        )
    )
    provider = _provider(exporter)
    _emit(provider)
    provider.force_flush()
    provider.shutdown()
    assert exporter.results == [(4, SpanExportResult.FAILURE)]
    assert LiveBatch.objects.count() == 0


def test_a_collector_style_json_gzip_request(live_server: Any, engineer_user: Any) -> None:
    key = api_token_issue(user=engineer_user).key
    response = requests.post(
        f"{live_server.url}/api/v1/otlp/v1/traces",
        data=gzip.compress(json.dumps(json_export()).encode()),
        headers={
            "Content-Type": "application/json",
            "Content-Encoding": "gzip",
            "Authorization": f"Bearer {key}",
            "User-Agent": "OpenTelemetry Collector Contrib/0.140.0 (linux/amd64)",
        },
        timeout=10,
    )
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    assert response.json() == {
        "partialSuccess": {"rejectedSpans": "2", "errorMessage": EXPECTED_MESSAGE}
    }
    [batch] = LiveBatch.objects.all()
    assert decode_requests(batch.records) == EXPECTED_REQUESTS
    assert (batch.rows_read, batch.rows_rejected, batch.rows_ignored) == (4, 2, 2)
