"""Billing-export importers: one module per format (one class for the provider cost reports,
`provider_reports.importer_of`), registered in one table.

Every importer module has the same two functions:
- `sniff(head: bytes) -> bool`: do the file's first 64 KiB look like this format?
- `read(stream, *, chunk_rows) -> Iterator[BillingChunk]`: parse a seekable binary stream (CSV
  or Parquet) into chunks of `BillingLine`s and `BillingReject`s. Importers parse and validate;
  they never touch a database.

`read_billing` is the entry point for the ingest service: it detects the format (unless one is
forced) and delegates. Detection tries `DETECTION_ORDER` on the column names: FOCUS
(`BilledCost` + `ChargePeriodStart`), then AWS CUR (`lineItem/UnblendedCost` or
`line_item_unblended_cost`), then Azure cost details (a `MeterName` / `MeterCategory` / `MeterId`
column with `CostInBillingCurrency` / `Cost` / `PreTaxCost`). A Parquet file keeps its schema in
its footer, so `read_billing` reads the column names from the whole stream; `detect_billing_format`
given only a head can do that only when the head holds the whole file.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO, Protocol

from audit_app.ingestion.billing_exports import aws_cur, azure, focus, provider_reports
from audit_app.ingestion.billing_exports.base import (
    PARQUET_MAGIC,
    BillingChunk,
    BillingLine,
    BillingReject,
)
from audit_app.ingestion.billing_exports.meters import ParsedMeter, parse_meter
from audit_app.ingestion.billing_exports.tables import head_columns, table_columns
from audit_app.ingestion.reading import AUTO_FORMAT, ImportFileError, check_head, read_head

__all__ = [
    "BILLING_IMPORTERS",
    "DETECTION_ORDER",
    "REPORT_FORMATS",
    "BillingChunk",
    "BillingImporter",
    "BillingLine",
    "BillingReject",
    "ImportFileError",
    "ParsedMeter",
    "detect_billing_format",
    "detect_billing_stream",
    "parse_meter",
    "read_billing",
]

DEFAULT_CHUNK_ROWS = 50_000


class BillingImporter(Protocol):
    """What every billing importer module provides."""

    LABEL: str
    DESCRIPTION: str
    SHORT_LABEL: str

    def sniff(self, head: bytes) -> bool: ...

    def sniff_columns(self, columns: frozenset[str]) -> bool: ...

    def read(self, stream: BinaryIO, *, chunk_rows: int) -> Iterator[BillingChunk]: ...


BILLING_IMPORTERS: dict[str, BillingImporter] = {
    "focus": focus,
    "aws-cur": aws_cur,
    "azure": azure,
    **provider_reports.IMPORTERS,
}
DETECTION_ORDER = ("focus", "aws-cur", "azure")
# Provider cost reports are JSON documents, recognised by their first bytes, not by columns.
REPORT_FORMATS = frozenset(provider_reports.PROVIDER_OF)

EXPECTED_FORMATS = (
    "FOCUS (`BilledCost`, `ChargePeriodStart`), AWS CUR (`lineItem/UnblendedCost` or "
    "`line_item_unblended_cost`) or Azure cost details (`MeterName`, `CostInBillingCurrency`)"
)


def detect_billing_format(head: bytes) -> str:
    """The name of the first importer (in `DETECTION_ORDER`) that recognises the file's head."""
    report = provider_reports.sniff_head(head)
    if report is not None:
        return report
    if head.startswith(PARQUET_MAGIC):
        columns = head_columns(head)
        if not columns:
            raise ImportFileError(
                "a Parquet file keeps its column names at its end, which the first 64 KiB do "
                "not reach: read it with `read_billing` on the whole file or name its format"
            )
    else:
        check_head(head)
        columns = head_columns(head)
    return _format_of(columns)


def detect_billing_stream(stream: BinaryIO) -> str:
    """The name of the first importer that recognises a whole file's columns, CSV or Parquet
    (whose column names are in its footer), with the stream rewound."""
    try:
        return _format_of(_stream_columns(stream))
    finally:
        stream.seek(0)


def _format_of(columns: frozenset[str]) -> str:
    for name in DETECTION_ORDER:
        if BILLING_IMPORTERS[name].sniff_columns(columns):
            return name
    raise ImportFileError(
        f"the file is not a recognised billing export: expected {EXPECTED_FORMATS}"
    )


def _stream_columns(stream: BinaryIO) -> frozenset[str]:
    stream.seek(0)
    magic = stream.read(len(PARQUET_MAGIC))
    stream.seek(0)
    if magic != PARQUET_MAGIC:
        read_head(stream)  # empty, binary and UTF-8 problems first, with their own sentence
    return table_columns(stream)


def read_billing(
    stream: BinaryIO, *, format: str = AUTO_FORMAT, chunk_rows: int = DEFAULT_CHUNK_ROWS
) -> Iterator[BillingChunk]:
    """Parse a billing export in chunks, detecting its format from its columns when `auto`.

    A forced format is checked against the file's columns too, so a FOCUS file sent as `azure`
    fails with a sentence saying what it looks like rather than a list of missing columns.
    All errors, including detection failures, are raised while iterating.
    """
    if format != AUTO_FORMAT and format not in BILLING_IMPORTERS:
        known = ", ".join([AUTO_FORMAT, *BILLING_IMPORTERS])
        raise ValueError(f"unknown billing format {format!r}; expected one of {known}")
    if format == AUTO_FORMAT:
        stream.seek(0)
        format = provider_reports.sniff_head(stream.read(1024)) or AUTO_FORMAT
        stream.seek(0)
    if format in REPORT_FORMATS:
        yield from BILLING_IMPORTERS[format].read(stream, chunk_rows=chunk_rows)
        return
    columns = _stream_columns(stream)
    if format == AUTO_FORMAT:
        format = _format_of(columns)
    elif not BILLING_IMPORTERS[format].sniff_columns(columns):
        looks_like = next(
            (name for name in DETECTION_ORDER if BILLING_IMPORTERS[name].sniff_columns(columns)),
            None,
        )
        hint = (
            f"it looks like {BILLING_IMPORTERS[looks_like].SHORT_LABEL} (`{looks_like}`)"
            if looks_like
            else f"expected {EXPECTED_FORMATS}"
        )
        raise ImportFileError(
            f"the file was sent as `{format}` but its columns are not "
            f"{BILLING_IMPORTERS[format].SHORT_LABEL}: {hint}"
        )
    yield from BILLING_IMPORTERS[format].read(stream, chunk_rows=chunk_rows)
