"""Labeled workloads for evaluating the classifier: traffic whose nature is known.

Pure module (numpy and pandas, no Django). Each shape is a `demo.workloads.WorkloadSpec` archetype —
who sends the traffic, when, streamed or not, how long the answers are, how fast — with the
class a FinOps analyst would give it and whether the case is clear or hard. Every shape comes
in `VARIANTS` variations (time zone, volume, streaming habit, seed); each variation is simulated
request by request with `demo.traffic.generate_requests` over `DAYS` days and summed into the same
`WorkloadSummary` the product builds from its hourly rollups and workload-day shapes.

Decisions recorded here:
- The low-volume internal tool (a few people, office hours, ~25 requests a day) is labeled
  real-time, as a hard case: people wait on it; the classifier leans real-time with low
  confidence.
- The weekend-only consumer app is real-time: people use it, just not at work.
- A CI review bot and a data-labeling pipeline run in office hours but nobody waits on them:
  async, hard.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import numpy as np
import pandas as pd

from audit_app.demo.traffic import STATUS_ERROR, generate_requests
from audit_app.demo.workloads import (
    OPERATION_EMBEDDING,
    WEEKDAYS,
    LatencyProfile,
    TrafficShape,
    WorkloadSpec,
    active_hours,
    humps,
    office_day,
)
from audit_app.workloads.classifier import LABEL_ASYNC, LABEL_REALTIME
from audit_app.workloads.features import DayProfile, HourStats, WorkloadSummary

DAYS = 14
VARIANTS = 4
START = datetime(2025, 3, 3, tzinfo=UTC)  # a Monday
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
US_EAST = -5
US_WEST = -8
EUROPE = 1
INDIA = 5  # UTC+5:30, rounded to the hour
SINGAPORE = 8
TOKYO = 9
SYDNEY = 10


@dataclass(frozen=True, kw_only=True)
class LabeledWorkload:
    """One simulated workload and the class it should get."""

    name: str
    shape: str
    label: str
    clear: bool
    description: str
    summary: WorkloadSummary


@dataclass(frozen=True, kw_only=True)
class Shape:
    """A family of workloads: `build(variant)` gives the archetype of one variation."""

    name: str
    label: str
    clear: bool
    description: str
    build: Callable[[int], WorkloadSpec]
    callers: Callable[[int], tuple[str, ...]] | None = None


T = TypeVar("T")


def _pick(variant: int, *choices: T) -> T:
    """The variant's choice of a parameter (variants cycle through the choices)."""
    return choices[variant % len(choices)]


def _spec(name: str, **fields: object) -> WorkloadSpec:
    defaults: dict[str, object] = {
        "team": "team",
        "provider": "openai",
        "model": "gpt-4o-mini-2024-07-18",
        "caller": name,
        "log_has_cost": False,
        "expected_class": LABEL_ASYNC,
    }
    defaults.update(fields)
    return WorkloadSpec(name=name, **defaults)  # type: ignore[arg-type]


def _office_weekdays(weekend: float) -> tuple[float, ...]:
    return (1.0, 1.0, 1.0, 1.0, 1.0, weekend, weekend)


# --- Real-time shapes ------------------------------------------------------------------------


def _customer_chat_us(variant: int) -> WorkloadSpec:
    return _spec(
        "customer-chat-us",
        streaming_share=_pick(variant, 0.97, 0.9, 1.0, 0.8),
        end_users=_pick(variant, 4_000, 1_500, 800, 6_000),
        traffic=TrafficShape(
            requests_per_day=_pick(variant, 500, 300, 200, 670),
            hour_weights=office_day(8, 17, shoulder=0.25, evening=0.06, night=0.01),
            weekday_weights=_office_weekdays(0.08),
            utc_offset_hours=_pick(variant, US_EAST, -6, US_WEST, -7),
        ),
        mean_input_tokens=1_800,
        mean_output_tokens=320,
        latency=LatencyProfile(ttft_ms=450, tpot_ms=18),
    )


