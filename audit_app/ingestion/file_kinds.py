"""Which kind of file an upload is, a token log or a billing export, from both families' sniffers.

The uploads service uses it twice: a file sent without a kind (`auto`) is filed under the kind
its content shows, and a file sent as one kind that the other family recognises (a FOCUS export
sent as a token log, a LiteLLM log sent as a bill) is refused with a sentence naming the kind it
is, instead of failing later with a list of missing columns.

Token logs are tried first (`audit_app.ingestion.token_logs.DETECTION_ORDER`), then billing exports
(`audit_app.ingestion.billing_exports.DETECTION_ORDER`), so a CSV that carries both families' marker
columns is a
token log. A Parquet file is read for its column names from its footer, which is why detection
takes the whole stream rather than its head. Benchmark artifacts are not detected here: they
are imported on their own page (`benchmarks_app`, which `audit_app` never imports).

Pure: no Django; kind and format names, labels and descriptions are `audit_app.ingestion.formats`'.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO

from audit_app.ingestion import billing_exports as billing
from audit_app.ingestion import token_logs as importers
from audit_app.ingestion.billing_exports.base import PARQUET_MAGIC
from audit_app.ingestion.billing_exports.tables import table_columns
from audit_app.ingestion.formats import (
    AUTO_FORMAT,
    BILLING,
    FORMATS,
    KIND_LABELS,
    KIND_NOUNS,
    TOKEN_LOG,
)
from audit_app.ingestion.reading import ImportFileError, read_head


@dataclass(frozen=True, kw_only=True)
class DetectedFile:
    """What a file looks like: its kind (`token_log` or `billing`) and format."""

    kind: str
    format: str

    @property
    def description(self) -> str:
        return FORMATS[self.format].description


def token_log_format(stream: BinaryIO) -> str | None:
    """The token-log format whose sniffer recognises the file's head, or None."""
    try:
        return importers.detect_format(read_head(stream))
    except ImportFileError:
        return None


def billing_format(stream: BinaryIO) -> str | None:
    """The billing format whose column check recognises the file's columns, or None."""
    try:
        columns = table_columns(stream)
    except ImportFileError:
        return None
    finally:
        stream.seek(0)
    return next(
        (
            name
            for name in billing.DETECTION_ORDER
            if billing.BILLING_IMPORTERS[name].sniff_columns(columns)
        ),
        None,
    )


def detect_file(stream: BinaryIO) -> DetectedFile | None:
    """The kind and format of a file, token logs first; None when neither family knows it.

    Raises ImportFileError, with its usual sentence, when the file cannot be read at all (empty,
    binary, compressed, not UTF-8), unless it is Parquet, which only billing exports are.
    """
    stream.seek(0)
    is_parquet = stream.read(len(PARQUET_MAGIC)) == PARQUET_MAGIC
    stream.seek(0)
    if not is_parquet:
        read_head(stream)  # an unreadable file fails here with its own sentence
        found = token_log_format(stream)
        if found is not None:
            return DetectedFile(kind=TOKEN_LOG, format=found)
    found = billing_format(stream)
    if found is not None:
        return DetectedFile(kind=BILLING, format=found)
    return None


def other_kind(stream: BinaryIO, *, kind: str) -> DetectedFile | None:
    """What the file is when it is not a `kind` file but the other family recognises it; None
    when `kind` recognises it or nobody does (then the ingest says what is missing)."""
    sniffers = {TOKEN_LOG: token_log_format, BILLING: billing_format}
    if kind not in sniffers or sniffers[kind](stream) is not None:
        return None
    other = BILLING if kind == TOKEN_LOG else TOKEN_LOG
    found = sniffers[other](stream)
    return DetectedFile(kind=other, format=found) if found else None


def wrong_kind_message(*, sent_as: str, detected: DetectedFile, requested_format: str) -> str:
    """ "This looks like a FOCUS billing export, not a token log: upload it as a Billing export
    (kind=billing)." A format chosen by hand is named too, as it has to change with the kind."""
    fix = f"kind={detected.kind}"
    if requested_format != AUTO_FORMAT:
        fix += f", format auto or {detected.format}"
    return (
        f"This looks like {detected.description}, not {KIND_NOUNS[sent_as]}: upload it as a "
        f"{KIND_LABELS[detected.kind]} ({fix})."
    )


def unrecognised_message() -> str:
    return (
        "The file is neither a token log nor a billing export this app can read: a token log "
        f"is {importers.EXPECTED_FORMATS}; a billing export is {billing.EXPECTED_FORMATS}. "
        "Benchmark results are imported on the Benchmarks page."
    )
