"""Demo request generation and the writers, checked against hand-worked values and the real
importers (a file written by the demo writers must read back whole and unchanged)."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit_app.costs.pricing import Price, PriceBook
from audit_app.demo.traffic import REQUEST_COLUMNS, generate_requests
from audit_app.demo.workloads import DEFAULT_WORKLOADS
from audit_app.demo.writers import (
    LITELLM_COLUMNS,
    bench_litellm_csv,
    model_group,
    write_litellm_csv,
    write_litellm_jsonl,
    write_otel_jsonl,
)
from audit_app.ingestion.token_logs import CanonicalRequest, litellm, otel, read_requests

MONDAY = datetime(2025, 3, 3, tzinfo=UTC)
MILLION = 1_000_000


@pytest.fixture(scope="module")
def two_weeks() -> pd.DataFrame:
    return generate_requests(start=MONDAY, days=14, scale=0.05, seed=7)


@pytest.fixture(scope="module")
def small_week() -> pd.DataFrame:
    return generate_requests(start=MONDAY, days=7, scale=0.003, seed=11)


def _of(frame: pd.DataFrame, workload: str) -> pd.DataFrame:
    rows = frame[frame["workload"] == workload]
    assert len(rows) > 0, f"no requests for {workload}"
    return rows


# --- archetypes -------------------------------------------------------------------------------


def test_default_workloads_name_their_expected_class() -> None:
    assert {spec.name: spec.expected_class for spec in DEFAULT_WORKLOADS} == {
        "support-chat": "realtime",
        "helpdesk-bot": "realtime",
        "voice-assistant": "realtime",
        "code-assistant": "realtime",
        "nightly-evals": "async",
        "hourly-digest": "async",
        "weekly-report": "async",
        "embeddings-backfill": "async",
        "doc-ingestion": "async",
        "research-agent": "async",
        "triage-tool": "ambiguous",
        "sales-copilot": "realtime",
        "ticket-tagger": "async",
    }


def test_self_hosted_workloads_name_their_pool_and_carry_no_cost() -> None:
    self_hosted = {
        spec.name: (spec.provider, spec.model, spec.pool, spec.log_has_cost)
        for spec in DEFAULT_WORKLOADS
        if spec.pool
    }
    assert self_hosted == {
        "sales-copilot": ("hosted_vllm", "meta-llama/Llama-3.3-70B-Instruct", "h100-pool", False),
        "ticket-tagger": ("hosted_vllm", "meta-llama/Llama-3.3-70B-Instruct", "trn1-pool", False),
    }


def _catalog_card(provider: str, model: str) -> Price:
    return Price(
        card_id=None,
        provider=provider,
        model=model,
        valid_from=date(2024, 1, 1),
        input=Decimal(1),
        output=Decimal(1),
    )


# The api rows of shared/reference/hardware-catalog.csv that the demo models could match,
# typed from the file.
CATALOG_BOOK = PriceBook(
    [
        _catalog_card("openai", "gpt-4o"),
        _catalog_card("openai", "gpt-4o-mini"),
        _catalog_card("openai", "gpt-4.1"),
        _catalog_card("openai", "gpt-4.1-mini"),
        _catalog_card("anthropic", "claude-sonnet-4-5"),
        _catalog_card("anthropic", "claude-haiku-4-5"),
        _catalog_card("aws-bedrock", "anthropic.claude-haiku-4-5"),
        _catalog_card("aws-bedrock", "anthropic.claude-sonnet-4-5 (global)"),
    ]
)


def test_api_models_are_priced_by_the_catalog_except_the_fine_tune_and_embeddings() -> None:
    unpriced = {
        spec.name
        for spec in DEFAULT_WORKLOADS
        if not spec.pool
        and CATALOG_BOOK.find(provider=spec.provider, model=spec.model, day=date(2025, 3, 3))
        is None
    }
    assert unpriced == {"triage-tool", "embeddings-backfill"}
    # The fine-tune's log has no cost either, so its spend is unpriced in the product.
    assert [spec.name for spec in DEFAULT_WORKLOADS if not spec.pool and not spec.log_has_cost] == [
        "triage-tool"
    ]


@pytest.mark.parametrize(
    ("model", "group"),
    [
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("us.anthropic.claude-haiku-4-5-20251001-v1:0", "anthropic.claude-haiku-4-5"),
        ("meta-llama/Llama-3.3-70B-Instruct", "meta-llama/Llama-3.3-70B-Instruct"),
        ("text-embedding-3-small", "text-embedding-3-small"),
    ],
)
def test_model_group_drops_dates_versions_and_regions(model: str, group: str) -> None:
    assert model_group(model) == group


def test_a_spec_rejects_an_unknown_class() -> None:
    with pytest.raises(ValueError, match="expected_class"):
        replace(DEFAULT_WORKLOADS[0], expected_class="batch")


# --- determinism ------------------------------------------------------------------------------


def test_the_same_seed_gives_the_same_frame_and_another_seed_does_not() -> None:
    first = generate_requests(start=MONDAY, days=2, scale=0.01, seed=5)
    again = generate_requests(start=MONDAY, days=2, scale=0.01, seed=5)
    other = generate_requests(start=MONDAY, days=2, scale=0.01, seed=6)
    pd.testing.assert_frame_equal(first, again)
    assert list(first.columns) == list(REQUEST_COLUMNS)
    assert len(first) != len(other) or not first["request_id"].equals(other["request_id"])
    assert set(first["request_id"]).isdisjoint(set(other["request_id"]))


def test_a_workload_keeps_its_requests_when_others_are_added() -> None:
    alone = generate_requests(start=MONDAY, days=2, workloads=DEFAULT_WORKLOADS[4:5], seed=3)
    together = generate_requests(start=MONDAY, days=2, workloads=DEFAULT_WORKLOADS, seed=3)
    evals = together[together["workload"] == "nightly-evals"]
    assert evals["started_at"].tolist() == alone["started_at"].tolist()
    assert evals["input_tokens"].tolist() == alone["input_tokens"].tolist()


def test_no_workloads_give_an_empty_frame_with_every_column() -> None:
    frame = generate_requests(start=MONDAY, days=1, workloads=[], seed=0)
    assert list(frame.columns) == list(REQUEST_COLUMNS)
    assert len(frame) == 0


def test_start_must_be_timezone_aware() -> None:
    with pytest.raises(ValueError, match="timezone"):
        generate_requests(start=datetime(2025, 3, 3), days=1)  # noqa: DTZ001


# --- traffic shapes ---------------------------------------------------------------------------


def test_the_window_holds_every_request(two_weeks: pd.DataFrame) -> None:
    assert two_weeks["started_at"].min() >= MONDAY
    assert two_weeks["started_at"].max() < MONDAY + timedelta(days=14)
    assert two_weeks["started_at"].is_monotonic_increasing
    # 188,345 requests a day at scale 1 (sum of the specs' rates): 14 days at 5 % is ~131,800.
    assert 120_000 < len(two_weeks) < 160_000


def test_office_chat_is_mostly_weekdays_in_us_business_hours(two_weeks: pd.DataFrame) -> None:
    started = _of(two_weeks, "support-chat")["started_at"]
    in_hours = (started.dt.day_of_week < 5) & (started.dt.hour >= 13) & (started.dt.hour < 22)
    assert in_hours.mean() >= 0.80


def test_the_hourly_cron_runs_in_the_first_five_minutes_of_every_hour(
    two_weeks: pd.DataFrame,
) -> None:
    started = _of(two_weeks, "hourly-digest")["started_at"]
    assert set(started.dt.minute) <= {0, 1, 2, 3, 4}
    assert set(started.dt.hour) == set(range(24))


def test_nightly_evals_run_between_one_and_three_utc(two_weeks: pd.DataFrame) -> None:
    evals = _of(two_weeks, "nightly-evals")
    assert set(evals["started_at"].dt.hour) == {1, 2}
    assert set(evals["caller"]) == {"eval-runner"}
    assert not evals["streaming"].any()
    assert 0.3 < evals["batch_api"].mean() < 0.5  # 40 % on the batch API


def test_the_weekly_report_is_one_burst_each_monday_morning(two_weeks: pd.DataFrame) -> None:
    started = _of(two_weeks, "weekly-report")["started_at"]
    assert set(started.dt.day_of_week) == {0}
    assert set(started.dt.hour) == {6}
    assert started.dt.minute.max() < 40
    assert started.dt.date.nunique() == 2


def test_the_follow_the_sun_bot_answers_around_the_clock(two_weeks: pd.DataFrame) -> None:
    hours = _of(two_weeks, "helpdesk-bot")["started_at"].dt.hour.value_counts()
    assert set(hours.index) == set(range(24))
    # Humps at 03, 11 and 18 UTC: each busier than the troughs between them.
    assert min(hours[3], hours[11], hours[18]) > 1.5 * max(hours[7], hours[14], hours[22])


def test_embeddings_have_no_output_and_many_input_tokens(two_weeks: pd.DataFrame) -> None:
    embeddings = _of(two_weeks, "embeddings-backfill")
    assert set(embeddings["operation"]) == {"embedding"}
    assert set(embeddings["output_tokens"]) <= {0, 1}
    assert embeddings["input_tokens"].mean() > 3_000
    # Bursty: the busiest tenth of its active hours hold most of its requests.
    per_hour = embeddings["started_at"].dt.floor("h").value_counts()
    top_hours = per_hour.nlargest(max(1, len(per_hour) // 10)).sum()
    assert top_hours / per_hour.sum() > 0.2


def test_document_ingestion_is_flat_around_the_clock(two_weeks: pd.DataFrame) -> None:
    hours = _of(two_weeks, "doc-ingestion")["started_at"].dt.hour.value_counts()
    assert hours.max() < 1.3 * hours.min()


def test_streaming_habits(two_weeks: pd.DataFrame) -> None:
    assert _of(two_weeks, "support-chat")["streaming"].mean() >= 0.9
    assert _of(two_weeks, "voice-assistant")["streaming"].mean() == 0
    agent = _of(two_weeks, "research-agent")
    assert agent["streaming"].all()
    assert set(agent["caller"]) == {"research-agent"}
    assert set(agent["end_user"]) == {""}


def test_end_user_counts_follow_the_specs(two_weeks: pd.DataFrame) -> None:
    assert 3_500 < _of(two_weeks, "support-chat")["end_user"].nunique() <= 4_000
    assert _of(two_weeks, "code-assistant")["end_user"].nunique() <= 350
    assert set(_of(two_weeks, "doc-ingestion")["end_user"]) == {""}


# --- row consistency --------------------------------------------------------------------------


def test_timestamps_are_ordered_and_latencies_follow_them(two_weeks: pd.DataFrame) -> None:
    frame = two_weeks
    first = frame["first_token_at"]
    assert (frame["ended_at"] >= frame["started_at"]).all()
    timed = frame[first.notna()]
    assert (timed["first_token_at"] >= timed["started_at"]).all()
    assert (timed["ended_at"] > timed["first_token_at"]).all()
    # A first token is observed exactly for streamed, successful requests.
    assert (first.notna() == (frame["streaming"] & (frame["status"] == "success"))).all()

    latency_ms = (frame["ended_at"] - frame["started_at"]).dt.total_seconds() * 1_000
    np.testing.assert_allclose(frame["latency_ms"], latency_ms, rtol=0, atol=1e-6)
    ttft_ms = (timed["first_token_at"] - timed["started_at"]).dt.total_seconds() * 1_000
    np.testing.assert_allclose(timed["ttft_ms"], ttft_ms, rtol=0, atol=1e-6)
    decode_ms = (timed["ended_at"] - timed["first_token_at"]).dt.total_seconds() * 1_000
    np.testing.assert_allclose(
        timed["tpot_ms"], decode_ms / (timed["output_tokens"] - 1), rtol=1e-9
    )
    assert frame.loc[first.isna(), ["ttft_ms", "tpot_ms"]].isna().all().all()


def test_token_counts_are_whole_and_consistent(two_weeks: pd.DataFrame) -> None:
    frame = two_weeks
    for column in ("input_tokens", "output_tokens", "cached_input_tokens"):
        assert frame[column].dtype == np.int64
        assert (frame[column] >= 0).all()
    assert (frame["cached_input_tokens"] <= frame["input_tokens"]).all()
    succeeded = frame[frame["status"] == "success"]
    assert (succeeded["input_tokens"] >= 1).all()
    chats = succeeded[succeeded["operation"] == "chat"]
    assert (chats["output_tokens"] >= 1).all()
    failed = frame[frame["status"] == "error"]
    assert 0.005 < len(failed) / len(frame) < 0.02
    assert (failed[["input_tokens", "output_tokens", "cached_input_tokens"]] == 0).all().all()


def test_request_ids_are_unique_hex(two_weeks: pd.DataFrame) -> None:
    ids = two_weeks["request_id"]
    assert ids.is_unique
    assert ids.str.fullmatch(r"[0-9a-f]{32}").all()


def test_batch_requests_never_stream_and_wait_in_the_queue(two_weeks: pd.DataFrame) -> None:
    batch = two_weeks[two_weeks["batch_api"]]
    assert set(batch["workload"]) == {"nightly-evals"}
    assert not batch["streaming"].any()
    online = _of(two_weeks, "nightly-evals")
    online = online[~online["batch_api"]]
    assert batch["latency_ms"].median() > 60 * online["latency_ms"].median()


@pytest.mark.parametrize(
    ("workload", "input_price", "cached_price", "output_price"),
    [
        # USD per million tokens from hardware-catalog.csv (notes give the cached price).
        ("support-chat", 2.5, 1.25, 10.0),
        ("helpdesk-bot", 1.0, 0.10, 5.0),
        ("weekly-report", 1.0, 1.0, 5.0),  # Bedrock row lists no cached price
        ("embeddings-backfill", 0.02, 0.02, 0.0),
    ],
)
def test_logged_cost_is_tokens_times_the_catalog_price(
    two_weeks: pd.DataFrame,
    workload: str,
    input_price: float,
    cached_price: float,
    output_price: float,
) -> None:
    rows = _of(two_weeks, workload)
    uncached = rows["input_tokens"] - rows["cached_input_tokens"]
    expected = (
        uncached * input_price
        + rows["cached_input_tokens"] * cached_price
        + rows["output_tokens"] * output_price
    ) / MILLION
    np.testing.assert_allclose(rows["cost_usd"], expected, rtol=1e-12, atol=1e-15)


def test_batch_requests_cost_half(two_weeks: pd.DataFrame) -> None:
    batch = _of(two_weeks, "nightly-evals")
    batch = batch[batch["batch_api"]]
    # gpt-4.1-mini batch prices: 0.20 input, 0.80 output (catalog notes).
    expected = (batch["input_tokens"] * 0.20 + batch["output_tokens"] * 0.80) / MILLION
    np.testing.assert_allclose(batch["cost_usd"], expected, rtol=1e-12)


def test_logs_without_cost_have_none(two_weeks: pd.DataFrame) -> None:
    no_cost = two_weeks[two_weeks["workload"].isin(["sales-copilot", "ticket-tagger"])]
    assert no_cost["cost_usd"].isna().all()
    assert set(no_cost["pool"]) == {"h100-pool", "trn1-pool"}


# --- benchmark file ---------------------------------------------------------------------------


def test_bench_file_has_exactly_the_rows_asked_for(tmp_path: Path) -> None:
    path = tmp_path / "bench.csv"
    bench_litellm_csv(path, rows=12_345, seed=1)
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == list(LITELLM_COLUMNS)
    assert len(rows) - 1 == 12_345
    assert len({row[0] for row in rows[1:]}) == 12_345


def test_bench_file_spans_several_generated_days_with_one_header(tmp_path: Path) -> None:
    path = tmp_path / "bench.csv"
    bench_litellm_csv(path, rows=30, seed=2)
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert len(rows) == 31
    assert sum(row[0] == "request_id" for row in rows) == 1


# --- round trips through the real importers ---------------------------------------------------


def _import(path: Path) -> list[CanonicalRequest]:
    """Canonical requests (with request ids) read back from a written file.

    Read row by row here: the columnar readers hand over a frame without request ids, and
    their equivalence with the row path is tested in test_litellm_columnar.py,
    test_json_columnar.py and test_otel_columnar.py.
    """
    requests: list[CanonicalRequest] = []
    with path.open("rb") as stream:
        if path.name.startswith("litellm"):
            chunks = litellm.read_rows(stream, chunk_rows=20_000)
        elif path.name.startswith("otel"):
            chunks = otel.read_rows(stream, chunk_rows=20_000)
        else:
            chunks = read_requests(stream)
        for chunk in chunks:
            assert chunk.rejects == []
            assert chunk.frame is None
            requests.extend(chunk.requests)
    return requests


def _as_datetime(value: pd.Timestamp) -> datetime | None:
    return None if pd.isna(value) else value.to_pydatetime()


WRITERS = {
    "litellm.csv": write_litellm_csv,
    "litellm.jsonl": write_litellm_jsonl,
    "otel.jsonl": write_otel_jsonl,
}


@pytest.mark.parametrize("file_name", list(WRITERS))
def test_round_trip_through_the_importer(
    small_week: pd.DataFrame, tmp_path: Path, file_name: str
) -> None:
    frame = small_week
    path = tmp_path / file_name
    WRITERS[file_name](frame, path)
    requests = _import(path)
    is_otel = file_name.startswith("otel")

    assert len(requests) == len(frame)
    assert sum(r.input_tokens for r in requests) == int(frame["input_tokens"].sum())
    assert sum(r.output_tokens for r in requests) == int(frame["output_tokens"].sum())
    assert sum(r.cached_input_tokens for r in requests) == int(frame["cached_input_tokens"].sum())
    assert {r.workload for r in requests} == set(frame["workload"])

    # OTel request ids are `<traceId>/<spanId>`: the demo id, then its last 16 hex digits.
    rows = {
        (f"{row.request_id}/{row.request_id[16:]}" if is_otel else row.request_id): row
        for row in frame.itertuples(index=False)
    }
    assert len(rows) == len(requests)
    for request in requests:
        row = rows[request.request_id]
        assert request.workload == row.workload
        assert (request.team, request.caller, request.pool) == (row.team, row.caller, row.pool)
        assert request.end_user == row.end_user
        assert request.model == row.model
        assert request.operation == row.operation
        assert request.status == row.status
        assert (request.input_tokens, request.output_tokens) == (
            row.input_tokens,
            row.output_tokens,
        )
        assert request.started_at == row.started_at.to_pydatetime()
        assert request.ended_at == row.ended_at.to_pydatetime()
        assert request.first_token_at == _as_datetime(row.first_token_at)
        if is_otel:
            assert request.streaming == row.streaming
            assert request.batch_api is False  # OTel has no batch convention
        else:
            assert request.streaming == (not pd.isna(row.first_token_at))
            assert request.batch_api == row.batch_api

        if not math.isnan(row.cost_usd):
            assert request.cost_usd is not None
            assert abs(request.cost_usd - Decimal(repr(row.cost_usd))) <= Decimal("1e-9")
        elif not is_otel and row.input_tokens + row.output_tokens == 0:
            # LiteLLM always writes `spend`; 0 on a row without tokens reads as a cost of 0.
            assert request.cost_usd == Decimal(0)
        else:
            assert request.cost_usd is None


def test_round_trip_covers_the_interesting_rows(small_week: pd.DataFrame) -> None:
    """The round-trip frame holds every kind of row the writers treat specially."""
    frame = small_week
    assert frame["batch_api"].any()
    assert (frame["status"] == "error").any()
    assert frame["cost_usd"].isna().any()
    assert (frame["cached_input_tokens"] > 0).any()
    assert (frame["pool"] != "").any()
    assert (frame["operation"] == "embedding").any()
    assert frame["first_token_at"].notna().any()


def test_otel_documents_group_each_callers_spans(small_week: pd.DataFrame, tmp_path: Path) -> None:
    frame = small_week.iloc[:100]
    path = tmp_path / "spans.jsonl"
    write_otel_jsonl(frame, path, spans_per_document=7)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 15  # ceil(100 / 7)
    trace_ids = []
    for line_number, line in enumerate(lines):
        document = json.loads(line)
        callers = [
            entry["resource"]["attributes"][0]["value"]["stringValue"]
            for entry in document["resourceSpans"]
        ]
        assert len(callers) == len(set(callers))
        spans_here = []
        for entry, caller in zip(document["resourceSpans"], callers, strict=True):
            for span in entry["scopeSpans"][0]["spans"]:
                workload = next(a for a in span["attributes"] if a["key"] == "workload")
                row = frame[frame["request_id"] == span["traceId"]].iloc[0]
                assert row["caller"] == caller
                assert workload["value"]["stringValue"] == row["workload"]
                spans_here.append(span["traceId"])
        # Each document holds the next 7 requests of the frame.
        start = line_number * 7
        assert set(spans_here) == set(frame["request_id"].iloc[start : start + 7])
        trace_ids.extend(spans_here)
    assert len(trace_ids) == 100


def test_writers_accept_an_empty_frame(tmp_path: Path) -> None:
    empty = generate_requests(start=MONDAY, days=1, workloads=[], seed=0)
    write_litellm_csv(empty, tmp_path / "empty.csv")
    assert (tmp_path / "empty.csv").read_text(encoding="utf-8").splitlines() == [
        ",".join(f'"{name}"' for name in LITELLM_COLUMNS)
    ]
    write_otel_jsonl(empty, tmp_path / "empty.jsonl")
    assert (tmp_path / "empty.jsonl").read_bytes() == b""
