"""`POST /v1/traces` (and `/api/v1/otlp/v1/traces`) through Django: what is kept as a live batch,
what is answered, and every refusal with its status, headers and google.rpc.Status body.

The export is `otlp_samples`' hand-written one: 2 spans accepted, 2 refused (positions 3 and 5),
2 ignored (no gen_ai attribute)."""

from __future__ import annotations

import gzip
import json
import tracemalloc
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from django.db import OperationalError, connection
from django.test import Client, override_settings
from google.rpc.error_details_pb2 import BadRequest
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from audit_app.access.tokens import api_token_issue
from audit_app.api.otlp import NO_CREDENTIALS, MayUpload
from audit_app.ingestion.live.records import decode_requests
from audit_app.models import LiveBatch
from tests.audit_app.ingestion.live.otlp_samples import (
    EXPECTED_MESSAGE,
    EXPECTED_REQUESTS,
    json_export,
    protobuf_export,
)
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
PATHS = ("/v1/traces", "/api/v1/otlp/v1/traces")
STORED_REJECTS = [
    {
        "line": 3,
        "field": "gen_ai.usage.input_tokens",
        "value": "-7",
        "reason": "`gen_ai.usage.input_tokens` cannot be negative, got '-7'.",
    },
    {
        "line": 5,
        "field": "gen_ai.request.model",
        "value": "",
        "reason": "`gen_ai.request.model` is empty, so the request cannot be priced or grouped.",
    },
]


@pytest.fixture
def key(engineer_user: Any) -> str:
    return api_token_issue(user=engineer_user).key


def _post(
    body: bytes,
    *,
    key: str | None,
    content_type: str = PROTOBUF,
    path: str = "/v1/traces",
    scheme: str = "Bearer",
    client: Client | None = None,
    **headers: str,
) -> Any:
    if key is not None:
        headers["HTTP_AUTHORIZATION"] = f"{scheme} {key}"
    # The test client leaves out Content-Type when the body is empty; a real client does not.
    headers.setdefault("CONTENT_TYPE", content_type)
    return (client or Client()).post(path, data=body, content_type=content_type, **headers)


def _status(response: Any) -> Status:
    if response["Content-Type"] == PROTOBUF:
        return Status.FromString(response.content)
    data = json.loads(response.content)
    return Status(code=data.get("code", 0), message=data["message"])


def _the_one_batch() -> LiveBatch:
    [batch] = LiveBatch.objects.all()
    return batch


def _assert_sample_kept(batch: LiveBatch, *, user: Any) -> None:
    assert decode_requests(batch.records) == EXPECTED_REQUESTS
    assert (batch.source, batch.received_by, batch.landed_at) == ("otlp", user, None)
    assert (batch.record_count, batch.rows_read, batch.rows_rejected, batch.rows_ignored) == (
        2,
        4,
        2,
        2,
    )
    assert batch.rejects == STORED_REJECTS


# --- accepted ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", PATHS)
def test_a_protobuf_export_is_kept_and_answered_in_protobuf(
    key: str, engineer_user: Any, path: str
) -> None:
    response = _post(protobuf_export(), key=key, path=path)
    assert response.status_code == 200
    assert response["Content-Type"] == PROTOBUF
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == 2
    assert answer.partial_success.error_message == EXPECTED_MESSAGE
    _assert_sample_kept(_the_one_batch(), user=engineer_user)


def test_a_json_export_is_kept_and_answered_in_json(key: str, engineer_user: Any) -> None:
    body = json.dumps(json_export()).encode()
    response = _post(body, key=key, content_type="application/json; charset=utf-8", scheme="Token")
    assert response.status_code == 200
    assert response["Content-Type"] == JSON
    assert response.json() == {
        "partialSuccess": {"rejectedSpans": "2", "errorMessage": EXPECTED_MESSAGE}
    }
    _assert_sample_kept(_the_one_batch(), user=engineer_user)


@pytest.mark.parametrize("coding", ["gzip", "identity"])
def test_a_gzipped_export_is_the_same_export(key: str, engineer_user: Any, coding: str) -> None:
    body = protobuf_export()
    sent = gzip.compress(body) if coding == "gzip" else body
    response = _post(sent, key=key, HTTP_CONTENT_ENCODING=coding)
    assert response.status_code == 200
    _assert_sample_kept(_the_one_batch(), user=engineer_user)


def test_finops_and_administrators_may_send(finops_user: Any, admin_user: Any) -> None:
    for user in (finops_user, admin_user):
        assert _post(protobuf_export(), key=api_token_issue(user=user).key).status_code == 200
    assert [b.received_by for b in LiveBatch.objects.all()] == [finops_user, admin_user]


