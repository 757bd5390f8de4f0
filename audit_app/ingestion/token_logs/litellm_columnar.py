"""Columnar fast path for LiteLLM spend logs exported as CSV.

`litellm.read` sends CSV files here; `litellm.read_rows` is the row-by-row reader this module
must equal. For the same file both give the same canonical rows, the same rejects (line, field,
value, reason) and the same totals; this one is many times faster because every field is
coerced for a whole block of rows at once:

- The file is read in blocks of whole lines and each block is parsed by `pyarrow.csv` with every
  column the mapping reads as text, exactly the strings the csv module would hand the row path.
- Values that repeat (metadata JSON, request tags, keys, models, teams, statuses) are decoded
  once per distinct value with the row path's own functions, and the workload rule runs once
  per distinct combination of its inputs.
- A row the vectorised checks can vouch for goes into `ParsedChunk.frame`. Any other row (one
  that will be rejected, or a value in a spelling the vectorised checks do not cover, such as
  epoch timestamps or `UTC` suffixes) is rebuilt as the csv module would give it and converted
  by the row path's converter, so it lands in `requests` or `rejects` with the row path's
  wording.

Line numbers: the fast path needs every physical line to hold exactly one record, so record
k of the data sits on line k + 2. Before a block is used, its bytes are checked for what would
break that or make the csv module read the bytes differently: a quoted value spanning lines
(the parsed rows would not match the line count), an empty line (the row path skips it), a
carriage return that does not end a line, a NUL byte, invalid UTF-8, a line longer than the
csv module's field limit, a malformed row (wrong field count, unterminated quote). Any of
these raises `ColumnarUnsupported` before the block's rows are yielded; every chunk yielded
before it is exact. `litellm.read` catches it and carries on with the row path after the last
line already yielded, so callers of `litellm.read` never see it.
"""

from __future__ import annotations

import contextvars
import csv
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from typing import BinaryIO, Generic, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from audit_app.ingestion.identity import resolve_workload
from audit_app.ingestion.reading import (
    CSV_FIELD_SIZE_LIMIT,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ImportFileError,
    RowReject,
    RowRejected,
    in_backticks,
    iter_text_lines,
    missing_message,
    read_head,
    row_outcome,
    text,
)
from audit_app.ingestion.token_logs import frame as canonical
from audit_app.ingestion.token_logs import litellm_rows
from audit_app.ingestion.token_logs.base import (
    MAX_COST_PER_REQUEST,
    MAX_TOKENS_PER_REQUEST,
    STATUS_ERROR,
    CanonicalRequest,
    ParsedChunk,
    first_text,
    parse_json_object,
    parse_status,
    parse_tags,
    parse_token_count,
)

# The columns `litellm_rows.request_from_record` reads; nothing else is converted.
MAPPED_COLUMNS = (
    "request_id",
    "call_type",
    "api_key",
    "spend",
    "prompt_tokens",
    "completion_tokens",
    "startTime",
    "endTime",
    "completionStartTime",
    "model",
    "model_group",
    "custom_llm_provider",
    "user",
    "metadata",
    "cache_hit",
    "request_tags",
    "team_id",
    "end_user",
    "status",
)
MIN_BLOCK_BYTES = 1 << 20
MAX_BLOCK_BYTES = 64 << 20
# Distinct metadata / tag values remembered across chunks; past this the memo starts afresh.
MAX_MEMO_ENTRIES = 100_000

# Spellings `base.is_missing` treats as missing that the vectorised checks recognise exactly;
# other spellings (" NULL ", "nUlL") take the row path, which gives the same answer.
MISSING_SPELLINGS = pa.array(["", "null", "NULL", "Null", "none", "None", "NONE"], pa.string())
# ISO 8601 forms that `base.parse_timestamp` and pandas read alike, limited to years pandas
# holds in nanoseconds. Used only when pyarrow's own cast refuses a column.
ISO_TIMESTAMP_PATTERN = (
    r"^(19|2[01])\d\d-\d\d-\d\d[T ]([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,9})?)?"
    r"(Z|[+-]([01]\d|2[0-3])(:?[0-5]\d)?)?$"
)
DECIMAL_PATTERN = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
ZERO_PATTERN = r"^[+-]?(0+\.?0*|\.0+)([eE][+-]?[0-9]+)?$"
MAX_TOKEN_DIGITS = len(str(MAX_TOKENS_PER_REQUEST))
# Costs at or above this many nanos take the row path (float64 has no fraction left there).
MAX_FAST_COST_NANOS = 2.0**50
NANOS_PER_USD = 1e9
NAT = np.iinfo(np.int64).min
LF = 0x0A
CR = 0x0D
NUL = 0x00
UTF8_BOM = b"\xef\xbb\xbf"
# How a status text reads (see `_status_code`).
STATUS_IS_SUCCESS = 0
STATUS_IS_ERROR = 1
STATUS_UNKNOWN = -1
STATUS_BLANK = 2

