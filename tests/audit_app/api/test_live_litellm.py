"""POST /api/v1/ingest/litellm/: what LiteLLM's generic API callback posts, in each log_format,
becomes exactly the live batch it should; bad bodies, sizes, callers and a full backlog are
refused naming why, keeping nothing.

The real payload and the request it maps to (worked out by hand) are in
tests/support/litellm_payloads.py.
"""

from __future__ import annotations

import gzip
import io
import json
import urllib.request
import zlib
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from rest_framework import exceptions

from audit_app.access.tokens import api_token_issue
from audit_app.api.push_body import read_push_body
from audit_app.ingestion.live.records import decode_requests
from audit_app.models import LiveBatch
from tests.support.litellm_payloads import REAL_FILE, REAL_REQUEST, payload, real_payload

URL = "/api/v1/ingest/litellm/"


def token_for(user: Any, keyword: str = "Bearer") -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"{keyword} {api_token_issue(user=user).key}"}


def post(client: Client, body: bytes, auth: dict[str, str], **headers: str) -> Any:
    # LiteLLM sends Content-Type: application/json whatever the log_format.
    content_type = headers.pop("content_type", "application/json")
    return client.post(URL, data=body, content_type=content_type, **auth, **headers)


def team_payload() -> dict[str, Any]:
    """A streamed call through a team key with a workload tag and cached tokens."""
    record = payload(
        id="chatcmpl-team-1",
        model="gpt-4o-mini",
        custom_llm_provider="openai",
        startTime=1767225600.25,  # 2026-01-01 00:00:00.250 UTC
        completionStartTime=1767225600.75,
        endTime=1767225602.5,
        prompt_tokens=1500,
        completion_tokens=200,
        response_cost=0.000345,
        request_tags=["workload:support-bot"],
        end_user="customer-42",
    )
    record["metadata"].update(
        user_api_key_alias="support-key",
        user_api_key_team_alias="support",
        usage_object={"prompt_tokens_details": {"cached_tokens": 1024}},
    )
    return record


TEAM_REQUEST = replace(
    REAL_REQUEST,
    started_at=datetime(2026, 1, 1, 0, 0, 0, 250000, tzinfo=UTC),
    first_token_at=datetime(2026, 1, 1, 0, 0, 0, 750000, tzinfo=UTC),
    ended_at=datetime(2026, 1, 1, 0, 0, 2, 500000, tzinfo=UTC),
    workload="support-bot",
    team="support",  # no team id: the alias
    end_user="customer-42",
    caller="support-key",
    model="gpt-4o-mini",
    input_tokens=1500,
    output_tokens=200,
    cached_input_tokens=1024,
    cost_usd=Decimal("0.000345"),
    request_id="chatcmpl-team-1",
)


def only_batch() -> LiveBatch:
    batches = list(LiveBatch.objects.all())
    assert len(batches) == 1
    return batches[0]


# --- Each log_format lands as exactly the records it carried ---------------------------------


@pytest.mark.django_db
def test_json_array_keeps_both_calls_exactly(client: Client, engineer_user: Any) -> None:
    body = json.dumps([real_payload(), team_payload()]).encode()
    response = post(client, body, token_for(engineer_user))
    assert response.status_code == 200
    assert response.json() == {
        "log_format": "json_array",
        "accepted": 2,
        "rejected": 0,
        "ignored": 0,
        "rejects": [],
    }
    batch = only_batch()
    assert decode_requests(batch.records) == [REAL_REQUEST, replace(TEAM_REQUEST, line=2)]
    assert (batch.source, batch.received_by, batch.landed_at) == ("litellm", engineer_user, None)
    assert (batch.record_count, batch.rows_read, batch.rows_rejected, batch.rows_ignored) == (
        2,
        2,
        0,
        0,
    )


@pytest.mark.django_db
def test_ndjson_keeps_each_line_with_its_line_number(client: Client, finops_user: Any) -> None:
    # LiteLLM joins the payloads with "\n"; here a blank line sits between them.
    body = REAL_FILE.read_bytes() + b"\n" + json.dumps(team_payload()).encode()
    response = post(client, body, token_for(finops_user, "Token"))
    assert response.status_code == 200
    assert response.json()["log_format"] == "ndjson"
    assert response.json()["accepted"] == 2
    assert decode_requests(only_batch().records) == [REAL_REQUEST, replace(TEAM_REQUEST, line=3)]


