"""Columnar fast path for OpenTelemetry GenAI spans exported as OTLP/JSON lines.

Its one concern: every span of a block mapped by `otel_fields.FIELDS` at once, exactly as the
row path maps it span by span.

Its rules in full: `docs/architecture.md`, section "The OTel JSONL fast path".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import islice
from typing import BinaryIO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from audit_app.ingestion.identity import resolve_workload, workload_tagged
from audit_app.ingestion.reading import RowReject, RowRejected, read_head, text, unstorable_reason
from audit_app.ingestion.token_logs import columnar_cells as cells
from audit_app.ingestion.token_logs import frame as canonical
from audit_app.ingestion.token_logs import json_lines
from audit_app.ingestion.token_logs import litellm_columnar as columnar
from audit_app.ingestion.token_logs import otel_fields as fields
from audit_app.ingestion.token_logs.base import CanonicalRequest, ParsedChunk, RowOutcome
from audit_app.ingestion.token_logs.coerce import (
    MAX_COST_PER_REQUEST,
    MAX_TOKENS_PER_REQUEST,
    parse_bool,
    parse_tags,
)
from audit_app.ingestion.token_logs.fields import Kind
from audit_app.ingestion.token_logs.json_lines import BlockRun, LineBlock
from audit_app.ingestion.token_logs.otel_fields import FIELDS

ANY_VALUE = pa.struct(
    [
        ("stringValue", pa.string()),
        ("boolValue", pa.bool_()),
        ("intValue", pa.string()),
        ("doubleValue", pa.float64()),
    ]
)
ATTRIBUTES = pa.list_(pa.struct([("key", pa.string()), ("value", ANY_VALUE)]))
SPAN = pa.struct(
    [
        ("name", pa.string()),
        ("startTimeUnixNano", pa.string()),
        ("endTimeUnixNano", pa.string()),
        ("status", pa.struct([("code", pa.int64())])),
        ("attributes", ATTRIBUTES),
        ("events", pa.list_(pa.struct([("name", pa.string()), ("timeUnixNano", pa.string())]))),
    ]
)
SCHEMA = pa.schema(
    [
        (
            "resourceSpans",
            pa.list_(
                pa.struct(
                    [
                        ("resource", pa.struct([("attributes", ATTRIBUTES)])),
                        ("scopeSpans", pa.list_(pa.struct([("spans", pa.list_(SPAN))]))),
                    ]
                )
            ),
        )
    ]
)
# Bytes that make the schema read a block differently from `otel`: proto (snake_case) field
# names, which `otel` reads too, and a value field written as null, which hides the next one.
UNSUPPORTED_BYTES = (
    b'_spans"',
    b'_unix_nano"',
    b'_value"',
    b'Value": null',
    b'Value":null',
    # A NUL character: the row path refuses the span when a field it keeps holds one.
    b"\\u0000",
)
# Value kinds, in the order `otel_fields.any_value` looks for them.
ABSENT, NO_SCALAR, STRING, BOOL, INT, DOUBLE = -1, 0, 1, 2, 3, 4
NANOS_PER_MICROSECOND = 1_000
MAX_NANOS_DIGITS = 19
MAX_TOKEN_DIGITS = len(str(MAX_TOKENS_PER_REQUEST))


def starts_with_two_documents(stream: BinaryIO) -> bool:
    """True when the file opens with a whole JSON document on its first line and has another
    non-blank line: `otel.read` then reads it as JSON lines, numbering rows by line, as the
    blocks do. Leaves the stream at its start."""
    stream.seek(0)
    try:
        first = stream.readline()
        if not first.startswith(b"{"):
            return False
        try:
            json.loads(first)
        except (ValueError, RecursionError):
            return False
        return any(line.strip() for line in islice(iter(stream.readline, b""), 2))
    finally:
        stream.seek(0)


def read_jsonl_columnar(
    stream: BinaryIO,
    *,
    chunk_rows: int,
    block_bytes: int | None = None,
    ignored: fields.IgnoredSpans | None = None,
) -> Iterator[ParsedChunk]:
    """Parse an OTLP/JSON lines export into chunks of at most `chunk_rows` spans (a line's
    spans may be split between chunks; each chunk's `bytes_read` is after its last line).
    Spans that are not calls to a model are added to `ignored`."""
    ignored = ignored if ignored is not None else fields.IgnoredSpans()
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be at least 1, got {chunk_rows}")
    size = block_bytes or json_lines.block_bytes_for(read_head(stream), chunk_rows=chunk_rows)
    # Parsed blocks are converted a few at a time: fewer, larger frames are cheaper for the
    # caller to aggregate.
    pending: list[tuple[LineBlock, pa.Table]] = []

    def convert_pending() -> Iterator[ParsedChunk]:
        if not pending:
            return
        run = BlockRun([block for block, _ in pending])
        table = pa.concat_tables([table for _, table in pending])
        pending.clear()
        outcomes = _BlockSpans.of(table, run).outcomes(ignored)
        yield from _chunks(outcomes, block=run, chunk_rows=chunk_rows)

    for block, table in json_lines.parsed_blocks(
        stream, schema=SCHEMA, block_bytes=size, refuse=UNSUPPORTED_BYTES
    ):
        if table is None:
            yield from convert_pending()
            run = BlockRun([block])
            yield from _chunks(
                _block_by_rows(run, range(block.lines), ignored), block=run, chunk_rows=chunk_rows
            )
            continue
        pending.append((block, table))
        if sum(parsed.size for parsed, _ in pending) >= json_lines.JOINED_BLOCKS * size:
            yield from convert_pending()
    yield from convert_pending()


@dataclass(frozen=True, kw_only=True)
class _Outcomes:
    """A block's rows: the frame with the line of each of its rows (in order), and the row
    path's outcomes."""

    frame: pd.DataFrame | None
    frame_lines: np.ndarray
    others: list[RowOutcome]


def _chunks(outcomes: _Outcomes, *, block: BlockRun, chunk_rows: int) -> Iterator[ParsedChunk]:
    """The block's rows merged by line into chunks of at most `chunk_rows` rows."""
    in_frame = outcomes.frame_lines.size
    other_lines = np.array([outcome.line for outcome in outcomes.others], np.int64)
    lines = np.concatenate([outcomes.frame_lines, other_lines])
    order = np.argsort(lines, kind="stable")
    for start in range(0, lines.size, chunk_rows):
        picked = order[start : start + chunk_rows]  # in line order; the frame's rows ascend
        others = [outcomes.others[i - in_frame] for i in picked if i >= in_frame]
        frame = outcomes.frame
        # The run's last chunk has read its lines without rows too (spans that are not calls).
        last_line = block.lines if start + chunk_rows >= lines.size else None
        yield ParsedChunk(
            requests=[o for o in others if isinstance(o, CanonicalRequest)],
            rejects=[o for o in others if isinstance(o, RowReject)],
            rows_read=len(picked),
            bytes_read=block.position_after(
                last_line or int(lines[picked].max()) - block.first_line + 1
            ),
            frame=None if frame is None else frame.iloc[picked[picked < in_frame]],
        )


def _block_by_rows(
    block: BlockRun, indexes: Iterable[int], ignored: fields.IgnoredSpans
) -> _Outcomes:
    others: list[RowOutcome] = []
    for index in indexes:
        line_text = block.line_text(index)
        if line_text.strip():
            others.extend(fields.line_outcomes(block.first_line + int(index), line_text, ignored))
    return _Outcomes(frame=None, frame_lines=np.zeros(0, np.int64), others=others)


# ---------------------------------------------------------------------------------------------
# Flattening a block
# ---------------------------------------------------------------------------------------------


def _children(lists: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """The items of a list column and, per item, the index of the row holding it."""
    lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy(zero_copy_only=False)
    return pc.list_flatten(lists), np.repeat(np.arange(len(lists)), lengths)


@dataclass(frozen=True)
class _Attributes:
    """The attributes `otel` reads, of every span (or resource), pivoted by key."""

    entry: dict[str, np.ndarray]  # per owner, its entry's index among all entries (-1: none)
    kind: dict[str, np.ndarray]  # per owner, the value kind (`ABSENT`, `STRING`, ...)
    strings: pa.Array
    bools: np.ndarray
    ints: pa.Array
    doubles: np.ndarray
    gen_ai: np.ndarray  # per owner: has an attribute named gen_ai.*
    repeated: np.ndarray  # per owner: a read attribute is given twice

    @classmethod
    def of(cls, attributes: pa.Array, names: Sequence[str]) -> _Attributes:
        owners = len(attributes)
        entries, parents = _children(attributes)
        if not len(entries):
            # Not one attribute among the owners: a null entry that no owner has keeps the
            # lookups by entry below and in the methods (-1 or 0 for "none") in range.
            entries = pa.array([None], entries.type)
            parents = np.zeros(1, np.int64)
        keys = pc.struct_field(entries, ["key"])
        gen_ai = np.zeros(owners, bool)
        gen_ai[parents[cells.bools(pc.starts_with(keys, fields.GEN_AI_PREFIX))]] = True
        value = pc.struct_field(entries, ["value"])
        parts = [pc.struct_field(value, [name]) for name in ANY_VALUE.names]
        valid = [pc.is_valid(part).to_numpy(zero_copy_only=False) for part in parts]
        entry_kind = np.select(valid, [STRING, BOOL, INT, DOUBLE], NO_SCALAR)
        codes = pc.fill_null(pc.index_in(keys, value_set=pa.array(list(names))), -1)
        codes = codes.to_numpy(zero_copy_only=False)
        entry: dict[str, np.ndarray] = {}
        kind: dict[str, np.ndarray] = {}
        repeated = np.zeros(owners, bool)
        for code, name in enumerate(names):
            found = np.flatnonzero(codes == code)
            owner = parents[found]
            counts = np.bincount(owner, minlength=owners)
            repeated |= counts > 1
            entry[name] = np.full(owners, -1, np.int64)
            entry[name][owner] = found
            kind[name] = np.where(entry[name] >= 0, entry_kind[entry[name]], ABSENT)
        return cls(
            entry=entry,
            kind=kind,
            strings=parts[0],
            bools=cells.bools(parts[1]),
            ints=parts[2],
            doubles=pc.fill_null(parts[3], 0.0).to_numpy(zero_copy_only=False),
            gen_ai=gen_ai,
            repeated=repeated,
        )

    def texts(self, name: str, owners: np.ndarray) -> tuple[columnar.Texts, np.ndarray]:
        """`text(value)` of the attribute for each owner in `owners`, and where it is of a
        type this path does not read as text."""
        kind = self.kind[name][owners]
        entries = self.entry[name][owners]
        values = self.strings.take(pa.array(np.where(kind == STRING, entries, 0)))
        values = pc.if_else(pa.array(kind == STRING), values, pa.scalar(None, pa.string()))
        encoded = pc.dictionary_encode(values, null_encoding="encode")
        distinct = [text(value) for value in encoded.dictionary.to_pylist()]
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.intp)
        return columnar.Texts.of(distinct or [""], codes), (kind != ABSENT) & (kind != STRING)

    def counts(self, name: str, owners: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(count, readable, absent) of an int attribute written as plain digits."""
        kind = self.kind[name][owners]
        entries = self.entry[name][owners]
        digits = self.ints.take(pa.array(np.where(kind == INT, entries, 0)))
        digits = pc.fill_null(digits, "")
        lengths = pc.utf8_length(digits).to_numpy(zero_copy_only=False)
        readable = (
            (kind == INT)
            & (lengths <= MAX_TOKEN_DIGITS)
            & cells.bools(pc.ascii_is_decimal(digits))
            & (lengths > 0)
        )
        values = pc.if_else(pa.array(readable), digits, "0").cast(pa.int64()).to_numpy()
        readable &= values <= MAX_TOKENS_PER_REQUEST
        return values, readable, kind == ABSENT

    def doubles_of(self, name: str, owners: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(value, kind) of a double attribute."""
        kind = self.kind[name][owners]
        entries = self.entry[name][owners]
        return np.where(kind == DOUBLE, self.doubles[np.maximum(entries, 0)], 0.0), kind


@dataclass(frozen=True)
class _BlockSpans:
    """A parsed block's spans, with the line and document position of each."""

    table: pa.Table
    block: BlockRun
    spans: pa.Array
    span_line: np.ndarray  # index of the span's line in the block
    span_resource: np.ndarray
    resources: pa.Array
    odd_lines: np.ndarray  # per line: read it by rows

    @classmethod
    def of(cls, table: pa.Table, block: BlockRun) -> _BlockSpans:
        documents = table.column("resourceSpans").combine_chunks()
        odd_lines = ~cells.bools(pc.is_valid(documents))
        resources, resource_line = _children(documents)
        scopes, scope_resource = _children(pc.struct_field(resources, ["scopeSpans"]))
        spans, span_scope = _children(pc.struct_field(scopes, ["spans"]))
        span_resource = scope_resource[span_scope]
        # `otel` rejects a line whose lists hold anything but objects.
        for items, line in (
            (resources, resource_line),
            (scopes, resource_line[scope_resource]),
            (spans, resource_line[span_resource]),
        ):
            odd_lines[line[~cells.bools(pc.is_valid(items))]] = True
        return cls(
            table=table,
            block=block,
            spans=spans,
            span_line=resource_line[span_resource],
            span_resource=span_resource,
            resources=resources,
            odd_lines=odd_lines,
        )

    def outcomes(self, ignored: fields.IgnoredSpans) -> _Outcomes:
        attributes = _Attributes.of(
            pc.struct_field(self.spans, ["attributes"]), sorted(fields.SPAN_ATTRIBUTES)
        )
        resource_attributes = _Attributes.of(
            pc.struct_field(self.resources, ["resource", "attributes"]),
            sorted(fields.RESOURCE_ATTRIBUTES),
        )
        rows = np.flatnonzero(attributes.gen_ai & ~self.odd_lines[self.span_line])
        spans = _SpanColumns(
            spans=self.spans,
            rows=rows,
            attributes=attributes,
            resource_attributes=resource_attributes,
            resource_of_row=self.span_resource[rows],
            event_times=_first_event_times(self.spans, rows),
        )
        frame, slow = spans.frame(self.span_line[rows] + self.block.first_line)
        others = _block_by_rows(self.block, np.flatnonzero(self.odd_lines), ignored).others
        not_calls = np.flatnonzero(~attributes.gen_ai & ~self.odd_lines[self.span_line])
        if not_calls.size:
            names = pc.struct_field(self.spans, ["name"]).take(pa.array(not_calls))
            ignored.add_counted(not_calls.size, pc.unique(names).to_pylist())
        others.extend(self._slow_outcomes(rows[slow]))
        kept_lines = self.span_line[rows[~slow]] + self.block.first_line
        return _Outcomes(frame=frame, frame_lines=kept_lines, others=others)

    def _slow_outcomes(self, span_indexes: np.ndarray) -> list[RowOutcome]:
        """Spans the row path converts: their line parsed again, the span found by its
        position among the line's spans."""
        outcomes: list[RowOutcome] = []
        first_span_of_line = np.searchsorted(self.span_line, np.arange(self.block.lines))
        documents: dict[int, list[fields.JsonSpan]] = {}
        for span_index in span_indexes:
            line_index = int(self.span_line[span_index])
            if line_index not in documents:
                document = json.loads(self.block.line_text(line_index), parse_float=Decimal)
                documents[line_index] = list(fields.iter_document_spans(document))
            span = documents[line_index][int(span_index - first_span_of_line[line_index])]
            outcomes.append(fields.json_span_outcome(span, line=self.block.first_line + line_index))
        return outcomes


def _first_event_times(spans: pa.Array, rows: np.ndarray) -> dict[str, pa.Array]:
    """Per event name the table reads, the `timeUnixNano` text of each row's first event of
    that name (null without one)."""
    events, owner = _children(pc.struct_field(spans, ["events"]))
    names = pc.struct_field(events, ["name"]) if len(events) else pa.array([], pa.string())
    times = pc.struct_field(events, ["timeUnixNano"]) if len(events) else pa.array([], pa.string())
    out: dict[str, pa.Array] = {}
    for name in sorted(fields.SPAN_EVENTS):
        found = np.flatnonzero(cells.bools(pc.equal(names, name)))
        # `found` ascends, so the first index of each owner is its first event of the name.
        owners, first = np.unique(owner[found], return_index=True)
        entry = np.full(len(spans), -1, np.int64)
        entry[owners] = found[first]
        picked = entry[rows]
        taken = times.take(pa.array(np.maximum(picked, 0))) if len(times) else None
        null = pa.scalar(None, pa.string())
        out[name] = (
            pc.if_else(pa.array(picked >= 0), taken, null)
            if taken is not None
            else pa.nulls(len(rows), pa.string())
        )
    return out


def _decoded_objects(texts: columnar.Texts, attribute: str) -> list[Mapping[str, object] | None]:
    """Each distinct text of an attribute decoded as the row path does (None: it rejects it)."""
    decoded: list[Mapping[str, object] | None] = []
    for raw in texts.texts:
        try:
            decoded.append(fields.decoded_object(raw, field=attribute))
        except RowRejected:
            decoded.append(None)
    return decoded


def _storable(value: str) -> bool:
    return unstorable_reason(value) is None


# ---------------------------------------------------------------------------------------------
# One block's gen_ai spans
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _SpanColumns:
    spans: pa.Array
    rows: np.ndarray  # the gen_ai spans of whole lines, as indexes into `spans`
    attributes: _Attributes
    resource_attributes: _Attributes
    resource_of_row: np.ndarray
    event_times: dict[str, pa.Array]
    # Per attribute holding an object as text: its texts and each distinct one decoded.
    objects: dict[str, tuple[columnar.Texts, np.ndarray, list[Mapping[str, object] | None]]] = (
        field(default_factory=dict)
    )

    def frame(self, lines: np.ndarray) -> tuple[pd.DataFrame, np.ndarray]:
        """The canonical frame of the spans it vouches for, and the spans it does not."""
        timing = self._timing()
        usage = self._usage()
        status = self._status()
        names = self._names()
        slow = (
            timing.slow
            | usage.slow
            | status.slow
            | names.slow
            | self.attributes.repeated[self.rows]
            | self.resource_attributes.repeated[self.resource_of_row]
        )
        keep = None if not slow.any() else np.flatnonzero(~slow)
        frame = columnar.canonical_frame(
            timing=timing, usage=usage, status=status, names=names, lines=lines, keep=keep
        )
        return frame, slow

    def _texts_of(self, name: str) -> tuple[columnar.Texts, np.ndarray]:
        """A text field per span: the first of its sources that is not blank, and the spans
        this path leaves to the row path (a source of a type it does not read as text, an
        object it cannot decode, a text it cannot store)."""
        found: columnar.Texts | None = None
        odd = np.zeros(len(self.rows), bool)
        for source in FIELDS[name].sources:
            texts, unread = self._source_texts(source)
            odd |= unread
            found = texts if found is None else found.or_else(texts)
        assert found is not None
        return found, odd

    def _source_texts(self, source: str) -> tuple[columnar.Texts, np.ndarray]:
        if fields.is_resource(source):
            return self.resource_attributes.texts(
                fields.attribute_name(source), self.resource_of_row
            )
        key = fields.object_key(source)
        if key is not None:
            texts, odd, decoded = self._object(key[0])
            values = [
                "" if obj is None else text(fields.object_value(obj, key[1], kind=Kind.TEXT))
                for obj in decoded
            ]
            bad = np.array(
                [
                    obj is None or not _storable(value)
                    for obj, value in zip(decoded, values, strict=True)
                ]
            )
            return columnar.Texts.of(values, texts.codes), odd | bad[texts.codes]
        attribute = fields.span_attribute(source)
        assert attribute is not None
        texts, odd = self.attributes.texts(attribute, self.rows)
        if fields.is_provider_of(source):
            texts = columnar.Texts.of([fields.provider_prefix(t) for t in texts.texts], texts.codes)
        return texts, odd

    def _object(
        self, attribute: str
    ) -> tuple[columnar.Texts, np.ndarray, list[Mapping[str, object] | None]]:
        """An attribute holding an object as text: its texts, where this path cannot read it,
        and each distinct text decoded (None where the row path rejects it)."""
        if attribute not in self.objects:
            texts, odd = self.attributes.texts(attribute, self.rows)
            self.objects[attribute] = (texts, odd, _decoded_objects(texts, attribute))
        return self.objects[attribute]

    def _tagged_workloads(self) -> tuple[columnar.Texts, np.ndarray]:
        """The workload each span's tags name ("" for none), and the spans whose tags the row
        path decides (unreadable, or naming a workload it cannot store)."""
        sources = [_TAG_SOURCES[source] for source in FIELDS["tags"].sources]
        objects = [self._object(attribute) for attribute, _ in sources]
        rows = len(self.rows)
        groups, representatives = cells.group_rows([texts.codes for texts, _, _ in objects], rows)
        names: list[str] = []
        bad: list[bool] = []
        for row in representatives:
            tags: list[str] = []
            readable = True
            for source, (_, key), (texts, _, decoded) in zip(
                FIELDS["tags"].sources, sources, objects, strict=True
            ):
                obj = decoded[texts.codes[row]]
                if obj is None:
                    readable = False
                    break
                try:
                    tags += parse_tags(fields.object_value(obj, key, kind=Kind.TEXTS), field=source)
                except RowRejected:
                    readable = False
                    break
            name = workload_tagged(tags) if readable else ""
            names.append(name)
            bad.append(not readable or not _storable(name))
        odd = np.logical_or.reduce([unread for _, unread, _ in objects])
        return columnar.Texts.of(names or [""], groups), odd | np.array(bad, bool)[groups]

    def _span_field(self, *path: str) -> pa.Array:
        return pc.struct_field(self.spans, list(path)).take(pa.array(self.rows))

    def _timing(self) -> columnar.Timing:
        started, started_ok = _unix_nanos(self._span_field("startTimeUnixNano"))
        ended, ended_ok = _unix_nanos(self._span_field("endTimeUnixNano"))
        slow = ~started_ok | ~ended_ok | (ended < started)
        first_token = np.full(len(self.rows), columnar.NAT, np.int64)
        undecided = np.ones(len(self.rows), bool)
        for name in fields.TTFT_ATTRIBUTES:
            if fields.is_event(name):
                times = self.event_times[fields.event_name(name)]
                present = cells.bools(pc.is_valid(times))
                moment, readable = _unix_nanos(times)
                here = undecided & present
                undecided &= ~present
                slow |= here & (~readable | (moment < started) | (moment > ended))
                first_token = np.where(here, moment, first_token)
                continue
            seconds, kind = self.attributes.doubles_of(name, self.rows)
            here = undecided & (kind != ABSENT)
            undecided &= kind == ABSENT
            with np.errstate(invalid="ignore", over="ignore"):
                micros = seconds * 1e6
                tie = cells.near_tie(micros)
                readable = (kind == DOUBLE) & np.isfinite(micros) & (seconds >= 0) & ~tie
                micros = np.where(readable, np.rint(micros), 0).astype(np.int64)
            moment = started + micros * NANOS_PER_MICROSECOND
            slow |= here & (~readable | (moment > ended))
            first_token = np.where(here, moment, first_token)
        streaming, unread = self._streaming()
        slow |= unread
        return columnar.Timing(
            started=started,
            ended=ended,
            first_token=first_token,
            streaming=streaming,
            slow=slow,
        )

    def _streaming(self) -> tuple[np.ndarray, np.ndarray]:
        """(streamed: 1, 0 or -1 for unknown, unread) from the first streaming source present:
        a boolean, or a text reading true or false ("True", as LiteLLM writes it)."""
        streaming = np.full(len(self.rows), -1, np.int8)
        unread = np.zeros(len(self.rows), bool)
        undecided = np.ones(len(self.rows), bool)
        for source in FIELDS["streaming"].sources:
            kind = self.attributes.kind[source][self.rows]
            here = undecided & (kind != ABSENT)
            undecided &= kind == ABSENT
            entries = np.maximum(self.attributes.entry[source][self.rows], 0)
            streaming = np.where(here & (kind == BOOL), self.attributes.bools[entries], streaming)
            texts, odd = self.attributes.texts(source, self.rows)
            flags = np.array([_flag(word, field=source) for word in texts.texts], np.int8)
            is_text = here & (kind == STRING)
            streaming = np.where(is_text, flags[texts.codes], streaming)
            unread |= is_text & (flags[texts.codes] == _UNREAD)
            unread |= here & (kind != BOOL) & (kind != STRING)
        return streaming.astype(np.int8), unread

    def _first_count(self, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The first of the attributes present, of token counts: (count, readable)."""
        values = np.zeros(len(self.rows), np.int64)
        readable = np.zeros(len(self.rows), bool)
        undecided = np.ones(len(self.rows), bool)
        for name in names:
            count, ok, absent = self.attributes.counts(name, self.rows)
            here = undecided & ~absent
            values = np.where(here, count, values)
            readable |= here & ok
            undecided &= absent
        return values, readable

    def _usage(self) -> columnar.Usage:
        input_tokens, input_ok = self._first_count(FIELDS["input_tokens"].sources)
        output_tokens, output_ok = self._first_count(FIELDS["output_tokens"].sources)
        cached, cached_ok, cached_absent = self.attributes.counts(
            FIELDS["cached_input_tokens"].only, self.rows
        )
        cached = np.where(cached_absent, 0, cached)
        creation, creation_ok, creation_absent = self.attributes.counts(
            FIELDS["cache_creation_input_tokens"].only, self.rows
        )
        creation = np.where(creation_absent, 0, creation)
        slow = ~input_ok | ~output_ok | ~(cached_ok | cached_absent)
        slow |= ~(creation_ok | creation_absent) | (cached + creation > input_tokens)
        cost_nanos = np.full(len(self.rows), canonical.NO_COST, np.int64)
        undecided = np.ones(len(self.rows), bool)
        for source in FIELDS["cost_usd"].sources:
            usd, kind = self.attributes.doubles_of(source, self.rows)
            here = undecided & (kind != ABSENT)
            undecided &= kind == ABSENT
            with np.errstate(invalid="ignore", over="ignore"):
                scaled = usd * cells.NANOS_PER_USD
                tie = cells.near_tie(scaled)
                cost_ok = (
                    (kind == DOUBLE)
                    & np.isfinite(scaled)
                    & (usd >= 0)
                    & (usd <= float(MAX_COST_PER_REQUEST))
                    & (scaled < cells.MAX_FAST_COST_NANOS)
                    & ~tie
                )
                nanos = np.where(cost_ok, np.rint(scaled), 0).astype(np.int64)
            if source in fields.UNPRICED_WHEN_ZERO:
                # A 0 while tokens were used: no price at the source (`otel_fields`).
                unpriced = (usd == 0) & (input_tokens + output_tokens > 0)
                nanos = np.where(unpriced, canonical.NO_COST, nanos)
            slow |= here & ~cost_ok
            cost_nanos = np.where(here, nanos, cost_nanos)
        return columnar.Usage(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cached_tokens=cached,
            cache_creation_tokens=creation,
            cost_nanos=cost_nanos,
            slow=slow,
        )

    def _status(self) -> columnar.Status:
        code = pc.fill_null(self._span_field("status", "code"), 0).to_numpy(zero_copy_only=False)
        error_type, error_type_odd = self.attributes.texts(FIELDS["error_type"].only, self.rows)
        is_error = (code == 2) | ~error_type.blank()
        operation, operation_odd = self.attributes.texts(FIELDS["operation"].only, self.rows)
        names = [
            text(fields.OPERATION_BY_NAME.get(v.lower(), v.lower())).lower()
            for v in operation.texts
        ]
        return columnar.Status(
            status=np.where(is_error, columnar.STATUS_IS_ERROR, columnar.STATUS_IS_SUCCESS),
            operation=columnar.Texts.of(names, operation.codes),
            batch_api=np.zeros(len(self.rows), bool),
            slow=error_type_odd | operation_odd,
        )

    def _names(self) -> columnar.Names:
        texts = {
            name: self._texts_of(name)
            for name in ("model", "team", "caller", "workload", "end_user", "provider", "pool")
        }
        tagged, tags_odd = self._tagged_workloads()
        odd = np.logical_or.reduce([unread for _, unread in texts.values()]) | tags_odd
        model, team, caller = texts["model"][0], texts["team"][0], texts["caller"][0]
        workload, unstorable = _workloads(
            tagged, texts["workload"][0], caller=caller, team=team, model=model
        )
        return columnar.Names(
            model=model,
            team=team,
            caller=caller,
            end_user=texts["end_user"][0],
            provider=texts["provider"][0],
            pool=texts["pool"][0],
            workload=workload,
            slow=odd | unstorable | model.blank(),
        )


def _workloads(
    tagged: columnar.Texts,
    named: columnar.Texts,
    *,
    caller: columnar.Texts,
    team: columnar.Texts,
    model: columnar.Texts,
) -> tuple[columnar.Texts, np.ndarray]:
    """`resolve_workload` per span, run once per distinct input (the tags name the workload
    first: `tagged`), and the spans whose workload cannot be stored (the row path refuses
    them)."""
    rows = len(named.codes)
    groups, representatives = cells.group_rows(
        [tagged.codes, named.codes, caller.codes, team.codes, model.codes], rows
    )
    values = [
        tagged.texts[tagged.codes[row]]
        or resolve_workload(
            tags=[],
            metadata={"workload": named.texts[named.codes[row]]},
            caller=caller.texts[caller.codes[row]],
            team=team.texts[team.codes[row]],
            model=model.texts[model.codes[row]],
        )
        for row in representatives
    ]
    unstorable = np.array([not _storable(value) for value in values], bool)
    return columnar.Texts.of(values or [""], groups), unstorable[groups]


_UNREAD = 2  # `_flag` of a text `parse_bool` rejects
# The tag sources, each a key of an object an attribute holds as text: (attribute, key).
_TAG_SOURCES = {
    source: key
    for source in FIELDS["tags"].sources
    if (key := fields.object_key(source)) is not None
}
assert len(_TAG_SOURCES) == len(FIELDS["tags"].sources), "a tag source is not an object key"


def _flag(word: str, *, field: str) -> int:
    """`parse_bool` of a text as 1 (true), 0 (false) or -1 (missing); `_UNREAD` where it
    rejects it."""
    try:
        flag = parse_bool(word, field=field)
    except RowRejected:
        return _UNREAD
    return -1 if flag is None else int(flag)


def _unix_nanos(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(UTC nanoseconds cut to microseconds, readable) of `...UnixNano` texts of digits, as
    `coerce.parse_unix_nanos`; anything else (empty, 0, outside the years) takes the row
    path."""
    digits = pc.fill_null(column, "")
    lengths = pc.utf8_length(digits).to_numpy(zero_copy_only=False)
    readable = (lengths > 0) & (lengths <= MAX_NANOS_DIGITS)
    readable &= cells.bools(pc.ascii_is_decimal(digits))
    values = pc.if_else(pa.array(readable), digits, "0").cast(pa.uint64()).to_numpy()
    readable &= values <= np.uint64(cells.latest_ns())
    nanos = np.where(readable, values, 0).astype(np.int64)
    readable &= nanos >= cells.EARLIEST_NS
    return nanos // NANOS_PER_MICROSECOND * NANOS_PER_MICROSECOND, readable