def _ide_assistant(variant: int) -> WorkloadSpec:
    return _spec(
        "ide-assistant",
        streaming_share=1.0,
        end_users=_pick(variant, 350, 120, 900, 60),
        traffic=TrafficShape(
            requests_per_day=_pick(variant, 400, 200, 670, 130),
            hour_weights=office_day(9, 18, night=0.01),
            weekday_weights=(1.0, 1.0, 1.0, 1.0, 0.9, 0.05, 0.03),
            utc_offset_hours=_pick(variant, US_EAST, EUROPE, INDIA, US_WEST),
        ),
        mean_input_tokens=3_500,
        mean_output_tokens=250,
        latency=LatencyProfile(ttft_ms=900, tpot_ms=20),
    )


def _sales_copilot(variant: int) -> WorkloadSpec:
    return _spec(
        "sales-copilot",
        provider="hosted_vllm",
        model="meta-llama/Llama-3.3-70B-Instruct",
        pool="h100-pool",
        streaming_share=0.98,
        end_users=_pick(variant, 600, 200, 1_000, 150),
        traffic=TrafficShape(
            requests_per_day=_pick(variant, 270, 130, 400, 100),
            hour_weights=office_day(8, 18),
            weekday_weights=_office_weekdays(0.05),
            utc_offset_hours=_pick(variant, US_EAST, EUROPE, US_WEST, -6),
        ),
        mean_input_tokens=2_500,
        mean_output_tokens=350,
        latency=LatencyProfile(ttft_ms=180, tpot_ms=25),
    )


def _consumer_app_daily(variant: int) -> WorkloadSpec:
    return _spec(
        "consumer-app",
        streaming_share=_pick(variant, 0.9, 1.0, 0.7, 0.95),
        end_users=_pick(variant, 20_000, 5_000, 50_000, 8_000),
        traffic=TrafficShape(
            requests_per_day=_pick(variant, 670, 330, 830, 230),
            hour_weights=humps((12.5, 20.5), width=2.5, floor=0.05),
            weekday_weights=(1.0, 0.95, 0.95, 1.0, 1.1, 1.3, 1.3),
            utc_offset_hours=_pick(variant, US_EAST, EUROPE, TOKYO, US_WEST),
        ),
        mean_input_tokens=900,
        mean_output_tokens=280,
        latency=LatencyProfile(ttft_ms=400, tpot_ms=15),
    )


def _voice_line(variant: int) -> WorkloadSpec:
    return _spec(
        "voice-line",
        streaming_share=0.0,
        end_users=_pick(variant, 3_000, 1_200, 500, 6_000),
        traffic=TrafficShape(
            requests_per_day=_pick(variant, 400, 230, 130, 600),
            hour_weights=office_day(7, 21),
            weekday_weights=(1.0, 1.0, 1.0, 1.0, 1.0, 0.6, 0.5),
            utc_offset_hours=_pick(variant, US_EAST, US_WEST, EUROPE, -6),
        ),
        mean_input_tokens=900,
        mean_output_tokens=_pick(variant, 40, 60, 30, 80),
        latency=LatencyProfile(ttft_ms=250, tpot_ms=8, spread=0.25),
        error_share=0.02,
    )


def _follow_the_sun(variant: int) -> WorkloadSpec:
    return _spec(
        "follow-the-sun-support",
        streaming_share=_pick(variant, 0.95, 0.85, 1.0, 0.9),
        end_users=_pick(variant, 2_500, 1_000, 4_000, 700),
        traffic=TrafficShape(
            requests_per_day=_pick(variant, 500, 300, 670, 200),
            hour_weights=humps((3, 11, 18), width=2.0, floor=0.05),
            weekday_weights=_office_weekdays(_pick(variant, 0.7, 0.5, 0.8, 0.6)),
        ),
        mean_input_tokens=2_400,
        mean_output_tokens=260,
        latency=LatencyProfile(ttft_ms=600, tpot_ms=9),
    )


def _follow_the_sun_callers(variant: int) -> tuple[str, ...]:
    """One service identity per regional support desk."""
    return ("support-apac", "support-emea", "support-amer")


def _apac_chat(variant: int) -> WorkloadSpec:
    return _spec(
        "apac-chat",
        streaming_share=_pick(variant, 0.8, 0.95, 0.6, 1.0),
        end_users=_pick(variant, 1_500, 600, 3_000, 300),
        traffic=TrafficShape(
            requests_per_day=_pick(variant, 330, 170, 500, 100),
            hour_weights=office_day(9, 18, shoulder=0.3, evening=0.1, night=0.01),
            weekday_weights=_office_weekdays(0.1),
            utc_offset_hours=_pick(variant, SINGAPORE, TOKYO, SYDNEY, INDIA),
        ),
        mean_input_tokens=1_500,
        mean_output_tokens=300,
        latency=LatencyProfile(ttft_ms=500, tpot_ms=15),
    )