T = TypeVar("T")


class ColumnarUnsupported(Exception):
    """The file has a shape the fast path cannot number lines in; read it with the row path.

    Raised before any row of the offending block is yielded; the chunks yielded before it are
    exact. `litellm.read` handles it by continuing with `litellm.read_rows` semantics after the
    last line already yielded.
    """


# ---------------------------------------------------------------------------------------------
# Reading blocks of whole lines
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Header:
    names: list[str]
    end: int  # byte position just after the header line


@dataclass(frozen=True, kw_only=True)
class _Block:
    """A run of whole lines of the file, parsed."""

    offset: int  # file position of the block's first byte
    size: int
    line_ends: np.ndarray  # position of every `\n`, relative to `offset`
    table: pa.Table

    def position_after(self, rows: int) -> int:
        """The file position just after the block's first `rows` lines."""
        if rows <= len(self.line_ends):
            return self.offset + int(self.line_ends[rows - 1]) + 1
        return self.offset + self.size


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
    header = _read_header(stream)
    size = block_bytes or _block_bytes(read_head(stream), chunk_rows=chunk_rows)
    converter = _converter()
    first_line = 2
    for block in _parsed_blocks(stream, header=header, block_bytes=size):
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


def _read_header(stream: BinaryIO) -> _Header:
    """The header's column names, read with the csv module exactly as the row path reads it."""
    reader = csv.reader(iter_text_lines(stream))
    try:
        row = next(reader, None)
    except csv.Error as error:
        raise ColumnarUnsupported(f"line 1: {error}") from error
    if row is None or not row or (len(row) == 1 and not row[0].strip()):
        raise ColumnarUnsupported("the file does not start with its header line")
    if reader.line_num != 1:
        raise ColumnarUnsupported("the header spans more than one line")
    names = [name.strip() for name in row]
    missing = [name for name in litellm_rows.REQUIRED_COLUMNS if name not in names]
    if missing:
        raise ImportFileError(missing_message("line 1", noun="column", names=in_backticks(missing)))
    if len(set(names)) != len(names):
        raise ColumnarUnsupported("the header repeats a column name")
    return _Header(names=names, end=stream.tell())


def _block_bytes(head: bytes, *, chunk_rows: int) -> int:
    """A block of about `chunk_rows` rows, judged from the average line in the head."""
    line_bytes = len(head) / max(head.count(b"\n"), 1)
    # A little under, so a block rarely leaves a sliver of a chunk behind.
    return int(min(max(0.9 * line_bytes * chunk_rows, MIN_BLOCK_BYTES), MAX_BLOCK_BYTES))


def _parsed_blocks(stream: BinaryIO, *, header: _Header, block_bytes: int) -> Iterator[_Block]:
    """The file after the header as parsed blocks, each checked line by line.

    pyarrow and numpy release the GIL, so the next block is read, checked and parsed in a
    background thread while the caller converts the current one. An error preparing a block
    surfaces only when the caller asks for that block.
    """
    options = _CsvOptions(header.names)
    runs = _iter_line_runs(stream, start=header.end, block_bytes=block_bytes)

    def prepare_next() -> _Block | None:
        run = next(runs, None)
        if run is None:
            return None
        data, size, offset = run
        line_ends = _check_lines(data, size)
        table = options.parse(data, size)
        lines = len(line_ends) + (data[size - 1] != LF)
        if table.num_rows != lines:
            raise ColumnarUnsupported(
                f"{table.num_rows} records on {lines} lines from byte {offset} "
                "(a quoted value spans lines)"
            )
        return _Block(offset=offset, size=size, line_ends=line_ends, table=table)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="litellm-csv") as pool:
        upcoming = pool.submit(prepare_next)
        while (block := upcoming.result()) is not None:
            upcoming = pool.submit(prepare_next)
            yield block


