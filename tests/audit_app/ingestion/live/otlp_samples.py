"""One OTLP trace export written by hand, as protobuf and as OTLP/JSON, and what it must give.

T0 = 1796040000 s = 2026-11-30T12:00:00Z. Six spans in two resources:

1. checkout-assistant (team payments): `POST /checkout`, an HTTP span: ignored.
2. checkout-assistant: a streamed chat, 1200 input (200 cached) / 300 output tokens, first chunk
   after 0.35 s, 3.35 s long, workload `checkout-chat` on the span: accepted.
3. checkout-assistant: input tokens -7: refused (position 3).
4. nightly-evals (pool trn1-pool on the resource): vLLM's names (prompt/completion tokens,
   gen_ai.system, time_to_first_token 0.5 s), cost 0.0123, status ERROR, 10.5 s long:
   accepted; no workload attribute, so the caller names the workload.
5. nightly-evals: an embedding without a model: refused (position 5).
6. nightly-evals: a database span: ignored.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span, Status

from audit_app.ingestion.reading import RowReject
from audit_app.ingestion.token_logs.base import CanonicalRequest

T0_NANOS = 1_796_040_000 * 10**9
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SECOND = 10**9
TRACE = "5b8efff798038103d269b633813fc60c"
EVAL_TRACE = "0af7651916cd43dd8448eb211c80319c"

CHECKOUT_RESOURCE = {"service.name": "checkout-assistant", "team": "payments"}
EVALS_RESOURCE = {"service.name": "nightly-evals", "pool": "trn1-pool"}
# (span id, start, end, status code, attributes) per span, in export order.
CHECKOUT_SPANS: list[tuple[str, int, int, int, dict[str, Any]]] = [
    ("a1b2c3d4e5f60718", 0, 4 * SECOND, 0, {"http.request.method": "POST"}),
    (
        "eee19b7ec3c1b174",
        0,
        3_350_000_000,
        0,
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
            "gen_ai.prompt.0.content": "Where is my order? " * 50,
            "workload": "checkout-chat",
            "user.id": "shopper-17",
        },
    ),
    (
        "00f067aa0ba902b7",
        5 * SECOND,
        6 * SECOND,
        0,
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.usage.input_tokens": -7,
            "gen_ai.usage.output_tokens": 10,
        },
    ),
]
EVALS_SPANS: list[tuple[str, int, int, int, dict[str, Any]]] = [
    (
        "b7ad6b7169203331",
        60 * SECOND,
        70_500_000_000,
        2,
        {
            "gen_ai.system": "vllm",
            "gen_ai.request.model": "llama-3.1-8b",
            "gen_ai.usage.prompt_tokens": 2048,
            "gen_ai.usage.completion_tokens": 512,
            "gen_ai.latency.time_to_first_token": 0.5,
            "gen_ai.usage.cost": 0.0123,
        },
    ),
    (
        "c8be7c8270314442",
        80 * SECOND,
        81 * SECOND,
        0,
        {"gen_ai.operation.name": "embeddings", "gen_ai.usage.input_tokens": 40},
    ),
    ("d9cf8d9381425553", 90 * SECOND, 91 * SECOND, 0, {"db.system": "postgresql"}),
]

EXPECTED_REQUESTS = [
    CanonicalRequest(
        started_at=T0,
        ended_at=T0 + timedelta(seconds=3.35),
        first_token_at=T0 + timedelta(seconds=0.35),
        workload="checkout-chat",
        team="payments",
        end_user="shopper-17",
        caller="checkout-assistant",
        provider="openai",
        model="gpt-4o-2024-08-06",
        operation="chat",
        streaming=True,
        batch_api=False,
        input_tokens=1200,
        output_tokens=300,
        cached_input_tokens=200,
        cost_usd=None,
        status="success",
        request_id=f"{TRACE}/eee19b7ec3c1b174",
        pool="",
        line=2,
    ),
    CanonicalRequest(
        started_at=T0 + timedelta(seconds=60),
        ended_at=T0 + timedelta(seconds=70.5),
        first_token_at=T0 + timedelta(seconds=60.5),
        workload="nightly-evals",
        team="",
        end_user="",
        caller="nightly-evals",
        provider="vllm",
        model="llama-3.1-8b",
        operation="",
        streaming=None,
        batch_api=False,
        input_tokens=2048,
        output_tokens=512,
        cached_input_tokens=0,
        cost_usd=Decimal("0.0123"),
        status="error",
        request_id=f"{EVAL_TRACE}/b7ad6b7169203331",
        pool="trn1-pool",
        line=4,
    ),
]
EXPECTED_REJECTS = [
    RowReject(
        line=3,
        field="gen_ai.usage.input_tokens",
        value="-7",
        reason="`gen_ai.usage.input_tokens` cannot be negative, got '-7'.",
    ),
    RowReject(
        line=5,
        field="gen_ai.request.model",
        value="",
        reason="`gen_ai.request.model` is empty, so the request cannot be priced or grouped.",
    ),
]
EXPECTED_MESSAGE = (
    "Refused 2 gen_ai spans. Span 3, gen_ai.usage.input_tokens='-7': "
    "`gen_ai.usage.input_tokens` cannot be negative, got '-7'. Span 5, gen_ai.request.model='': "
    "`gen_ai.request.model` is empty, so the request cannot be priced or grouped. "
    "Ignored 2 spans that carry no gen_ai.* attribute (not calls to a model), such as `span`."
)


# --- protobuf -----------------------------------------------------------------------------------


def _any_value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    return AnyValue(string_value=value)


def _key_values(attributes: dict[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=key, value=_any_value(value)) for key, value in attributes.items()]


def _resource_spans(
    trace: str, resource: dict[str, Any], spans: list[tuple[str, int, int, int, dict[str, Any]]]
) -> ResourceSpans:
    resource_spans = ResourceSpans()
    resource_spans.resource.attributes.extend(_key_values(resource))
    scope = resource_spans.scope_spans.add()
    scope.scope.name = "hand-written"
    for span_id, start, end, code, attributes in spans:
        scope.spans.append(
            Span(
                trace_id=bytes.fromhex(trace),
                span_id=bytes.fromhex(span_id),
                name="span",
                start_time_unix_nano=T0_NANOS + start,
                end_time_unix_nano=T0_NANOS + end,
                status=Status(code=code),  # type: ignore[arg-type]
                attributes=_key_values(attributes),
            )
        )
    return resource_spans


def protobuf_export() -> bytes:
    request = ExportTraceServiceRequest(
        resource_spans=[
            _resource_spans(TRACE, CHECKOUT_RESOURCE, CHECKOUT_SPANS),
            _resource_spans(EVAL_TRACE, EVALS_RESOURCE, EVALS_SPANS),
        ]
    )
    return request.SerializeToString()


# --- OTLP/JSON ----------------------------------------------------------------------------------


def _json_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}  # int64 as text, as OTLP/JSON writers do
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": value}


def _json_attributes(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": _json_value(value)} for key, value in attributes.items()]


def _json_resource_spans(
    trace: str, resource: dict[str, Any], spans: list[tuple[str, int, int, int, dict[str, Any]]]
) -> dict[str, Any]:
    return {
        "resource": {"attributes": _json_attributes(resource)},
        "scopeSpans": [
            {
                "scope": {"name": "hand-written"},
                "spans": [
                    {
                        "traceId": trace,
                        "spanId": span_id,
                        "name": "span",
                        "kind": 3,
                        "startTimeUnixNano": str(T0_NANOS + start),
                        "endTimeUnixNano": str(T0_NANOS + end),
                        "attributes": _json_attributes(attributes),
                        "status": {"code": code} if code else {},
                    }
                    for span_id, start, end, code, attributes in spans
                ],
            }
        ],
    }


def json_export() -> dict[str, Any]:
    return {
        "resourceSpans": [
            _json_resource_spans(TRACE, CHECKOUT_RESOURCE, CHECKOUT_SPANS),
            _json_resource_spans(EVAL_TRACE, EVALS_RESOURCE, EVALS_SPANS),
        ]
    }
