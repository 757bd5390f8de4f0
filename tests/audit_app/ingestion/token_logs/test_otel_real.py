"""The OTel importer on real captures (tests/fixtures/real/otel/, how they were made in its
SOURCES.md): a LiteLLM proxy's `callbacks: ["otel"]` spans, with the default and the latest
GenAI conventions, and the openai client's spans from openai-v2 and OpenLLMetry.

Every expected value was read by hand from the span's attributes in the fixture; the comment
beside it names the attribute. The columnar reader must give exactly what the row reader gives.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from audit_app.ingestion.token_logs import otel
from audit_app.ingestion.token_logs.base import CanonicalRequest
from audit_app.ingestion.token_logs.otel_columnar import read_jsonl_columnar
from tests.support.chunks import collect_chunks
from tests.support.paths import FIXTURES_DIR

REAL = FIXTURES_DIR / "real" / "otel"
LITELLM = REAL / "litellm-1.106.12_proxy_callbacks-otel.jsonl"
LITELLM_LATEST = REAL / "litellm-1.106.12_proxy_callbacks-otel_gen-ai-latest-experimental.jsonl"
OPENAI_V2 = REAL / "openai-v2-2.4b0_openai-2.54.0_via-litellm-proxy.jsonl"
OPENLLMETRY = REAL / "openllmetry-openai-0.62.4_openai-2.54.0_via-litellm-proxy.jsonl"
CAPTURES = (LITELLM, LITELLM_LATEST, OPENAI_V2, OPENLLMETRY)
# `metadata.user_api_key_hash` of the proxy's master key (the key alias is "").
MASTER_KEY = "litellm_proxy_master_key"


def _read(path: Path) -> tuple[list[CanonicalRequest], list[str]]:
    """(requests, notes) of `otel.read_rows` on a capture."""
    requests: list[CanonicalRequest] = []
    notes: list[str] = []
    with path.open("rb") as stream:
        for chunk in otel.read_rows(stream, chunk_rows=1000):
            assert not chunk.rejects
            requests += chunk.requests
            notes += chunk.notes
    return requests, notes


def _columns(requests: list[CanonicalRequest], *names: str) -> list[tuple[object, ...]]:
    return [tuple(getattr(r, name) for name in names) for r in requests]


# --- LiteLLM proxy, default conventions ---------------------------------------------------------


def test_litellm_calls_get_the_deployment_model_and_its_provider() -> None:
    requests, _ = _read(LITELLM)
    # litellm.provider.model; gen_ai.response.model is the alias (`claude-sonnet`) for calls 2, 4
    assert _columns(requests, "model", "provider") == [
        ("openai/gpt-4o", "openai"),
        ("anthropic/claude-3-5-sonnet-20241022", "anthropic"),
        ("openai/gpt-4o", "openai"),
        ("anthropic/claude-3-5-sonnet-20241022", "anthropic"),
        ("openai/gpt-4o", "openai"),
        ("openai/gpt-4o", "openai"),
        ("openai/gpt-4o-mini", "openai"),
    ]


def test_litellm_calls_are_attributed_from_the_requester_and_spend_logs_metadata() -> None:
    requests, _ = _read(LITELLM)
    assert [r.workload for r in requests] == [
        "support-bot",  # requester_metadata tags ['workload:support-bot', 'env:prod']
        "summarizer",  # requester_metadata {'workload': 'summarizer'}
        "chat-ui",  # requester_metadata tags ['workload:chat-ui']
        MASTER_KEY,  # no tags or metadata: the caller, the key's hash
        "header-tagged",  # requester_custom_headers x-litellm-tags 'workload:header-tagged,team:ml'
        "billing-agent",  # spend_logs_metadata {'workload': 'billing-agent', 'pool': 'p1'}
        "fails",  # requester_metadata tags ['workload:fails']
    ]
    assert {r.caller for r in requests} == {MASTER_KEY}
    assert {r.team for r in requests} == {""}  # user_api_key_team_id and _alias are ""
    assert [r.pool for r in requests] == ["", "", "", "", "", "p1", ""]
    # metadata.user_api_key_end_user_id / llm.user on call 6 only
    assert [r.end_user for r in requests] == ["", "", "", "", "", "end-user-42", ""]


def test_litellm_cost_is_its_total_cost_and_a_zero_with_tokens_is_unpriced() -> None:
    requests, _ = _read(LITELLM)
    assert [r.cost_usd for r in requests] == [
        Decimal("0.00022500000000000002"),  # gen_ai.cost.total_cost
        None,  # 0.0 for 10 + 20 tokens: LiteLLM had no price for the Anthropic mock
        Decimal("0.000125"),
        None,  # 0.0 for 10 + 7 tokens
        Decimal("0.00022500000000000002"),
        Decimal("0.00022500000000000002"),
        None,  # the failed call has no gen_ai.cost.* at all
    ]
    assert _columns(requests, "input_tokens", "output_tokens") == [
        (10, 20),
        (10, 20),
        (10, 10),
        (10, 7),
        (10, 20),
        (10, 20),
        (0, 0),  # no usage on the failed call
    ]


def test_litellm_streaming_operation_status_and_times() -> None:
    requests, _ = _read(LITELLM)
    # llm.is_streaming is the text "True" / "False"
    assert [r.streaming for r in requests] == [False, False, True, True, False, False, False]
    assert {r.first_token_at for r in requests} == {None}  # no TTFT on LiteLLM's spans
    assert {r.operation for r in requests} == {"chat"}  # gen_ai.operation.name `acompletion`
    assert [r.status for r in requests] == ["success"] * 6 + ["error"]  # status.code 2
    first = requests[0]
    assert first.request_id == "5be46e2d472be0c49dccef1382c57d29/2208b830e70a4395"
    # startTimeUnixNano 1796624897265851136, endTimeUnixNano 1796624897318101760
    assert first.started_at == datetime(2026, 12, 7, 6, 28, 17, 265851, tzinfo=UTC)
    assert first.ended_at == datetime(2026, 12, 7, 6, 28, 17, 318101, tzinfo=UTC)


def test_litellm_proxy_spans_are_counted_as_ignored_with_their_names() -> None:
    _, notes = _read(LITELLM)
    # 79 spans, 7 of them litellm_request; the first five names of the rest, sorted.
    assert notes == [
        "Ignored 72 spans that carry no gen_ai.* attribute (not calls to a model), such as "
        "`Failed Proxy Server Request`, `GET /health/liveliness`, `POST /chat/completions`, "
        "`Received Proxy Server Request`, `auth`."
    ]


# --- LiteLLM proxy, latest GenAI conventions ----------------------------------------------------


def test_litellm_with_the_latest_conventions() -> None:
    requests, notes = _read(LITELLM_LATEST)
    assert _columns(
        requests, "model", "provider", "workload", "streaming", "cost_usd", "operation"
    ) == [
        # gen_ai.provider.name; no gen_ai.request.stream on a call that was not streamed
        ("anthropic/claude-3-5-sonnet-20241022", "anthropic", "semconv-test", None, None, "chat"),
        ("openai/gpt-4o", "openai", "semconv-stream", True, Decimal("0.000125"), "chat"),
    ]
    assert notes[0].startswith("Ignored 21 spans")  # 23 spans, 2 calls


# --- client instrumentations ----------------------------------------------------------------------


def test_openai_v2_client_spans() -> None:
    requests, notes = _read(OPENAI_V2)
    assert notes == []  # every span is a call
    assert _columns(requests, "model", "provider", "workload", "team", "streaming", "status") == [
        # gen_ai.response.model (the client sees the proxy's alias), service.name, team on
        # the resource; openai-v2 2.4b0 writes no streaming flag
        ("gpt-4o", "openai", "support-app-openai-v2", "support", None, "success"),
        ("claude-sonnet", "openai", "support-app-openai-v2", "support", None, "success"),
        ("broken", "openai", "support-app-openai-v2", "support", None, "error"),
    ]
    assert {r.first_token_at for r in requests} == {None}


def test_openllmetry_streaming_flag_and_first_chunk_event() -> None:
    requests, _ = _read(OPENLLMETRY)
    # gen_ai.is_streaming false / true / false
    assert [r.streaming for r in requests] == [False, True, False]
    streamed = requests[1]
    # startTimeUnixNano 1796625098219483184; first gen_ai.content.completion.chunk event at
    # 1796625098354501729: 135018 us later, both cut to the microsecond
    assert streamed.started_at == datetime(2026, 12, 7, 6, 31, 38, 219483, tzinfo=UTC)
    assert streamed.first_token_at == datetime(2026, 12, 7, 6, 31, 38, 354501, tzinfo=UTC)
    assert streamed.ttft_ms == pytest.approx(135.018)
    assert requests[0].first_token_at is None and requests[2].first_token_at is None
    assert [r.status for r in requests] == ["success", "success", "error"]
    assert _columns(requests, "input_tokens", "output_tokens") == [(10, 20), (10, 7), (0, 0)]


# --- the columnar reader agrees -------------------------------------------------------------------


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
@pytest.mark.parametrize("block_bytes", [None, 4096])
def test_the_columnar_reader_gives_the_row_readers_rows(path: Path, block_bytes: int) -> None:
    data = path.read_bytes()
    columnar = list(read_jsonl_columnar(io.BytesIO(data), chunk_rows=2, block_bytes=block_bytes))
    frame, rejects, _ = collect_chunks(iter(columnar), sort_by=None, categories_as_text=True)
    expected, expected_rejects, _ = collect_chunks(
        otel.read_rows(io.BytesIO(data), chunk_rows=1000), sort_by=None, categories_as_text=True
    )
    pd.testing.assert_frame_equal(frame, expected)
    assert rejects == expected_rejects == []
    assert columnar[-1].bytes_read == len(data)


def test_a_large_litellm_export_takes_the_columnar_path_with_the_same_rows_and_note() -> None:
    # Three copies: past the 64 KiB head, so `otel.read` reads it by blocks.
    data = LITELLM.read_bytes() * 3
    fast = list(otel.read(io.BytesIO(data), chunk_rows=4))
    assert any(chunk.frame is not None for chunk in fast)
    slow = list(otel.read_rows(io.BytesIO(data), chunk_rows=4))
    frame, _, _ = collect_chunks(iter(fast), sort_by=None, categories_as_text=True)
    expected, _, _ = collect_chunks(iter(slow), sort_by=None, categories_as_text=True)
    pd.testing.assert_frame_equal(frame, expected)
    assert len(frame) == 21
    assert [n for c in fast for n in c.notes] == [n for c in slow for n in c.notes]
    assert fast[-1].notes[0].startswith("Ignored 216 spans")  # 3 x 72