@pytest.mark.django_db
def test_single_keeps_the_one_call(client: Client, finops_user: Any) -> None:
    response = post(client, REAL_FILE.read_bytes(), token_for(finops_user))
    assert response.status_code == 200
    assert response.json() == {
        "log_format": "single",
        "accepted": 1,
        "rejected": 0,
        "ignored": 0,
        "rejects": [],
    }
    assert decode_requests(only_batch().records) == [REAL_REQUEST]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("encoding", "compress"),
    [("gzip", gzip.compress), ("deflate", zlib.compress), ("identity", lambda data: data)],
)
def test_a_compressed_body_is_read(
    client: Client, finops_user: Any, encoding: str, compress: Any
) -> None:
    body = compress(json.dumps([real_payload()]).encode())
    response = post(client, body, token_for(finops_user), HTTP_CONTENT_ENCODING=encoding)
    assert response.status_code == 200
    assert decode_requests(only_batch().records) == [REAL_REQUEST]


@pytest.mark.django_db(transaction=True)
def test_posts_over_http_as_litellm_sends_them_are_kept(live_server: Any, finops_user: Any) -> None:
    """Through a real server and socket: the body is read from the WSGI stream."""
    key = api_token_issue(user=finops_user).key
    bodies = {
        "json_array": json.dumps([real_payload(), team_payload()]).encode(),
        "ndjson": "\n".join(json.dumps(r) for r in [real_payload(), team_payload()]).encode(),
        "single": REAL_FILE.read_bytes(),
    }
    answers = {}
    for log_format, body in bodies.items():
        request = urllib.request.Request(
            live_server.url + URL,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            answers[log_format] = (response.status, json.load(response))
    assert {
        name: (status, body["log_format"], body["accepted"])
        for name, (status, body) in answers.items()
    } == {
        "json_array": (200, "json_array", 2),
        "ndjson": (200, "ndjson", 2),
        "single": (200, "single", 1),
    }
    kept = [decode_requests(batch.records) for batch in LiveBatch.objects.order_by("id")]
    team = replace(TEAM_REQUEST, line=2)
    assert kept == [[REAL_REQUEST, team], [REAL_REQUEST, team], [REAL_REQUEST]]


# --- Rejects are answered by line, field and value -------------------------------------------


@pytest.mark.django_db
def test_rejects_are_named_and_the_good_records_kept(client: Client, finops_user: Any) -> None:
    records = [
        payload(id="ok-1"),
        payload(id="bad-2", prompt_tokens=-5),
        "not a payload",
        payload(id="refused-4", status="failure", model="", model_group=""),
        payload(id=""),
    ]
    response = post(client, json.dumps(records).encode(), token_for(finops_user))
    assert response.status_code == 200
    assert response.json() == {
        "log_format": "json_array",
        "accepted": 1,
        "rejected": 3,
        "ignored": 1,
        "rejects": [
            {
                "line": 2,
                "field": "prompt_tokens",
                "value": "-5",
                "reason": "`prompt_tokens` cannot be negative, got '-5'.",
            },
            {
                "line": 3,
                "field": "(record)",
                "value": "not a payload",
                "reason": "the record is not a JSON object (a StandardLoggingPayload).",
            },
            {
                "line": 5,
                "field": "id",
                "value": "",
                "reason": (
                    "`id` is empty: LiteLLM's call id is what tells a re-sent record from a "
                    "new one."
                ),
            },
        ],
    }
    batch = only_batch()
    assert [r.request_id for r in decode_requests(batch.records)] == ["ok-1"]
    assert (batch.rows_read, batch.rows_rejected, batch.rows_ignored) == (5, 3, 1)
    assert [reject["line"] for reject in batch.rejects] == [2, 3, 5]


@pytest.mark.django_db
def test_only_the_first_20_rejects_are_answered(client: Client, finops_user: Any) -> None:
    records = [payload(id=f"bad-{n}", model="", model_group="") for n in range(1, 26)]
    response = post(client, json.dumps(records).encode(), token_for(finops_user))
    assert response.status_code == 200
    body = response.json()
    assert (body["accepted"], body["rejected"]) == (0, 25)
    assert [reject["line"] for reject in body["rejects"]] == list(range(1, 21))
    assert LiveBatch.objects.count() == 0  # nothing accepted, nothing to land


# --- Refusals keep nothing -------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "line", "detail"),
    [
        (b"", 1, "body: The body is empty: expected LiteLLM StandardLoggingPayload records"),
        (
            b'{"id": "a"}\n{"id": "b"\n',
            2,
            "body: Line 2 of the NDJSON body is not valid JSON: Expecting ',' delimiter at "
            "column 11.",
        ),
        (b"[{]", 1, "body: The body is not valid JSON at line 1 column 3"),
    ],
)
def test_a_body_that_is_not_json_is_400_naming_the_line(
    client: Client, finops_user: Any, body: bytes, line: int, detail: str
) -> None:
    response = post(client, body, token_for(finops_user))
    assert response.status_code == 400
    answer = response.json()
    assert answer["detail"].startswith(detail)
    assert answer["line"] == line
    assert answer["errors"]["body"] == [answer["detail"].removeprefix("body: ")]
    assert LiveBatch.objects.count() == 0


