"""The LiteLLM spend-log row mapping, shared by `litellm` (row path) and `litellm_columnar`.

Mapping (canonical field <- LiteLLM field):
- started_at / ended_at <- `startTime` / `endTime`.
- first_token_at <- `completionStartTime` when strictly before `endTime` (see below).
- streaming <- True when `completionStartTime` < `endTime`, False when equal, None when absent.
- model <- `model`, else `model_group`. provider <- `custom_llm_provider`.
- operation <- `call_type`: (a)completion -> chat, (a)embedding -> embedding,
  (a)text_completion -> completion, anything else kept as written.
- input_tokens / output_tokens <- `prompt_tokens` / `completion_tokens`.
- cached_input_tokens <- the usage LiteLLM logged in metadata (SpendLogs has no cached-token
  column): `metadata.usage_object.prompt_tokens_details.cached_tokens`, else
  `metadata.usage_object.cache_read_input_tokens`, else the same two keys under
  `metadata.additional_usage_values`; 0 when none is present.
- cache_creation_input_tokens <- `cache_creation_input_tokens` (Anthropic's usage field, kept by
  LiteLLM) in the same two usage objects; 0 when absent.
- cost_usd <- `spend`, except None when `spend` is 0 while tokens were used and `cache_hit` is
  not true: LiteLLM had no price for the model, so the product prices it from a price card.
- caller <- `metadata.user_api_key_alias`, else `api_key` (the hashed key).
- team <- `team_id`, else `metadata.user_api_key_team_alias`.
- end_user <- `end_user`, else `user`.
- status <- `status`, else `metadata.status` ("failure" -> error).
- batch_api <- `call_type` contains "batch", or `metadata.batch_api` is true, or
  `metadata.batch_models` is a non-empty list.
- pool <- `metadata.pool`, else `metadata.spend_logs_metadata.pool`.
- workload identity <- tags from `request_tags` plus `metadata.tags`; metadata is `metadata`
  over `metadata.spend_logs_metadata` (the key/values a caller attaches to a request).

LiteLLM writes `completionStartTime == endTime` for calls that were not streamed, so that value
is a placeholder, not a first-token time: such rows get `first_token_at = None` and
`streaming = False`, which keeps TTFT and TPOT statistics to requests where they were measured.

Required columns: request_id, startTime, endTime, model, prompt_tokens, completion_tokens.
"""

from __future__ import annotations

from collections.abc import Mapping

from audit_app.ingestion.reading import text
from audit_app.ingestion.token_logs.base import CanonicalRequest, SourceFields, build_request
from audit_app.ingestion.token_logs.coerce import (
    first_text,
    parse_bool,
    parse_cost,
    parse_json_object,
    parse_tags,
    parse_timestamp,
    parse_token_count,
)

REQUIRED_COLUMNS = (
    "request_id",
    "startTime",
    "endTime",
    "model",
    "prompt_tokens",
    "completion_tokens",
)
SOURCE_FIELDS = SourceFields(
    started_at="startTime",
    ended_at="endTime",
    first_token_at="completionStartTime",
    model="model",
    input_tokens="prompt_tokens",
    output_tokens="completion_tokens",
    cached_input_tokens="metadata.usage_object",
    cost_usd="spend",
    streaming="completionStartTime",
    batch_api="metadata.batch_api",
    status="status",
)
OPERATION_BY_CALL_TYPE = {
    "completion": "chat",
    "acompletion": "chat",
    "embedding": "embedding",
    "aembedding": "embedding",
    "text_completion": "completion",
    "atext_completion": "completion",
}
CACHED_TOKEN_PATHS = (
    ("prompt_tokens_details", "cached_tokens"),
    ("cache_read_input_tokens",),
)


def nested(mapping: Mapping[str, object], *path: str) -> object:
    value: object = mapping
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


CACHE_CREATION_TOKEN_PATHS = (("cache_creation_input_tokens",),)


def cached_tokens(
    metadata: Mapping[str, object], paths: tuple[tuple[str, ...], ...] = CACHED_TOKEN_PATHS
) -> object:
    """LiteLLM keeps no cached-token column in SpendLogs; the usage it logged in metadata has it.
    With ``paths=CACHE_CREATION_TOKEN_PATHS``, the cache-creation (cache write) count."""
    for usage_key in ("usage_object", "additional_usage_values"):
        for path in paths:
            value = nested(metadata, usage_key, *path)
            if value is not None:
                return value
    return None


def is_batch(call_type: str, metadata: Mapping[str, object]) -> bool:
    if "batch" in call_type.lower():
        return True
    if parse_bool(metadata.get("batch_api"), field="metadata.batch_api"):
        return True
    batch_models = metadata.get("batch_models")
    return isinstance(batch_models, list) and bool(batch_models)


def request_from_record(record: Mapping[str, object], line: int) -> CanonicalRequest:
    metadata = parse_json_object(record.get("metadata"), field="metadata")
    spend_logs_metadata = parse_json_object(
        nested(metadata, "spend_logs_metadata"), field="metadata.spend_logs_metadata"
    )
    # The row's own metadata wins over the per-request key/values the caller passed in.
    identity_metadata = {**spend_logs_metadata, **metadata}
    tags = parse_tags(record.get("request_tags"), field="request_tags") + parse_tags(
        metadata.get("tags"), field="metadata.tags"
    )

    # Parsed here only to tell streamed calls apart; build_request gets the raw values so a
    # reject quotes what the file says.
    ended_at = parse_timestamp(record.get("endTime"), field="endTime")
    completion_start = parse_timestamp(
        record.get("completionStartTime"), field="completionStartTime"
    )
    streaming = None
    first_token_at = record.get("completionStartTime")
    if completion_start is not None and ended_at is not None:
        streaming = completion_start < ended_at
        if completion_start == ended_at:
            first_token_at = None

    input_tokens = parse_token_count(record.get("prompt_tokens"), field="prompt_tokens")
    output_tokens = parse_token_count(record.get("completion_tokens"), field="completion_tokens")
    spend = parse_cost(record.get("spend"), field="spend")
    served_from_cache = text(record.get("cache_hit")).lower() == "true"
    if spend == 0 and (input_tokens or 0) + (output_tokens or 0) > 0 and not served_from_cache:
        spend = None

    call_type = text(record.get("call_type"))
    return build_request(
        line=line,
        names=SOURCE_FIELDS,
        started_at=record.get("startTime"),
        ended_at=record.get("endTime"),
        first_token_at=first_token_at,
        model=first_text(record.get("model"), record.get("model_group")),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_input_tokens=cached_tokens(metadata),
        cache_creation_input_tokens=cached_tokens(metadata, CACHE_CREATION_TOKEN_PATHS),
        cost_usd=spend,
        streaming=streaming,
        batch_api=is_batch(call_type, metadata),
        status=first_text(record.get("status"), metadata.get("status")),
        provider=record.get("custom_llm_provider"),
        operation=OPERATION_BY_CALL_TYPE.get(call_type.lower(), call_type),
        team=first_text(record.get("team_id"), metadata.get("user_api_key_team_alias")),
        end_user=first_text(record.get("end_user"), record.get("user")),
        caller=first_text(metadata.get("user_api_key_alias"), record.get("api_key")),
        request_id=record.get("request_id"),
        pool=first_text(metadata.get("pool"), spend_logs_metadata.get("pool")),
        tags=tags,
        metadata=identity_metadata,
    )
