"""Columnar fast path for LiteLLM spend logs exported as CSV.

Reading and checking the blocks is `columnar_blocks`; the vectorised coercion of one column is
`columnar_cells`. One concern here: turning a parsed block into a chunk equal to the row
path's (decoding repeated values once, then the chunk's conversion step by step); the JSON fast
paths (`json_columnar`, `otel_columnar`) convert through the same steps (`Columns`, `Facts`,
`timing_of`, `usage_of`, `status_of`, `names_of`, `canonical_frame`).

Its rules in full: `docs/architecture.md`, section "The LiteLLM CSV fast path".
"""

from __future__ import annotations

import contextvars
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import BinaryIO, Generic, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from audit_app.ingestion.identity import resolve_workload
from audit_app.ingestion.reading import (
    RowReject,
    RowRejected,
    read_head,
    row_outcome,
    text,
)
from audit_app.ingestion.token_logs import columnar_blocks as blocks
from audit_app.ingestion.token_logs import columnar_cells as cells
from audit_app.ingestion.token_logs import frame as canonical
from audit_app.ingestion.token_logs import litellm_fields as fields
from audit_app.ingestion.token_logs.base import CanonicalRequest, ParsedChunk
from audit_app.ingestion.token_logs.coerce import (
    MAX_TOKENS_PER_REQUEST,
    STATUS_ERROR,
    parse_status,
    parse_tags,
    parse_token_count,
)
from audit_app.ingestion.token_logs.litellm_fields import FIELDS

# Distinct metadata / tag values remembered across chunks; past this the memo starts afresh.
MAX_MEMO_ENTRIES = 100_000

NAT = np.iinfo(np.int64).min
# How a status text reads (see `_status_code`).
STATUS_IS_SUCCESS = 0
STATUS_IS_ERROR = 1
STATUS_UNKNOWN = -1
STATUS_BLANK = 2

T = TypeVar("T")


# ---------------------------------------------------------------------------------------------
# Reading blocks of whole lines
# ---------------------------------------------------------------------------------------------


def read_csv_columnar(
    stream: BinaryIO, *, chunk_rows: int, block_bytes: int | None = None
) -> Iterator[ParsedChunk]:
    """Parse a LiteLLM CSV export into chunks of at most `chunk_rows` rows.

    Canonical rows come in `frame` (and, for rows the row path had to convert, in `requests`);
    `block_bytes` overrides the size of the blocks read at once (tests use small blocks).
    Raises `ColumnarUnsupported` as described in the module docstring.
    """
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be at least 1, got {chunk_rows}")
    header = blocks.read_header(stream)
    size = block_bytes or blocks.block_bytes_for(read_head(stream), chunk_rows=chunk_rows)
    converter = _converter()
    first_line = 2
    for block in blocks.parsed_blocks(stream, header=header, block_bytes=size):
        rows = block.table.num_rows
        for start in range(0, rows, chunk_rows):
            stop = min(start + chunk_rows, rows)
            yield converter.convert(
                block.table.slice(start, stop - start),
                first_line=first_line + start,
                bytes_read=block.position_after(stop),
            )
        first_line += rows


# Parts of one large upload read by the same worker decode mostly the same metadata and tags;
# inside `memos_shared_under(key)` reads reuse the converter (its memos) of the previous read
# under the same key. Only the latest key's converter is kept.
_MEMO_KEY: contextvars.ContextVar[object] = contextvars.ContextVar("memo_key", default=None)
_kept_converters: dict[object, _ChunkConverter] = {}


@contextmanager
def memos_shared_under(key: object) -> Iterator[None]:
    """Reads in this block reuse what earlier reads under `key` decoded (results are pure
    functions of the raw text, so sharing changes no result, only the time taken)."""
    token = _MEMO_KEY.set(key)
    try:
        yield
    finally:
        _MEMO_KEY.reset(token)


def _converter() -> _ChunkConverter:
    key = _MEMO_KEY.get()
    if key is None:
        return _ChunkConverter()
    converter = _kept_converters.get(key)
    if converter is None:
        _kept_converters.clear()
        converter = _kept_converters[key] = _ChunkConverter()
    return converter