@pytest.mark.django_db
def test_a_broken_gzip_body_is_400(client: Client, finops_user: Any) -> None:
    cut = gzip.compress(REAL_FILE.read_bytes())[:-12]
    response = post(client, cut, token_for(finops_user), HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 400
    assert response.json()["detail"] == (
        "body: The gzip body is cut short: it ends before its data does."
    )
    not_gzip = post(client, b"[]", token_for(finops_user), HTTP_CONTENT_ENCODING="gzip")
    assert not_gzip.status_code == 400
    assert not_gzip.json()["detail"].startswith("body: The body is not valid gzip data")
    assert LiveBatch.objects.count() == 0


@pytest.mark.django_db
def test_an_unknown_encoding_is_415(client: Client, finops_user: Any) -> None:
    response = post(client, b"[]", token_for(finops_user), HTTP_CONTENT_ENCODING="br")
    assert response.status_code == 415
    assert response.json()["detail"] == (
        "Content-Encoding 'br' is not supported: send the body as is, gzip or deflate."
    )


@pytest.mark.django_db
def test_a_body_over_the_limit_is_413(client: Client, finops_user: Any, settings: Any) -> None:
    body = REAL_FILE.read_bytes()  # 2,464 bytes
    settings.LIVE_MAX_REQUEST_BYTES = len(body) - 1
    response = post(client, body, token_for(finops_user))
    assert response.status_code == 413
    assert response.json()["detail"] == (
        "The request body is over the limit of 2,463 bytes (LIVE_MAX_REQUEST_BYTES); send "
        "smaller batches."
    )
    settings.LIVE_MAX_REQUEST_BYTES = len(body)
    assert post(client, body, token_for(finops_user)).status_code == 200


@pytest.mark.django_db
def test_a_gzip_body_that_unzips_past_the_limit_is_413(
    client: Client, finops_user: Any, settings: Any
) -> None:
    settings.LIVE_MAX_REQUEST_BYTES = 10_000
    bomb = gzip.compress(b"[" + b" " * 20_000 + b"]")  # 59 bytes that unzip to 20,002
    assert len(bomb) < 100
    response = post(client, bomb, token_for(finops_user), HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 413
    assert response.json()["detail"] == (
        "The request body decompresses to more than the limit of 10,000 bytes "
        "(LIVE_MAX_REQUEST_BYTES); send smaller batches."
    )
    assert LiveBatch.objects.count() == 0


class _StreamOnly:
    """A request whose body has no Content-Length: only reading it tells its size."""

    def __init__(self, body: bytes) -> None:
        self.META: dict[str, str] = {}
        self.stream = io.BytesIO(body)


def test_a_body_without_a_length_is_cut_off_while_reading() -> None:
    with pytest.raises(exceptions.APIException) as raised:
        read_push_body(_StreamOnly(b"x" * 200_000), limit=150_000)
    assert raised.value.status_code == 413
    assert read_push_body(_StreamOnly(b"x" * 150_000), limit=150_000) == b"x" * 150_000


@pytest.mark.django_db
def test_a_full_backlog_is_429_with_retry_after(
    client: Client, finops_user: Any, settings: Any
) -> None:
    settings.LIVE_MAX_PENDING_RECORDS = 1
    settings.LIVE_LAND_EVERY_SECONDS = 10
    body = json.dumps([real_payload(), team_payload()]).encode()
    response = post(client, body, token_for(finops_user))
    assert response.status_code == 429
    assert response["Retry-After"] == "10"
    assert response.json()["detail"] == (
        "0 received records are waiting to land (the limit is 1); retry after 10 s. "
        "Expected available in 10 seconds."
    )
    assert LiveBatch.objects.count() == 0
    assert post(client, REAL_FILE.read_bytes(), token_for(finops_user)).status_code == 200


# --- Who may post ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_only_uploader_roles_may_post(
    client: Client, manager_user: Any, no_role_user: Any, admin_user: Any
) -> None:
    body = REAL_FILE.read_bytes()
    assert post(client, body, {}).status_code == 401
    assert post(client, body, {"HTTP_AUTHORIZATION": "Bearer isa_not-a-token"}).status_code == 401
    manager = post(client, body, token_for(manager_user))
    assert manager.status_code == 403
    assert post(client, body, token_for(no_role_user)).status_code == 403
    assert LiveBatch.objects.count() == 0
    assert post(client, body, token_for(admin_user)).status_code == 200  # a superuser
    assert client.get(URL, **token_for(admin_user)).status_code == 405
