"""The reading base both importer stacks share: token logs (`audit_app.ingestion.token_logs`) and
billing
exports (`audit_app.ingestion.billing_exports`).

What is the same for every file either stack reads lives here, once:
- the two failures: `ImportFileError` (the file cannot be read at all; one sentence for the
  upload's report) and `RowRejected` (one row is refused), which becomes a `RowReject`;
- a record before conversion (`Record`) and the outcome of converting it (`row_outcome`);
- grouping outcomes into chunks (`group_outcomes`), the missing-column sentence
  (`missing_message`) and the years a timestamp may fall in (`check_in_years`);
- reading bytes as text: the checked head, UTF-8 line by line, and the CSV row loop
  (`iter_csv_rows`, `csv_record`).

What differs stays with each stack: its accepted-row type and chunk type, which CSV rows count
as blank, whether a file with no rows still yields a last (empty) chunk, and its coercions.

Pure: no Django.
"""

from __future__ import annotations

import codecs
import csv
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import BinaryIO, Generic, TypeVar

# The format a caller names to have the file's own format detected (`audit_app.ingestion.formats`).
AUTO_FORMAT = "auto"
HEAD_BYTES = 64 * 1024
MAX_REJECT_VALUE_CHARS = 200
# LiteLLM keeps whole prompts and responses in `messages` / `response`; one cell can be several
# megabytes, far above the csv module's 128 KiB default.
CSV_FIELD_SIZE_LIMIT = 16 * 1024 * 1024
UTF8_BOM = "\ufeff"
MISSING_TEXT = frozenset({"", "null", "none"})
# Times outside these years are typos or placeholders (1900-01-01, 9999-12-31); they are
# rejected as rows rather than overflowing the nanosecond timestamps the rollups use.
EARLIEST_TIMESTAMP = datetime(2000, 1, 1, tzinfo=UTC)
LATEST_TIMESTAMP = datetime(2100, 1, 1, tzinfo=UTC)
# A record dated later than this after now is refused: one such record would otherwise move
# every page's default date range (it ends at the latest data) into the future.
MAX_FUTURE = timedelta(days=1)

Accepted = TypeVar("Accepted")


# ---------------------------------------------------------------------------------------------
# Failures and records
# ---------------------------------------------------------------------------------------------


class ImportFileError(Exception):
    """The file cannot be read at all; the message is one sentence for the upload's report."""


@dataclass(frozen=True, kw_only=True)
class RowReject:
    """A row that was read but not accepted, with where it is and why."""

    line: int
    field: str
    value: str
    reason: str

    def as_dict(self) -> dict[str, object]:
        """As an upload, a live batch and the API keep and show it (text made storable by
        `inert_text`)."""
        return {
            "line": self.line,
            "field": inert_text(self.field),
            "value": inert_text(self.value),
            "reason": inert_text(self.reason),
        }