def test_nothing_is_stored_when_no_span_is_accepted(key: str) -> None:
    request = ExportTraceServiceRequest.FromString(protobuf_export())
    for resource_spans in request.resource_spans:
        # Keep the refused and the ignored spans only (positions 1 and 3, then 5 and 6).
        kept = [s for s in resource_spans.scope_spans[0].spans if s.span_id.hex()[0] in "a0cd"]
        del resource_spans.scope_spans[0].spans[:]
        resource_spans.scope_spans[0].spans.extend(kept)
    response = _post(request.SerializeToString(), key=key)
    assert response.status_code == 200
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == 2
    assert answer.partial_success.error_message.startswith("Refused 2 gen_ai spans. Span 2, ")
    assert LiveBatch.objects.count() == 0


def test_an_empty_export_is_a_success_that_keeps_nothing(key: str) -> None:
    response = _post(b"", key=key)
    assert (response.status_code, response.content) == (200, b"")
    response = _post(b"{}", key=key, content_type=JSON)
    assert (response.status_code, response.json()) == (200, {})
    assert LiveBatch.objects.count() == 0


def test_a_body_larger_than_djangos_form_limit_is_read(key: str, settings: Any) -> None:
    """Django refuses `request.body` over DATA_UPLOAD_MAX_MEMORY_SIZE; an export is read from
    the stream with the receiver's own limit."""
    request = ExportTraceServiceRequest.FromString(protobuf_export())
    chat = request.resource_spans[0].scope_spans[0].spans[1]
    spans = request.resource_spans[0].scope_spans[0].spans
    for n in range(5000):
        copy = spans.add()
        copy.CopyFrom(chat)
        copy.span_id = n.to_bytes(8, "big")
    body = request.SerializeToString()
    assert len(body) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    response = _post(body, key=key)
    assert response.status_code == 200
    assert _the_one_batch().record_count == 5002


# --- refused --------------------------------------------------------------------------------


def test_no_token_is_401_with_the_header_to_send(engineer_user: Any) -> None:
    response = _post(protobuf_export(), key=None)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response["Content-Type"] == PROTOBUF
    assert _status(response) == Status(code=16, message=NO_CREDENTIALS)


def test_a_bad_token_is_401(engineer_user: Any) -> None:
    response = _post(protobuf_export(), key="isa_not-a-real-token", content_type=JSON)
    assert response.status_code == 401
    assert response.json() == {"code": 16, "message": "Invalid or revoked token."}


