"""Shared pieces of the token-log importers: the canonical row and its validation.

Its rules in full: `docs/formats.md`, section "Token logs: the canonical request".
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, BinaryIO, TypedDict

from audit_app.ingestion.identity import resolve_workload
from audit_app.ingestion.reading import (
    RowReject,
    RowRejected,
    check_chunk_rows,
    check_not_future,
    check_storable,
    future_cutoff,
    group_outcomes,
    text,
)
from audit_app.ingestion.token_logs.coerce import (
    STATUS_ERROR,
    parse_bool,
    parse_cost,
    parse_status,
    parse_timestamp,
    parse_token_count,
)

OPERATION_EMBEDDING = "embedding"

MILLISECOND = timedelta(milliseconds=1)


# ---------------------------------------------------------------------------------------------
# Data crossing layers
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CanonicalRequest:
    """One LLM request, whatever format it came from."""

    started_at: datetime
    ended_at: datetime
    first_token_at: datetime | None
    workload: str
    team: str
    end_user: str
    caller: str
    provider: str
    model: str
    operation: str
    streaming: bool | None
    batch_api: bool
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cost_usd: Decimal | None
    status: str
    request_id: str
    pool: str
    line: int
    cache_creation_input_tokens: int = 0

    @property
    def latency_ms(self) -> float:
        return (self.ended_at - self.started_at) / MILLISECOND

    @property
    def ttft_ms(self) -> float | None:
        if self.first_token_at is None:
            return None
        return (self.first_token_at - self.started_at) / MILLISECOND

    @property
    def tpot_ms(self) -> float | None:
        """Time per output token after the first (vLLM / MLPerf definition, `docs/methods.md`)."""
        ttft_ms = self.ttft_ms
        if ttft_ms is None or self.output_tokens <= 1:
            return None
        return (self.latency_ms - ttft_ms) / (self.output_tokens - 1)


@dataclass(frozen=True, kw_only=True)
class ParsedChunk:
    """Up to `chunk_rows` rows of a file; `bytes_read` is the stream position after them."""

    requests: list[CanonicalRequest]
    rejects: list[RowReject]
    rows_read: int
    bytes_read: int
    # Columnar fast paths hand over a canonical frame (audit_app.ingestion.token_logs.frame) instead
    # of
    # `requests`; the rows in it are in addition to any in `requests`.
    frame: Any = None
    # Sentences the upload keeps about records read that are not requests (`Upload.notes`).
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class SourceFields:
    """The names a format uses for the canonical fields, so rejects speak the file's language."""

    started_at: str = "started_at"
    ended_at: str = "ended_at"
    first_token_at: str = "first_token_at"
    model: str = "model"
    input_tokens: str = "input_tokens"
    output_tokens: str = "output_tokens"
    cached_input_tokens: str = "cached_input_tokens"
    cache_creation_input_tokens: str = "cache_creation_input_tokens"
    cost_usd: str = "cost_usd"
    streaming: str = "streaming"
    batch_api: str = "batch_api"
    status: str = "status"


RowOutcome = CanonicalRequest | RowReject


# ---------------------------------------------------------------------------------------------
# The one validator every importer goes through
# ---------------------------------------------------------------------------------------------


def _required_timestamp(value: object, *, field: str) -> datetime:
    moment = parse_timestamp(value, field=field)
    if moment is None:
        raise RowRejected(field=field, value=value, reason=f"`{field}` is empty.")
    return moment


def _token_count_or_default(value: object, *, field: str, zero_when_missing: bool) -> int:
    count = parse_token_count(value, field=field)
    if count is not None:
        return count
    if zero_when_missing:
        return 0
    raise RowRejected(field=field, value=value, reason=f"`{field}` is empty.")


