"""Importer for OpenAI's cost and usage report, as an `openai` source stores each poll.

The document and its rules: `audit_app.ingestion.billing_exports.provider_reports`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from audit_app.ingestion.billing_exports import provider_reports
from audit_app.ingestion.billing_exports.base import BillingChunk

NAME = provider_reports.FORMAT_OF["openai"]
SHORT_LABEL = "OpenAI cost report"
LABEL = "OpenAI cost and usage report (polled by an openai source)"
DESCRIPTION = "an OpenAI cost and usage report"


def sniff_columns(columns: frozenset[str]) -> bool:
    return False  # a JSON document, not a table


def sniff(head: bytes) -> bool:
    return provider_reports.sniff_head(head) == NAME


def read(stream: BinaryIO, *, chunk_rows: int) -> Iterator[BillingChunk]:
    return provider_reports.read_chunks(stream, format=NAME)