def _iter_line_runs(
    stream: BinaryIO, *, start: int, block_bytes: int
) -> Iterator[tuple[bytes, int, int]]:
    """(data, size, offset) triples: data[:size] is a run of whole lines at file position
    offset, and the runs cover the stream from `start`.

    The bytes after the last line end are read again with the next run rather than copied.
    A line longer than a block makes the read grow until the line ends; only the file's last
    line may lack a newline.
    """
    offset = start
    read_bytes = block_bytes
    while True:
        stream.seek(offset)
        data = stream.read(read_bytes)
        if not data:
            return
        size = data.rfind(b"\n") + 1
        if size == 0:
            if stream.read(1):
                read_bytes *= 2
                continue
            size = len(data)
        yield data, size, offset
        offset += size
        read_bytes = block_bytes


def _check_lines(data: bytes, size: int) -> np.ndarray:
    """Positions of every `\n` in data[:size]; raises `ColumnarUnsupported` for bytes that
    the csv module would read differently from pyarrow or that would shift line numbers."""
    raw = np.frombuffer(data, np.uint8, count=size)
    controls = np.flatnonzero(raw <= CR)
    kinds = raw[controls]
    if (kinds == NUL).any():
        raise ColumnarUnsupported("a NUL byte")
    line_ends: np.ndarray = controls[kinds == LF]
    returns = controls[kinds == CR]
    if returns.size and (returns[-1] + 1 >= size or (raw[returns + 1] != LF).any()):
        raise ColumnarUnsupported("a carriage return that does not end a line")
    line_starts = np.concatenate(([0], line_ends[:-1] + 1))
    line_lengths = line_ends - line_starts
    if (line_lengths == 0).any() or ((line_lengths == 1) & (raw[line_starts] == CR)).any():
        raise ColumnarUnsupported("an empty line")
    last_line = size - (int(line_ends[-1]) + 1 if line_ends.size else 0)
    if max(last_line, int(line_lengths.max(initial=0))) > CSV_FIELD_SIZE_LIMIT:
        # The row path's csv module refuses a cell that long; it reports it.
        raise ColumnarUnsupported("a line longer than the csv module's field limit")
    if data.startswith(UTF8_BOM):
        # pyarrow drops a BOM at the start of its input; the csv module keeps it as text.
        raise ColumnarUnsupported("a byte order mark inside the file")
    if not data.isascii():
        whole = pa.py_buffer(np.array([0, size], np.int64))
        run = pa.Array.from_buffers(pa.large_binary(), 1, [None, whole, pa.py_buffer(data)])
        try:
            run.cast(pa.large_string())
        except pa.ArrowInvalid as error:
            raise ColumnarUnsupported("invalid UTF-8") from error
    return line_ends


