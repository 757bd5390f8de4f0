"""Daily rollups: derived at landing from the hourly ones, and read by pages instead of them.

Expected values are computed a second way: by summing the hourly rows in Python, or by running
the same selector over the hourly table.
"""

from __future__ import annotations

import io
from collections import defaultdict
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import numpy as np
import pytest

from audit_app.costs.rollups import daily_rollups, priced_groups, rollups_in_range
from audit_app.ingestion.daily import HISTOGRAM_FIELDS, KEY_FIELDS, SUM_FIELDS, daily_from_hourly
from audit_app.ingestion.histograms import LatencyHistogram
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import DailyRollup, HourlyRollup
from audit_app.reporting.filters import whole_range
from audit_app.reporting.selectors import data_date_range, workload_usage
from audit_app.reporting.spend import spend_report
from tests.audit_app.ingestion.ingest_samples import EXPECTED_TOTAL_COST, SAMPLE_CSV


def _hourly(hour: datetime, *, workload: str = "chat", model: str = "gpt-4o", **values: Any):
    row: dict[str, Any] = {
        "hour": hour,
        "workload": workload,
        "team": "web",
        "provider": "openai",
        "model": model,
        "pool": "",
        "operation": "chat",
        "batch_api": False,
    }
    for f in SUM_FIELDS:
        row[f] = Decimal(0) if f == "logged_cost_usd" else 0
    for f in HISTOGRAM_FIELDS:
        row[f] = b""
    row.update(values)
    return row


# Hourly rollups store the binary form; migration 0010's backfill ran while they held JSON.
@pytest.mark.parametrize("form", ["bytes", "json"])
def test_daily_from_hourly_sums_per_day_and_key(form: str) -> None:
    def stored(values: list[float]) -> object:
        histogram = LatencyHistogram.from_values(values)
        return histogram.to_bytes() if form == "bytes" else histogram.to_json()

    h1 = stored([10.0, 20.0, 30.0])
    h2 = stored([20.0, 2000.0])
    rows = [
        _hourly(
            datetime(2026, 11, 2, 0, tzinfo=UTC),
            requests=3,
            input_tokens=100,
            logged_cost_usd=Decimal("0.5"),
            latency_histogram=h1,
        ),
        _hourly(
            datetime(2026, 11, 2, 23, tzinfo=UTC),
            requests=2,
            input_tokens=50,
            logged_cost_usd=Decimal("0.25"),
            latency_histogram=h2,
        ),
        # Next UTC day: its own row.
        _hourly(datetime(2026, 11, 3, 0, tzinfo=UTC), requests=7, input_tokens=1),
        # Same day, other model: its own row.
        _hourly(datetime(2026, 11, 2, 5, tzinfo=UTC), model="gpt-4o-mini", requests=1),
    ]
    daily = daily_from_hourly(rows)
    by_key = {(d["day"], d["model"]): d for d in daily}
    assert set(by_key) == {
        (date(2026, 11, 2), "gpt-4o"),
        (date(2026, 11, 3), "gpt-4o"),
        (date(2026, 11, 2), "gpt-4o-mini"),
    }
    first = by_key[(date(2026, 11, 2), "gpt-4o")]
    assert first["requests"] == 5 and first["input_tokens"] == 150
    assert first["logged_cost_usd"] == Decimal("0.75")
    merged = LatencyHistogram.from_bytes(first["latency_histogram"])
    assert merged == LatencyHistogram.from_values([10.0, 20.0, 30.0, 20.0, 2000.0])
    assert first["ttft_histogram"] == b""  # no hour had one
    assert by_key[(date(2026, 11, 3), "gpt-4o")]["requests"] == 7