def test_a_session_is_not_a_credential_here(engineer_user: Any) -> None:
    """No session authentication, so no CSRF check either: a signed-in browser without a
    token is 401, like any caller without one."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(engineer_user)
    response = _post(protobuf_export(), key=None, client=client)
    assert response.status_code == 401
    assert LiveBatch.objects.count() == 0


@pytest.mark.parametrize("roles", [["manager"], []])
def test_a_role_that_may_not_upload_is_403(roles: list[str]) -> None:
    user = UserFactory(username=f"u-{len(roles)}", roles=roles)
    response = _post(protobuf_export(), key=api_token_issue(user=user).key)
    assert response.status_code == 403
    assert _status(response) == Status(code=7, message=MayUpload.message)
    assert LiveBatch.objects.count() == 0


def test_get_is_405(key: str) -> None:
    response = Client().get("/v1/traces", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 405
    assert response.json() == {"code": 12, "message": 'Method "GET" not allowed.'}


def _bad_request(response: Any) -> tuple[int, str, str]:
    status = _status(response) if response["Content-Type"] == JSON else None
    if status is None:
        status = Status.FromString(response.content)
        detail = BadRequest()
        status.details[0].Unpack(detail)
        field = detail.field_violations[0].field
    else:
        field = response.json()["details"][0]["fieldViolations"][0]["field"]
    return response.status_code, status.message, field


def test_malformed_bodies_are_400_naming_what_failed(key: str) -> None:
    protobuf = _post(b"\xff\xff\xff", key=key)
    assert protobuf["Content-Type"] == PROTOBUF
    code, message, field = _bad_request(protobuf)
    assert (code, field) == (400, "body")
    assert message.startswith("The body is not a protobuf ExportTraceServiceRequest (")

    malformed_json = _post(b'{"resourceSpans": [', key=key, content_type=JSON)
    assert _bad_request(malformed_json) == (
        400,
        "The body is not valid JSON: Expecting value at line 1 column 20.",
        "body",
    )
    assert malformed_json.json()["details"][0]["@type"] == (
        "type.googleapis.com/google.rpc.BadRequest"
    )

    not_a_trace = _post(b'{"resourceSpans": 7}', key=key, content_type=JSON)
    assert _bad_request(not_a_trace) == (
        400,
        "Not an OTLP/JSON ExportTraceServiceRequest: `resourceSpans` is not a list of objects.",
        "resourceSpans",
    )

    bad_gzip = _post(b"not gzip", key=key, HTTP_CONTENT_ENCODING="gzip")
    assert _bad_request(bad_gzip) == (
        400,
        "The body is not valid gzip data (Error -3 while decompressing data: incorrect header "
        "check).",
        "body",
    )
    assert LiveBatch.objects.count() == 0


def test_other_content_types_and_codings_are_415(key: str) -> None:
    plain = _post(b"hello", key=key, content_type="text/plain")
    assert plain.status_code == 415
    assert plain["Content-Type"] == JSON
    assert plain.json() == {
        "code": 3,
        "message": "Content-Type 'text/plain' is not supported: send application/x-protobuf "
        "or application/json.",
    }
    brotli = _post(protobuf_export(), key=key, HTTP_CONTENT_ENCODING="br")
    assert brotli.status_code == 415
    assert _status(brotli).message == (
        "Content-Encoding 'br' is not supported: send the body as is, gzip or deflate."
    )


def test_a_chunked_body_without_content_length_is_411(key: str) -> None:
    response = Client().post(
        "/v1/traces",
        data=b"",
        content_type=PROTOBUF,
        CONTENT_TYPE=PROTOBUF,
        HTTP_TRANSFER_ENCODING="chunked",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert response.status_code == 411
    assert _status(response) == Status(
        code=3,
        message="A chunked body without Content-Length cannot be read: send Content-Length.",
    )


@override_settings(LIVE_MAX_REQUEST_BYTES=1000)
def test_a_body_over_the_limit_is_413_as_sent_declared_or_inflated(key: str) -> None:
    over = _post(b"\x00" * 1001, key=key)
    assert over.status_code == 413
    assert _status(over) == Status(
        code=8,
        message="The request body is over the limit of 1,000 bytes (LIVE_MAX_REQUEST_BYTES); "
        "send smaller batches.",
    )
    # Refused on its Content-Length, before a byte is read.
    declared = _post(b"", key=key, CONTENT_LENGTH="1001")
    assert declared.status_code == 413
    at_limit = b'{"unknown": "' + b"x" * 985 + b'"}'  # an empty export, padded
    assert len(at_limit) == 1000
    assert _post(at_limit, key=key, content_type=JSON).status_code == 200
    inflated = _post(gzip.compress(b"\x00" * 1001), key=key, HTTP_CONTENT_ENCODING="gzip")
    assert inflated.status_code == 413
    assert _status(inflated).message == (
        "The request body decompresses to more than the limit of 1,000 bytes "
        "(LIVE_MAX_REQUEST_BYTES); send smaller batches."
    )
    assert LiveBatch.objects.count() == 0


def _gzip_bomb(inflated_bytes: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = bytes(1024 * 1024)
    parts = [compressor.compress(block) for _ in range(inflated_bytes // len(block))]
    return b"".join([*parts, compressor.flush()])


@override_settings(LIVE_MAX_REQUEST_BYTES=1024 * 1024)
def test_a_gzip_bomb_is_413_and_is_not_inflated_past_the_limit(key: str) -> None:
    bomb = _gzip_bomb(256 * 1024 * 1024)  # 256 MiB of zeros in about 250 KB
    assert len(bomb) < 300_000
    tracemalloc.start()
    try:
        response = _post(bomb, key=key, HTTP_CONTENT_ENCODING="gzip")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.status_code == 413
    assert peak < 16 * 1024 * 1024  # the 1 MiB limit, the body and Django, not 256 MiB


@override_settings(LIVE_MAX_PENDING_RECORDS=1, LIVE_LAND_EVERY_SECONDS=10)
def test_a_full_backlog_is_429_with_retry_after(key: str) -> None:
    response = _post(protobuf_export(), key=key)
    assert response.status_code == 429
    assert response["Retry-After"] == "10"
    assert _status(response) == Status(
        code=8,
        message="0 received records are waiting to land (the limit is 1); retry after 10 s.",
    )
    assert LiveBatch.objects.count() == 0


def _failing(when: Callable[[str], bool]) -> Callable[..., Any]:
    def wrapper(
        execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        if when(sql):
            raise OperationalError("connection to server failed: Connection refused")
        return execute(sql, params, many, context)

    return wrapper


@pytest.mark.parametrize(
    "unreachable",
    [
        pytest.param(lambda sql: "audit_app_livebatch" in sql, id="while-keeping"),
        pytest.param(lambda sql: True, id="while-authenticating"),
    ],
)
def test_an_unreachable_database_is_503_with_retry_after(
    key: str, unreachable: Callable[[str], bool]
) -> None:
    with connection.execute_wrapper(_failing(unreachable)):
        response = _post(protobuf_export(), key=key)
    assert response.status_code == 503
    assert response["Retry-After"] == "30"
    assert _status(response) == Status(
        code=14,
        message="The database cannot be reached; nothing was kept. Retry after 30 s.",
    )
    assert LiveBatch.objects.count() == 0