class _CsvOptions:
    """pyarrow options that read the mapped columns as the exact strings of the file."""

    def __init__(self, names: list[str]) -> None:
        included = [name for name in MAPPED_COLUMNS if name in names]
        self.names = names
        self.parse_options = pa_csv.ParseOptions(newlines_in_values=False, ignore_empty_lines=False)
        self.convert_options = pa_csv.ConvertOptions(
            column_types={name: pa.string() for name in included},
            include_columns=included,
            strings_can_be_null=False,
            # `_check_lines` has validated the whole run, excluded columns included.
            check_utf8=False,
        )

    def parse(self, data: bytes, size: int) -> pa.Table:
        read_options = pa_csv.ReadOptions(
            column_names=self.names,
            use_threads=True,
            # A few pieces per block so both cores parse.
            block_size=max(MIN_BLOCK_BYTES, size // 4),
        )
        try:
            return pa_csv.read_csv(
                pa.BufferReader(pa.py_buffer(data).slice(0, size)),
                read_options=read_options,
                parse_options=self.parse_options,
                convert_options=self.convert_options,
            )
        except pa.ArrowInvalid as error:
            raise ColumnarUnsupported(f"a malformed row ({error})") from error


# ---------------------------------------------------------------------------------------------
# Decoding repeated values once
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _MetadataFacts:
    """What one distinct `metadata` text contributes to a row, decoded as the row path does."""

    tags: tuple[str, ...]
    alias: str
    team_alias: str
    pool: str
    status: str
    cached_tokens: int | None  # None: the row path rejects the cached-token count
    batch_api: bool | None  # None: `metadata.batch_api` is unreadable
    workload: str | None  # what the metadata names as workload by itself (see `_workloads`)


# Metadata made only of these keys, with plain values, is decoded by `_plain_metadata_facts`.
_PLAIN_METADATA_KEYS = frozenset(
    {"user_api_key_alias", "user_api_key_team_alias", "usage_object", "pool", "status"}
)
_TEXT_METADATA_KEYS = ("user_api_key_alias", "user_api_key_team_alias", "pool", "status")


def _plain_metadata_facts(raw: str) -> _MetadataFacts | None:
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
    for key in _TEXT_METADATA_KEYS:
        value = metadata.get(key)
        if value is not None and type(value) is not str:
            return None
    cached = 0
    usage = metadata.get("usage_object")
    if usage is not None:
        if type(usage) is not dict:
            return None
        details = usage.get("prompt_tokens_details")
        value = None
        if details is not None:
            if type(details) is not dict:
                return None
            value = details.get("cached_tokens")
        if value is None:
            value = usage.get("cache_read_input_tokens")
        if value is not None:
            if type(value) is not int or not 0 <= value <= MAX_TOKENS_PER_REQUEST:
                return None
            cached = value
    return _MetadataFacts(
        tags=(),
        alias=text(metadata.get("user_api_key_alias")),
        team_alias=text(metadata.get("user_api_key_team_alias")),
        pool=text(metadata.get("pool")),
        status=text(metadata.get("status")),
        cached_tokens=cached,
        batch_api=False,
        workload=None,
    )


def _metadata_facts(raw: str) -> _MetadataFacts | None:
    """None when the row path rejects every row carrying this metadata."""
    return _plain_metadata_facts(raw) or _metadata_facts_full(raw)


def _metadata_facts_full(raw: str) -> _MetadataFacts | None:
    """None when the row path rejects every row carrying this metadata."""
    try:
        metadata = parse_json_object(raw, field="metadata")
        spend_logs_metadata = parse_json_object(
            litellm_rows.nested(metadata, "spend_logs_metadata"),
            field="metadata.spend_logs_metadata",
        )
        tags = parse_tags(metadata.get("tags"), field="metadata.tags")
    except RowRejected:
        return None
    try:
        cached = parse_token_count(
            litellm_rows.cached_tokens(metadata),
            field=litellm_rows.SOURCE_FIELDS.cached_input_tokens,
        )
        cached_tokens: int | None = 0 if cached is None else cached
    except RowRejected:
        cached_tokens = None
    try:
        batch_api: bool | None = litellm_rows.is_batch("", metadata)
    except RowRejected:
        batch_api = None
    # The row's own metadata wins over the per-request key/values the caller passed in.
    identity = {**spend_logs_metadata, **metadata}
    return _MetadataFacts(
        tags=tuple(tags),
        alias=text(metadata.get("user_api_key_alias")),
        team_alias=text(metadata.get("user_api_key_team_alias")),
        pool=first_text(metadata.get("pool"), spend_logs_metadata.get("pool")),
        status=text(metadata.get("status")),
        cached_tokens=cached_tokens,
        batch_api=batch_api,
        workload=_workload_named_by(metadata=identity),
    )


def _request_tags(raw: str) -> tuple[str, ...] | None:
    try:
        return tuple(parse_tags(raw, field="request_tags"))
    except RowRejected:
        return None


def _operation(raw: str) -> tuple[str, bool]:
    """(canonical operation, call type names a batch call) for one `call_type` text."""
    call_type = text(raw)
    operation = litellm_rows.OPERATION_BY_CALL_TYPE.get(call_type.lower(), call_type)
    return text(operation).lower(), "batch" in call_type.lower()


class _Memo(Generic[T]):
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
class _Texts:
    """A text column as its distinct values and, per row, the index of the row's value."""

    texts: list[str]
    codes: np.ndarray

    @classmethod
    def of(cls, values: list[str], codes: np.ndarray) -> _Texts:
        """From values that may repeat: equal texts get one code, so codes compare like texts."""
        distinct: dict[str, int] = {}
        renumber = np.array([distinct.setdefault(value, len(distinct)) for value in values])
        return cls(list(distinct), renumber[codes] if len(values) > 1 else codes)

    def blank(self) -> np.ndarray:
        blank: np.ndarray = np.array([value == "" for value in self.texts], bool)[self.codes]
        return blank

    def or_else(self, other: _Texts) -> _Texts:
        """Per row, this value unless it is blank, else `other`'s (as `first_text`)."""
        blank = np.array([value == "" for value in self.texts], bool)
        codes = np.where(blank[self.codes], other.codes + len(self.texts), self.codes)
        return _Texts.of(self.texts + other.texts, codes)

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
# Vectorised scalar coercions (each returns the rows it vouches for; the rest go the row path)
# ---------------------------------------------------------------------------------------------


def _string_parts(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(start offsets, lengths) of each string of a non-chunked string array."""
    offsets = np.frombuffer(column.buffers()[1], np.int32)[
        column.offset : column.offset + len(column) + 1
    ]
    return offsets[:-1], np.diff(offsets)


def _null_where(mask: np.ndarray, column: pa.Array) -> pa.Array:
    if not mask.any():
        return column
    return pc.if_else(pa.array(mask), pa.scalar(None, pa.string()), column)


def _missing(column: pa.Array, lengths: np.ndarray) -> np.ndarray:
    missing: np.ndarray = lengths == 0
    if ((lengths == 4) & ~missing).any():
        missing |= pc.is_in(column, value_set=MISSING_SPELLINGS).to_numpy(zero_copy_only=False)
    return missing


EARLIEST_NS = int(EARLIEST_TIMESTAMP.timestamp()) * 1_000_000_000
LATEST_NS = int(LATEST_TIMESTAMP.timestamp()) * 1_000_000_000
_ZONED = re.compile(r"(Z|[+-]\d{2}:?\d{2})$", re.IGNORECASE)


def _timestamps(column: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(UTC nanoseconds cut to microseconds, parsed, missing) per row, as `parse_timestamp`.

    pyarrow's cast reads every ISO form the row path reads except that it also takes a date
    alone or with an hour alone; requiring `:` at position 13 (`YYYY-MM-DD hh:`) rules those
    out. A column the cast refuses as a whole (a mix of zoned and naive values, a bad value)
    is read value by value: the anchored pattern, then pandas.
    """
    starts, lengths = _string_parts(column)
    missing = _missing(column, lengths)
    present = ~missing
    values = _null_where(missing, column)
    nanos = None
    # A failed cast costs ~30x a good one, so try first the type the first value calls for.
    targets = [pa.timestamp("ns"), pa.timestamp("ns", tz="UTC")]
    first = pc.drop_null(values)
    if len(first) and _ZONED.search(first[0].as_py()):
        targets.reverse()
    for target in targets:
        try:
            cast = pc.cast(values, target)
        except pa.ArrowInvalid:
            continue
        nanos = pc.fill_null(cast.cast(pa.int64()), 0).to_numpy()
        parsed = present & _colon_at_13(column, starts, lengths)
        break
    if nanos is None:
        nanos, parsed = _timestamps_one_by_one(column, present)
    # Outside the row path's years the row path rejects the row; send it there.
    parsed &= (nanos >= EARLIEST_NS) & (nanos < LATEST_NS)
    # The row path cuts fractions to microseconds; floor division does that for any sign.
    return nanos // 1000 * 1000, parsed, missing


def _colon_at_13(column: pa.Array, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    data = column.buffers()[2]
    raw = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    if not raw.size:
        return np.zeros(len(column), bool)
    long_enough = lengths > 13
    positions = np.where(long_enough, starts + 13, 0)
    colons: np.ndarray = long_enough & (raw[positions] == ord(":"))
    return colons


def _timestamps_one_by_one(column: pa.Array, present: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    candidates = present & pc.match_substring_regex(column, ISO_TIMESTAMP_PATTERN).to_numpy(
        zero_copy_only=False
    )
    nanos = np.zeros(len(column), np.int64)
    rows = np.flatnonzero(candidates)
    if rows.size:
        texts = column.take(pa.array(rows)).to_pylist()
        moments = pd.DatetimeIndex(
            pd.to_datetime(
                pd.Series(texts, dtype=object), format="ISO8601", utc=True, errors="coerce"
            )
        ).as_unit("ns")
        valid = ~np.asarray(moments.isna())
        nanos[rows[valid]] = moments.asi8[valid]
        candidates[rows[~valid]] = False
    return nanos, candidates


def _token_counts(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(count, readable) per row: plain digits within the per-request limit.

    Anything else, empty included, takes the row path (which, for instance, reads an empty
    count as 0 on an error row and rejects it elsewhere).
    """
    _, lengths = _string_parts(column)
    readable = (lengths <= MAX_TOKEN_DIGITS) & pc.ascii_is_decimal(column).to_numpy(
        zero_copy_only=False
    )
    values = column if readable.all() else pc.if_else(pa.array(readable), column, "0")
    counts = pc.cast(values, pa.int64()).to_numpy()
    return counts, readable & (counts <= MAX_TOKENS_PER_REQUEST)


@dataclass(frozen=True, kw_only=True)
class _Costs:
    nanos: np.ndarray
    zero: np.ndarray
    missing: np.ndarray
    readable: np.ndarray


def _costs(column: pa.Array | None, rows: int) -> _Costs:
    """`spend` as the row path's `cost_to_nanos(parse_cost(...))`, per row.

    float64 carries the value; the nearest integer of value * 1e9 equals Decimal's
    half-even rounding except within float error of a tie, and those rows (and zeros written
    with a non-zero digit that underflowed) are computed with Decimal.
    """
    if column is None:
        nothing = np.zeros(rows, bool)
        return _Costs(
            nanos=np.zeros(rows, np.int64), zero=nothing, missing=~nothing, readable=~nothing
        )
    _, lengths = _string_parts(column)
    missing = _missing(column, lengths)
    values = _null_where(missing, column)
    try:
        amounts = pc.cast(values, pa.float64())
        numeric = ~missing
    except pa.ArrowInvalid:
        numeric = ~missing & pc.match_substring_regex(column, DECIMAL_PATTERN).to_numpy(
            zero_copy_only=False
        )
        amounts = pc.cast(_null_where(~numeric, column), pa.float64())
    usd = pc.fill_null(amounts, 0.0).to_numpy()
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = usd * NANOS_PER_USD
        readable = (
            numeric
            & np.isfinite(scaled)
            & (usd >= 0)
            & (scaled < MAX_FAST_COST_NANOS)
            # Above the limit the row path rejects the row; send it there.
            & (usd <= float(MAX_COST_PER_REQUEST))
        )
        nanos = np.rint(np.where(readable, scaled, 0.0))
        distance_to_tie = np.abs(scaled - np.floor(scaled) - 0.5)
        exact = readable & (distance_to_tie <= np.abs(scaled) * 1e-14 + 1e-9)
    zero = readable & (usd == 0)
    if zero.any():
        written_zero = pc.match_substring_regex(column, ZERO_PATTERN).to_numpy(zero_copy_only=False)
        exact |= zero & ~written_zero
    nanos = nanos.astype(np.int64)
    for row in np.flatnonzero(exact):
        amount = Decimal(column[int(row)].as_py())
        nanos[row] = canonical.cost_to_nanos(amount)
        zero[row] = amount == 0
        # A negative amount can underflow to -0.0, which passed the sign check above.
        readable[row] = amount >= 0
    return _Costs(nanos=nanos, zero=zero, missing=missing, readable=readable)


def _plain(column: pa.ChunkedArray | None, rows: int) -> pa.Array | None:
    if column is None:
        return None
    return column.combine_chunks() if rows else pa.array([], pa.string())


def _group(codes: Sequence[np.ndarray], rows: int) -> tuple[np.ndarray, np.ndarray]:
    """A group number per row for each distinct combination of codes, and one row per group."""
    key = np.zeros(rows, np.int64)
    span = 1
    for column in codes:
        size = int(column.max()) + 1 if rows else 1
        if span * size >= 2**62:
            key, distinct = pd.factorize(key)
            span = len(distinct)
        key = key * size + column
        span *= size
    group, distinct = pd.factorize(key)
    representative = np.empty(len(distinct), np.intp)
    representative[group] = np.arange(rows)
    return group, representative


# ---------------------------------------------------------------------------------------------
# One chunk
# ---------------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class _ChunkConverter:
    """Turns parsed blocks into chunks; holds what is worth remembering between chunks."""

    metadata: _Memo[_MetadataFacts | None] = field(default_factory=lambda: _Memo(_metadata_facts))
    request_tags: _Memo[tuple[str, ...] | None] = field(
        default_factory=lambda: _Memo(_request_tags)
    )

    def convert(self, table: pa.Table, *, first_line: int, bytes_read: int) -> ParsedChunk:
        columns = _Columns(table)
        metadata_values, metadata_codes = columns.distinct("metadata")
        facts = _Facts(self.metadata(metadata_values), metadata_codes)
        tag_values, tag_codes = columns.distinct("request_tags")
        tags = _Tags(self.request_tags(tag_values), tag_codes)
        timing = _timing(columns)
        usage = _usage(columns, facts)
        status = _status(columns, facts)
        names = _names(columns, facts, tags)
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
        frame = _canonical_frame(
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
class _Columns:
    """A parsed block's columns; an absent column reads as empty cells, as in the row path."""

    table: pa.Table

    @property
    def rows(self) -> int:
        rows: int = self.table.num_rows
        return rows

    def column(self, name: str) -> pa.ChunkedArray | None:
        return self.table.column(name) if name in self.table.column_names else None

    def plain(self, name: str) -> pa.Array | None:
        return _plain(self.column(name), self.rows)

    def distinct(self, name: str) -> tuple[list[str], np.ndarray]:
        return _distinct(self.column(name), self.rows)

    def texts(self, name: str) -> _Texts:
        values, codes = self.distinct(name)
        return _Texts.of([text(value) for value in values], codes)


@dataclass(frozen=True)
class _Facts:
    """The decoded `metadata` per distinct value (None: unreadable) and, per row, its index."""

    facts: list[_MetadataFacts | None]
    codes: np.ndarray

    def unreadable(self) -> np.ndarray:
        unreadable: np.ndarray = ~np.array([f is not None for f in self.facts], bool)[self.codes]
        return unreadable

    def texts(self, pick: Callable[[_MetadataFacts], str]) -> _Texts:
        return _Texts.of([pick(f) if f else "" for f in self.facts], self.codes)

    def per_row(self, pick: Callable[[_MetadataFacts | None], int]) -> np.ndarray:
        per_row: np.ndarray = np.array([pick(f) for f in self.facts], np.int64)[self.codes]
        return per_row


@dataclass(frozen=True)
class _Tags:
    """The decoded `request_tags` per distinct value (None: unreadable) and, per row, its index."""

    tags: list[tuple[str, ...] | None]
    codes: np.ndarray

    def unreadable(self) -> np.ndarray:
        unreadable: np.ndarray = ~np.array([t is not None for t in self.tags], bool)[self.codes]
        return unreadable


@dataclass(frozen=True)
class _Timing:
    """Start, end and first-token instants (nanoseconds) and the streaming flag per row."""

    started: np.ndarray
    ended: np.ndarray
    first_token: np.ndarray
    streaming: np.ndarray
    slow: np.ndarray


def _timing(columns: _Columns) -> _Timing:
    """Timestamps, and the streaming / first-token rule."""
    rows = columns.rows
    started, started_ok, _ = _timestamps(columns.plain("startTime"))
    ended, ended_ok, _ = _timestamps(columns.plain("endTime"))
    completion_column = columns.plain("completionStartTime")
    if completion_column is None:
        completion = np.zeros(rows, np.int64)
        completion_ok = np.zeros(rows, bool)
        completion_missing = np.ones(rows, bool)
    else:
        completion, completion_ok, completion_missing = _timestamps(completion_column)
    placeholder = completion_ok & (completion == ended)
    measured = completion_ok & (started <= completion) & (completion < ended)
    slow = ~started_ok | ~ended_ok | (ended < started)
    slow |= ~(completion_missing | placeholder | measured)
    return _Timing(
        started=started,
        ended=ended,
        first_token=np.where(measured, completion, NAT),
        streaming=np.where(completion_missing, -1, measured).astype(np.int8),
        slow=slow,
    )


@dataclass(frozen=True)
class _Usage:
    """Token counts and the cost per row (`canonical.NO_COST` where the product prices it)."""

    input_tokens: np.ndarray
    output_tokens: np.ndarray
    cached_tokens: np.ndarray
    cost_nanos: np.ndarray
    slow: np.ndarray


def _usage(columns: _Columns, facts: _Facts) -> _Usage:
    """Token counts and cost."""
    input_tokens, input_ok = _token_counts(columns.plain("prompt_tokens"))
    output_tokens, output_ok = _token_counts(columns.plain("completion_tokens"))
    slow = ~input_ok | ~output_ok
    cached_by_metadata = facts.per_row(
        lambda f: -1 if f is None or f.cached_tokens is None else f.cached_tokens
    )
    cached_tokens = np.maximum(cached_by_metadata, 0)
    slow |= (cached_by_metadata < 0) | (cached_tokens > input_tokens)
    costs = _costs(columns.plain("spend"), columns.rows)
    slow |= ~(costs.missing | costs.readable)
    cache_values, cache_codes = columns.distinct("cache_hit")
    served_from_cache = np.array([text(value).lower() == "true" for value in cache_values], bool)[
        cache_codes
    ]
    # LiteLLM writes 0 when it had no price for the model: the product prices it instead.
    unpriced = costs.zero & (input_tokens + output_tokens > 0) & ~served_from_cache
    return _Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_tokens=cached_tokens,
        cost_nanos=np.where(costs.missing | unpriced, canonical.NO_COST, costs.nanos),
        slow=slow,
    )


@dataclass(frozen=True)
class _Status:
    """Per row: `STATUS_IS_*` code, the canonical operation and the batch flag."""

    status: np.ndarray
    operation: _Texts
    batch_api: np.ndarray
    slow: np.ndarray


def _status(columns: _Columns, facts: _Facts) -> _Status:
    """Status, operation and batch flag."""
    status_values, status_codes = columns.distinct("status")
    status_of_column = np.array([_status_code(text(value)) for value in status_values])
    # `first_text(status, metadata.status)`; both blank reads as success.
    status_of_metadata = facts.per_row(lambda f: _status_code(f.status) if f else STATUS_IS_SUCCESS)
    status_of_metadata[status_of_metadata == STATUS_BLANK] = STATUS_IS_SUCCESS
    status = status_of_column[status_codes]
    status = np.where(status == STATUS_BLANK, status_of_metadata, status)
    call_type_values, call_type_codes = columns.distinct("call_type")
    operations = [_operation(value) for value in call_type_values]
    batch_by_call_type = np.array([batch for _, batch in operations], bool)[call_type_codes]
    batch_by_metadata = facts.per_row(
        lambda f: -1 if f is None or f.batch_api is None else int(f.batch_api)
    )
    return _Status(
        status=status,
        operation=_Texts.of([name for name, _ in operations], call_type_codes),
        batch_api=batch_by_call_type | (batch_by_metadata == 1),
        slow=(status == STATUS_UNKNOWN) | (~batch_by_call_type & (batch_by_metadata < 0)),
    )


@dataclass(frozen=True)
class _Names:
    """The text columns of the canonical row."""

    model: _Texts
    team: _Texts
    caller: _Texts
    end_user: _Texts
    provider: _Texts
    pool: _Texts
    workload: _Texts
    slow: np.ndarray


def _names(columns: _Columns, facts: _Facts, tags: _Tags) -> _Names:
    """Model, team, caller, end user, provider, pool and the workload they resolve to."""
    model = columns.texts("model").or_else(columns.texts("model_group"))
    team = columns.texts("team_id").or_else(facts.texts(lambda f: f.team_alias))
    caller = facts.texts(lambda f: f.alias).or_else(columns.texts("api_key"))
    return _Names(
        model=model,
        team=team,
        caller=caller,
        end_user=columns.texts("end_user").or_else(columns.texts("user")),
        provider=columns.texts("custom_llm_provider"),
        pool=facts.texts(lambda f: f.pool),
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


def _canonical_frame(
    *,
    timing: _Timing,
    usage: _Usage,
    status: _Status,
    names: _Names,
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
                canonical.COST_NANOS: rows_kept(usage.cost_nanos),
                canonical.LINE: rows_kept(lines),
            }
        )
    )


def _workloads(
    *,
    facts: list[_MetadataFacts | None],
    metadata_codes: np.ndarray,
    request_tags: list[tuple[str, ...] | None],
    tag_codes: np.ndarray,
    caller: _Texts,
    team: _Texts,
    model: _Texts,
) -> _Texts:
    """`resolve_workload` per row, run once per distinct input.

    The rule takes the first step that names a workload: the tags, then the metadata, then
    caller / team / model. So it runs once per distinct tag list, once per distinct metadata
    (kept in `_MetadataFacts`) and once per distinct (caller, team, model) among the rows the
    first two leave unnamed. Rows whose tags or metadata are unreadable may get any name: the
    row path converts them.
    """
    rows = len(metadata_codes)
    tag_lists: dict[tuple[str, ...], int] = {}
    metadata_tag_list = np.array(
        [tag_lists.setdefault(f.tags if f else (), len(tag_lists)) for f in facts]
    )
    tag_groups, tag_rows = _group([tag_codes, metadata_tag_list[metadata_codes]], rows)
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
        groups, representatives = _group(
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
    return _Texts.of(values, codes)


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
        is_error = parse_status(word, field="status") == STATUS_ERROR
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
        outcome = row_outcome(litellm_rows.request_from_record, record, first_line + int(row))
        if isinstance(outcome, RowReject):
            rejects.append(outcome)
        else:
            requests.append(outcome)
    return requests, rejects
