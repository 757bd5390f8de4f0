"""Synthetic LLM request logs for the demo, the benchmarks and the tests.

A realistic organisation is described as a list of workload archetypes (`WorkloadSpec`): who
sends the traffic, to which provider and model, with what arrival shape, token sizes, latency and
streaming habits, and whether the log carries its own cost. Each archetype also names the class
the classifier should arrive at (`realtime`, `async` or `ambiguous`), so later tests can check
the classifier against traffic whose nature is known.

`generate_requests` turns the archetypes into one row per request (a pandas DataFrame, fully
vectorised with numpy), and the writers put those rows into the real formats the importers read:
LiteLLM spend logs (CSV and JSONL) and OpenTelemetry GenAI spans (OTLP/JSON, one document per
line). `bench_litellm_csv` writes a LiteLLM CSV of an exact size in bounded memory, for the
ingestion speed benchmark.

Columns of the generated frame (`REQUEST_COLUMNS`; names follow `CanonicalRequest`):
- `request_id`: 32 hex digits, unique within a frame.
- `workload`, `team`, `caller`, `provider`, `model`, `operation` (`chat` or `embedding`),
  `pool` ("" for API traffic), `end_user` ("" when the workload has none): text.
- `started_at`, `first_token_at`, `ended_at`: UTC timestamps (microseconds). `first_token_at`
  is set only for streamed successful requests: a non-streamed response reaches the client whole,
  so no first-token time is observed (the importers read it the same way).
- `ttft_ms`, `tpot_ms`, `latency_ms`: floats derived from those timestamps by the definitions of
  DESIGN 4.1 (TPOT = (latency - TTFT) / (output tokens - 1)); NaN where undefined.
- `streaming` (the request asked for a stream), `batch_api`: booleans. Batch requests never
  stream and wait minutes in the provider's queue.
- `input_tokens` (includes cached), `output_tokens`, `cached_input_tokens`: int64. Errors carry
  no usage (all three 0); embeddings have 0 output tokens.
- `cost_usd`: float USD as the gateway logged it, NaN when the workload's log carries no cost
  (self-hosted models, a model the gateway cannot price). An error costs 0 when logged.
- `status`: `success` or `error`.

How the writers encode the frame (so a round trip through the importers is exact):
- LiteLLM: `spend` is 0 where `cost_usd` is NaN, which the importer reads as "no price" for rows
  with tokens; an error row (no tokens) with `spend` 0 reads back as a cost of 0.
  `completionStartTime` equals `endTime` for requests without a first token. Batch requests
  carry `"batch_api": true` in `metadata` (the importer's batch marker that keeps `call_type`,
  and so the operation, intact). Tags are `["workload:<name>", "team:<team>"]`.
- OpenTelemetry: the span's `traceId` is the request id and its `spanId` the last 16 hex digits
  of it, so the importer's request id is `<request_id>/<request_id[16:]>`. The resource's
  `service.name` is the caller; `workload`, `team` and `pool` are span attributes. OTel has no
  batch convention, so batch requests read back as ordinary ones.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from audit_app.costs.pricing import Price, PriceBook

# ---------------------------------------------------------------------------------------------
# Constants
# ---------------------------------------------------------------------------------------------

CLASS_REALTIME = "realtime"
CLASS_ASYNC = "async"
CLASS_AMBIGUOUS = "ambiguous"
EXPECTED_CLASSES = frozenset({CLASS_REALTIME, CLASS_ASYNC, CLASS_AMBIGUOUS})

OPERATION_CHAT = "chat"
OPERATION_EMBEDDING = "embedding"
STATUS_SUCCESS = "success"
STATUS_ERROR = "error"

REQUEST_COLUMNS = (
    "request_id",
    "workload",
    "team",
    "caller",
    "provider",
    "model",
    "operation",
    "pool",
    "end_user",
    "started_at",
    "first_token_at",
    "ended_at",
    "ttft_ms",
    "tpot_ms",
    "latency_ms",
    "streaming",
    "batch_api",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "cost_usd",
    "status",
)
LITELLM_COLUMNS = (
    "request_id",
    "call_type",
    "api_key",
    "spend",
    "total_tokens",
    "prompt_tokens",
    "completion_tokens",
    "startTime",
    "endTime",
    "request_duration_ms",
    "completionStartTime",
    "model",
    "model_group",
    "custom_llm_provider",
    "user",
    "metadata",
    "request_tags",
    "team_id",
    "end_user",
    "status",
)

MINUTE_US = 60 * 1_000_000
HOUR_US = 60 * MINUTE_US
DAY_US = 24 * HOUR_US
# 1970-01-01, where epoch hours start, was a Thursday (Monday = 0).
EPOCH_WEEKDAY = 3
NOT_A_TIME = np.iinfo(np.int64).min  # datetime64's NaT

INPUT_TOKEN_SPREAD = 0.6  # lognormal sigma of prompt sizes
OUTPUT_TOKEN_SPREAD = 0.7
BURST_SIZE_SPREAD = 0.5  # lognormal sigma of the size of one burst
MAX_INPUT_TOKENS = 200_000
MAX_OUTPUT_TOKENS = 16_384
# A batch-API request sits in the provider's queue before it runs (OpenAI promises 24 h; most
# finish within the hour).
BATCH_WAIT_MEDIAN_MINUTES = 20.0
BATCH_WAIT_SPREAD = 0.8
ERROR_LATENCY_MEDIAN_MS = 1_200.0
ERROR_LATENCY_SPREAD = 1.0

# What `_workload_requests` returns, before text columns are attached.
NUMERIC_PART_COLUMNS = (
    "end_user_index",
    "started_at",
    "first_token_at",
    "ended_at",
    "ttft_ms",
    "tpot_ms",
    "latency_ms",
    "streaming",
    "batch_api",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "cost_usd",
    "is_error",
)

WRITE_CHUNK_ROWS = 250_000
BENCH_START = datetime(2025, 3, 3, tzinfo=UTC)  # a Monday
LITELLM_STATUS = {STATUS_SUCCESS: "success", STATUS_ERROR: "failure"}
LITELLM_CALL_TYPES = {
    OPERATION_CHAT: "acompletion",
    OPERATION_EMBEDDING: "aembedding",
    "completion": "atext_completion",
}
OTEL_PROVIDER_NAMES = {
    "bedrock": "aws.bedrock",
    "azure": "azure.ai.openai",
    "vertex_ai": "gcp.vertex_ai",
    "hosted_vllm": "vllm",
}
OTEL_OPERATION_NAMES = {
    OPERATION_CHAT: "chat",
    OPERATION_EMBEDDING: "embeddings",
    "completion": "text_completion",
}
OTEL_SPAN_KIND_CLIENT = 3
OTEL_STATUS_ERROR = 2
OTEL_SCOPE = {"name": "inference-spend-audit.demo", "version": "1.0"}
# A dated model name, the LiteLLM model group is the alias without the date or Bedrock version.
_MODEL_VERSION_SUFFIX = re.compile(r"(-\d{4}-\d{2}-\d{2}|-\d{8}(-v\d+:\d+)?)$")
_BEDROCK_REGION_PREFIX = re.compile(r"^(us|eu|apac|global)\.")


# ---------------------------------------------------------------------------------------------
# Workload archetypes
# ---------------------------------------------------------------------------------------------


def active_hours(
    active: Iterable[int], *, level: float = 1.0, rest: float = 0.0
) -> tuple[float, ...]:
    """24 hour weights: `level` in the active hours, `rest` elsewhere."""
    chosen = set(active)
    return tuple(level if hour in chosen else rest for hour in range(24))


def office_day(
    start: int, end: int, *, shoulder: float = 0.3, evening: float = 0.1, night: float = 0.02
) -> tuple[float, ...]:
    """A working day in local hours [start, end): full weight, shoulders, evening, night."""
    weights = []
    for hour in range(24):
        if start <= hour < end:
            weights.append(1.0)
        elif hour in (start - 1, end):
            weights.append(shoulder)
        elif end < hour <= end + 3 or start - 3 <= hour < start - 1:
            weights.append(evening)
        else:
            weights.append(night)
    return tuple(weights)


def humps(centres: Sequence[float], *, width: float, floor: float) -> tuple[float, ...]:
    """24 UTC hour weights made of Gaussian humps (wrapping at midnight) over a floor."""
    weights = []
    for hour in range(24):
        value = floor
        for centre in centres:
            distance = min(abs(hour - centre), 24 - abs(hour - centre))
            value += math.exp(-0.5 * (distance / width) ** 2)
        weights.append(value)
    return tuple(weights)


ALL_DAY = (1.0,) * 24
EVERY_DAY = (1.0,) * 7
WEEKDAYS = (1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0)


@dataclass(frozen=True, kw_only=True)
class TrafficShape:
    """When requests arrive: an inhomogeneous Poisson process over the hours of the week.

    The rate of an hour is `requests_per_day` spread over the week in proportion to
    `weekday_weights[day] * hour_weights[hour]`, both read in local time (`utc_offset_hours`).
    Arrivals fall uniformly in the first `active_minutes` of their hour (60: the whole hour;
    5: a cron job that runs at minute 0). With `bursts_per_day` > 0 the traffic comes instead in
    bursts: burst starts are drawn by the same weights, each burst lasts `burst_minutes` and
    holds on average `requests_per_day / bursts_per_day` requests.
    """

    requests_per_day: float
    hour_weights: tuple[float, ...] = ALL_DAY
    weekday_weights: tuple[float, ...] = EVERY_DAY
    utc_offset_hours: int = 0
    active_minutes: int = 60
    bursts_per_day: float = 0.0
    burst_minutes: float = 0.0

    def __post_init__(self) -> None:
        if self.requests_per_day < 0:
            raise ValueError("requests_per_day cannot be negative")
        if len(self.hour_weights) != 24 or len(self.weekday_weights) != 7:
            raise ValueError("hour_weights needs 24 values and weekday_weights 7")
        if min(self.hour_weights) < 0 or min(self.weekday_weights) < 0:
            raise ValueError("traffic weights cannot be negative")
        if sum(self.hour_weights) <= 0 or sum(self.weekday_weights) <= 0:
            raise ValueError("traffic weights must not all be zero")
        if not 1 <= self.active_minutes <= 60:
            raise ValueError("active_minutes must be between 1 and 60")
        if self.bursts_per_day < 0 or (self.bursts_per_day > 0 and self.burst_minutes <= 0):
            raise ValueError("bursty traffic needs a positive burst_minutes")

    @property
    def mean_hour_weight(self) -> float:
        """Mean of `weekday_weights[d] * hour_weights[h]` over the 168 hours of a week."""
        return sum(self.weekday_weights) * sum(self.hour_weights) / 168


@dataclass(frozen=True, kw_only=True)
class LatencyProfile:
    """Median time to first token and per output token; both vary lognormally by `spread`.

    For embeddings `ttft_ms` is the latency of the whole call.
    """

    ttft_ms: float
    tpot_ms: float
    spread: float = 0.35


@dataclass(frozen=True, kw_only=True)
class WorkloadSpec:
    """One workload archetype: what the requests look like and what class it should get."""

    name: str
    team: str
    provider: str
    model: str
    caller: str
    operation: str = OPERATION_CHAT
    pool: str = ""
    streaming_share: float
    batch_api_share: float = 0.0
    end_users: int
    end_user_prefix: str = "user-"
    traffic: TrafficShape
    mean_input_tokens: float
    mean_output_tokens: float
    cached_input_share: float = 0.0
    latency: LatencyProfile
    log_has_cost: bool
    error_share: float = 0.01
    expected_class: str
    description: str = ""

    def __post_init__(self) -> None:
        if self.expected_class not in EXPECTED_CLASSES:
            raise ValueError(f"expected_class must be one of {sorted(EXPECTED_CLASSES)}")
        for name in ("streaming_share", "batch_api_share", "cached_input_share", "error_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1")
        if self.end_users < 0 or self.mean_input_tokens < 1:
            raise ValueError("end_users cannot be negative and mean_input_tokens is at least 1")
        if self.operation != OPERATION_EMBEDDING and self.mean_output_tokens < 1:
            raise ValueError("mean_output_tokens is at least 1 except for embeddings")
        if self.streaming_share > 0 and self.latency.tpot_ms <= 0:
            # A stream with no time between first token and end is indistinguishable from a
            # non-streamed response in a LiteLLM log.
            raise ValueError("a streaming workload needs a positive tpot_ms")


US_OFFSET = -5  # US Eastern (standard time): 08:00-17:00 local is 13:00-22:00 UTC.
EUROPE_OFFSET = 1

DEFAULT_WORKLOADS: tuple[WorkloadSpec, ...] = (
    WorkloadSpec(
        name="support-chat",
        team="customer-experience",
        provider="openai",
        model="gpt-4o-2024-08-06",
        caller="support-chat-web",
        streaming_share=0.97,
        end_users=4_000,
        end_user_prefix="cust-",
        traffic=TrafficShape(
            requests_per_day=40_000,
            hour_weights=office_day(8, 17, shoulder=0.25, evening=0.06, night=0.01),
            weekday_weights=(1.0, 1.0, 1.0, 1.0, 1.0, 0.08, 0.08),
            utc_offset_hours=US_OFFSET,
        ),
        mean_input_tokens=1_800,
        mean_output_tokens=320,
        cached_input_share=0.3,
        latency=LatencyProfile(ttft_ms=450, tpot_ms=18),
        log_has_cost=True,
        expected_class=CLASS_REALTIME,
        description="Customer-facing chat on the website, US office hours, streamed.",
    ),
    WorkloadSpec(
        name="helpdesk-bot",
        team="customer-experience",
        provider="anthropic",
        model="claude-haiku-4-5-20251001",
        caller="helpdesk-bot",
        streaming_share=0.95,
        end_users=2_500,
        end_user_prefix="cust-",
        traffic=TrafficShape(
            requests_per_day=24_000,
            hour_weights=humps((3, 11, 18), width=2.0, floor=0.05),
            weekday_weights=(1.0, 1.0, 1.0, 1.0, 1.0, 0.7, 0.7),
        ),
        mean_input_tokens=2_400,
        mean_output_tokens=260,
        cached_input_share=0.4,
        latency=LatencyProfile(ttft_ms=600, tpot_ms=9),
        log_has_cost=True,
        expected_class=CLASS_REALTIME,
        description="Follow-the-sun support bot: APAC, EMEA and Americas humps, 24 hours.",
    ),
    WorkloadSpec(
        name="voice-assistant",
        team="customer-experience",
        provider="openai",
        model="gpt-4o-mini-2024-07-18",
        caller="voice-line",
        streaming_share=0.0,
        end_users=3_000,
        end_user_prefix="caller-",
        traffic=TrafficShape(
            requests_per_day=12_000,
            hour_weights=office_day(7, 21),
            weekday_weights=(1.0, 1.0, 1.0, 1.0, 1.0, 0.6, 0.5),
            utc_offset_hours=US_OFFSET,
        ),
        mean_input_tokens=900,
        mean_output_tokens=40,
        latency=LatencyProfile(ttft_ms=250, tpot_ms=8, spread=0.25),
        log_has_cost=True,
        error_share=0.02,
        expected_class=CLASS_REALTIME,
        description="Phone line assistant: short answers, not streamed, but a caller waits.",
    ),
    WorkloadSpec(
        name="code-assistant",
        team="developer-productivity",
        provider="anthropic",
        model="claude-sonnet-4-5-20250929",
        caller="ide-plugin",
        streaming_share=1.0,
        end_users=350,
        end_user_prefix="dev-",
        traffic=TrafficShape(
            requests_per_day=30_000,
            hour_weights=office_day(9, 18, night=0.01),
            weekday_weights=(1.0, 1.0, 1.0, 1.0, 0.9, 0.05, 0.03),
            utc_offset_hours=US_OFFSET,
        ),
        mean_input_tokens=3_500,
        mean_output_tokens=250,
        cached_input_share=0.6,
        latency=LatencyProfile(ttft_ms=900, tpot_ms=20),
        log_has_cost=True,
        expected_class=CLASS_REALTIME,
        description="Coding assistant in the IDE: streamed, weekdays, a few hundred developers.",
    ),
    WorkloadSpec(
        name="nightly-evals",
        team="ml-platform",
        provider="openai",
        model="gpt-4.1-mini-2025-04-14",
        caller="eval-runner",
        streaming_share=0.0,
        batch_api_share=0.4,
        end_users=0,
        traffic=TrafficShape(requests_per_day=8_000, hour_weights=active_hours((1, 2))),
        mean_input_tokens=1_800,
        mean_output_tokens=300,
        latency=LatencyProfile(ttft_ms=500, tpot_ms=12),
        log_has_cost=True,
        expected_class=CLASS_ASYNC,
        description="Nightly evaluation suite, 01:00-03:00 UTC, part of it on the batch API.",
    ),
    WorkloadSpec(
        name="hourly-digest",
        team="data-platform",
        provider="openai",
        model="gpt-4o-mini-2024-07-18",
        caller="digest-cron",
        streaming_share=0.0,
        end_users=0,
        traffic=TrafficShape(requests_per_day=24 * 30, active_minutes=5),
        mean_input_tokens=6_000,
        mean_output_tokens=400,
        latency=LatencyProfile(ttft_ms=700, tpot_ms=10),
        log_has_cost=True,
        expected_class=CLASS_ASYNC,
        description="Cron job summarising the last hour's tickets, every hour at minute 0.",
    ),
    WorkloadSpec(
        name="weekly-report",
        team="finance-analytics",
        provider="bedrock",
        model="us.anthropic.claude-haiku-4-5-20251001-v1:0",
        caller="report-generator",
        streaming_share=0.0,
        end_users=0,
        traffic=TrafficShape(
            requests_per_day=1_400 / 7,
            hour_weights=active_hours((6,)),
            weekday_weights=(1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
            active_minutes=40,
        ),
        mean_input_tokens=9_000,
        mean_output_tokens=1_500,
        latency=LatencyProfile(ttft_ms=800, tpot_ms=12),
        log_has_cost=True,
        expected_class=CLASS_ASYNC,
        description="Weekly report generation: one burst on Monday 06:00 UTC.",
    ),
    WorkloadSpec(
        name="embeddings-backfill",
        team="search",
        provider="openai",
        model="text-embedding-3-small",
        caller="backfill-worker",
        operation=OPERATION_EMBEDDING,
        streaming_share=0.0,
        end_users=0,
        traffic=TrafficShape(requests_per_day=30_000, bursts_per_day=0.4, burst_minutes=120),
        mean_input_tokens=6_000,
        mean_output_tokens=0,
        latency=LatencyProfile(ttft_ms=350, tpot_ms=0),
        log_has_cost=True,
        error_share=0.005,
        expected_class=CLASS_ASYNC,
        description="Re-embedding the document store: large bursts a few times a week.",
    ),
    WorkloadSpec(
        name="doc-ingestion",
        team="knowledge",
        provider="openai",
        model="gpt-4o-mini-2024-07-18",
        caller="ingest-pipeline",
        streaming_share=0.0,
        end_users=0,
        traffic=TrafficShape(requests_per_day=15_000),
        mean_input_tokens=4_000,
        mean_output_tokens=350,
        latency=LatencyProfile(ttft_ms=650, tpot_ms=10),
        log_has_cost=True,
        expected_class=CLASS_ASYNC,
        description="Document-ingestion pipeline extracting fields, flat 24/7.",
    ),
    WorkloadSpec(
        name="research-agent",
        team="strategy",
        provider="anthropic",
        model="claude-sonnet-4-5-20250929",
        caller="research-agent",
        streaming_share=1.0,
        end_users=0,
        traffic=TrafficShape(requests_per_day=2_400, bursts_per_day=6, burst_minutes=30),
        mean_input_tokens=12_000,
        mean_output_tokens=900,
        cached_input_share=0.5,
        latency=LatencyProfile(ttft_ms=1_200, tpot_ms=22),
        log_has_cost=True,
        expected_class=CLASS_ASYNC,
        description="Background research agent: streams, but one service identity, irregular.",
    ),
    WorkloadSpec(
        name="triage-tool",
        team="it-ops",
        provider="openai",
        # A private fine-tune: no price card knows it, so its spend shows up as unpriced.
        model="ft:gpt-4.1-mini-2025-04-14:acme-corp:ticket-triage:B7xk2Lq9",
        caller="triage-tool",
        streaming_share=0.5,
        end_users=8,
        end_user_prefix="emp-",
        traffic=TrafficShape(
            requests_per_day=25,
            hour_weights=active_hours(range(9, 17)),
            weekday_weights=WEEKDAYS,
            utc_offset_hours=EUROPE_OFFSET,
        ),
        mean_input_tokens=800,
        mean_output_tokens=120,
        latency=LatencyProfile(ttft_ms=400, tpot_ms=10),
        log_has_cost=False,
        expected_class=CLASS_AMBIGUOUS,
        description="Internal low-volume triage tool: a handful of requests in office hours.",
    ),
    WorkloadSpec(
        name="sales-copilot",
        team="sales-engineering",
        provider="hosted_vllm",
        model="meta-llama/Llama-3.3-70B-Instruct",
        caller="sales-copilot",
        pool="h100-pool",
        streaming_share=0.98,
        end_users=600,
        end_user_prefix="rep-",
        traffic=TrafficShape(
            requests_per_day=6_000,
            hour_weights=office_day(8, 18),
            weekday_weights=(1.0, 1.0, 1.0, 1.0, 1.0, 0.05, 0.05),
            utc_offset_hours=US_OFFSET,
        ),
        mean_input_tokens=2_500,
        mean_output_tokens=350,
        latency=LatencyProfile(ttft_ms=180, tpot_ms=25),
        log_has_cost=False,
        expected_class=CLASS_REALTIME,
        description="Sales copilot on self-hosted Llama 3.3 70B (vLLM on an H100 pool).",
    ),
    WorkloadSpec(
        name="ticket-tagger",
        team="customer-experience",
        provider="hosted_vllm",
        model="meta-llama/Llama-3.3-70B-Instruct",
        caller="ticket-tagger",
        pool="trn1-pool",
        streaming_share=0.0,
        end_users=0,
        traffic=TrafficShape(requests_per_day=20_000),
        mean_input_tokens=1_200,
        mean_output_tokens=60,
        latency=LatencyProfile(ttft_ms=600, tpot_ms=45),
        log_has_cost=False,
        expected_class=CLASS_ASYNC,
        description="Ticket tagging on self-hosted Llama 3.3 70B (Trainium pool), flat 24/7.",
    ),
)


# ---------------------------------------------------------------------------------------------
# Prices the gateway logs (USD per million tokens, from reference/hardware-catalog.csv)
# ---------------------------------------------------------------------------------------------


def _gateway_price(
    provider: str,
    model: str,
    input_price: str,
    output_price: str,
    *,
    cached: str | None = None,
    batch: bool = False,
) -> Price:
    half = Decimal("0.5")
    return Price(
        card_id=None,
        provider=provider,
        model=model,
        valid_from=date(2024, 1, 1),
        input=Decimal(input_price),
        output=Decimal(output_price),
        cached_input=Decimal(cached) if cached is not None else None,
        batch_input=Decimal(input_price) * half if batch else None,
        batch_output=Decimal(output_price) * half if batch else None,
    )


GATEWAY_PRICES: tuple[Price, ...] = (
    _gateway_price("openai", "gpt-4o", "2.5", "10", cached="1.25", batch=True),
    _gateway_price("openai", "gpt-4o-mini", "0.15", "0.6", cached="0.075", batch=True),
    _gateway_price("openai", "gpt-4.1-mini", "0.4", "1.6", cached="0.1", batch=True),
    _gateway_price("openai", "text-embedding-3-small", "0.02", "0"),
    _gateway_price("anthropic", "claude-sonnet-4-5", "3", "15", cached="0.3", batch=True),
    _gateway_price("anthropic", "claude-haiku-4-5", "1", "5", cached="0.1", batch=True),
    _gateway_price("aws-bedrock", "anthropic.claude-haiku-4-5", "1", "5"),
)
_GATEWAY_BOOK = PriceBook(GATEWAY_PRICES)


def gateway_price(spec: WorkloadSpec) -> Price | None:
    """The price a gateway would log this workload's requests at; None when it has none."""
    return _GATEWAY_BOOK.find(provider=spec.provider, model=spec.model, day=date(2025, 1, 1))


