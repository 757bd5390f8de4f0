"""What a token-log read yields, gathered for comparing two readers of the same file."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd

from audit_app.ingestion.reading import RowReject
from audit_app.ingestion.token_logs.base import ParsedChunk
from audit_app.ingestion.token_logs.frame import LINE, requests_to_frame


def collect_chunks(
    chunks: Iterator[ParsedChunk], *, sort_by: str | None = LINE, categories_as_text: bool = False
) -> tuple[pd.DataFrame, list[RowReject], list[int]]:
    """All canonical rows of a read as one frame (the chunks' frames and their requests),
    sorted by ``sort_by`` (None: by every column, for files whose line holds many rows), its
    rejects, and each chunk's row count. ``categories_as_text`` compares category columns by
    their values (a frame built from several blocks has other categories than one built
    row by row)."""
    frames, requests, rejects, counts = [], [], [], []
    for chunk in chunks:
        if chunk.frame is not None:
            frames.append(chunk.frame)
        requests.extend(chunk.requests)
        rejects.extend(chunk.rejects)
        counts.append(chunk.rows_read)
    frame = pd.concat([*frames, requests_to_frame(requests)], ignore_index=True)
    if categories_as_text:
        for name, column in frame.items():
            if isinstance(column.dtype, pd.CategoricalDtype):
                frame[name] = column.astype(str)
    order = list(frame.columns) if sort_by is None else sort_by
    return frame.sort_values(order, ignore_index=True), rejects, counts