def _checked_times(
    *, started_at: object, ended_at: object, first_token_at: object, names: SourceFields
) -> tuple[datetime, datetime, datetime | None]:
    """(start, end, first token): the end not before the start, the first token between them."""
    started = _required_timestamp(started_at, field=names.started_at)
    ended = _required_timestamp(ended_at, field=names.ended_at)
    cutoff = future_cutoff()
    check_not_future(started, field=names.started_at, value=started_at, cutoff=cutoff)
    check_not_future(ended, field=names.ended_at, value=ended_at, cutoff=cutoff)
    if ended < started:
        raise RowRejected(
            field=names.ended_at,
            value=ended_at,
            reason=(
                f"`{names.ended_at}` ({ended.isoformat()}) is before "
                f"`{names.started_at}` ({started.isoformat()})."
            ),
        )
    first_token = parse_timestamp(first_token_at, field=names.first_token_at)
    if first_token is not None and not started <= first_token <= ended:
        side = (
            f"before `{names.started_at}`" if first_token < started else f"after `{names.ended_at}`"
        )
        raise RowRejected(
            field=names.first_token_at,
            value=first_token_at,
            reason=f"`{names.first_token_at}` ({first_token.isoformat()}) is {side}.",
        )
    return started, ended, first_token


def _model_name(model: object, *, names: SourceFields) -> str:
    model_name = text(model)
    if not model_name:
        raise RowRejected(
            field=names.model,
            value=model,
            reason=f"`{names.model}` is empty, so the request cannot be priced or grouped.",
        )
    return model_name


def _token_counts(
    *,
    input_tokens: object,
    output_tokens: object,
    cached_input_tokens: object,
    cache_creation_input_tokens: object,
    names: SourceFields,
    is_error: bool,
    is_embedding: bool,
) -> tuple[int, int, int, int]:
    """(input, output, cached input, cache-creation input) token counts; cached and
    cache-creation ones are part of the input."""
    # A failed request often carries no usage, and an embedding produces no output tokens;
    # anywhere else an empty count would silently under-report spend, so it is a reject.
    input_count = _token_count_or_default(
        input_tokens, field=names.input_tokens, zero_when_missing=is_error
    )
    output_count = _token_count_or_default(
        output_tokens, field=names.output_tokens, zero_when_missing=is_error or is_embedding
    )
    cached_count = _token_count_or_default(
        cached_input_tokens, field=names.cached_input_tokens, zero_when_missing=True
    )
    if cached_count > input_count:
        raise RowRejected(
            field=names.cached_input_tokens,
            value=cached_input_tokens,
            reason=(
                f"`{names.cached_input_tokens}` ({cached_count}) is more than "
                f"`{names.input_tokens}` ({input_count}); input tokens must include cached ones."
            ),
        )
    creation_count = _token_count_or_default(
        cache_creation_input_tokens, field=names.cache_creation_input_tokens, zero_when_missing=True
    )
    if cached_count + creation_count > input_count:
        raise RowRejected(
            field=names.cache_creation_input_tokens,
            value=cache_creation_input_tokens,
            reason=(
                f"`{names.cached_input_tokens}` ({cached_count}) plus "
                f"`{names.cache_creation_input_tokens}` ({creation_count}) is more than "
                f"`{names.input_tokens}` ({input_count}); input tokens must include cache reads "
                "and cache writes."
            ),
        )
    return input_count, output_count, cached_count, creation_count


class _KeptTexts(TypedDict):
    """The texts a canonical request keeps (stored, or its key in live ingestion)."""

    model: str
    team: str
    end_user: str
    caller: str
    provider: str
    operation: str
    pool: str
    request_id: str
    workload: str