def test_bytes_round_trip_and_merge_equal_merging_objects() -> None:
    rng = np.random.default_rng(11)
    parts = [LatencyHistogram.from_values(rng.lognormal(6, 1.5, int(n))) for n in (1, 7, 900)]
    parts.append(LatencyHistogram.from_values([0.0]))  # only the zero bucket: no dense bins
    parts.append(LatencyHistogram())  # empty: b""
    for part in parts:
        assert LatencyHistogram.from_bytes(part.to_bytes()) == part
    assert parts[-1].to_bytes() == b""
    merged = LatencyHistogram.merge_bytes([p.to_bytes() for p in parts] + [None])
    assert merged == LatencyHistogram.merge_all(parts)
    assert merged.count == 1 + 7 + 900 + 1


def test_bytes_keep_counts_beyond_32_bits() -> None:
    histogram = LatencyHistogram()
    histogram.add_bin_counts([100, 140], [2**33 + 5, 3], total=1.0e12)
    data = histogram.to_bytes()
    assert LatencyHistogram.from_bytes(data) == histogram
    # 40-byte header, then 41 bins (100..140) of int64 because one count needs 34 bits.
    assert len(data) == 40 + 41 * 8


def test_bytes_of_another_version_are_refused() -> None:
    data = bytearray(LatencyHistogram.from_values([1.0]).to_bytes())
    data[0] = 9
    with pytest.raises(ValueError, match="version 9"):
        LatencyHistogram.from_bytes(bytes(data))


def test_percentiles_match_quantile() -> None:
    histogram = LatencyHistogram.from_values(np.random.default_rng(5).pareto(1.5, 5000) * 50)
    expected = {q: histogram.quantile(q) for q in (0.0, 0.5, 0.95, 0.99, 1.0)}
    assert histogram.percentiles(tuple(expected)) == expected
    assert LatencyHistogram().percentiles((0.5,)) == {0.5: None}


@pytest.fixture
def sample_upload(db: Any) -> Any:
    upload = upload_create(source=io.BytesIO(SAMPLE_CSV), original_name="s.csv")
    return upload_ingest(upload_id=upload.pk)


def test_landing_writes_daily_rows_equal_to_hourly_sums(sample_upload: Any) -> None:
    hourly = HourlyRollup.objects.filter(upload=sample_upload)
    expected: dict[tuple[Any, ...], dict[str, Any]] = defaultdict(lambda: defaultdict(int))
    for row in hourly.values():
        key = (row["hour"].date(), *(row[f] for f in KEY_FIELDS))
        for f in SUM_FIELDS:
            expected[key][f] += row[f]
    daily = DailyRollup.objects.filter(upload=sample_upload)
    assert daily.count() == len(expected) == 3  # chat, evals and tool on 2026-11-02
    for row in daily.values():
        key = (row["day"], *(row[f] for f in KEY_FIELDS))
        assert {f: row[f] for f in SUM_FIELDS} == dict(expected[key])
    chat = daily.get(workload="chat")
    assert LatencyHistogram.from_bytes(chat.latency_histogram).count == 2  # 2 s and 1 s


def test_pages_read_daily_rows_with_the_hourly_result(sample_upload: Any) -> None:
    start = end = date(2026, 11, 2)
    dims = ["workload", "team", "provider", "model", "pool", "day"]
    from_daily = priced_groups(daily_rollups(start=start, end=end), dims)
    from_hourly = priced_groups(rollups_in_range(start=start, end=end), dims)
    assert sorted(from_daily, key=repr) == sorted(from_hourly, key=repr)
    assert spend_report(whole_range()).total_usd == EXPECTED_TOTAL_COST
    assert workload_usage(queryset=daily_rollups()) == workload_usage(queryset=rollups_in_range())
    assert data_date_range() == (start, end)


def test_deleting_an_upload_removes_its_daily_rows(sample_upload: Any) -> None:
    from audit_app.ingestion.uploads import upload_delete

    assert DailyRollup.objects.filter(upload=sample_upload).exists()
    upload_delete(upload=sample_upload, user=None)
    assert not DailyRollup.objects.exists()
