"""Tests for audit_app.ingestion.histograms: expected values come from numpy or from hand
arithmetic."""

from __future__ import annotations

import json
import math
import pickle

import numpy as np
import pytest

from audit_app.ingestion.histograms import ALPHA, GAMMA, LatencyHistogram, representative_value

# Representatives are within ALPHA by construction; allow float rounding on bin boundaries.
REP_TOL = ALPHA * (1 + 1e-9)
# Uneven cut points: 7 chunks, including a tiny one and a large one.
CUTS = [1_000, 1_300, 30_000, 31_000, 70_000, 110_000]
N_REQUESTS = 120_000


def _lognormal() -> np.ndarray:
    # Typical end-to-end latency: median ~400 ms, long right tail.
    return np.random.default_rng(20240601).lognormal(mean=math.log(400), sigma=0.9, size=N_REQUESTS)


def _pareto() -> np.ndarray:
    # Heavy tail (infinite variance): minimum 50 ms, occasional multi-minute stragglers.
    return (np.random.default_rng(7).pareto(1.5, size=N_REQUESTS) + 1.0) * 50.0


def _rel(actual: float, expected: float) -> float:
    return abs(actual - expected) / abs(expected)


@pytest.mark.parametrize("make_values", [_lognormal, _pareto], ids=["lognormal", "pareto"])
def test_merged_chunks_match_numpy(make_values) -> None:
    values = make_values()
    chunks = np.split(values, CUTS)
    assert len(chunks) == 7 and sum(len(c) for c in chunks) == N_REQUESTS

    merged = LatencyHistogram.merge_all(LatencyHistogram.from_values(c) for c in chunks)

    assert merged.count == N_REQUESTS
    assert merged == LatencyHistogram.from_values(values)
    assert _rel(merged.mean, float(np.mean(values))) < 1e-9
    result = merged.percentiles()
    assert set(result) == {0.5, 0.95, 0.99}
    for q, got in result.items():
        assert _rel(got, float(np.percentile(values, q * 100))) < 0.01
    # The bound actually holds at ALPHA, not just 1 %.
    for q in (0.0, 0.25, 0.5, 0.9, 0.999, 1.0):
        assert _rel(merged.quantile(q), float(np.percentile(values, q * 100))) <= REP_TOL


def test_single_value() -> None:
    h = LatencyHistogram()
    h.add(100.0)
    assert h.count == 1 and not h.is_empty
    assert h.mean == 100.0
    p = h.quantile(0.5)
    assert _rel(p, 100.0) <= REP_TOL
    # Every quantile of one value is that value's representative.
    assert h.quantile(0.0) == p == h.quantile(1.0)
    assert h.percentiles() == {0.5: p, 0.95: p, 0.99: p}


def test_two_values_interpolate_midway() -> None:
    h = LatencyHistogram.from_values([10.0, 20.0])
    assert h.mean == 15.0
    assert _rel(h.quantile(0.5), 15.0) <= REP_TOL
    assert _rel(h.quantile(0.25), 12.5) <= REP_TOL
    assert _rel(h.quantile(0.0), 10.0) <= REP_TOL
    assert _rel(h.quantile(1.0), 20.0) <= REP_TOL


def test_five_values_by_hand() -> None:
    # n=5: p95 position 4*0.95 = 3.8 -> 4 + 0.8*(5-4) = 4.8; p50 position 2 -> 3.
    h = LatencyHistogram.from_values([5.0, 1.0, 4.0, 2.0, 3.0])
    assert _rel(h.quantile(0.5), 3.0) <= REP_TOL
    assert _rel(h.quantile(0.95), 4.8) <= REP_TOL
    assert _rel(h.quantile(0.99), 4.96) <= REP_TOL
    assert h.mean == 3.0


def test_zeros() -> None:
    h = LatencyHistogram.from_values([0.0, 0.0, 0.0])
    assert h.count == 3 and h.zero_count == 3 and h.bins == {}
    assert h.quantile(0.0) == h.quantile(0.5) == h.quantile(1.0) == 0.0
    assert h.mean == 0.0


