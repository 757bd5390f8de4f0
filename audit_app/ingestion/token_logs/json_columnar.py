"""Columnar fast path for LiteLLM spend logs exported as JSONL.

Its rules in full: `docs/architecture.md`, section "The LiteLLM JSONL fast path".
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from audit_app.ingestion.reading import RowReject, read_head, row_outcome
from audit_app.ingestion.token_logs import columnar_cells as cells
from audit_app.ingestion.token_logs import json_lines
from audit_app.ingestion.token_logs import litellm_columnar as columnar
from audit_app.ingestion.token_logs import litellm_fields as fields
from audit_app.ingestion.token_logs.base import CanonicalRequest, ParsedChunk, RowOutcome
from audit_app.ingestion.token_logs.coerce import MAX_TOKENS_PER_REQUEST
from audit_app.ingestion.token_logs.fields import Kind
from audit_app.ingestion.token_logs.json_array import ArrayInvalid
from audit_app.ingestion.token_logs.json_lines import BlockRun, LineBlock
from audit_app.ingestion.token_logs.litellm_fields import REQUIRED_COLUMNS, request_from_record
from audit_app.ingestion.token_logs.tabular import jsonl_record, not_an_object

# Fields the canonical frame has no column for are left unread: a record's id may be any
# JSON value without sending its block to the row path.
UNREAD = frozenset({"request_id"})
ARROW_TYPES = {
    Kind.TEXT: pa.string(),
    Kind.TIMESTAMP: pa.string(),
    Kind.COUNT: pa.int64(),
    Kind.DECIMAL: pa.float64(),
    Kind.FLAG: pa.bool_(),
    Kind.TEXTS: pa.list_(pa.string()),
}
# (source, kind) of every source read, in the table's order.
READ = tuple(
    dict.fromkeys(
        (source, field.kind)
        for name, field in fields.FIELDS.items()
        if name not in UNREAD
        for source in field.sources
    )
)
COLUMNS = tuple((source, kind) for source, kind in READ if not fields.is_metadata(source))
TEXT_FIELDS = tuple(source for source, kind in COLUMNS if kind in (Kind.TEXT, Kind.TIMESTAMP))
NUMBER_FIELDS = tuple(source for source, kind in COLUMNS if kind in (Kind.COUNT, Kind.DECIMAL))
(REQUEST_TAGS,) = (source for source, kind in COLUMNS if kind is Kind.TEXTS)
(SPEND,) = fields.FIELDS["cost_usd"].sources
# (path under `metadata`, kind) of the metadata sources read.
METADATA_SOURCES = tuple(
    (fields.metadata_path(source), kind) for source, kind in READ if fields.is_metadata(source)
)


def _struct(sources: tuple[tuple[tuple[str, ...], Kind], ...]) -> pa.StructType:
    """The struct type holding every (path, kind), nested as the paths say."""
    children: dict[str, list[tuple[tuple[str, ...], Kind]]] = {}
    for path, kind in sources:
        children.setdefault(path[0], []).append((path[1:], kind))
    return pa.struct(
        [
            (key, ARROW_TYPES[inner[0][1]] if not inner[0][0] else _struct(tuple(inner)))
            for key, inner in children.items()
        ]
    )


METADATA = _struct(METADATA_SOURCES)
SCHEMA = pa.schema(
    [
        *[(source, ARROW_TYPES[kind]) for source, kind in COLUMNS],
        (fields.METADATA, METADATA),
    ]
)
# Blocks holding these bytes take the row path: an escaped NUL character, which the row path
# refuses in any field a record keeps (an escaped lone surrogate pyarrow refuses by itself).
UNSUPPORTED_BYTES = (b"\\u0000",)
# The metadata values rows are grouped by (all but the token counts, read per row).
GROUPED_METADATA = tuple((path, kind) for path, kind in METADATA_SOURCES if kind is not Kind.COUNT)
CACHED_TOKEN_PATHS = tuple(map(fields.metadata_path, fields.FIELDS["cached_input_tokens"].sources))
CACHE_CREATION_TOKEN_PATHS = tuple(
    map(fields.metadata_path, fields.FIELDS["cache_creation_input_tokens"].sources)
)
WORKLOAD_PATHS = tuple(map(fields.metadata_path, fields.FIELDS["workload"].sources))
# `"spend": 0`, `"spend": -0.0e5`: the JSON spellings of a zero amount.
WRITTEN_ZERO_SPEND = r'"spend"[ \t\r\n]*:[ \t\r\n]*-?0(\.0+)?([eE][+-]?[0-9]+)?[ \t\r\n]*[,}]'
# Tags are compared joined by this character; a tag holding it takes the row path.
TAG_SEPARATOR = "\x1f"


def read_jsonl_columnar(
    stream: BinaryIO,
    *,
    chunk_rows: int,
    block_bytes: int | None = None,
    array_records: bool = False,
) -> Iterator[ParsedChunk]:
    """Parse a LiteLLM JSONL export into chunks of at most `chunk_rows` rows.

    The caller has checked the first record (`litellm.read`); `block_bytes` overrides the size
    of the blocks read at once (tests use small blocks). `array_records`: the lines are the
    records of a JSON array (`json_array`), which the row path reads as one document: a line
    that is not JSON raises `json_array.ArrayInvalid`, and one that is not an object is
    rejected as the row path rejects an array's record.
    """
    outcome_of = array_record_outcome if array_records else line_outcome
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be at least 1, got {chunk_rows}")
    size = block_bytes or json_lines.block_bytes_for(read_head(stream), chunk_rows=chunk_rows)
    converter = _JsonConverter(outcome_of=outcome_of)
    # Parsed blocks are joined until they hold a chunk, or `json_lines.JOINED_BLOCKS` of them:
    # fewer, larger chunks are cheaper for the caller to aggregate.
    pending: list[tuple[LineBlock, pa.Table]] = []

    def convert_pending() -> Iterator[ParsedChunk]:
        if not pending:
            return
        run = BlockRun([block for block, _ in pending])
        table = pa.concat_tables([table for _, table in pending])
        pending.clear()
        for start in range(0, table.num_rows, chunk_rows):
            stop = min(start + chunk_rows, table.num_rows)
            yield converter.convert(table.slice(start, stop - start), block=run, start=start)

    for block, table in json_lines.parsed_blocks(
        stream, schema=SCHEMA, block_bytes=size, refuse=UNSUPPORTED_BYTES
    ):
        if table is None:
            yield from convert_pending()
            yield from _block_by_rows(
                block, chunk_rows=chunk_rows, outcome_of=outcome_of, skip_blank=not array_records
            )
            continue
        pending.append((block, table))
        joined = len(pending) >= json_lines.JOINED_BLOCKS
        if joined or sum(t.num_rows for _, t in pending) >= chunk_rows:
            yield from convert_pending()
    yield from convert_pending()


# ---------------------------------------------------------------------------------------------
# The row path, for a block or a row the columnar path does not vouch for
# ---------------------------------------------------------------------------------------------


def line_outcome(line_text: str, *, line: int) -> RowOutcome:
    """One non-blank line as `read_rows` converts it."""
    record = jsonl_record(line_text, line=line)
    if isinstance(record, RowReject):
        return record
    return row_outcome(request_from_record, record.fields, record.line)


def array_record_outcome(line_text: str, *, line: int) -> RowOutcome:
    """One record of a JSON array (`json_array` lays record N out as line N) as the row path
    converts it (`tabular._iter_json_array_records`); raises `ArrayInvalid` when it is not
    JSON, so the row path's error for the whole document can be given instead."""
    try:
        record = json.loads(line_text, parse_float=Decimal)
    except (ValueError, RecursionError) as error:
        raise ArrayInvalid(f"record {line} is not valid JSON") from error
    if not isinstance(record, dict):
        return not_an_object(record, position=line)
    return row_outcome(request_from_record, record, line)