# ---------------------------------------------------------------------------------------------
# Decoding repeated values once
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class MetadataFacts:
    """What one distinct `metadata` text contributes to a row, decoded as the row path does."""

    tags: tuple[str, ...]
    texts: tuple[str, ...]  # `text()` of each of `fields.METADATA_TEXTS`
    cached_tokens: int | None  # None: the row path rejects the cached-token count
    cache_creation_tokens: int | None = 0  # None: the row path rejects this count
    batch_api: bool | None  # None: `metadata.batch_api` is unreadable
    workload: str | None  # what the metadata names as workload by itself (see `_workloads`)

    def text(self, source: str) -> str:
        return self.texts[_METADATA_TEXT_INDEX[source]]


_METADATA_TEXT_INDEX = {source: index for index, source in enumerate(fields.METADATA_TEXTS)}
# Metadata made only of these keys, with plain values, is decoded by `_plain_metadata_facts`:
# the texts at the top of `metadata`, and the first usage object.
_TEXT_METADATA_KEYS = tuple(
    path[0] if len(path) == 1 else "" for path in map(fields.metadata_path, fields.METADATA_TEXTS)
)
_PLAIN_METADATA_KEYS = frozenset({*_TEXT_METADATA_KEYS, fields.USAGE_OBJECTS[0]} - {""})
_CACHED_TOKEN_PATHS = fields.usage_paths("cached_input_tokens")
_CACHE_CREATION_TOKEN_PATHS = fields.usage_paths("cache_creation_input_tokens")


def _plain_metadata_facts(raw: str) -> MetadataFacts | None:
    """The facts of the commonest metadata shape (key alias, team alias, a usage object with a
    cached-token count), decoded in a few microseconds; None sends it to the full decoding.

    LiteLLM's per-request usage object makes most metadata texts distinct, so this runs for
    most rows of a real export. It gives the same answer as `_metadata_facts_full` (tested)."""
    if not raw.startswith("{"):
        return None
    try:
        metadata = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if type(metadata) is not dict or not metadata.keys() <= _PLAIN_METADATA_KEYS:
        return None
    texts: list[str] = []
    for key in _TEXT_METADATA_KEYS:
        value = metadata.get(key)
        if value is None:
            texts.append("")
        elif type(value) is str:
            texts.append(text(value))
        else:
            return None
    cached = 0
    usage = metadata.get(fields.USAGE_OBJECTS[0])
    if usage is not None:
        if type(usage) is not dict:
            return None
        for path in _CACHED_TOKEN_PATHS:
            value = usage
            for key in path:
                if type(value) is not dict:
                    return None
                value = value.get(key)
                if value is None:
                    break
            if value is not None:
                if type(value) is not int or not 0 <= value <= MAX_TOKENS_PER_REQUEST:
                    return None
                cached = value
                break
        for path in _CACHE_CREATION_TOKEN_PATHS:
            if usage.get(path[0]) is not None:
                return None  # rare (Anthropic usage): the full decoding reads it
    return MetadataFacts(
        tags=(),
        texts=tuple(texts),
        cached_tokens=cached,
        batch_api=False,
        workload=None,
    )


# A JSON escape of a NUL character or of a surrogate: the text it decodes to may not be
# storable (`reading.unstorable_reason`), so rows carrying it take the row path, which refuses
# them when a field they keep holds one (a surrogate pair, such as an escaped emoji, is fine).
UNSTORABLE_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")


def decode_metadata(raw: str) -> MetadataFacts | None:
    """None when the row path rejects every row carrying this metadata, or may
    (`UNSTORABLE_ESCAPE`)."""
    if "\\u" in raw and UNSTORABLE_ESCAPE.search(raw):
        return None
    return _plain_metadata_facts(raw) or _metadata_facts_full(raw)


def _metadata_facts_full(raw: str) -> MetadataFacts | None:
    """None when the row path rejects every row carrying this metadata."""
    try:
        metadata, identity = fields.decoded_metadata({fields.METADATA: raw})
        tags = [
            tag
            for source in _METADATA_TAG_SOURCES
            for tag in parse_tags(fields.source_value({}, metadata, source), field=source)
        ]
    except RowRejected:
        return None
    cached_tokens = _count_or_rejected(metadata, "cached_input_tokens")
    creation_tokens = _count_or_rejected(metadata, "cache_creation_input_tokens")
    try:
        batch_api: bool | None = fields.is_batch("", metadata)
    except RowRejected:
        batch_api = None
    return MetadataFacts(
        tags=tuple(tags),
        texts=tuple(
            text(fields.source_value({}, metadata, source)) for source in fields.METADATA_TEXTS
        ),
        cached_tokens=cached_tokens,
        cache_creation_tokens=creation_tokens,
        batch_api=batch_api,
        workload=_workload_named_by(metadata=identity),
    )


