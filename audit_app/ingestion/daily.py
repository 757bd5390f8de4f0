"""Daily rollups derived from hourly ones: the same keys with the hour cut to its UTC day.

Pure: takes and returns plain dicts of field values, so ingest (model instances), the backfill
migration (historical models) and the scale benchmark share one implementation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from audit_app.costs.pricing import merged_threshold
from audit_app.ingestion.histograms import LatencyHistogram

KEY_FIELDS = ("workload", "team", "provider", "model", "pool", "operation", "batch_api")
# Sums the price cards' cache-write and long-context prices read.
PRICING_SUM_FIELDS = (
    "cache_creation_input_tokens",
    "unlogged_cache_creation_input_tokens",
    "unlogged_long_context_input_tokens",
    "unlogged_long_context_cached_input_tokens",
    "unlogged_long_context_cache_creation_input_tokens",
    "unlogged_long_context_output_tokens",
)
SUM_FIELDS = (
    "requests",
    "errors",
    "streaming_requests",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "logged_requests",
    "logged_cost_usd",
    "unlogged_input_tokens",
    "unlogged_cached_input_tokens",
    "unlogged_output_tokens",
    *PRICING_SUM_FIELDS,
)
HISTOGRAM_FIELDS = ("ttft_histogram", "latency_histogram", "tpot_histogram")
# The threshold a rollup's long-context sums were counted with (`pricing.counting_threshold`):
# not summed, the same for one key's rows (`pricing.merged_threshold` when not). Carried only by
# rows that have it (the 0010 backfill's historical rows predate it).
THRESHOLD_FIELD = "long_context_threshold_tokens"


def _day(hour: datetime) -> date:
    return hour.date()  # hours are stored in UTC, so the date is the UTC day


def _blob(value: Any) -> bytes | memoryview:
    """A stored hourly histogram as `to_bytes` bytes: bytes as stored now, or the JSON dict
    hourly rollups held before migration 0012 (the 0010 backfill still reads those)."""
    if isinstance(value, bytes | memoryview):
        return value
    return LatencyHistogram.from_json(value).to_bytes() if value else b""


def daily_from_hourly(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Sum hourly rollup values per (UTC day, key); histograms merge bin by bin.

    Each row needs ``hour`` and the key, sum and histogram fields (histograms in the binary
    form, or `to_json` dicts); the result has ``day`` in place of ``hour``, in first-seen order,
    with histograms in the compact binary form (`LatencyHistogram.to_bytes`, b"" when empty).
    """
    sums: dict[tuple[Any, ...], dict[str, Any]] = {}
    blobs: dict[tuple[Any, ...], dict[str, list[bytes | memoryview]]] = {}
    for row in rows:
        key = (_day(row["hour"]), *(row[f] for f in KEY_FIELDS))
        total = sums.get(key)
        if total is None:
            total = sums[key] = {"day": key[0], **{f: row[f] for f in KEY_FIELDS}}
            for f in SUM_FIELDS:
                total[f] = Decimal(0) if f == "logged_cost_usd" else 0
            blobs[key] = {f: [] for f in HISTOGRAM_FIELDS}
            if THRESHOLD_FIELD in row:
                total[THRESHOLD_FIELD] = row[THRESHOLD_FIELD]
        if THRESHOLD_FIELD in row:
            total[THRESHOLD_FIELD] = merged_threshold(total[THRESHOLD_FIELD], row[THRESHOLD_FIELD])
        for f in SUM_FIELDS:
            total[f] += row[f]
        for f in HISTOGRAM_FIELDS:
            if row[f]:
                blobs[key][f].append(_blob(row[f]))
    out = []
    for key, total in sums.items():
        for f, items in blobs[key].items():
            if len(items) == 1:
                total[f] = bytes(items[0])
            else:
                total[f] = LatencyHistogram.merge_bytes(items).to_bytes()
        out.append(total)
    return out
