"""Real captures (tests/fixtures/real/otel/) sent live and uploaded as a file land the same rows.

Each line of a capture is one export request as the exporter sent it (protobuf, turned into
OTLP/JSON by the capturing collector); here it is turned back into protobuf and posted to
`/v1/traces`, as LiteLLM's and the SDK's exporters post it, and the whole file is uploaded.
The totals are worked out by hand from the LiteLLM capture's `litellm_request` spans.
"""

from __future__ import annotations

import base64
import io
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from audit_app.access.tokens import api_token_issue
from audit_app.ingestion.histograms import LatencyHistogram
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.live.landing import live_land
from audit_app.ingestion.uploads import upload_create
from audit_app.models import DailyRollup, HourlyRollup, Upload, WorkloadDay
from tests.support.paths import FIXTURES_DIR

pytestmark = pytest.mark.django_db

REAL = FIXTURES_DIR / "real" / "otel"
CAPTURES = sorted(REAL.glob("*.jsonl"))
LITELLM = REAL / "litellm-1.106.12_proxy_callbacks-otel.jsonl"
PROTOBUF = "application/x-protobuf"
ROLLUP_SUMS = (
    "requests",
    "errors",
    "streaming_requests",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "logged_requests",
    "logged_cost_usd",
    "unlogged_input_tokens",
    "unlogged_output_tokens",
)
KEYS = ("workload", "team", "provider", "model", "pool", "operation", "batch_api")


def _protobuf(line: str) -> bytes:
    """An OTLP/JSON line as the protobuf request it was captured from (ids: hex -> bytes)."""
    document = json.loads(line)
    for resource_spans in document["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                for name in ("traceId", "spanId", "parentSpanId"):
                    if name in span:
                        span[name] = base64.b64encode(bytes.fromhex(span[name])).decode()
    request = json_format.ParseDict(document, ExportTraceServiceRequest())
    return bytes(request.SerializeToString())


def _send(path: Path, key: str) -> list[str]:
    """Post every export of a capture; the answers' messages."""
    messages = []
    for line in path.read_text().splitlines():
        response = Client().post(
            "/v1/traces",
            data=_protobuf(line),
            content_type=PROTOBUF,
            HTTP_AUTHORIZATION=f"Bearer {key}",
        )
        assert response.status_code == 200
        answer = ExportTraceServiceResponse.FromString(response.content)
        assert answer.partial_success.rejected_spans == 0
        messages.append(answer.partial_success.error_message)
    return messages


def _upload(path: Path) -> Upload:
    upload = upload_create(
        source=io.BytesIO(path.read_bytes()), original_name=path.name, enqueue=False
    )
    return upload_ingest(upload_id=upload.pk)


def _rows(model: Any, upload: Upload, time_field: str) -> dict[tuple[Any, ...], Any]:
    return {
        tuple(getattr(r, k) for k in (time_field, *KEYS)): r
        for r in model.objects.filter(upload=upload)
    }


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_live_and_uploaded_captures_land_the_same_rows(path: Path, engineer_user: Any) -> None:
    _send(path, api_token_issue(user=engineer_user).key)
    live_land(now=timezone.now())
    [stream] = Upload.objects.exclude(stream_source="")
    file = _upload(path)
    assert file.status == "succeeded"
    for model, time_field in ((HourlyRollup, "hour"), (DailyRollup, "day")):
        live, uploaded = _rows(model, stream, time_field), _rows(model, file, time_field)
        assert set(live) == set(uploaded) and live
        for key, row in live.items():
            other = uploaded[key]
            assert [getattr(row, f) for f in ROLLUP_SUMS] == [
                getattr(other, f) for f in ROLLUP_SUMS
            ], key
            for name in ("ttft_histogram", "latency_histogram", "tpot_histogram"):
                assert LatencyHistogram.from_bytes(bytes(getattr(row, name))) == (
                    LatencyHistogram.from_bytes(bytes(getattr(other, name)))
                ), (key, name)
    live_days = {(d.day, d.workload, d.requests) for d in WorkloadDay.objects.filter(upload=stream)}
    file_days = {(d.day, d.workload, d.requests) for d in WorkloadDay.objects.filter(upload=file)}
    assert live_days == file_days
    for total in ("requests", "input_tokens", "output_tokens", "logged_cost_usd"):
        assert getattr(stream, total) == getattr(file, total), total


def test_litellm_capture_totals_and_what_the_answers_say(engineer_user: Any) -> None:
    messages = _send(LITELLM, api_token_issue(user=engineer_user).key)
    # The first export holds only the health check's four FastAPI spans.
    assert messages[0] == (
        "Ignored 4 spans that carry no gen_ai.* attribute (not calls to a model), such as "
        "`GET /health/liveliness`, `fastapi.dependencies`, `fastapi.endpoint`, "
        "`fastapi.serialization`."
    )
    live_land(now=timezone.now())
    [stream] = Upload.objects.exclude(stream_source="")
    file = _upload(LITELLM)
    for upload in (stream, file):
        # 7 calls: input 6 x 10 + 0 (failed); output 20 + 20 + 10 + 7 + 20 + 20 + 0
        assert (upload.requests, upload.input_tokens, upload.output_tokens) == (7, 60, 97)
        # gen_ai.cost.total_cost 0.000225 x 3 + 0.000125; the two 0.0 Anthropic costs are
        # priced from cards instead, the failed call has none
        assert upload.logged_cost_usd == Decimal("0.0008")
    workloads = {r.workload for r in HourlyRollup.objects.filter(upload=stream)}
    assert workloads == {
        "support-bot",
        "summarizer",
        "chat-ui",
        "litellm_proxy_master_key",
        "header-tagged",
        "billing-agent",
        "fails",
    }
    assert file.notes == [
        "Ignored 72 spans that carry no gen_ai.* attribute (not calls to a model), such as "
        "`Failed Proxy Server Request`, `GET /health/liveliness`, `POST /chat/completions`, "
        "`Received Proxy Server Request`, `auth`."
    ]
    streamed = HourlyRollup.objects.filter(upload=stream).values_list(
        "streaming_requests", flat=True
    )
    assert sum(streamed) == 2  # llm.is_streaming "True" on calls 3 and 4