_METADATA_TAG_SOURCES = tuple(filter(fields.is_metadata, FIELDS["tags"].sources))
_COLUMN_TAG_SOURCES = tuple(
    source for source in FIELDS["tags"].sources if not fields.is_metadata(source)
)


def _count_or_rejected(metadata: Mapping[str, object], name: str) -> int | None:
    """A metadata token count as the row path reads it (0 when absent); None when it rejects
    it."""
    try:
        count = parse_token_count(fields.value_of(name, {}, metadata), field=FIELDS[name].name)
    except RowRejected:
        return None
    return 0 if count is None else count


def _request_tags(raw: str) -> tuple[str, ...] | None:
    if "\\u" in raw and UNSTORABLE_ESCAPE.search(raw):
        return None  # the row path decides (see `UNSTORABLE_ESCAPE`)
    try:
        return tuple(parse_tags(raw, field=_COLUMN_TAG_SOURCES[0]))
    except RowRejected:
        return None


def _operation(raw: str) -> tuple[str, bool]:
    """(canonical operation, call type names a batch call) for one `call_type` text."""
    call_type = text(raw)
    return text(fields.operation_of(call_type)).lower(), "batch" in call_type.lower()


class Memo(Generic[T]):
    """Results of an expensive decoding, per distinct raw text, kept across chunks."""

    def __init__(self, decode: Callable[[str], T]) -> None:
        self.decode = decode
        self.results: dict[str, T] = {}

    def __call__(self, values: Sequence[str]) -> list[T]:
        if len(self.results) > MAX_MEMO_ENTRIES:
            self.results = {}
        results = self.results
        out: list[T] = []
        for value in values:
            try:
                result = results[value]
            except KeyError:
                result = results[value] = self.decode(value)
            out.append(result)
        return out


@dataclass(frozen=True)
class Texts:
    """A text column as its distinct values and, per row, the index of the row's value."""

    texts: list[str]
    codes: np.ndarray

    @classmethod
    def of(cls, values: list[str], codes: np.ndarray) -> Texts:
        """From values that may repeat: equal texts get one code, so codes compare like texts."""
        distinct: dict[str, int] = {}
        renumber = np.array([distinct.setdefault(value, len(distinct)) for value in values])
        return cls(list(distinct), renumber[codes] if len(values) > 1 else codes)

    def blank(self) -> np.ndarray:
        blank: np.ndarray = np.array([value == "" for value in self.texts], bool)[self.codes]
        return blank

    def or_else(self, other: Texts) -> Texts:
        """Per row, this value unless it is blank, else `other`'s (as `first_text`)."""
        blank = np.array([value == "" for value in self.texts], bool)
        codes = np.where(blank[self.codes], other.codes + len(self.texts), self.codes)
        return Texts.of(self.texts + other.texts, codes)

    def to_series(self, rows: np.ndarray | None) -> pd.Series:
        # Categorical: the rollups group by these columns, and grouping by codes is several
        # times cheaper than hashing the strings again.
        codes = self.codes if rows is None else self.codes[rows]
        return pd.Series(pd.Categorical.from_codes(codes, categories=pd.Index(self.texts)))


def _distinct(column: pa.ChunkedArray | None, rows: int) -> tuple[list[str], np.ndarray]:
    """The distinct texts of a column and, per row, the index of its text among them."""
    if column is None:
        # An absent column reads as None in the row path, the same as an empty cell.
        return [""], np.zeros(rows, np.intp)
    encoded = pc.dictionary_encode(column).unify_dictionaries()
    chunks = [chunk for chunk in encoded.chunks if len(chunk)]
    codes = np.concatenate([chunk.indices.to_numpy() for chunk in chunks])
    return chunks[0].dictionary.to_pylist(), codes


