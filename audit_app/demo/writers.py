"""The demo's requests written in the real formats the importers read: LiteLLM spend logs (CSV
and JSONL) and OpenTelemetry GenAI spans (OTLP/JSON, one document per line).
`bench_litellm_csv` writes a LiteLLM CSV of an exact size in bounded memory, for the ingestion
speed benchmark. The frames come from `audit_app.demo.traffic.generate_requests`.

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
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from audit_app.demo.traffic import (
    NOT_A_TIME,
    STATUS_ERROR,
    STATUS_SUCCESS,
    expected_requests_per_day,
    generate_requests,
)
from audit_app.demo.workloads import OPERATION_CHAT, OPERATION_EMBEDDING

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
    _write_litellm_csv_frames(bench_frames(rows=rows, seed=seed), path)


def bench_frames(*, rows: int, seed: int = 0) -> Iterator[pd.DataFrame]:
    """Exactly `rows` requests of the default workloads, a day (about `WRITE_CHUNK_ROWS`
    requests, or `rows` when fewer) at a time, for benchmark files of any format."""
    if rows < 0:
        raise ValueError("rows cannot be negative")
    per_day_at_scale_one = expected_requests_per_day()
    # 10 % headroom so a quiet day (weekends) still fills a small file in one step.
    scale = min(rows, WRITE_CHUNK_ROWS) * 1.1 / per_day_at_scale_one
    written = 0
    day = 0
    while written < rows:
        frame = generate_requests(
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
