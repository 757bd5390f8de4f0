"""Daily rollups derived from hourly ones: the same keys with the hour cut to its UTC day.

Pure: takes and returns plain dicts of field values, so ingest (model instances), the backfill
migration (historical models) and the scale benchmark share one implementation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from audit_app.histograms import LatencyHistogram

KEY_FIELDS = ("workload", "team", "provider", "model", "pool", "operation", "batch_api")
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
)
HISTOGRAM_FIELDS = ("ttft_histogram", "latency_histogram", "tpot_histogram")


def _day(hour: datetime) -> date:
    return hour.date()  # hours are stored in UTC, so the date is the UTC day


def daily_from_hourly(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Sum hourly rollup values per (UTC day, key); histograms merge bin by bin.

    Each row needs ``hour`` and the key, sum and histogram fields (histograms as `to_json`
    dicts or as LatencyHistogram objects); the result has ``day`` in place of ``hour``, in
    first-seen order, with histograms in the compact binary form of `DailyRollup`
    (`LatencyHistogram.to_bytes`, b"" when empty).
    """
    sums: dict[tuple[Any, ...], dict[str, Any]] = {}
    histograms: dict[tuple[Any, ...], dict[str, LatencyHistogram]] = {}
    for row in rows:
        key = (_day(row["hour"]), *(row[f] for f in KEY_FIELDS))
        total = sums.get(key)
        if total is None:
            total = sums[key] = {"day": key[0], **{f: row[f] for f in KEY_FIELDS}}
            for f in SUM_FIELDS:
                total[f] = Decimal(0) if f == "logged_cost_usd" else 0
            histograms[key] = {f: LatencyHistogram() for f in HISTOGRAM_FIELDS}
        for f in SUM_FIELDS:
            total[f] += row[f]
        for f in HISTOGRAM_FIELDS:
            value = row[f]
            if isinstance(value, LatencyHistogram):  # ingest passes its histograms as they are
                histograms[key][f].merge(value)
            elif value:
                histograms[key][f].merge(LatencyHistogram.from_json(value))
    out = []
    for key, total in sums.items():
        for f, histogram in histograms[key].items():
            total[f] = histogram.to_bytes()
        out.append(total)
    return out