# ---------------------------------------------------------------------------------------------
# One chunk
# ---------------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class _ChunkConverter:
    """Turns parsed blocks into chunks; holds what is worth remembering between chunks."""

    metadata: Memo[MetadataFacts | None] = field(default_factory=lambda: Memo(decode_metadata))
    request_tags: Memo[tuple[str, ...] | None] = field(default_factory=lambda: Memo(_request_tags))

    def convert(self, table: pa.Table, *, first_line: int, bytes_read: int) -> ParsedChunk:
        columns = Columns(table)
        metadata_values, metadata_codes = columns.distinct(fields.METADATA)
        facts = Facts.of(self.metadata(metadata_values), metadata_codes)
        tag_values, tag_codes = columns.distinct(_COLUMN_TAG_SOURCES[0])
        tags = Tags(self.request_tags(tag_values), tag_codes)
        timing = timing_of(columns)
        usage = usage_of(columns, facts)
        status = status_of(columns, facts)
        names = names_of(columns, facts, tags)
        slow = (
            facts.unreadable()
            | tags.unreadable()
            | timing.slow
            | usage.slow
            | status.slow
            | names.slow
        )
        keep = None if not slow.any() else np.flatnonzero(~slow)
        lines = np.arange(first_line, first_line + columns.rows, dtype=np.int64)
        frame = canonical_frame(
            timing=timing, usage=usage, status=status, names=names, lines=lines, keep=keep
        )
        requests, rejects = _convert_row_by_row(table, np.flatnonzero(slow), first_line)
        return ParsedChunk(
            requests=requests,
            rejects=rejects,
            rows_read=columns.rows,
            bytes_read=bytes_read,
            frame=frame,
        )


@dataclass(frozen=True)
class Columns:
    """A parsed block's columns; an absent column reads as empty cells, as in the row path."""

    table: pa.Table

    @property
    def rows(self) -> int:
        rows: int = self.table.num_rows
        return rows

    def column(self, name: str) -> pa.ChunkedArray | None:
        return self.table.column(name) if name in self.table.column_names else None

    def plain(self, name: str) -> pa.Array | None:
        return cells.plain_column(self.column(name), self.rows)

    def distinct(self, name: str) -> tuple[list[str], np.ndarray]:
        return _distinct(self.column(name), self.rows)

    def texts(self, name: str) -> Texts:
        values, codes = self.distinct(name)
        return Texts.of([text(value) for value in values], codes)


@dataclass(frozen=True)
class Facts:
    """The decoded `metadata`: its facts but the cached-token and cache-creation counts, once
    per distinct combination (None: unreadable), and per row the index of its facts and the two
    counts it gives (-1: the row path rejects it, or the metadata is unreadable)."""

    facts: list[MetadataFacts | None]
    codes: np.ndarray
    cached_tokens: np.ndarray
    cache_creation_tokens: np.ndarray

    @classmethod
    def of(cls, decoded: Sequence[MetadataFacts | None], codes: np.ndarray) -> Facts:
        """From the facts of each distinct metadata text (`decoded`) and, per row, the index of
        its text. LiteLLM's per-request usage object makes most texts distinct by their
        cached-token count alone (thousands per chunk), while the facts the other columns are
        built from take a few hundred combinations: those are kept once, so each per-value
        step after this one runs over them, not over every distinct text."""
        cached = np.fromiter(
            (-1 if f is None or f.cached_tokens is None else f.cached_tokens for f in decoded),
            np.int64,
            len(decoded),
        )
        creation = np.fromiter(
            (
                -1 if f is None or f.cache_creation_tokens is None else f.cache_creation_tokens
                for f in decoded
            ),
            np.int64,
            len(decoded),
        )
        index_of: dict[tuple[object, ...] | None, int] = {}
        kept: list[MetadataFacts | None] = []
        renumber: list[int] = []
        for f in decoded:
            key = None if f is None else (f.tags, f.texts, f.batch_api, f.workload)
            index = index_of.get(key)
            if index is None:
                index = index_of[key] = len(kept)
                kept.append(f)
            renumber.append(index)
        return cls(kept, np.array(renumber, np.intp)[codes], cached[codes], creation[codes])

    def unreadable(self) -> np.ndarray:
        unreadable: np.ndarray = ~np.array([f is not None for f in self.facts], bool)[self.codes]
        return unreadable

    def source_texts(self, source: str) -> Texts:
        """One of `fields.METADATA_TEXTS`, per row ("" for unreadable metadata)."""
        index = _METADATA_TEXT_INDEX[source]
        return Texts.of([f.texts[index] if f else "" for f in self.facts], self.codes)

    def per_row(self, pick: Callable[[MetadataFacts | None], int]) -> np.ndarray:
        per_row: np.ndarray = np.array([pick(f) for f in self.facts], np.int64)[self.codes]
        return per_row