def _kept_texts(
    *,
    names: SourceFields,
    model: str,
    operation: str,
    team: object,
    end_user: object,
    caller: object,
    provider: object,
    request_id: object,
    pool: object,
    tags: Sequence[str],
    metadata: Mapping[str, object] | None,
) -> _KeptTexts:
    """The record's kept texts, the workload named by `resolve_workload`; each must be
    storable: a NUL or a lone surrogate is refused here (`RowRejected` naming the first, in
    this order), so it never reaches the database."""
    kept = _KeptTexts(
        model=model,
        team=text(team),
        end_user=text(end_user),
        caller=text(caller),
        provider=text(provider),
        operation=operation,
        pool=text(pool),
        request_id=text(request_id),
        workload="",
    )
    kept["workload"] = resolve_workload(
        tags=tags, metadata=metadata or {}, caller=kept["caller"], team=kept["team"], model=model
    )
    for field, value in kept.items():
        check_storable(str(value), field=names.model if field == "model" else field)
    return kept


def build_request(
    *,
    line: int,
    names: SourceFields,
    started_at: object,
    ended_at: object,
    model: object,
    input_tokens: object,
    output_tokens: object,
    first_token_at: object = None,
    cached_input_tokens: object = None,
    cache_creation_input_tokens: object = None,
    cost_usd: object = None,
    streaming: object = None,
    batch_api: object = None,
    status: object = None,
    provider: object = None,
    operation: object = None,
    team: object = None,
    end_user: object = None,
    caller: object = None,
    request_id: object = None,
    pool: object = None,
    tags: Sequence[str] = (),
    metadata: Mapping[str, object] | None = None,
) -> CanonicalRequest:
    """Coerce and validate one row; raise `RowRejected` naming the first bad field.

    Values may be raw (text, numbers) or already coerced by the importer (datetime, int,
    Decimal, bool): every coercion passes its own output through unchanged.
    """
    started, ended, first_token = _checked_times(
        started_at=started_at, ended_at=ended_at, first_token_at=first_token_at, names=names
    )
    model_name = _model_name(model, names=names)
    status_word = parse_status(status, field=names.status)
    operation_name = text(operation).lower()
    input_count, output_count, cached_count, creation_count = _token_counts(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_input_tokens=cached_input_tokens,
        cache_creation_input_tokens=cache_creation_input_tokens,
        names=names,
        is_error=status_word == STATUS_ERROR,
        is_embedding=operation_name == OPERATION_EMBEDDING,
    )
    kept = _kept_texts(
        names=names,
        model=model_name,
        operation=operation_name,
        team=team,
        end_user=end_user,
        caller=caller,
        provider=provider,
        request_id=request_id,
        pool=pool,
        tags=tags,
        metadata=metadata,
    )
    return CanonicalRequest(
        started_at=started,
        ended_at=ended,
        first_token_at=first_token,
        **kept,
        streaming=parse_bool(streaming, field=names.streaming),
        batch_api=parse_bool(batch_api, field=names.batch_api) or False,
        input_tokens=input_count,
        output_tokens=output_count,
        cached_input_tokens=cached_count,
        cache_creation_input_tokens=creation_count,
        cost_usd=parse_cost(cost_usd, field=names.cost_usd),
        status=status_word,
        line=line,
    )


def chunk_outcomes(
    outcomes: Iterable[RowOutcome], *, stream: BinaryIO, chunk_rows: int
) -> Iterator[ParsedChunk]:
    """Group row outcomes into chunks of `chunk_rows` rows; a file without rows yields none.

    `outcomes` must be lazy so `stream.tell()` is the position just after the chunk's last row.
    """
    check_chunk_rows(chunk_rows)
    for group in group_outcomes(
        outcomes, chunk_rows=chunk_rows, position=stream.tell, end_at_file_end=False
    ):
        yield ParsedChunk(
            requests=group.accepted,
            rejects=group.rejects,
            rows_read=group.rows_read,
            bytes_read=group.bytes_read,
        )


class ColumnarUnsupported(Exception):
    """The file has a shape the fast path cannot number lines in; read it with the row path.
    (Defined here, not in the columnar modules, so that naming it imports no numpy or pyarrow.)

    Raised before any row of the offending block is yielded; the chunks yielded before it are
    exact. `litellm.read` handles it by continuing with `litellm.read_rows` semantics after the
    last line already yielded.
    """