def test_zero_bucket_with_other_values() -> None:
    # 0.0005 ms is below the minimum and is reported as 0.0.
    h = LatencyHistogram.from_values([0.0, 0.0005, 10.0])
    assert h.zero_count == 2
    assert h.quantile(0.5) == 0.0
    # Position 2*0.75 = 1.5: halfway between 0.0 and 10.0 -> 5.0.
    assert _rel(h.quantile(0.75), 5.0) <= REP_TOL
    assert _rel(h.quantile(1.0), 10.0) <= REP_TOL
    assert representative_value(0.0) == 0.0
    assert representative_value(0.0005) == 0.0


def test_empty() -> None:
    h = LatencyHistogram()
    assert h.is_empty and h.count == 0
    assert h.mean is None
    assert h.quantile(0.5) is None
    assert h.percentiles() == {0.5: None, 0.95: None, 0.99: None}
    h.add_many([])
    assert h.is_empty


@pytest.mark.parametrize("q", [-0.01, 1.01, float("nan"), 50])
def test_quantile_out_of_range_raises(q: float) -> None:
    h = LatencyHistogram.from_values([1.0, 2.0])
    with pytest.raises(ValueError):
        h.quantile(q)


@pytest.mark.parametrize(
    "bad, shown",
    [(float("nan"), "nan"), (-1.5, "-1.5"), (float("inf"), "inf"), (-math.inf, "-inf")],
)
def test_invalid_values_raise(bad: float, shown: str) -> None:
    h = LatencyHistogram()
    with pytest.raises(ValueError, match=shown):
        h.add(bad)
    with pytest.raises(ValueError, match=shown):
        h.add_many([1.0, 2.0, bad, 3.0])
    # Validation happens before any change.
    assert h.is_empty and h.bins == {} and h.total == 0.0
    with pytest.raises(ValueError, match=shown):
        representative_value(bad)


def test_json_round_trip() -> None:
    h = LatencyHistogram.from_values(np.concatenate([_lognormal()[:5000], [0.0, 0.0]]))
    stored = json.loads(json.dumps(h.to_json()))
    assert stored["index"] == sorted(h.bins) and sum(stored["counts"]) == h.count - 2
    back = LatencyHistogram.from_json(stored)
    assert back == h
    # Exact, not just within tolerance.
    assert back.bins == h.bins and back.total == h.total and back.count == h.count
    assert back.percentiles((0.0, 0.5, 0.95, 0.99, 1.0)) == h.percentiles(
        (0.0, 0.5, 0.95, 0.99, 1.0)
    )
    empty = LatencyHistogram.from_json(json.loads(json.dumps(LatencyHistogram().to_json())))
    assert empty == LatencyHistogram() and empty.is_empty


def test_from_json_rejects_other_layout_and_bad_count() -> None:
    data = LatencyHistogram.from_values([1.0, 2.0]).to_json()
    with pytest.raises(ValueError):
        LatencyHistogram.from_json({**data, "alpha": 0.01})
    with pytest.raises(ValueError):
        LatencyHistogram.from_json({**data, "count": 3})


def test_merge_commutative_and_associative() -> None:
    values = _pareto()
    a = LatencyHistogram.from_values(values[:100])
    b = LatencyHistogram.from_values(np.concatenate([values[100:2000], [0.0]]))
    c = LatencyHistogram.from_values(_lognormal()[:3000])
    merge_all = LatencyHistogram.merge_all

    assert merge_all([a, b]) == merge_all([b, a])
    assert merge_all([merge_all([a, b]), c]) == merge_all([a, merge_all([b, c])])
    assert merge_all([a, b, c]) == merge_all([c, a, b])
    assert merge_all([a, LatencyHistogram()]) == a


def test_merge_in_place_returns_self_and_leaves_other_alone() -> None:
    a = LatencyHistogram.from_values([1.0, 2.0])
    b = LatencyHistogram.from_values([3.0, 0.0])
    b_before = LatencyHistogram.from_json(b.to_json())
    assert a.merge(b) is a
    assert a == LatencyHistogram.from_values([1.0, 2.0, 3.0, 0.0])
    assert b == b_before
    with pytest.raises(TypeError):
        a.merge([1.0])  # type: ignore[arg-type]


