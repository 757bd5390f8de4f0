"""Small token-log files that spell one provider or model several ways, for the tests that
check every spelling lands under one name (`costs.providers`, `costs.model_names`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime

LITELLM_HEADER = (
    "request_id,call_type,api_key,spend,total_tokens,prompt_tokens,completion_tokens,startTime,"
    "endTime,completionStartTime,model,model_group,custom_llm_provider,user,metadata,cache_hit,"
    "request_tags,team_id,end_user,status\n"
)


def litellm_csv(rows: int, spellings: Sequence[tuple[str, str, str]], *, group: str) -> bytes:
    """LiteLLM spend-log rows on 2026-11-02 from 10:00, one a second, workload "summarise",
    team "team-a", 1,000 input and 100 output tokens each; row i is spelled
    ``spellings[i % len(spellings)]`` = (custom_llm_provider, model, spend in USD), with
    ``group`` as its model_group. Files of 64 KiB or more take the columnar path, smaller ones
    the row-by-row path."""
    lines = [LITELLM_HEADER]
    for i in range(rows):
        provider, model, spend = spellings[i % len(spellings)]
        minute, second = divmod(i, 60)
        lines.append(
            f"l-{i},acompletion,k1,{spend},1100,1000,100,2026-11-02 10:{minute:02d}:{second:02d},"
            f"2026-11-02 10:{minute:02d}:{second:02d},,{model},{group},{provider},,{{}},False,"
            f'"[""workload:summarise""]",team-a,,success\n'
        )
    return "".join(lines).encode()


def otel_span(*, provider: str, model: str) -> bytes:
    """One OTLP/JSON chat span at 2026-11-02 10:20 UTC, 2 s long, workload "summarise", 1,000
    input and 100 output tokens, no cost."""
    start = int(datetime(2026, 11, 2, 10, 20, tzinfo=UTC).timestamp()) * 10**9
    attributes = {
        "gen_ai.operation.name": {"stringValue": "chat"},
        "gen_ai.provider.name": {"stringValue": provider},
        "gen_ai.request.model": {"stringValue": model},
        "gen_ai.usage.input_tokens": {"intValue": "1000"},
        "gen_ai.usage.output_tokens": {"intValue": "100"},
        "workload": {"stringValue": "summarise"},
    }
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "name": f"chat {model}",
        "kind": 3,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 2 * 10**9),
        "attributes": [{"key": k, "value": v} for k, v in attributes.items()],
        "status": {},
    }
    document = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}
    return json.dumps(document).encode()