@dataclass(frozen=True)
class Tags:
    """The decoded `request_tags` per distinct value (None: unreadable) and, per row, its index."""

    tags: list[tuple[str, ...] | None]
    codes: np.ndarray

    def unreadable(self) -> np.ndarray:
        unreadable: np.ndarray = ~np.array([t is not None for t in self.tags], bool)[self.codes]
        return unreadable


@dataclass(frozen=True)
class Timing:
    """Start, end and first-token instants (nanoseconds) and the streaming flag per row."""

    started: np.ndarray
    ended: np.ndarray
    first_token: np.ndarray
    streaming: np.ndarray
    slow: np.ndarray


def timing_of(columns: Columns) -> Timing:
    """Timestamps, and the streaming / first-token rule."""
    rows = columns.rows
    started, started_ok, _ = cells.timestamps(columns.plain(FIELDS["started_at"].only))
    ended, ended_ok, _ = cells.timestamps(columns.plain(FIELDS["ended_at"].only))
    completion_column = columns.plain(FIELDS["first_token_at"].only)
    if completion_column is None:
        completion = np.zeros(rows, np.int64)
        completion_ok = np.zeros(rows, bool)
        completion_missing = np.ones(rows, bool)
    else:
        completion, completion_ok, completion_missing = cells.timestamps(completion_column)
    placeholder = completion_ok & (completion == ended)
    measured = completion_ok & (started <= completion) & (completion < ended)
    slow = ~started_ok | ~ended_ok | (ended < started)
    slow |= ~(completion_missing | placeholder | measured)
    return Timing(
        started=started,
        ended=ended,
        first_token=np.where(measured, completion, NAT),
        streaming=np.where(completion_missing, -1, measured).astype(np.int8),
        slow=slow,
    )


@dataclass(frozen=True)
class Usage:
    """Token counts and the cost per row (`canonical.NO_COST` where the product prices it)."""

    input_tokens: np.ndarray
    output_tokens: np.ndarray
    cached_tokens: np.ndarray
    cache_creation_tokens: np.ndarray
    cost_nanos: np.ndarray
    slow: np.ndarray


def usage_of(columns: Columns, facts: Facts) -> Usage:
    """Token counts and cost."""
    input_tokens, input_ok = cells.token_counts(columns.plain(FIELDS["input_tokens"].only))
    output_tokens, output_ok = cells.token_counts(columns.plain(FIELDS["output_tokens"].only))
    slow = ~input_ok | ~output_ok
    cached_by_metadata = facts.cached_tokens
    cached_tokens = np.maximum(cached_by_metadata, 0)
    creation_by_metadata = facts.cache_creation_tokens
    creation_tokens = np.maximum(creation_by_metadata, 0)
    slow |= (
        (cached_by_metadata < 0)
        | (creation_by_metadata < 0)
        | (cached_tokens + creation_tokens > input_tokens)
    )
    costs = cells.costs(columns.plain(FIELDS["cost_usd"].only), columns.rows)
    slow |= ~(costs.missing | costs.readable)
    cache_values, cache_codes = columns.distinct(FIELDS["cache_hit"].only)
    served_from_cache = np.array([text(value).lower() == "true" for value in cache_values], bool)[
        cache_codes
    ]
    # LiteLLM writes 0 when it had no price for the model: the product prices it instead.
    unpriced = costs.zero & (input_tokens + output_tokens > 0) & ~served_from_cache
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_tokens=cached_tokens,
        cache_creation_tokens=creation_tokens,
        cost_nanos=np.where(costs.missing | unpriced, canonical.NO_COST, costs.nanos),
        slow=slow,
    )


@dataclass(frozen=True)
class Status:
    """Per row: `STATUS_IS_*` code, the canonical operation and the batch flag."""

    status: np.ndarray
    operation: Texts
    batch_api: np.ndarray
    slow: np.ndarray