def _internal_tool(variant: int) -> WorkloadSpec:
    return _spec(
        "internal-triage-tool",
        streaming_share=_pick(variant, 0.5, 0.0, 1.0, 0.3),
        end_users=_pick(variant, 8, 5, 12, 6),
        traffic=TrafficShape(
            requests_per_day=_pick(variant, 25, 20, 40, 30),
            hour_weights=active_hours(range(9, 17)),
            weekday_weights=WEEKDAYS,
            utc_offset_hours=_pick(variant, EUROPE, US_EAST, SINGAPORE, -6),
        ),
        mean_input_tokens=800,
        mean_output_tokens=120,
        latency=LatencyProfile(ttft_ms=400, tpot_ms=10),
    )


def _weekend_app(variant: int) -> WorkloadSpec:
    return _spec(
        "weekend-recipe-app",
        streaming_share=_pick(variant, 0.5, 0.0, 0.8, 0.3),
        end_users=_pick(variant, 5_000, 2_000, 12_000, 1_000),
        traffic=TrafficShape(
            requests_per_day=_pick(variant, 200, 130, 300, 100),
            hour_weights=humps((11, 18), width=2.5, floor=0.03),
            weekday_weights=(0.03, 0.03, 0.03, 0.03, 0.08, 1.0, 1.0),
            utc_offset_hours=_pick(variant, US_EAST, EUROPE, US_WEST, SYDNEY),
        ),
        mean_input_tokens=700,
        mean_output_tokens=220,
        latency=LatencyProfile(ttft_ms=350, tpot_ms=12),
    )


def _search_embeddings(variant: int) -> WorkloadSpec:
    return _spec(
        "search-query-embeddings",
        model="text-embedding-3-small",
        operation=OPERATION_EMBEDDING,
        streaming_share=0.0,
        end_users=_pick(variant, 5_000, 2_000, 10_000, 1_500),
        traffic=TrafficShape(
            requests_per_day=_pick(variant, 670, 330, 830, 270),
            hour_weights=office_day(8, 19, shoulder=0.4, evening=0.15, night=0.02),
            weekday_weights=_office_weekdays(0.3),
            utc_offset_hours=_pick(variant, US_EAST, EUROPE, US_WEST, TOKYO),
        ),
        mean_input_tokens=30,
        mean_output_tokens=0,
        latency=LatencyProfile(ttft_ms=80, tpot_ms=0),
    )


def _translation_widget(variant: int) -> WorkloadSpec:
    return _spec(
        "translation-widget",
        streaming_share=_pick(variant, 0.0, 0.1, 0.0, 0.2),
        end_users=_pick(variant, 2_000, 800, 4_000, 400),
        traffic=TrafficShape(
            requests_per_day=_pick(variant, 330, 200, 500, 130),
            hour_weights=office_day(8, 18, shoulder=0.4, evening=0.1, night=0.02),
            weekday_weights=_office_weekdays(0.15),
            utc_offset_hours=_pick(variant, EUROPE, 2, US_EAST, INDIA),
        ),
        mean_input_tokens=300,
        mean_output_tokens=_pick(variant, 90, 120, 70, 150),
        latency=LatencyProfile(ttft_ms=300, tpot_ms=6),
    )


# --- Async shapes ----------------------------------------------------------------------------


def _nightly_evals(variant: int) -> WorkloadSpec:
    start = _pick(variant, 1, 23, 3, 0)
    return _spec(
        "nightly-evals",
        caller="eval-runner",
        streaming_share=0.0,
        batch_api_share=_pick(variant, 0.4, 0.0, 0.6, 0.1),
        end_users=0,
        traffic=TrafficShape(
            requests_per_day=_pick(variant, 270, 500, 170, 330),
            hour_weights=active_hours((start + k) % 24 for k in range(_pick(variant, 2, 3, 2, 4))),
        ),
        mean_input_tokens=1_800,
        mean_output_tokens=300,
        latency=LatencyProfile(ttft_ms=500, tpot_ms=12),
    )


