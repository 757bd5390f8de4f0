"""Read a whole file through one importer's `read`, for the importer tests."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from typing import BinaryIO

from audit_app.ingestion.reading import RowReject
from audit_app.ingestion.token_logs.base import CanonicalRequest, ParsedChunk

Reader = Callable[..., Iterator[ParsedChunk]]


def read_all(
    read: Reader, data: bytes, chunk_rows: int = 10_000
) -> tuple[list[CanonicalRequest], list[RowReject]]:
    """Every accepted request and every reject, over all chunks."""
    requests: list[CanonicalRequest] = []
    rejects: list[RowReject] = []
    stream: BinaryIO = io.BytesIO(data)
    for chunk in read(stream, chunk_rows=chunk_rows):
        requests.extend(chunk.requests)
        rejects.extend(chunk.rejects)
    return requests, rejects