def status_of(columns: Columns, facts: Facts) -> Status:
    """Status, operation and batch flag."""
    status_column, status_in_metadata = FIELDS["status"].sources
    status_values, status_codes = columns.distinct(status_column)
    status_of_column = np.array([_status_code(text(value)) for value in status_values])
    # `first_text(status, metadata.status)`; both blank reads as success.
    status_of_metadata = facts.per_row(
        lambda f: _status_code(f.text(status_in_metadata)) if f else STATUS_IS_SUCCESS
    )
    status_of_metadata[status_of_metadata == STATUS_BLANK] = STATUS_IS_SUCCESS
    status = status_of_column[status_codes]
    status = np.where(status == STATUS_BLANK, status_of_metadata, status)
    call_type_values, call_type_codes = columns.distinct(FIELDS["operation"].only)
    operations = [_operation(value) for value in call_type_values]
    batch_by_call_type = np.array([batch for _, batch in operations], bool)[call_type_codes]
    batch_by_metadata = facts.per_row(
        lambda f: -1 if f is None or f.batch_api is None else int(f.batch_api)
    )
    return Status(
        status=status,
        operation=Texts.of([name for name, _ in operations], call_type_codes),
        batch_api=batch_by_call_type | (batch_by_metadata == 1),
        slow=(status == STATUS_UNKNOWN) | (~batch_by_call_type & (batch_by_metadata < 0)),
    )


@dataclass(frozen=True)
class Names:
    """The text columns of the canonical row."""

    model: Texts
    team: Texts
    caller: Texts
    end_user: Texts
    provider: Texts
    pool: Texts
    workload: Texts
    slow: np.ndarray


def names_of(columns: Columns, facts: Facts, tags: Tags) -> Names:
    """Model, team, caller, end user, provider, pool and the workload they resolve to."""
    model = _texts_of("model", columns, facts)
    team = _texts_of("team", columns, facts)
    caller = _texts_of("caller", columns, facts)
    return Names(
        model=model,
        team=team,
        caller=caller,
        end_user=_texts_of("end_user", columns, facts),
        provider=_texts_of("provider", columns, facts),
        pool=_texts_of("pool", columns, facts),
        workload=_workloads(
            facts=facts.facts,
            metadata_codes=facts.codes,
            request_tags=tags.tags,
            tag_codes=tags.codes,
            caller=caller,
            team=team,
            model=model,
        ),
        slow=model.blank(),
    )


def _texts_of(name: str, columns: Columns, facts: Facts) -> Texts:
    """A text field per row: the first of its sources (columns or metadata texts) that is not
    blank, as `litellm_fields.value_of`."""
    found: Texts | None = None
    for source in FIELDS[name].sources:
        is_metadata = fields.is_metadata(source)
        texts = facts.source_texts(source) if is_metadata else columns.texts(source)
        found = texts if found is None else found.or_else(texts)
    assert found is not None
    return found


def canonical_frame(
    *,
    timing: Timing,
    usage: Usage,
    status: Status,
    names: Names,
    lines: np.ndarray,
    keep: np.ndarray | None,
) -> pd.DataFrame:
    """The canonical frame of the rows in `keep` (None: every row)."""

    def rows_kept(values: np.ndarray) -> np.ndarray:
        return values if keep is None else values[keep]

    return canonical.normalize_frame(
        pd.DataFrame(
            {
                canonical.STARTED_AT: _utc(rows_kept(timing.started)),
                canonical.ENDED_AT: _utc(rows_kept(timing.ended)),
                canonical.FIRST_TOKEN_AT: _utc(rows_kept(timing.first_token)),
                canonical.WORKLOAD: names.workload.to_series(keep),
                canonical.TEAM: names.team.to_series(keep),
                canonical.END_USER: names.end_user.to_series(keep),
                canonical.CALLER: names.caller.to_series(keep),
                canonical.PROVIDER: names.provider.to_series(keep),
                canonical.MODEL: names.model.to_series(keep),
                canonical.OPERATION: status.operation.to_series(keep),
                canonical.POOL: names.pool.to_series(keep),
                canonical.STREAMING: rows_kept(timing.streaming),
                canonical.BATCH_API: rows_kept(status.batch_api),
                canonical.IS_ERROR: rows_kept(status.status == STATUS_IS_ERROR),
                canonical.INPUT_TOKENS: rows_kept(usage.input_tokens),
                canonical.OUTPUT_TOKENS: rows_kept(usage.output_tokens),
                canonical.CACHED_INPUT_TOKENS: rows_kept(usage.cached_tokens),
                canonical.CACHE_CREATION_INPUT_TOKENS: rows_kept(usage.cache_creation_tokens),
                canonical.COST_NANOS: rows_kept(usage.cost_nanos),
                canonical.LINE: rows_kept(lines),
            }
        )
    )