def _hourly_cron(variant: int) -> WorkloadSpec:
    return _spec(
        "hourly-digest-cron",
        streaming_share=0.0,
        end_users=0,
        traffic=TrafficShape(
            requests_per_day=24 * _pick(variant, 30, 10, 60, 20),
            active_minutes=_pick(variant, 5, 3, 10, 2),
        ),
        mean_input_tokens=6_000,
        mean_output_tokens=400,
        latency=LatencyProfile(ttft_ms=700, tpot_ms=10),
    )


def _weekly_batch(variant: int) -> WorkloadSpec:
    weekday_weights = [0.0] * 7
    weekday_weights[_pick(variant, 0, 6, 4, 2)] = 1.0
    return _spec(
        "weekly-report",
        provider="bedrock",
        model="us.anthropic.claude-haiku-4-5-20251001-v1:0",
        streaming_share=0.0,
        end_users=0,
        traffic=TrafficShape(
            requests_per_day=_pick(variant, 70, 30, 130, 20),
            hour_weights=active_hours((_pick(variant, 6, 2, 14, 20),)),
            weekday_weights=tuple(weekday_weights),
            active_minutes=_pick(variant, 40, 20, 60, 30),
        ),
        mean_input_tokens=9_000,
        mean_output_tokens=1_500,
        latency=LatencyProfile(ttft_ms=800, tpot_ms=12),
    )


def _embedding_backfill(variant: int) -> WorkloadSpec:
    return _spec(
        "embeddings-backfill",
        model="text-embedding-3-small",
        operation=OPERATION_EMBEDDING,
        streaming_share=0.0,
        end_users=0,
        traffic=TrafficShape(
            requests_per_day=_pick(variant, 670, 330, 1_000, 270),
            bursts_per_day=_pick(variant, 0.4, 0.3, 0.6, 1.0),
            burst_minutes=_pick(variant, 120, 90, 60, 150),
        ),
        mean_input_tokens=6_000,
        mean_output_tokens=0,
        latency=LatencyProfile(ttft_ms=350, tpot_ms=0),
        error_share=0.005,
    )


def _doc_ingestion(variant: int) -> WorkloadSpec:
    return _spec(
        "doc-ingestion",
        streaming_share=0.0,
        end_users=0,
        traffic=TrafficShape(requests_per_day=_pick(variant, 500, 200, 830, 100)),
        mean_input_tokens=4_000,
        mean_output_tokens=_pick(variant, 350, 200, 600, 150),
        latency=LatencyProfile(ttft_ms=650, tpot_ms=10),
    )


def _ticket_tagger(variant: int) -> WorkloadSpec:
    return _spec(
        "ticket-tagger",
        provider="hosted_vllm",
        model="meta-llama/Llama-3.3-70B-Instruct",
        pool="trn1-pool",
        streaming_share=0.0,
        end_users=0,
        traffic=TrafficShape(
            requests_per_day=_pick(variant, 400, 170, 670, 270),
            # Tickets arrive a little more by day than by night, but a queue smooths them out.
            hour_weights=humps((15,), width=6.0, floor=_pick(variant, 2.0, 3.0, 1.5, 4.0)),
        ),
        mean_input_tokens=1_200,
        mean_output_tokens=60,
        latency=LatencyProfile(ttft_ms=600, tpot_ms=45),
    )


def _research_agent(variant: int) -> WorkloadSpec:
    return _spec(
        "research-agent",
        provider="anthropic",
        model="claude-sonnet-4-5-20250929",
        streaming_share=1.0,
        end_users=0,
        traffic=TrafficShape(
            requests_per_day=_pick(variant, 200, 130, 300, 100),
            bursts_per_day=_pick(variant, 6, 3, 8, 4),
            burst_minutes=_pick(variant, 30, 45, 20, 40),
        ),
        mean_input_tokens=12_000,
        mean_output_tokens=_pick(variant, 900, 700, 1_200, 600),
        latency=LatencyProfile(ttft_ms=1_200, tpot_ms=22),
    )