def _block_by_rows(
    block: LineBlock,
    *,
    chunk_rows: int,
    outcome_of: Callable[..., RowOutcome],
    skip_blank: bool,
) -> Iterator[ParsedChunk]:
    """The block's lines converted one by one by `outcome_of`; blank lines are skipped when
    `skip_blank` (the JSONL row path skips them; an array's blank record is not JSON)."""
    requests: list[CanonicalRequest] = []
    rejects: list[RowReject] = []
    for index in range(block.lines):
        line_text = block.line_text(index)
        if skip_blank and not line_text.strip():
            continue
        outcome = outcome_of(line_text, line=block.first_line + index)
        if isinstance(outcome, RowReject):
            rejects.append(outcome)
        else:
            requests.append(outcome)
        if len(requests) + len(rejects) >= chunk_rows:
            yield ParsedChunk(
                requests=requests,
                rejects=rejects,
                rows_read=len(requests) + len(rejects),
                bytes_read=block.position_after(index + 1),
            )
            requests, rejects = [], []
    if requests or rejects:
        yield ParsedChunk(
            requests=requests,
            rejects=rejects,
            rows_read=len(requests) + len(rejects),
            bytes_read=block.position_after(block.lines),
        )


# ---------------------------------------------------------------------------------------------
# One chunk
# ---------------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class _JsonConverter:
    """Turns parsed JSON blocks into chunks; keeps the metadata decodings between chunks."""

    outcome_of: Callable[..., RowOutcome]
    metadata: columnar.Memo[columnar.MetadataFacts | None] = field(
        default_factory=lambda: columnar.Memo(columnar.decode_metadata)
    )

    def convert(self, table: pa.Table, *, block: BlockRun, start: int) -> ParsedChunk:
        rows = table.num_rows
        columns = columnar.Columns(_as_text_columns(table))
        facts, metadata_counts, metadata_slow = self._facts(_plain(table, fields.METADATA))
        tags, tags_slow = _request_tags(_plain(table, REQUEST_TAGS))
        timing = columnar.timing_of(columns)
        usage = _with_cached_tokens(columnar.usage_of(columns, facts), *metadata_counts)
        spend = _plain(table, SPEND)
        status = columnar.status_of(columns, facts)
        names = columnar.names_of(columns, facts, tags)
        slow = (
            metadata_slow
            | tags_slow
            | _near_cost_tie(spend)
            | _unwritten_zeros(spend, block=block, start=start)
            | facts.unreadable()
            | tags.unreadable()
            | timing.slow
            | usage.slow
            | status.slow
            | names.slow
        )
        keep = None if not slow.any() else np.flatnonzero(~slow)
        first_line = block.first_line + start
        frame = columnar.canonical_frame(
            timing=timing,
            usage=usage,
            status=status,
            names=names,
            lines=np.arange(first_line, first_line + rows, dtype=np.int64),
            keep=keep,
        )
        requests: list[CanonicalRequest] = []
        rejects: list[RowReject] = []
        for row in np.flatnonzero(slow):
            index = start + int(row)
            outcome = self.outcome_of(block.line_text(index), line=block.first_line + index)
            if isinstance(outcome, RowReject):
                rejects.append(outcome)
            else:
                requests.append(outcome)
        return ParsedChunk(
            requests=requests,
            rejects=rejects,
            rows_read=rows,
            bytes_read=block.position_after(start + rows),
            frame=frame,
        )

    def _facts(
        self, metadata: pa.StructArray
    ) -> tuple[columnar.Facts, tuple[pa.Array, pa.Array], np.ndarray]:
        """The decoded metadata per row, its cached-token and cache-creation counts (null:
        none), and the rows whose metadata must take the row path.

        Rows are grouped by the values of the keys the mapping reads, but for the two token
        counts, which differ per request and is read per row (`_with_cached_tokens`); each
        group's keys are written back as a small JSON object and decoded by
        `litellm_columnar`'s decoder, which reads nothing else, so the facts are those of the
        whole object.
        """
        parts = _MetadataParts.of(metadata)
        groups, representatives = cells.group_rows(parts.codes, len(metadata))
        texts = [json.dumps(parts.keys_of(int(row))) for row in representatives]
        counts = (parts.cached_tokens, parts.cache_creation_tokens)
        return columnar.Facts.of(self.metadata(texts), groups), counts, parts.slow


