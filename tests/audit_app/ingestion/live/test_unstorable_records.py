"""Poison live records: text no database stores (a NUL character, a lone surrogate) and records
from the future, sent to the OTLP receiver (JSON and protobuf) and the LiteLLM callback.

Each such record is refused at receipt with a reject naming its field, the rest of the request
is kept, and a clean record sent afterwards lands on the next pass. A batch the database refuses
anyway (kept before the receivers refused such text, or failing for any other reason) is set
aside by the landing pass, visible on its stream upload's page and in the API, while the other
batches land. Run on SQLite and, with DATABASE_URL, on PostgreSQL (which refuses NUL in text).
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span

from audit_app.access.tokens import api_token_issue
from audit_app.ingestion.live.landing import live_land
from audit_app.ingestion.live.records import encode_requests
from audit_app.models import HourlyRollup, LiveBatch, Upload
from tests.audit_app.ingestion.live.live_samples import receive, records

pytestmark = pytest.mark.django_db

NUL = "bad\x00name"
SURROGATE = "bad\ud800name"
OTLP = "/v1/traces"
LITELLM = "/api/v1/ingest/litellm/"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"


@pytest.fixture
def auth(engineer_user: Any) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {api_token_issue(user=engineer_user).key}"}


def _started(number: int) -> datetime:
    return datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2, minutes=number)


# --- OTLP ------------------------------------------------------------------------------------


def _span_values(
    number: int, attributes: dict[str, Any], resource: dict[str, str]
) -> tuple[dict[str, Any], dict[str, str], int]:
    values = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.output_tokens": 10,
        "workload": f"clean-{number}",
        **attributes,
    }
    start = int(_started(number).timestamp()) * 10**9
    return values, {"service.name": "svc", **resource}, start


def _otlp_json(number: int, attributes: dict[str, Any], resource: dict[str, str]) -> bytes:
    values, resource_values, start = _span_values(number, attributes, resource)

    def attrs(items: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {
                "key": k,
                "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v},
            }
            for k, v in items.items()
        ]

    document = {
        "resourceSpans": [
            {
                "resource": {"attributes": attrs(resource_values)},
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": f"{number:032x}",
                                "spanId": f"{number:016x}",
                                "startTimeUnixNano": str(start),
                                "endTimeUnixNano": str(start + 10**9),
                                "attributes": attrs(values),
                            }
                        ]
                    }
                ],
            }
        ]
    }
    return json.dumps(document).encode()  # ensure_ascii: a lone surrogate travels as \ud800


def _otlp_protobuf(number: int, attributes: dict[str, Any], resource: dict[str, str]) -> bytes:
    values, resource_values, start = _span_values(number, attributes, resource)

    def attrs(items: dict[str, Any]) -> list[KeyValue]:
        return [
            KeyValue(
                key=k,
                value=AnyValue(int_value=v) if isinstance(v, int) else AnyValue(string_value=v),
            )
            for k, v in items.items()
        ]

    spans = ResourceSpans()
    spans.resource.attributes.extend(attrs(resource_values))
    spans.scope_spans.add().spans.append(
        Span(
            trace_id=bytes.fromhex(f"{number:032x}"),
            span_id=bytes.fromhex(f"{number:016x}"),
            name="chat",
            start_time_unix_nano=start,
            end_time_unix_nano=start + 10**9,
            attributes=attrs(values),
        )
    )
    return ExportTraceServiceRequest(resource_spans=[spans]).SerializeToString()


# --- LiteLLM callback ------------------------------------------------------------------------


def _payload(number: int, **changes: Any) -> dict[str, Any]:
    started = _started(number).timestamp()
    record: dict[str, Any] = {
        "id": f"call-{number}",
        "call_type": "acompletion",
        "model": "gpt-4o-mini",
        "custom_llm_provider": "openai",
        "startTime": started,
        "endTime": started + 1.5,
        "prompt_tokens": 100,
        "completion_tokens": 10,
        "status": "success",
        "end_user": "cust-1",
        "metadata": {"user_api_key_alias": "svc", "spend_logs_metadata": {"workload": "w"}},
    }
    record.update(changes)
    return record


# (case, receiver, change, field the reject names). The nine of the finding and a few more.
VARIANTS: list[tuple[str, str, dict[str, Any], dict[str, str], str]] = [
    ("otlp-json-nul-model", "json", {"gen_ai.request.model": NUL}, {}, "gen_ai.request.model"),
    ("otlp-json-nul-workload", "json", {"workload": NUL}, {}, "workload"),
    ("otlp-json-nul-service-name", "json", {}, {"service.name": NUL}, "caller"),
    ("otlp-json-nul-end-user", "json", {"user.id": NUL}, {}, "end_user"),
    ("otlp-json-surrogate-model", "json", {"gen_ai.request.model": SURROGATE}, {}, "gen_ai"),
    ("otlp-json-surrogate-workload", "json", {"workload": SURROGATE}, {}, "workload"),
    ("otlp-json-surrogate-service-name", "json", {}, {"service.name": SURROGATE}, "caller"),
    ("otlp-protobuf-nul-model", "protobuf", {"gen_ai.request.model": NUL}, {}, "gen_ai"),
    ("otlp-protobuf-nul-workload", "protobuf", {"workload": NUL}, {}, "workload"),
    ("otlp-protobuf-nul-service-name", "protobuf", {}, {"service.name": NUL}, "caller"),
    ("litellm-nul-id", "litellm", {"id": NUL}, {}, "request_id"),
    ("litellm-nul-end-user", "litellm", {"end_user": NUL}, {}, "end_user"),
    ("litellm-nul-model", "litellm", {"model": NUL}, {}, "model"),
    ("litellm-surrogate-id", "litellm", {"id": SURROGATE}, {}, "request_id"),
    (
        "litellm-surrogate-workload",
        "litellm",
        {"metadata": {"spend_logs_metadata": {"workload": SURROGATE}}},
        {},
        "workload",
    ),
]


def _post_one(
    client: Client,
    auth: dict[str, str],
    receiver: str,
    number: int,
    change: dict[str, Any],
    resource: dict[str, str],
) -> Any:
    if receiver == "litellm":
        body = json.dumps([_payload(number, **change)]).encode()
        return client.post(LITELLM, data=body, content_type=JSON, **auth)
    if receiver == "json":
        body = _otlp_json(number, change, resource)
        return client.post(OTLP, data=body, content_type=JSON, **auth)
    body = _otlp_protobuf(number, change, resource)
    return client.post(OTLP, data=body, content_type=PROTOBUF, **auth)


def _rejected(receiver: str, response: Any) -> tuple[int, str]:
    """(records refused, the answer's message) of a receiver's 200 answer."""
    if receiver == "litellm":
        answer = response.json()
        return answer["rejected"], json.dumps(answer["rejects"])
    if receiver == "json":
        partial = response.json().get("partialSuccess", {})
        return int(partial.get("rejectedSpans", 0)), partial.get("errorMessage", "")
    parsed = ExportTraceServiceResponse.FromString(response.content)
    return parsed.partial_success.rejected_spans, parsed.partial_success.error_message


@pytest.mark.parametrize(
    ("case", "receiver", "change", "resource", "field"), VARIANTS, ids=[v[0] for v in VARIANTS]
)
def test_a_poison_record_is_refused_at_receipt_and_clean_ones_keep_landing(
    client: Client,
    auth: dict[str, str],
    case: str,
    receiver: str,
    change: dict[str, Any],
    resource: dict[str, str],
    field: str,
) -> None:
    poisoned = _post_one(client, auth, receiver, 1, change, resource)
    assert poisoned.status_code == 200, poisoned.content[:300]
    refused, message = _rejected(receiver, poisoned)
    assert refused == 1
    assert field in message
    assert ("NUL" in message) == ("nul" in case)
    assert LiveBatch.objects.count() == 0  # nothing of it kept
    clean = _post_one(client, auth, receiver, 2, {}, {})
    assert clean.status_code == 200
    assert _rejected(receiver, clean)[0] == 0
    landed = live_land()
    assert (landed.batches, landed.landed) == (1, 1)
    assert not LiveBatch.objects.exclude(error="").exists()
    assert sum(HourlyRollup.objects.values_list("requests", flat=True)) == 1


@pytest.mark.parametrize("receiver", ["json", "protobuf"])
def test_a_span_from_the_future_is_refused_at_receipt(
    client: Client, auth: dict[str, str], receiver: str
) -> None:
    future = int(datetime(2099, 6, 1, tzinfo=UTC).timestamp()) * 10**9
    body = _otlp_json(1, {}, {}) if receiver == "json" else _otlp_protobuf(1, {}, {})
    body = body.replace(
        str(int(_started(1).timestamp()) * 10**9).encode(), str(future).encode()
    ).replace(
        str(int(_started(1).timestamp()) * 10**9 + 10**9).encode(), str(future + 10**9).encode()
    )
    if receiver == "protobuf":  # the times are varints there: build it again
        request = ExportTraceServiceRequest.FromString(_otlp_protobuf(1, {}, {}))
        span = request.resource_spans[0].scope_spans[0].spans[0]
        span.start_time_unix_nano, span.end_time_unix_nano = future, future + 10**9
        body = request.SerializeToString()
    response = client.post(
        OTLP, data=body, content_type=JSON if receiver == "json" else PROTOBUF, **auth
    )
    assert response.status_code == 200
    refused, message = _rejected(receiver, response)
    assert refused == 1
    assert "more than a day in the future" in message
    assert LiveBatch.objects.count() == 0


def test_a_litellm_call_from_the_future_is_refused(client: Client, auth: dict[str, str]) -> None:
    ahead = (datetime.now(UTC) + timedelta(days=3)).timestamp()
    body = json.dumps([_payload(1, startTime=ahead, endTime=ahead + 1), _payload(2)]).encode()
    answer = client.post(LITELLM, data=body, content_type=JSON, **auth).json()
    assert (answer["accepted"], answer["rejected"]) == (1, 1)
    assert answer["rejects"][0]["field"] == "startTime"


# --- A batch the database refuses is set aside --------------------------------------------------


def _kept_as_received(at: datetime, workload: str) -> LiveBatch:
    """A batch holding one record whose workload is ``workload``, kept as it would have been
    before the receivers refused such text (bypassing them)."""
    record = dataclasses.replace(records(("t/3",))[0], workload=workload, request_id="bad/1")
    batch = receive(("t/1",), at=at)
    LiveBatch.objects.filter(pk=batch.pk).update(records=encode_requests([record]))
    return LiveBatch.objects.get(pk=batch.pk)


def test_a_batch_the_database_refuses_is_set_aside_and_the_others_land(
    client: Client, engineer_user: Any
) -> None:
    at = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    first = receive(("t/1",), at=at)
    bad = _kept_as_received(at + timedelta(seconds=1), SURROGATE)
    last = receive(("t/2", "t/3"), at=at + timedelta(seconds=2))
    landed = live_land(now=at + timedelta(seconds=3))
    assert (landed.batches, landed.records, landed.landed) == (3, 4, 3)
    for batch in (first, bad, last):
        batch.refresh_from_db()
    assert first.error == "" and last.error == ""
    assert (first.records_landed, last.records_landed) == (1, 2)
    assert bad.landed_at is not None and bad.records_landed == 0
    assert bad.error.startswith("the database refused its records (")
    assert bytes(bad.records) != b""  # kept for whoever looks into it
    upload = Upload.objects.get(stream_source="otlp")
    assert (upload.requests, upload.rows_accepted, upload.rows_rejected) == (3, 3, 1)
    assert upload.rejects[-1]["field"] == "records"
    assert upload.rejects[-1]["value"] == f"batch {bad.pk}"
    assert upload.rejects[-1]["reason"].startswith("set aside: the database refused its records")
    # A later pass lands the next records as usual; the set-aside batch is not claimed again.
    receive(("t/4",), at=at + timedelta(seconds=4))
    later = live_land(now=at + timedelta(seconds=5))
    assert (later.batches, later.landed) == (1, 1)
    assert Upload.objects.get(pk=upload.pk).requests == 4
    # Visible where the batches are shown: the stream upload's page and its API.
    client.force_login(engineer_user)
    page = client.get(f"/uploads/{upload.pk}/").content.decode()
    assert 'data-field="set-aside">1<' in page
    assert f"<td>{bad.pk}</td>" in page and "the database refused its records" in page
    stream = client.get(f"/api/v1/uploads/{upload.pk}/").json()["stream"]
    assert stream["set_aside"] == 1
    assert stream["set_aside_batches"] == [{"batch": bad.pk, "records": 1, "error": bad.error}]


def test_a_kept_nul_is_set_aside_by_postgresql_and_stored_by_sqlite() -> None:
    """PostgreSQL refuses NUL in text and SQLite stores it: the pass copes either way."""
    at = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    bad = _kept_as_received(at, NUL)
    receive(("t/2",), at=at + timedelta(seconds=1))
    landed = live_land(now=at + timedelta(seconds=2))
    bad.refresh_from_db()
    if connection.vendor == "postgresql":
        assert (landed.landed, bad.records_landed) == (1, 0)
        assert "NUL" in bad.error or "0x00" in bad.error
    else:
        assert (landed.landed, bad.records_landed, bad.error) == (2, 1, "")