def _batch_api_jobs(variant: int) -> WorkloadSpec:
    return _spec(
        "batch-api-jobs",
        streaming_share=0.0,
        batch_api_share=_pick(variant, 1.0, 0.9, 0.7, 1.0),
        end_users=_pick(variant, 0, 12, 4, 0),
        traffic=TrafficShape(
            requests_per_day=_pick(variant, 330, 200, 500, 130),
            # Analysts submit batches during their working day.
            hour_weights=office_day(9, 18),
            weekday_weights=_office_weekdays(0.05),
            utc_offset_hours=_pick(variant, US_EAST, EUROPE, US_WEST, TOKYO),
        ),
        mean_input_tokens=2_000,
        mean_output_tokens=400,
        latency=LatencyProfile(ttft_ms=600, tpot_ms=12),
    )


def _data_labeling(variant: int) -> WorkloadSpec:
    return _spec(
        "data-labeling-pipeline",
        streaming_share=0.0,
        end_users=0,
        traffic=TrafficShape(
            requests_per_day=_pick(variant, 400, 270, 670, 170),
            # An engineer starts labeling runs during the working day.
            hour_weights=active_hours(range(9, 18)),
            weekday_weights=WEEKDAYS,
            utc_offset_hours=_pick(variant, US_EAST, EUROPE, US_WEST, INDIA),
            bursts_per_day=_pick(variant, 2, 1, 3, 1.5),
            burst_minutes=_pick(variant, 45, 60, 30, 50),
        ),
        mean_input_tokens=1_500,
        mean_output_tokens=_pick(variant, 150, 80, 250, 120),
        latency=LatencyProfile(ttft_ms=500, tpot_ms=10),
    )


def _nightly_personalization(variant: int) -> WorkloadSpec:
    start = _pick(variant, 2, 4, 0, 22)
    return _spec(
        "nightly-email-personalization",
        streaming_share=0.0,
        end_users=_pick(variant, 20_000, 8_000, 40_000, 5_000),
        traffic=TrafficShape(
            requests_per_day=_pick(variant, 670, 330, 1_000, 270),
            hour_weights=active_hours((start + k) % 24 for k in range(_pick(variant, 3, 2, 4, 3))),
        ),
        mean_input_tokens=1_200,
        mean_output_tokens=350,
        latency=LatencyProfile(ttft_ms=600, tpot_ms=10),
    )


def _ci_review_bot(variant: int) -> WorkloadSpec:
    return _spec(
        "ci-review-bot",
        provider="anthropic",
        model="claude-sonnet-4-5-20250929",
        streaming_share=0.0,
        end_users=0,
        traffic=TrafficShape(
            requests_per_day=_pick(variant, 130, 80, 230, 50),
            hour_weights=office_day(9, 19, shoulder=0.5, evening=0.2, night=0.03),
            weekday_weights=_office_weekdays(0.05),
            utc_offset_hours=_pick(variant, US_EAST, EUROPE, US_WEST, INDIA),
        ),
        mean_input_tokens=15_000,
        mean_output_tokens=_pick(variant, 1_200, 1_500, 1_000, 2_000),
        latency=LatencyProfile(ttft_ms=1_500, tpot_ms=25),
    )