def _workloads(
    *,
    facts: list[MetadataFacts | None],
    metadata_codes: np.ndarray,
    request_tags: list[tuple[str, ...] | None],
    tag_codes: np.ndarray,
    caller: Texts,
    team: Texts,
    model: Texts,
) -> Texts:
    """`resolve_workload` per row, run once per distinct input.

    The rule takes the first step that names a workload: the tags, then the metadata, then
    caller / team / model. So it runs once per distinct tag list, once per distinct metadata
    (kept in `MetadataFacts`) and once per distinct (caller, team, model) among the rows the
    first two leave unnamed. Rows whose tags or metadata are unreadable may get any name: the
    row path converts them.
    """
    rows = len(metadata_codes)
    tag_lists: dict[tuple[str, ...], int] = {}
    metadata_tag_list = np.array(
        [tag_lists.setdefault(f.tags if f else (), len(tag_lists)) for f in facts]
    )
    tag_groups, tag_rows = cells.group_rows([tag_codes, metadata_tag_list[metadata_codes]], rows)
    by_tags: list[str | None] = []
    for row in tag_rows:
        row_tags = request_tags[tag_codes[row]]
        if row_tags is None:
            by_tags.append("")  # every row of the group has these unreadable tags
            continue
        # Unreadable metadata counts as adding no tags, like in `metadata_tag_list`.
        row_facts = facts[metadata_codes[row]]
        tags = row_tags + (row_facts.tags if row_facts else ())
        by_tags.append(_workload_named_by(tags=tags))
    by_metadata = [f.workload if f else "" for f in facts]
    named_by_tags = np.array([name is not None for name in by_tags])[tag_groups]
    named_by_metadata = np.array([name is not None for name in by_metadata])[metadata_codes]
    values = [name or "" for name in by_tags + by_metadata]
    codes = np.where(named_by_tags, tag_groups, len(by_tags) + metadata_codes)
    unnamed = np.flatnonzero(~(named_by_tags | named_by_metadata))
    if unnamed.size:
        groups, representatives = cells.group_rows(
            [caller.codes[unnamed], team.codes[unnamed], model.codes[unnamed]], unnamed.size
        )
        codes[unnamed] = len(values) + groups
        for row in unnamed[representatives]:
            values.append(
                resolve_workload(
                    tags=[],
                    metadata={},
                    caller=caller.texts[caller.codes[row]],
                    team=team.texts[team.codes[row]],
                    model=model.texts[model.codes[row]],
                )
            )
    return Texts.of(values, codes)


def _workload_named_by(
    *, tags: Sequence[str] = (), metadata: Mapping[str, object] | None = None
) -> str | None:
    """The workload the tags or the metadata name by themselves; None if the rule goes on.

    The rule is asked with two different fallbacks (model "a" and "b"): one answer for both
    means the tags / metadata named the workload, since the rule stops at the first step
    that names one.
    """
    names = {
        resolve_workload(tags=list(tags), metadata=metadata or {}, caller="", team="", model=model)
        for model in ("a", "b")
    }
    return names.pop() if len(names) == 1 else None


def _status_code(word: str) -> int:
    """How one status text reads: success, error, unknown (rejected) or blank."""
    if not word:
        return STATUS_BLANK
    try:
        is_error = parse_status(word, field=fields.SOURCE_FIELDS.status) == STATUS_ERROR
    except RowRejected:
        return STATUS_UNKNOWN
    return STATUS_IS_ERROR if is_error else STATUS_IS_SUCCESS


def _utc(nanos: np.ndarray) -> pd.DatetimeIndex:
    return pd.DatetimeIndex(nanos.view("datetime64[ns]")).tz_localize("UTC")


def _convert_row_by_row(
    table: pa.Table, rows: np.ndarray, first_line: int
) -> tuple[list[CanonicalRequest], list[RowReject]]:
    """Rows the fast path does not vouch for, rebuilt as csv records and converted by the row
    path's converter, in line order."""
    requests: list[CanonicalRequest] = []
    rejects: list[RowReject] = []
    if not rows.size:
        return requests, rejects
    picked = table.take(pa.array(rows))
    names = picked.column_names
    columns = [picked.column(name).to_pylist() for name in names]
    for position, row in enumerate(rows):
        record = {name: values[position] for name, values in zip(names, columns, strict=True)}
        outcome = row_outcome(fields.request_from_record, record, first_line + int(row))
        if isinstance(outcome, RowReject):
            rejects.append(outcome)
        else:
            requests.append(outcome)
    return requests, rejects