def test_equality_includes_sum() -> None:
    # 100.0 and 100.01 share a bin (bins are ~1 % wide) but the exact sums differ.
    a = LatencyHistogram.from_values([100.0])
    b = LatencyHistogram.from_values([100.01])
    assert a.bins == b.bins
    assert a != b


def test_add_matches_add_many() -> None:
    values = _lognormal()[:500]
    one_by_one = LatencyHistogram()
    for v in values:
        one_by_one.add(float(v))
    assert one_by_one == LatencyHistogram.from_values(values)


@pytest.mark.parametrize("magnitude", [10.0**k for k in range(-2, 8)])
def test_representative_within_alpha(magnitude: float) -> None:
    values = np.geomspace(magnitude, magnitude * 10, 997)
    # Also the exact bin boundaries in this decade, where rounding is most likely to bite.
    lo = math.ceil(math.log(magnitude) / math.log(GAMMA))
    boundaries = GAMMA ** np.arange(lo, lo + 230)
    for v in np.concatenate([values, boundaries]).tolist():
        assert _rel(representative_value(v), v) <= REP_TOL, v


def test_bin_counts_added_in_bulk_equal_values_added_one_by_one() -> None:
    from audit_app.ingestion.histograms import ZERO_BIN, bin_indices

    values = np.array([0.0, 0.0005, 1.0, 1.0, 250.0, 99_999.0])
    indices = bin_indices(values)
    assert indices[0] == ZERO_BIN and indices[1] == ZERO_BIN
    unique, counts = np.unique(indices, return_counts=True)
    bulk = LatencyHistogram()
    bulk.add_bin_counts(unique.tolist(), counts.tolist(), float(values.sum()))
    assert bulk == LatencyHistogram.from_values(values)
    assert bulk.zero_count == 2 and bulk.count == 6


def test_histograms_stored_in_the_first_layout_still_load() -> None:
    # Version 1 kept bins as a dict keyed by index strings.
    stored = {
        "version": 1,
        "alpha": ALPHA,
        "min_value_ms": 1e-3,
        "count": 3,
        "sum": 6.0,
        "zero_count": 1,
        "bins": {"10": 1, "-5": 1},
    }
    h = LatencyHistogram.from_json(stored)
    assert h.bins == {10: 1, -5: 1} and h.zero_count == 1 and h.count == 3
    with pytest.raises(ValueError, match="does not match"):
        LatencyHistogram.from_json({**stored, "version": 9})


def test_pickled_histograms_keep_their_binary_form_until_changed() -> None:
    h = LatencyHistogram.from_values([0.0, 3.0, 3.0, 250.0, 9000.0])
    back = pickle.loads(pickle.dumps(h))
    assert back._blob == h.to_bytes()  # not decoded yet
    assert back.to_bytes() == h.to_bytes()
    assert back == h and back._blob is None  # reading the bins decodes them
    # A change after unpickling shows in to_bytes (the blob no longer stands for it).
    changed = pickle.loads(pickle.dumps(h))
    changed.merge(LatencyHistogram.from_values([3.0]))
    assert (
        changed.to_bytes()
        == LatencyHistogram.from_values([0.0, 3.0, 3.0, 3.0, 250.0, 9000.0]).to_bytes()
    )
    added = pickle.loads(pickle.dumps(h))
    added.add_many([0.0])  # only the zero bucket: no bin touched, still not the old blob
    assert LatencyHistogram.from_bytes(added.to_bytes()).zero_count == 2
    empty = pickle.loads(pickle.dumps(LatencyHistogram()))
    assert empty.count == 0 and empty.bins == {} and empty.to_bytes() == b""


def test_histograms_pickled_before_the_binary_form_still_load() -> None:
    # What pickle does with an instance pickled by attributes (the layout before __reduce__).
    old = LatencyHistogram.__new__(LatencyHistogram)
    old.__setstate__({"bins": {10: 2, 11: 1}, "zero_count": 1, "count": 4, "total": 33.0})
    assert old.bins == {10: 2, 11: 1} and old.count == 4 and old.quantile(0.0) == 0.0
    assert LatencyHistogram.from_bytes(old.to_bytes()) == old