class RowRejected(Exception):
    """Raised by coercions inside one row; turned into a `RowReject` by `row_outcome`."""

    def __init__(self, *, field: str, value: object, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.value = value
        self.reason = reason

    def to_reject(self, *, line: int) -> RowReject:
        return RowReject(
            line=line,
            field=inert_text(self.field),
            value=shorten(inert_text(display_value(self.value))),
            reason=inert_text(self.reason),
        )


@dataclass(frozen=True, kw_only=True)
class Record:
    """One row of a file (CSV, JSON, JSONL or Parquet) before conversion."""

    line: int
    fields: Mapping[str, object]


def row_outcome(
    convert: Callable[[Mapping[str, object], int], Accepted],
    fields: Mapping[str, object],
    line: int,
) -> Accepted | RowReject:
    """Run a format's row conversion, turning a `RowRejected` into the row's reject."""
    try:
        return convert(fields, line)
    except RowRejected as rejected:
        return rejected.to_reject(line=line)


# ---------------------------------------------------------------------------------------------
# Values in messages
# ---------------------------------------------------------------------------------------------


def display_value(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, default=str)
    return str(value)


def unstorable_reason(value: str) -> str | None:
    """Why a text cannot be stored as it is, or None when it can: a NUL character (PostgreSQL
    refuses it in text) or a lone surrogate (not Unicode: no database encoding holds it)."""
    if "\x00" in value:
        return "contains a NUL character (U+0000)"
    if value.isascii():
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        return f"contains a lone surrogate (U+{ord(value[error.start]):04X}), which is not Unicode"
    return None


def inert_text(value: str) -> str:
    """The text with NUL characters and lone surrogates written as `\\u` escapes, so that a
    message quoting a refused value can be stored and shown."""
    if value.isascii() and "\x00" not in value:
        return value
    return value.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\u0000")


def check_storable(value: str, *, field: str) -> str:
    """The text, or a reject naming `field` when it cannot be stored (`unstorable_reason`)."""
    reason = unstorable_reason(value)
    if reason is not None:
        raise RowRejected(
            field=field,
            value=value,
            reason=f"`{field}` {reason}; such text cannot be stored, so the record is refused.",
        )
    return value


def shorten(text: str) -> str:
    return text[:MAX_REJECT_VALUE_CHARS]


def quoted(value: object) -> str:
    """The value as it appears in a reason sentence, kept short enough to read."""
    text = display_value(value)
    return repr(text if len(text) <= 60 else text[:57] + "...")


def is_missing(value: object) -> bool:
    """None, an empty string or a `NULL`/`None` placeholder written by database exports."""
    if value is None:
        return True
    return isinstance(value, str) and value.strip().lower() in MISSING_TEXT


def text(value: object) -> str:
    """A stripped string, "" when missing."""
    if value is None:
        return ""
    if isinstance(value, str):
        # `is_missing` spelled out for the common case: every importer calls this for nearly
        # every field of every row. No missing word is longer than 4 characters.
        stripped = value.strip()
        if len(stripped) <= 4 and stripped.lower() in MISSING_TEXT:
            return ""
        return stripped
    return display_value(value).strip()


def missing_message(where: str, *, noun: str, names: Sequence[str]) -> str:
    """ "line 1: missing required columns `a`, `b`"; `names` are written as the file should
    spell them (in backticks, with any accepted alternatives)."""
    plural = "s" if len(names) > 1 else ""
    return f"{where}: missing required {noun}{plural} {', '.join(names)}"


def in_backticks(names: Iterable[str]) -> list[str]:
    return [f"`{name}`" for name in names]


def check_in_years(moment: datetime, *, field: str, value: object) -> datetime:
    """The moment, or a reject when it falls outside 2000-2099 (`EARLIEST_TIMESTAMP` to
    `LATEST_TIMESTAMP`)."""
    if not EARLIEST_TIMESTAMP <= moment < LATEST_TIMESTAMP:
        raise RowRejected(
            field=field,
            value=value,
            reason=f"`{field}` is {quoted(value)}, outside the years "
            f"{EARLIEST_TIMESTAMP.year}-{LATEST_TIMESTAMP.year - 1}.",
        )
    return moment


def future_cutoff() -> datetime:
    """The latest moment a record may be dated: now plus `MAX_FUTURE`."""
    return datetime.now(UTC) + MAX_FUTURE


def check_not_future(moment: datetime, *, field: str, value: object, cutoff: datetime) -> None:
    """A reject when the moment is after `cutoff` (`future_cutoff`)."""
    if moment > cutoff:
        raise RowRejected(
            field=field,
            value=value,
            reason=f"`{field}` ({moment.isoformat()}) is more than a day in the future.",
        )


# ---------------------------------------------------------------------------------------------
# Chunks
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RowGroup(Generic[Accepted]):
    """Up to `chunk_rows` outcomes; `bytes_read` is the reading position after the last one."""

    accepted: list[Accepted]
    rejects: list[RowReject]
    bytes_read: int

    @property
    def rows_read(self) -> int:
        return len(self.accepted) + len(self.rejects)


def check_chunk_rows(chunk_rows: int) -> None:
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be at least 1, got {chunk_rows}")


def group_outcomes(
    outcomes: Iterable[Accepted | RowReject],
    *,
    chunk_rows: int,
    position: Callable[[], int],
    end_at_file_end: bool,
) -> Iterator[RowGroup[Accepted]]:
    """Group row outcomes into groups of `chunk_rows` rows.

    `outcomes` must be lazy so `position()` is where the group's last row ends. With
    `end_at_file_end`, a last group (possibly empty) is yielded whenever the position moved
    since the last full one, so progress reaches the file size; without it only rows make a
    group.
    """
    accepted: list[Accepted] = []
    rejects: list[RowReject] = []
    reported = -1
    for outcome in outcomes:
        if isinstance(outcome, RowReject):
            rejects.append(outcome)
        else:
            accepted.append(outcome)
        if len(accepted) + len(rejects) >= chunk_rows:
            reported = position()
            yield RowGroup(accepted=accepted, rejects=rejects, bytes_read=reported)
            accepted, rejects = [], []
    if accepted or rejects:
        yield RowGroup(accepted=accepted, rejects=rejects, bytes_read=position())
    elif end_at_file_end:
        end = position()
        if end != reported:
            yield RowGroup(accepted=accepted, rejects=rejects, bytes_read=end)


# ---------------------------------------------------------------------------------------------
# Bytes as text
# ---------------------------------------------------------------------------------------------


def read_head(stream: BinaryIO) -> bytes:
    """The first `HEAD_BYTES` of the file, checked, with the stream rewound to the start."""
    stream.seek(0)
    head = stream.read(HEAD_BYTES)
    stream.seek(0)
    check_head(head)
    return head


def check_head(head: bytes) -> None:
    """Fail early on files that are empty, binary or not UTF-8, before any format guessing."""
    if not head.strip():
        raise ImportFileError("the file is empty")
    if head.startswith(b"\x1f\x8b"):
        raise ImportFileError(
            "the file is gzip-compressed; compressed uploads are not accepted, so upload the "
            "uncompressed file (it is never expanded here)"
        )
    if head.startswith(b"PK\x03\x04"):
        raise ImportFileError("the file is a ZIP archive; upload the CSV or JSON file inside it")
    nul_at = head.find(b"\x00")
    if nul_at >= 0:
        raise ImportFileError(f"the file looks binary (NUL byte at byte {nul_at})")
    try:
        # final=False: the head may end in the middle of a multi-byte character.
        codecs.getincrementaldecoder("utf-8")().decode(head, False)
    except UnicodeDecodeError as error:
        raise ImportFileError(f"not valid UTF-8 at byte {error.start}") from error


def head_text(head: bytes) -> str:
    """The head as text for sniffing: BOM and leading whitespace gone, a cut character dropped."""
    return head.decode("utf-8", errors="ignore").lstrip(UTF8_BOM).lstrip()


def decode_text(raw: bytes, *, offset: int) -> str:
    """`raw` as UTF-8; a NUL byte or bad UTF-8 fails naming its byte (`offset` is where `raw`
    starts in the file)."""
    nul_at = raw.find(b"\x00")
    if nul_at >= 0:
        raise ImportFileError(f"the file looks binary (NUL byte at byte {offset + nul_at})")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ImportFileError(f"not valid UTF-8 at byte {offset + error.start}") from error


def iter_text_lines(stream: BinaryIO) -> Iterator[str]:
    """Decoded lines (with their line endings) from the start of the stream, one at a time.

    Decoding line by line is exact for UTF-8: no multi-byte character contains the byte 0x0A.
    """
    stream.seek(0)
    offset = 0
    for raw in iter(stream.readline, b""):
        line = decode_text(raw, offset=offset)
        if offset == 0:
            line = line.removeprefix(UTF8_BOM)
        offset += len(raw)
        yield line


# ---------------------------------------------------------------------------------------------
# CSV
# ---------------------------------------------------------------------------------------------


def is_empty_line(row: Sequence[str]) -> bool:
    """A line with nothing on it but spaces (token logs: `,,,` is a row, and a short one)."""
    return not row or (len(row) == 1 and not row[0].strip())


def is_blank_row(row: Sequence[str]) -> bool:
    """No value anywhere (billing exports: spreadsheets save empty rows as `,,,,`)."""
    return not any(value.strip() for value in row)


def iter_csv_rows(
    stream: BinaryIO, *, is_blank: Callable[[Sequence[str]], bool]
) -> Iterator[tuple[int, list[str]]]:
    """The CSV file's rows with the line each starts on, from the start of the stream; rows for
    which `is_blank` holds are skipped. Unreadable CSV fails naming its line."""
    # The limit is process-wide in the csv module; raising it never breaks another reader.
    csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_SIZE_LIMIT))
    reader = csv.reader(iter_text_lines(stream))
    last_line = 0
    try:
        for row in reader:
            row_start = last_line + 1
            last_line = reader.line_num
            if is_blank(row):
                continue
            yield row_start, row
    except csv.Error as error:
        raise ImportFileError(f"line {reader.line_num}: unreadable CSV ({error})") from error


def csv_header(row: Sequence[str]) -> list[str]:
    return [name.strip() for name in row]


def csv_record(line: int, row: Sequence[str], header: Sequence[str]) -> Record | RowReject:
    """A data row as a record keyed by the header, or a reject when the field counts differ."""
    if len(row) != len(header):
        return RowReject(
            line=line,
            field="(row)",
            value=shorten(",".join(row)),
            reason=f"the row has {len(row)} fields but the header has {len(header)}.",
        )
    return Record(line=line, fields=dict(zip(header, row, strict=True)))