SHAPES: tuple[Shape, ...] = (
    Shape(
        name="customer-chat-us",
        label=LABEL_REALTIME,
        clear=True,
        description="Customer chat on the website in US office hours, streamed.",
        build=_customer_chat_us,
    ),
    Shape(
        name="ide-assistant",
        label=LABEL_REALTIME,
        clear=True,
        description="Coding assistant in the IDE: streamed, weekdays, developers.",
        build=_ide_assistant,
    ),
    Shape(
        name="sales-copilot",
        label=LABEL_REALTIME,
        clear=True,
        description="Sales copilot on self-hosted Llama, office hours, streamed.",
        build=_sales_copilot,
    ),
    Shape(
        name="consumer-app",
        label=LABEL_REALTIME,
        clear=True,
        description="Consumer chat app every day, lunch and evening peaks, streamed.",
        build=_consumer_app_daily,
    ),
    Shape(
        name="voice-line",
        label=LABEL_REALTIME,
        clear=False,
        description="Phone line assistant: never streams, short answers, a caller waits.",
        build=_voice_line,
    ),
    Shape(
        name="follow-the-sun-support",
        label=LABEL_REALTIME,
        clear=False,
        description="Support bot answering APAC, EMEA and Americas in turn: busy 24 hours.",
        build=_follow_the_sun,
        callers=_follow_the_sun_callers,
    ),
    Shape(
        name="apac-chat",
        label=LABEL_REALTIME,
        clear=False,
        description="Chat used in APAC office hours, mostly outside US hours.",
        build=_apac_chat,
    ),
    Shape(
        name="internal-tool",
        label=LABEL_REALTIME,
        clear=False,
        description="Internal tool: a handful of people, ~25 requests a working day.",
        build=_internal_tool,
    ),
    Shape(
        name="weekend-consumer-app",
        label=LABEL_REALTIME,
        clear=False,
        description="Consumer app used almost only at weekends, by day.",
        build=_weekend_app,
    ),
    Shape(
        name="search-query-embeddings",
        label=LABEL_REALTIME,
        clear=False,
        description="Embeddings of users' search queries: embeddings, but someone waits.",
        build=_search_embeddings,
    ),
    Shape(
        name="translation-widget",
        label=LABEL_REALTIME,
        clear=False,
        description="Inline translation in a web app: short, mostly not streamed.",
        build=_translation_widget,
    ),
    Shape(
        name="nightly-evals",
        label=LABEL_ASYNC,
        clear=True,
        description="Nightly evaluation suite, partly on the batch API.",
        build=_nightly_evals,
    ),
    Shape(
        name="hourly-cron",
        label=LABEL_ASYNC,
        clear=True,
        description="Cron job every hour at minute 0.",
        build=_hourly_cron,
    ),
    Shape(
        name="weekly-batch",
        label=LABEL_ASYNC,
        clear=True,
        description="Weekly report generation: one burst a week.",
        build=_weekly_batch,
    ),
    Shape(
        name="embeddings-backfill",
        label=LABEL_ASYNC,
        clear=True,
        description="Re-embedding the document store in large bursts.",
        build=_embedding_backfill,
    ),
    Shape(
        name="doc-ingestion",
        label=LABEL_ASYNC,
        clear=True,
        description="Document ingestion pipeline, flat 24/7.",
        build=_doc_ingestion,
    ),
    Shape(
        name="ticket-tagger",
        label=LABEL_ASYNC,
        clear=True,
        description="Ticket tagging from a queue, nearly flat 24/7, short outputs.",
        build=_ticket_tagger,
    ),
    Shape(
        name="research-agent",
        label=LABEL_ASYNC,
        clear=False,
        description="Background research agent: streams, but one identity and bursty.",
        build=_research_agent,
    ),
    Shape(
        name="batch-api-jobs",
        label=LABEL_ASYNC,
        clear=False,
        description="Batch-API jobs analysts submit during their working day.",
        build=_batch_api_jobs,
    ),
    Shape(
        name="data-labeling-pipeline",
        label=LABEL_ASYNC,
        clear=False,
        description="Labeling runs an engineer starts in office hours, in bursts.",
        build=_data_labeling,
    ),
    Shape(
        name="nightly-personalization",
        label=LABEL_ASYNC,
        clear=False,
        description="Nightly personalised e-mails: one per customer id, nobody waits.",
        build=_nightly_personalization,
    ),
    Shape(
        name="ci-review-bot",
        label=LABEL_ASYNC,
        clear=False,
        description="Pull-request review bot: office hours, long answers, nobody watches.",
        build=_ci_review_bot,
    ),
)


def labeled_workloads(seed: int = 0) -> list[LabeledWorkload]:
    """Every shape in `VARIANTS` variations, simulated over `DAYS` days into summaries."""
    cases: list[LabeledWorkload] = []
    for variant in range(VARIANTS):
        specs = []
        for shape in SHAPES:
            spec = shape.build(variant)
            specs.append(replace(spec, name=f"{shape.name}/{variant}", expected_class=shape.label))
        # Start on a different weekday per variant so weekly shapes are not all aligned.
        start = START + timedelta(days=3 * variant)
        frame = generate_requests(
            start=start, days=DAYS, workloads=specs, seed=seed * 1_000 + variant
        )
        rows = frame.groupby("workload", sort=False).indices
        for shape, spec in zip(SHAPES, specs, strict=True):
            callers = shape.callers(variant) if shape.callers else (spec.caller,)
            requests = frame.iloc[rows.get(spec.name, [])]
            cases.append(
                LabeledWorkload(
                    name=spec.name,
                    shape=shape.name,
                    label=shape.label,
                    clear=shape.clear,
                    description=shape.description,
                    summary=summarize_requests(
                        requests,
                        workload=spec.name,
                        callers=frozenset(callers),
                        window_start=start,
                        window_end=start + timedelta(days=DAYS),
                    ),
                )
            )
    return cases