@dataclass(frozen=True)
class _MetadataParts:
    """The metadata values the mapping reads, as columns."""

    grouped: dict[tuple[str, ...], pa.Array]  # `GROUPED_METADATA`'s values, by path
    cached_tokens: pa.Array
    cache_creation_tokens: pa.Array
    codes: list[np.ndarray]
    slow: np.ndarray

    @classmethod
    def of(cls, metadata: pa.StructArray) -> _MetadataParts:
        def part(path: tuple[str, ...]) -> pa.Array:
            return pc.struct_field(metadata, list(path))

        grouped = {path: part(path) for path, _ in GROUPED_METADATA}
        slow = np.zeros(len(metadata), bool)
        codes = []
        for path, kind in GROUPED_METADATA:
            column = grouped[path]
            if kind is Kind.TEXTS:
                column, odd = _joined(column)
                slow |= odd
            codes.append(_codes(column))
        # `{**spend_logs_metadata, **metadata}`: a `workload: null` in the metadata hides the
        # spend-logs one, an absent key does not; pyarrow reads both as null.
        own_workload, spend_logs_workload = (grouped[path] for path in WORKLOAD_PATHS)
        slow |= cells.bools(pc.and_(pc.is_null(own_workload), pc.is_valid(spend_logs_workload)))
        # Slow rows are grouped apart, so none of them decodes a group of rows it may not match.
        codes.append(slow.astype(np.int64))
        return cls(
            grouped=grouped,
            cached_tokens=pc.coalesce(*map(part, CACHED_TOKEN_PATHS)),
            cache_creation_tokens=pc.coalesce(*map(part, CACHE_CREATION_TOKEN_PATHS)),
            codes=codes,
            slow=slow,
        )

    def keys_of(self, row: int) -> dict[str, object]:
        """The values the mapping reads, as row `row`'s metadata has them (nulls left out), but
        for the token counts: the decoded facts count none."""
        keys: dict[str, object] = {}
        for path, column in self.grouped.items():
            level = keys
            for key in path[:-1]:
                level = level.setdefault(key, {})  # type: ignore[assignment]
            level[path[-1]] = column[row].as_py()
        return _without_nulls(keys)