# ---------------------------------------------------------------------------------------------
# Request generation
# ---------------------------------------------------------------------------------------------


def generate_requests(
    *,
    start: datetime,
    days: int,
    workloads: Sequence[WorkloadSpec] | None = None,
    scale: float = 1.0,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per request for `days` days from `start` (see the module docstring for columns).

    `scale` multiplies every workload's request rate (burst counts stay, burst sizes scale).
    The same arguments always give the same frame; each workload draws from its own random
    stream keyed by its name, so adding a workload does not change the others' requests.
    """
    return _generate(
        start=start, days=days, workloads=workloads, scale=scale, seed=seed, first_row=0
    )


def expected_requests_per_day(
    workloads: Sequence[WorkloadSpec] | None = None, *, scale: float = 1.0
) -> float:
    """Mean requests per day over a week (before clipping at the window's edges)."""
    specs = DEFAULT_WORKLOADS if workloads is None else workloads
    return sum(spec.traffic.requests_per_day for spec in specs) * scale


def _generate(
    *,
    start: datetime,
    days: int,
    workloads: Sequence[WorkloadSpec] | None,
    scale: float,
    seed: int,
    first_row: int,
) -> pd.DataFrame:
    specs = _checked_workloads(start=start, days=days, scale=scale, workloads=workloads)
    start_us = _datetime_to_us(start)
    end_us = start_us + days * DAY_US
    parts = [
        _workload_requests(
            spec,
            start_us=start_us,
            end_us=end_us,
            scale=scale,
            rng=np.random.default_rng([seed, zlib.crc32(spec.name.encode("utf-8"))]),
        )
        for spec in specs
    ]
    numeric, workload_index = _in_start_order(parts)
    id_rng = np.random.default_rng([seed, 0x1D])
    columns = _text_columns(specs, numeric=numeric, workload_index=workload_index)
    columns["request_id"] = _text_series(
        _request_ids(id_rng, size=workload_index.size, first_row=first_row)
    )
    for name in ("started_at", "first_token_at", "ended_at"):
        columns[name] = pd.Series(
            numeric[name].astype(np.int64).astype("datetime64[us]")
        ).dt.tz_localize(UTC)
    for name in ("streaming", "batch_api"):
        columns[name] = numeric[name].astype(bool)
    for name in ("input_tokens", "output_tokens", "cached_input_tokens"):
        columns[name] = numeric[name].astype(np.int64)
    for name in ("ttft_ms", "tpot_ms", "latency_ms", "cost_usd"):
        columns[name] = numeric[name].astype(np.float64)
    return pd.DataFrame({name: columns[name] for name in REQUEST_COLUMNS})


def _checked_workloads(
    *, start: datetime, days: int, scale: float, workloads: Sequence[WorkloadSpec] | None
) -> tuple[WorkloadSpec, ...]:
    """The workloads to generate (the default set when None); raises `ValueError` on bad input."""
    if start.tzinfo is None:
        raise ValueError("start must be timezone-aware (UTC)")
    if days < 1:
        raise ValueError("days must be at least 1")
    if scale < 0:
        raise ValueError("scale cannot be negative")
    specs = DEFAULT_WORKLOADS if workloads is None else tuple(workloads)
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        raise ValueError("workload names must be unique")
    return specs


def _in_start_order(
    parts: Sequence[dict[str, np.ndarray]],
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Every workload's numeric columns as one set, sorted by start time, and per row the index
    of the row's workload."""
    numeric = {
        name: np.concatenate([part[name] for part in parts]) if parts else np.array([])
        for name in NUMERIC_PART_COLUMNS
    }
    workload_index = np.concatenate(
        [np.full(part["started_at"].size, index) for index, part in enumerate(parts)]
        if parts
        else [np.array([], dtype=np.int64)]
    )
    order = np.argsort(numeric["started_at"], kind="stable")
    return {name: values[order] for name, values in numeric.items()}, workload_index[order]


def _text_columns(
    specs: Sequence[WorkloadSpec], *, numeric: dict[str, np.ndarray], workload_index: np.ndarray
) -> dict[str, object]:
    """The text columns but the request id, as Arrow dictionary lookups: one Python string per
    distinct value."""

    def per_workload(attribute: str) -> pd.Series:
        values = pa.array([getattr(spec, attribute) for spec in specs], type=pa.string())
        return _text_series(values.take(pa.array(workload_index, type=pa.int64())))

    # Each workload's end users are numbered within it; "" stands for "no end user". Workloads
    # with the same prefix share names: the same customers use the web chat and the help desk.
    end_user_names = [""] + [
        f"{spec.end_user_prefix}{index:05d}" for spec in specs for index in range(spec.end_users)
    ]
    first_name = np.cumsum([1] + [spec.end_users for spec in specs])[:-1]
    end_user_code = np.where(
        numeric["end_user_index"] >= 0,
        first_name[workload_index] + numeric["end_user_index"],
        0,
    ).astype(np.int64)
    statuses = pa.array([STATUS_SUCCESS, STATUS_ERROR], type=pa.string())
    return {
        "workload": per_workload("name"),
        "team": per_workload("team"),
        "caller": per_workload("caller"),
        "provider": per_workload("provider"),
        "model": per_workload("model"),
        "operation": per_workload("operation"),
        "pool": per_workload("pool"),
        "end_user": _text_series(
            pa.array(end_user_names, type=pa.string()).take(pa.array(end_user_code))
        ),
        "status": _text_series(statuses.take(pa.array(numeric["is_error"].astype(np.int64)))),
    }


def _text_series(values: pa.Array) -> pd.Series:
    """A pandas text column straight from Arrow, without a Python object per row."""
    return pd.Series(values, dtype="str")


def _datetime_to_us(moment: datetime) -> int:
    return (moment.astimezone(UTC) - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def _arrival_times(
    traffic: TrafficShape,
    *,
    start_us: int,
    end_us: int,
    scale: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Sorted arrival times (epoch µs) in [start_us, end_us)."""
    hours = np.arange(start_us // HOUR_US, -(-end_us // HOUR_US), dtype=np.int64)
    local_hours = hours + traffic.utc_offset_hours
    weekday = (local_hours // 24 + EPOCH_WEEKDAY) % 7
    weights = (
        np.asarray(traffic.weekday_weights)[weekday]
        * np.asarray(traffic.hour_weights)[local_hours % 24]
    )
    active_us = traffic.active_minutes * MINUTE_US
    if traffic.bursts_per_day > 0:
        burst_count = rng.poisson(traffic.bursts_per_day * hours.size / 24)
        if weights.sum() <= 0 or burst_count == 0:
            return np.array([], dtype=np.int64)
        burst_hours = rng.choice(hours, size=burst_count, p=weights / weights.sum())
        burst_starts = burst_hours * HOUR_US + rng.integers(0, active_us, size=burst_count)
        mean_size = traffic.requests_per_day * scale / traffic.bursts_per_day
        sizes = rng.poisson(
            mean_size
            * rng.lognormal(-(BURST_SIZE_SPREAD**2) / 2, BURST_SIZE_SPREAD, size=burst_count)
        )
        starts = np.repeat(burst_starts, sizes)
        burst_us = int(traffic.burst_minutes * MINUTE_US)
        times = starts + rng.integers(0, burst_us, size=starts.size)
    else:
        rate_per_hour = traffic.requests_per_day / 24 * weights / traffic.mean_hour_weight * scale
        counts = rng.poisson(rate_per_hour)
        slots = np.repeat(hours, counts)
        times = slots * HOUR_US + rng.integers(0, active_us, size=slots.size)
    times = times[(times >= start_us) & (times < end_us)]
    return np.sort(times)


def _lognormal_tokens(
    rng: np.random.Generator, *, mean: float, spread: float, size: int, upper: int
) -> np.ndarray:
    """Whole token counts ≥ 1 whose mean is about `mean` (before clipping)."""
    mu = math.log(max(mean, 1.0)) - spread**2 / 2
    return np.clip(np.rint(rng.lognormal(mu, spread, size=size)), 1, upper).astype(np.int64)


def _workload_requests(
    spec: WorkloadSpec,
    *,
    start_us: int,
    end_us: int,
    scale: float,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """One workload's requests as the columns of `NUMERIC_PART_COLUMNS`.

    The steps draw from `rng` in a fixed order, so the same seed gives the same requests.
    """
    started = _arrival_times(spec.traffic, start_us=start_us, end_us=end_us, scale=scale, rng=rng)
    size = started.size
    is_error = rng.random(size) < spec.error_share
    batch_api = rng.random(size) < spec.batch_api_share
    is_embedding = spec.operation == OPERATION_EMBEDDING
    streaming = (rng.random(size) < spec.streaming_share) & ~batch_api & ~is_embedding
    input_tokens, output_tokens, cached_tokens = _token_usage(
        spec, rng=rng, streaming=streaming, is_error=is_error
    )
    timing = _request_timing(
        spec.latency,
        rng=rng,
        started=started,
        output_tokens=output_tokens,
        streaming=streaming,
        batch_api=batch_api,
        is_error=is_error,
    )
    cost = _logged_cost(
        spec,
        input_tokens=input_tokens,
        cached_tokens=cached_tokens,
        output_tokens=output_tokens,
        batch_api=batch_api,
    )
    return {
        "end_user_index": _end_user_indexes(spec, rng=rng, size=size),
        "started_at": started,
        "first_token_at": timing.first_token,
        "ended_at": timing.ended,
        "ttft_ms": timing.ttft_ms,
        "tpot_ms": timing.tpot_ms,
        "latency_ms": timing.latency_ms,
        "streaming": streaming,
        "batch_api": batch_api,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cached_input_tokens": cached_tokens,
        "cost_usd": cost,
        "is_error": is_error,
    }


def _token_usage(
    spec: WorkloadSpec, *, rng: np.random.Generator, streaming: np.ndarray, is_error: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(input, output, cached input) tokens per request; a failed request reports none."""
    size = streaming.size
    input_tokens = _lognormal_tokens(
        rng,
        mean=spec.mean_input_tokens,
        spread=INPUT_TOKEN_SPREAD,
        size=size,
        upper=MAX_INPUT_TOKENS,
    )
    if spec.operation == OPERATION_EMBEDDING:
        output_tokens = np.zeros(size, dtype=np.int64)
    else:
        output_tokens = _lognormal_tokens(
            rng,
            mean=spec.mean_output_tokens,
            spread=OUTPUT_TOKEN_SPREAD,
            size=size,
            upper=MAX_OUTPUT_TOKENS,
        )
        # A streamed answer of one token has no first-token time apart from its end; real
        # streamed answers are longer, and the LiteLLM format could not tell them apart.
        output_tokens = np.where(streaming, np.maximum(output_tokens, 2), output_tokens)
    cached_fraction = np.clip(rng.uniform(0.0, 2.0 * spec.cached_input_share, size), 0.0, 1.0)
    cached_tokens = np.floor(input_tokens * cached_fraction).astype(np.int64)
    input_tokens[is_error] = 0
    output_tokens[is_error] = 0
    cached_tokens[is_error] = 0
    return input_tokens, output_tokens, cached_tokens


@dataclass(frozen=True, kw_only=True)
class _Timing:
    """Per request: first token and end (epoch µs; `NOT_A_TIME` for no first token) and the
    latency figures derived from them (NaN where undefined)."""

    first_token: np.ndarray
    ended: np.ndarray
    ttft_ms: np.ndarray
    tpot_ms: np.ndarray
    latency_ms: np.ndarray


def _request_timing(
    profile: LatencyProfile,
    *,
    rng: np.random.Generator,
    started: np.ndarray,
    output_tokens: np.ndarray,
    streaming: np.ndarray,
    batch_api: np.ndarray,
    is_error: np.ndarray,
) -> _Timing:
    """When each request's first token and end come: a batch request waits in the queue first,
    a failed one ends after an error latency; only a streamed success has a first token."""
    size = started.size
    ttft_us = np.rint(profile.ttft_ms * 1_000 * rng.lognormal(0.0, profile.spread, size)).astype(
        np.int64
    )
    ttft_us = np.maximum(ttft_us, 1)
    tpot_us = profile.tpot_ms * 1_000 * rng.lognormal(0.0, profile.spread, size)
    decode_us = np.rint(tpot_us * np.maximum(output_tokens - 1, 0)).astype(np.int64)
    batch_wait_us = np.where(
        batch_api,
        np.rint(
            BATCH_WAIT_MEDIAN_MINUTES * MINUTE_US * rng.lognormal(0.0, BATCH_WAIT_SPREAD, size)
        ),
        0,
    ).astype(np.int64)
    error_latency_us = np.rint(
        ERROR_LATENCY_MEDIAN_MS * 1_000 * rng.lognormal(0.0, ERROR_LATENCY_SPREAD, size)
    ).astype(np.int64)
    first_token = started + batch_wait_us + ttft_us
    ended = np.where(is_error, started + error_latency_us, first_token + decode_us)
    has_first_token = streaming & ~is_error
    first_token = np.where(has_first_token, first_token, NOT_A_TIME)
    with np.errstate(divide="ignore", invalid="ignore"):
        tpot_ms = np.where(
            has_first_token & (output_tokens > 1),
            (ended - first_token) / 1_000 / (output_tokens - 1),
            np.nan,
        )
    return _Timing(
        first_token=first_token,
        ended=ended,
        ttft_ms=np.where(has_first_token, (first_token - started) / 1_000, np.nan),
        tpot_ms=tpot_ms,
        latency_ms=(ended - started) / 1_000,
    )


def _end_user_indexes(spec: WorkloadSpec, *, rng: np.random.Generator, size: int) -> np.ndarray:
    """Each request's end user, numbered within the workload; -1 when it has none."""
    if spec.end_users > 0:
        # Squaring a uniform favours low indexes: a few heavy users, a long tail of light ones.
        indexes: np.ndarray = np.floor(spec.end_users * rng.random(size) ** 2).astype(np.int64)
        return indexes
    return np.full(size, -1, dtype=np.int64)


def _logged_cost(
    spec: WorkloadSpec,
    *,
    input_tokens: np.ndarray,
    cached_tokens: np.ndarray,
    output_tokens: np.ndarray,
    batch_api: np.ndarray,
) -> np.ndarray:
    """USD per request as the gateway logs it (float, like LiteLLM's `spend`); NaN if none."""
    if not spec.log_has_cost:
        return np.full(input_tokens.size, np.nan)
    price = gateway_price(spec)
    if price is None:
        raise ValueError(
            f"workload {spec.name!r} says its log carries cost, but no gateway price matches "
            f"{spec.provider}/{spec.model}"
        )
    input_price = float(price.input)
    output_price = float(price.output)
    batch_input = float(price.batch_input) if price.batch_input else input_price
    batch_output = float(price.batch_output) if price.batch_output else output_price
    per_input = np.where(batch_api, batch_input, input_price)
    per_output = np.where(batch_api, batch_output, output_price)
    per_cached = float(price.cached_input) if price.cached_input is not None else per_input
    total = (
        (input_tokens - cached_tokens) * per_input
        + cached_tokens * per_cached
        + output_tokens * per_output
    )
    return total / 1_000_000


def _splitmix64(values: np.ndarray) -> np.ndarray:
    """A bijection on uint64 that scatters consecutive integers (SplitMix64's finaliser)."""
    mixed = values + np.uint64(0x9E3779B97F4A7C15)
    mixed = (mixed ^ (mixed >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    mixed = (mixed ^ (mixed >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return mixed ^ (mixed >> np.uint64(31))


def _request_ids(rng: np.random.Generator, *, size: int, first_row: int) -> pa.Array:
    """32 hex digits: 64 random bits, then a bijection of the row number (so ids are unique)."""
    words = np.empty((size, 2), dtype=">u8")
    words[:, 0] = rng.bit_generator.random_raw(size)
    words[:, 1] = _splitmix64(np.arange(first_row, first_row + size, dtype=np.uint64))
    hex_digits = pa.py_buffer(words.tobytes().hex().encode("ascii"))
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(32), size, [None, hex_digits])
    return fixed.cast(pa.string())


# ---------------------------------------------------------------------------------------------
# Shared writer helpers (vectorised: one Python step per distinct value, never per row)
# ---------------------------------------------------------------------------------------------


def _chunks(frame: pd.DataFrame, rows: int) -> Iterator[pd.DataFrame]:
    for offset in range(0, len(frame), rows):
        yield frame.iloc[offset : offset + rows]


def _epoch_us(column: pd.Series) -> np.ndarray:
    """Epoch microseconds of a timestamp column; NaT becomes `NOT_A_TIME`."""
    naive = column.dt.tz_convert(UTC).dt.tz_localize(None)
    return naive.to_numpy(dtype="datetime64[us]").astype(np.int64)


def _iso_text(epoch_us: np.ndarray) -> pa.Array:
    """ISO 8601 UTC text with microseconds and `Z`."""
    return pa.array(
        np.datetime_as_string(epoch_us.astype("datetime64[us]"), unit="us", timezone="UTC")
    )


def _per_group(
    chunk: pd.DataFrame, columns: Sequence[str], render: Callable[..., str | None]
) -> pa.Array:
    """`render(*values)` for each distinct combination of `columns`, spread to every row
    (None is a null)."""
    codes = chunk.groupby(list(columns), sort=False, dropna=False).ngroup().to_numpy()
    _, first_rows = np.unique(codes, return_index=True)
    keys = chunk[list(columns)].iloc[first_rows].itertuples(index=False, name=None)
    rendered = pa.array([render(*key) for key in keys], type=pa.string())
    return rendered.take(pa.array(codes, type=pa.int64()))


def _json_literals(values: pa.Array) -> pa.Array:
    """Text as JSON string literals, escaped once per distinct value."""
    encoded = pc.dictionary_encode(values)
    literals = pa.array(
        [json.dumps(value) for value in encoded.dictionary.to_pylist()], type=pa.string()
    )
    return literals.take(encoded.indices)


def _quoted(values: pa.Array) -> pa.Array:
    """JSON string literals of values known to need no escaping (hex digits, timestamps)."""
    return pc.binary_join_element_wise('"', values, '"', "")


def _number_text(values: np.ndarray | pd.Series) -> pa.Array:
    """Shortest text that reads back as the same number (Arrow's float formatting)."""
    return pc.cast(pa.array(values), pa.string())


def _when(mask: np.ndarray, values: pa.Array | str, otherwise: str = "") -> pa.Array:
    return pc.if_else(pa.array(mask, type=pa.bool_()), values, otherwise)


def _write_rows(handle: BinaryIO, rows: pa.Array) -> None:
    """Write the strings of an Arrow string array back to back, straight from its data buffer.

    A string array keeps its values contiguous in one UTF-8 buffer, so the file gets bytes with
    no Python string per row (encoding 1 GB of text through Python costs seconds).
    """
    if len(rows) == 0:
        return
    if rows.type != pa.string() or rows.null_count:
        raise ValueError("expected a string array without nulls")
    _, offsets_buffer, data = rows.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int32)[
        rows.offset : rows.offset + len(rows) + 1
    ]
    handle.write(memoryview(data)[offsets[0] : offsets[-1]])


def model_group(model: str) -> str:
    """The alias a team calls (LiteLLM's model group): the model without date or version."""
    return _MODEL_VERSION_SUFFIX.sub("", _BEDROCK_REGION_PREFIX.sub("", model))


def _api_key_hash(caller: str) -> str:
    """LiteLLM logs the SHA-256 of the virtual key, never the key; one key per caller."""
    return hashlib.sha256(f"sk-demo-{caller}".encode()).hexdigest()


# ---------------------------------------------------------------------------------------------
# LiteLLM spend logs
# ---------------------------------------------------------------------------------------------


def _metadata_head(caller: str, team: str, pool: str) -> str:
    """The per-caller part of LiteLLM's metadata JSON, without its closing brace."""
    metadata = {"user_api_key_alias": caller, "user_api_key_team_alias": team}
    if pool:
        metadata["pool"] = pool
    return json.dumps(metadata)[:-1]


def _litellm_metadata(chunk: pd.DataFrame) -> pa.Array:
    head = _per_group(chunk, ["caller", "team", "pool"], _metadata_head)
    batch = _when(chunk["batch_api"].to_numpy(), ', "batch_api": true')
    cached = chunk["cached_input_tokens"].to_numpy()
    usage = _when(
        cached > 0,
        pc.binary_join_element_wise(
            ', "usage_object": {"prompt_tokens_details": {"cached_tokens": ',
            _number_text(cached),
            "}}",
            "",
        ),
    )
    return pc.binary_join_element_wise(head, batch, usage, "}", "")


def _litellm_table(chunk: pd.DataFrame) -> pa.Table:
    """The LiteLLM_SpendLogs columns for a frame chunk; JSON columns as JSON text."""
    started = _epoch_us(chunk["started_at"])
    ended = _epoch_us(chunk["ended_at"])
    first_token = _epoch_us(chunk["first_token_at"])
    input_tokens = chunk["input_tokens"].to_numpy(dtype=np.int64)
    output_tokens = chunk["output_tokens"].to_numpy(dtype=np.int64)
    columns = {
        "request_id": pa.array(chunk["request_id"], type=pa.string()),
        "call_type": _per_group(
            chunk, ["operation"], lambda operation: LITELLM_CALL_TYPES.get(operation, operation)
        ),
        "api_key": _per_group(chunk, ["caller"], _api_key_hash),
        "spend": pa.array(chunk["cost_usd"].fillna(0.0).to_numpy(dtype=np.float64)),
        "total_tokens": pa.array(input_tokens + output_tokens),
        "prompt_tokens": pa.array(input_tokens),
        "completion_tokens": pa.array(output_tokens),
        "startTime": _iso_text(started),
        "endTime": _iso_text(ended),
        "request_duration_ms": pa.array(np.rint((ended - started) / 1_000).astype(np.int64)),
        # LiteLLM writes endTime here when nothing was streamed.
        "completionStartTime": _iso_text(np.where(first_token == NOT_A_TIME, ended, first_token)),
        "model": pa.array(chunk["model"], type=pa.string()),
        "model_group": _per_group(chunk, ["model"], model_group),
        "custom_llm_provider": pa.array(chunk["provider"], type=pa.string()),
        "user": pa.array(np.full(len(chunk), ""), type=pa.string()),
        "metadata": _litellm_metadata(chunk),
        "request_tags": _per_group(
            chunk,
            ["workload", "team"],
            lambda workload, team: json.dumps([f"workload:{workload}", f"team:{team}"]),
        ),
        "team_id": pa.array(chunk["team"], type=pa.string()),
        "end_user": pa.array(chunk["end_user"], type=pa.string()),
        "status": _per_group(chunk, ["status"], lambda status: LITELLM_STATUS.get(status, status)),
    }
    return pa.table({name: columns[name] for name in LITELLM_COLUMNS})


def _write_litellm_csv_frames(frames: Iterable[pd.DataFrame], path: str | Path) -> int:
    """Write frames one after another into one CSV (one header); return the rows written."""
    rows = 0
    writer: pa_csv.CSVWriter | None = None
    try:
        for frame in frames:
            for chunk in _chunks(frame, WRITE_CHUNK_ROWS):
                table = _litellm_table(chunk)
                if writer is None:
                    writer = pa_csv.CSVWriter(str(path), table.schema)
                writer.write_table(table)
                rows += len(chunk)
        if writer is None:
            # An empty frame still gives a file with the header.
            empty = _litellm_table(_empty_frame())
            writer = pa_csv.CSVWriter(str(path), empty.schema)
    finally:
        if writer is not None:
            writer.close()
    return rows


def _empty_frame() -> pd.DataFrame:
    return generate_requests(start=BENCH_START, days=1, workloads=(), seed=0)


def write_litellm_csv(frame: pd.DataFrame, path: str | Path) -> None:
    """Write the requests as a LiteLLM_SpendLogs CSV export (`LITELLM_COLUMNS`)."""
    _write_litellm_csv_frames([frame], path)


def write_litellm_jsonl(frame: pd.DataFrame, path: str | Path) -> None:
    """Write the requests as LiteLLM spend logs, one JSON object per line.

    `metadata` is a JSON object and `request_tags` a JSON list, as the LiteLLM API returns them.
    """
    raw_json = {"metadata", "request_tags"}
    needs_no_escaping = {"request_id", "api_key", "startTime", "endTime", "completionStartTime"}
    with Path(path).open("wb") as handle:
        for chunk in _chunks(frame, WRITE_CHUNK_ROWS):
            table = _litellm_table(chunk)
            pieces: list[pa.Array | str] = []
            for position, name in enumerate(LITELLM_COLUMNS):
                column = table.column(name).combine_chunks()
                if name in raw_json:
                    fragment = column
                elif name in needs_no_escaping:
                    fragment = _quoted(column)
                elif pa.types.is_string(column.type):
                    fragment = _json_literals(column)
                else:
                    fragment = pc.cast(column, pa.string())
                pieces.extend([("," if position else "") + json.dumps(name) + ":", fragment])
            _write_rows(handle, pc.binary_join_element_wise("{", *pieces, "}\n", ""))


# ---------------------------------------------------------------------------------------------
# OpenTelemetry GenAI spans (OTLP/JSON)
# ---------------------------------------------------------------------------------------------


def _attribute(key: str, kind: str, value: pa.Array, *, first: bool = False) -> pa.Array:
    """`,{"key": key, "value": {kind: value}}` per row; `value` is already JSON text."""
    prefix = ("" if first else ",") + f'{{"key":{json.dumps(key)},"value":{{"{kind}":'
    return pc.binary_join_element_wise(prefix, value, "}}", "")


def _span_texts(chunk: pd.DataFrame) -> pa.Array:
    """One OTLP/JSON span object per request, as text."""
    started = _epoch_us(chunk["started_at"])
    ended = _epoch_us(chunk["ended_at"])
    request_ids = pa.array(chunk["request_id"], type=pa.string())
    is_error = chunk["status"].to_numpy(dtype=object) == STATUS_ERROR
    span_name = _per_group(
        chunk,
        ["operation", "model"],
        lambda name, model: json.dumps(f"{OTEL_OPERATION_NAMES.get(name, name)} {model}"),
    )
    status = _when(is_error, f'{{"code":{OTEL_STATUS_ERROR},"message":"request failed"}}', "{}")
    return pc.binary_join_element_wise(
        '{"traceId":"',
        request_ids,
        '","spanId":"',
        pc.utf8_slice_codeunits(request_ids, 16, 32),
        '","name":',
        span_name,
        f',"kind":{OTEL_SPAN_KIND_CLIENT},"startTimeUnixNano":"',
        _number_text(started * 1_000),
        '","endTimeUnixNano":"',
        _number_text(ended * 1_000),
        '","attributes":[',
        *_span_attributes(chunk, started=started, is_error=is_error),
        '],"status":',
        status,
        "}",
        "",
    )


def _span_attributes(
    chunk: pd.DataFrame, *, started: np.ndarray, is_error: np.ndarray
) -> list[pa.Array]:
    """The pieces of each span's `attributes` list: GenAI semantic conventions, then ours."""
    first_token = _epoch_us(chunk["first_token_at"])
    has_first_token = first_token != NOT_A_TIME
    cached = chunk["cached_input_tokens"].to_numpy(dtype=np.int64)
    cost = chunk["cost_usd"].to_numpy(dtype=np.float64)
    has_end_user = chunk["end_user"].to_numpy(dtype=object) != ""
    has_pool = chunk["pool"].to_numpy(dtype=object) != ""

    def text(column: str) -> pa.Array:
        return _json_literals(pa.array(chunk[column], type=pa.string()))

    def integer(values: np.ndarray | pd.Series) -> pa.Array:
        # OTLP/JSON writes int64 values as strings.
        return _quoted(_number_text(values))

    operation = _per_group(
        chunk, ["operation"], lambda name: json.dumps(OTEL_OPERATION_NAMES.get(name, name))
    )
    provider = _per_group(
        chunk, ["provider"], lambda name: json.dumps(OTEL_PROVIDER_NAMES.get(name, name))
    )
    ttft_seconds = np.where(has_first_token, (first_token - started) / 1_000_000, 0.0)
    error_type = ',{"key":"error.type","value":{"stringValue":"_OTHER"}}'
    return [
        _attribute("gen_ai.operation.name", "stringValue", operation, first=True),
        _attribute("gen_ai.provider.name", "stringValue", provider),
        _attribute("gen_ai.request.model", "stringValue", text("model")),
        _attribute("gen_ai.response.model", "stringValue", text("model")),
        _attribute(
            "gen_ai.request.stream",
            "boolValue",
            _when(chunk["streaming"].to_numpy(dtype=bool), "true", "false"),
        ),
        _attribute("gen_ai.usage.input_tokens", "intValue", integer(chunk["input_tokens"])),
        _attribute("gen_ai.usage.output_tokens", "intValue", integer(chunk["output_tokens"])),
        _when(
            cached > 0,
            _attribute("gen_ai.usage.cache_read.input_tokens", "intValue", integer(cached)),
        ),
        _when(
            has_first_token,
            _attribute(
                "gen_ai.response.time_to_first_chunk", "doubleValue", _number_text(ttft_seconds)
            ),
        ),
        _when(
            ~np.isnan(cost),
            _attribute("gen_ai.usage.cost", "doubleValue", _number_text(np.nan_to_num(cost))),
        ),
        _when(has_end_user, _attribute("user.id", "stringValue", text("end_user"))),
        _attribute("workload", "stringValue", text("workload")),
        _attribute("team", "stringValue", text("team")),
        _when(has_pool, _attribute("pool", "stringValue", text("pool"))),
        _when(is_error, error_type),
    ]


def _resource_head(caller: str) -> str:
    """The opening of one caller's `resourceSpans` entry, up to its first span."""
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": caller}}]}
    return (
        f'{{"resource":{json.dumps(resource)},'
        f'"scopeSpans":[{{"scope":{json.dumps(OTEL_SCOPE)},"spans":['
    )


def _boundaries(keys: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Masks of the first and the last row of each run of equal `keys` (at least one row)."""
    changes = np.zeros(keys[0].size - 1, dtype=bool)
    for key in keys:
        changes |= key[1:] != key[:-1]
    return np.concatenate([[True], changes]), np.concatenate([changes, [True]])


def write_otel_jsonl(
    frame: pd.DataFrame, path: str | Path, *, spans_per_document: int = 500
) -> None:
    """Write the requests as OTLP/JSON trace documents, one per line (a collector file export).

    Each document holds up to `spans_per_document` consecutive requests, grouped into one
    `resourceSpans` entry per caller (`service.name`).
    """
    if spans_per_document < 1:
        raise ValueError("spans_per_document must be at least 1")
    chunk_rows = max(1, WRITE_CHUNK_ROWS // spans_per_document) * spans_per_document
    with Path(path).open("wb") as handle:
        for chunk in _chunks(frame, chunk_rows):
            # Order the chunk by document, then caller, so each caller's spans in a document
            # are one run; every row then only needs the brackets that open or close its run.
            document = np.arange(len(chunk)) // spans_per_document
            caller_code = chunk.groupby("caller", sort=False).ngroup().to_numpy()
            order = np.lexsort((caller_code, document))
            chunk = chunk.iloc[order]
            document_starts, document_ends = _boundaries([document[order]])
            run_starts, run_ends = _boundaries([document[order], caller_code[order]])
            opening = pc.binary_join_element_wise(
                _when(document_starts, '{"resourceSpans":['),
                _when(run_starts & ~document_starts, ","),
                _when(run_starts, _per_group(chunk, ["caller"], _resource_head), ","),
                "",
            )
            closing = pc.binary_join_element_wise(
                _when(run_ends, "]}]}"), _when(document_ends, "]}\n"), ""
            )
            spans = _span_texts(chunk)
            _write_rows(handle, pc.binary_join_element_wise(opening, spans, closing, ""))


# ---------------------------------------------------------------------------------------------
# Benchmark file
# ---------------------------------------------------------------------------------------------


def bench_litellm_csv(path: str | Path, *, rows: int, seed: int = 0) -> None:
    """Write a LiteLLM CSV of exactly `rows` requests in bounded memory.

    The default workloads are generated one day at a time, at a scale that makes a day about
    `WRITE_CHUNK_ROWS` requests (or `rows`, when fewer), and appended until `rows` are written;
    the last day is cut. Memory holds one day, whatever `rows` is.
    """
    if rows < 0:
        raise ValueError("rows cannot be negative")
    per_day_at_scale_one = expected_requests_per_day()
    # 10 % headroom so a quiet day (weekends) still fills a small file in one step.
    scale = min(rows, WRITE_CHUNK_ROWS) * 1.1 / per_day_at_scale_one

    def days() -> Iterator[pd.DataFrame]:
        written = 0
        day = 0
        while written < rows:
            frame = _generate(
                start=BENCH_START + timedelta(days=day),
                days=1,
                workloads=None,
                scale=scale,
                seed=seed * 100_003 + day,
                first_row=written,
            )
            frame = frame.iloc[: rows - written]
            written += len(frame)
            day += 1
            yield frame

    _write_litellm_csv_frames(days(), path)