def summarize_requests(
    requests: pd.DataFrame,
    *,
    workload: str,
    callers: frozenset[str],
    window_start: datetime,
    window_end: datetime,
) -> WorkloadSummary:
    """Sum a request frame (`demo_data.REQUEST_COLUMNS`) the way the rollups would."""
    minutes = ((requests["started_at"] - pd.Timestamp(EPOCH)) // pd.Timedelta(minutes=1)).to_numpy(
        dtype=np.int64
    )

    hour_keys, hour_index = np.unique(minutes // 60, return_inverse=True)
    operation_codes, operation_index = pd.factorize(requests["operation"])
    operation_names = [str(name) for name in operation_index]
    operation_counts = np.bincount(
        hour_index * len(operation_names) + operation_codes,
        minlength=hour_keys.size * len(operation_names),
    ).reshape(hour_keys.size, len(operation_names))

    def per_hour(values: pd.Series) -> list[int]:
        weights = values.to_numpy(dtype=np.float64)
        return (
            np.bincount(hour_index, weights=weights, minlength=hour_keys.size)
            .astype(np.int64)
            .tolist()
        )

    requests_by_hour = np.bincount(hour_index, minlength=hour_keys.size).tolist()
    errors = per_hour(requests["status"] == STATUS_ERROR)
    streaming = per_hour(requests["streaming"])
    batch = per_hour(requests["batch_api"])
    input_tokens = per_hour(requests["input_tokens"])
    output_tokens = per_hour(requests["output_tokens"])
    hours = tuple(
        HourStats(
            hour=EPOCH + timedelta(hours=int(key)),
            requests=requests_by_hour[i],
            errors=errors[i],
            streaming_requests=streaming[i],
            batch_api_requests=batch[i],
            input_tokens=input_tokens[i],
            output_tokens=output_tokens[i],
            operations={
                name: int(count)
                for name, count in zip(operation_names, operation_counts[i], strict=True)
                if count
            },
        )
        for i, key in enumerate(hour_keys.tolist())
    )

    day_keys, day_index = np.unique(minutes // (24 * 60), return_inverse=True)
    minute_counts = np.bincount(
        day_index * 60 + minutes % 60, minlength=day_keys.size * 60
    ).reshape(-1, 60)
    hour_counts = np.bincount(
        day_index * 24 + (minutes // 60) % 24, minlength=day_keys.size * 24
    ).reshape(-1, 24)
    user_codes, _ = pd.factorize(requests["end_user"].where(requests["end_user"] != ""))
    with_user = user_codes >= 0
    user_count = int(user_codes.max()) + 1 if with_user.any() else 0
    day_users = np.unique(day_index[with_user] * user_count + user_codes[with_user])
    users_by_day = np.bincount(day_users // max(user_count, 1), minlength=day_keys.size)
    days = tuple(
        DayProfile(
            day=(EPOCH + timedelta(days=int(key))).date(),
            minute_counts=tuple(minute_counts[i].tolist()),
            hour_counts=tuple(hour_counts[i].tolist()),
            end_users=int(users_by_day[i]),
        )
        for i, key in enumerate(day_keys.tolist())
    )

    latency = requests["latency_ms"].to_numpy(dtype=float)
    ttft = requests["ttft_ms"].to_numpy(dtype=float)
    ttft = ttft[~np.isnan(ttft)]
    return WorkloadSummary(
        workload=workload,
        hours=hours,
        days=days,
        end_users=user_count,
        callers=callers,
        p95_latency_ms=float(np.percentile(latency, 95)) if latency.size else None,
        p95_ttft_ms=float(np.percentile(ttft, 95)) if ttft.size else None,
        window_start=window_start,
        window_end=window_end,
    )