def _without_nulls(mapping: dict[str, object]) -> dict[str, object]:
    kept: dict[str, object] = {}
    for key, value in mapping.items():
        if isinstance(value, dict):
            value = _without_nulls(value)
        if value is not None:
            kept[key] = value
    return kept


def _request_tags(column: pa.Array) -> tuple[columnar.Tags, np.ndarray]:
    joined, slow = _joined(column)
    # Slow rows are grouped apart, so none of them decodes a group of rows it may not match.
    groups, representatives = cells.group_rows([_codes(joined), slow.astype(np.int64)], len(column))
    tags = [tuple(_tag_texts(column[int(row)].as_py())) for row in representatives]
    return columnar.Tags(list(tags), groups), slow


def _tag_texts(values: list[str | None] | None) -> list[str]:
    # `coerce.parse_tags` for a list of texts (the only lists the schema admits).
    return [tag for value in values or () if value is not None and (tag := value.strip())]


def _joined(tags: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Each row's tags as one text (null for no list), and the rows whose tags cannot be told
    apart that way (a null tag, or one holding the separator)."""
    flat = pc.list_flatten(tags)
    odd = pc.or_kleene(pc.is_null(flat), pc.match_substring(flat, TAG_SEPARATOR))
    slow = np.zeros(len(tags), bool)
    odd_rows = np.flatnonzero(cells.bools(odd))
    if odd_rows.size:
        # `list_parent_indices` counts from the unsliced array; the lengths count from here.
        lengths = pc.fill_null(pc.list_value_length(tags), 0).to_numpy(zero_copy_only=False)
        parents = np.repeat(np.arange(len(tags)), lengths)
        slow[parents[odd_rows]] = True
    return pc.binary_join(tags, TAG_SEPARATOR), slow


def _codes(column: pa.Array) -> np.ndarray:
    """Per row, a number that is equal for equal values (nulls equal to each other)."""
    encoded = pc.dictionary_encode(column, null_encoding="encode")
    codes: np.ndarray = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return codes


def _plain(table: pa.Table, name: str) -> pa.Array:
    column = table.column(name)
    return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)


def _as_text_columns(table: pa.Table) -> pa.Table:
    """The columns `litellm_columnar` reads, as a parsed CSV block has them: text, "" for
    missing. Whole numbers are written in digits and `spend` in the shortest text that reads
    back as the same float."""
    columns = {name: pc.fill_null(_plain(table, name), "") for name in TEXT_FIELDS}
    for name in NUMBER_FIELDS:
        columns[name] = pc.fill_null(pc.cast(_plain(table, name), pa.string()), "")
    return pa.table(columns)


def _near_cost_tie(spend: pa.Array) -> np.ndarray:
    """Rows whose cost in nanos is near a rounding tie (`columnar_cells.near_tie`): the row
    path does those."""
    usd = pc.fill_null(spend, 0.0).to_numpy(zero_copy_only=False)
    with np.errstate(invalid="ignore", over="ignore"):
        return cells.near_tie(usd * cells.NANOS_PER_USD)


def starts_with_whole_record(stream: BinaryIO) -> bool:
    """True when the file's first line is a JSON object holding every required field, so the
    row path would accept the file's shape and number its lines from 1 as the blocks do.
    Anything else (a byte order mark, a blank or malformed first line, a missing field) is
    left to the row path, which says what is wrong. Leaves the stream at its start."""
    stream.seek(0)
    first = stream.readline()
    stream.seek(0)
    if not first.startswith(b"{"):
        return False
    try:
        record = json.loads(first, parse_float=Decimal)
    except (ValueError, RecursionError):
        return False
    return isinstance(record, dict) and all(name in record for name in REQUIRED_COLUMNS)


def _with_cached_tokens(
    usage: columnar.Usage, cached_tokens: pa.Array, cache_creation_tokens: pa.Array
) -> columnar.Usage:
    """`usage` (computed with 0 cached and 0 cache-creation tokens) with each row's own
    counts, as `build_request` checks them: none is 0, and a count that is not a plausible
    token count, or cached plus cache-creation above the input tokens, takes the row path."""
    cached = pc.fill_null(cached_tokens, 0).to_numpy(zero_copy_only=False)
    creation = pc.fill_null(cache_creation_tokens, 0).to_numpy(zero_copy_only=False)
    readable = (cached >= 0) & (cached <= MAX_TOKENS_PER_REQUEST)
    readable &= (creation >= 0) & (creation <= MAX_TOKENS_PER_REQUEST)
    return replace(
        usage,
        cached_tokens=cached,
        cache_creation_tokens=creation,
        slow=usage.slow | ~readable | (cached + creation > usage.input_tokens),
    )


def _unwritten_zeros(spend: pa.Array, *, block: BlockRun, start: int) -> np.ndarray:
    """Rows whose `spend` reads as 0.0 but may not be written as a zero: a float turns
    `1e-400` into 0.0 where `Decimal` keeps a tiny amount, which changes whether the row is
    unpriced. A row passes when its line has one `"spend"` key, written as a zero."""
    zero = cells.bools(pc.equal(spend, 0.0))
    rows = np.flatnonzero(zero)
    if not rows.size:
        return zero
    lines = block.line_texts(rows + start)
    # RE2 counts a literal faster than `count_substring`; both count occurrences that do not
    # overlap.
    written = pc.and_(
        pc.equal(pc.count_substring_regex(lines, '"spend"'), 1),
        pc.match_substring_regex(lines, WRITTEN_ZERO_SPEND),
    )
    zero[rows] = ~cells.bools(written)
    return zero
