"""Workload archetypes of the demo organisation, for the demo, the benchmarks and the tests.

A realistic organisation is described as a list of workload archetypes (`WorkloadSpec`): who
sends the traffic, to which provider and model, with what arrival shape, token sizes, latency and
streaming habits, and whether the log carries its own cost. Each archetype also names the class
the classifier should arrive at (`realtime`, `async` or `ambiguous`), so later tests can check
the classifier against traffic whose nature is known.

`audit_app.demo.traffic` turns the archetypes into requests; `audit_app.demo.writers` writes
those in the formats the importers read.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

CLASS_REALTIME = "realtime"
CLASS_ASYNC = "async"
CLASS_AMBIGUOUS = "ambiguous"
EXPECTED_CLASSES = frozenset({CLASS_REALTIME, CLASS_ASYNC, CLASS_AMBIGUOUS})

OPERATION_CHAT = "chat"
OPERATION_EMBEDDING = "embedding"


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
