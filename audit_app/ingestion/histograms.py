"""Mergeable latency histograms for TTFT, end-to-end latency and TPOT.

Every histogram shares one fixed set of log-spaced bins (DDSketch-style), so histograms built
from different chunks, uploads or workers merge by adding bin counts, and p50 / p95 / p99 are
read from the merged bins instead of from raw values we no longer have.

Bin ``i`` covers ``(GAMMA**(i - 1), GAMMA**i]`` and reports the representative value
``2 * GAMMA**i / (GAMMA + 1)``, which is within ``ALPHA`` relative error of anything in the bin.
Values below ``MIN_VALUE_MS`` (including 0) share a zero bucket reported as 0.0, because log
bins cannot reach zero and sub-microsecond latencies carry no information for a spend audit.

Quantiles follow numpy's default ``np.percentile`` (linear interpolation between order
statistics), applied to bin representatives, so they track numpy within ``ALPHA`` relative.

All values are latencies in milliseconds. This module is pure: no Django imports.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

# Relative accuracy of a bin representative: 0.5 % keeps p50/p95/p99 comfortably inside the
# 1 % target while needing only ~230 bins per decade (sparse, so only occupied bins are stored).
ALPHA = 0.005
GAMMA = (1 + ALPHA) / (1 - ALPHA)
_LOG_GAMMA = math.log(GAMMA)

# Below this a value goes to the zero bucket; 1 microsecond is far below any real latency.
MIN_VALUE_MS = 1e-3

# Stored alongside the bins so that histograms built with a different bin layout are refused
# rather than silently merged into nonsense.
_JSON_VERSION = 2
# Binary form (`to_bytes`): version in the low bits of the first header word, _WIDE set when
# the counts are int64 rather than uint32; header = 4 int64 + 1 float64.
_BYTES_VERSION = 1
_WIDE = 1 << 8
_BYTES_HEADER = 40

# Sum comparisons tolerate rounding: float addition is not associative, so merging the same
# chunks in a different order can change the last bits of the sum (counts stay exact).
_SUM_REL_TOL = 1e-12


def _validated(values: Iterable[float] | npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Return values as a flat float array, raising ValueError on negative/NaN/inf."""
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        # Name the first offending value so a bad row in an upload is easy to find.
        value = arr[np.argmax(bad)]
        raise ValueError(f"invalid latency {value!r} ms: must be finite and >= 0")
    return arr


def _bin_indices(positive: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """Bin index ceil(log_gamma(v)) for values >= MIN_VALUE_MS."""
    # One vectorised code path for add() and add_many() so a value always lands in the same
    # bin however it arrives (math.log and np.log may differ in the last ulp).
    return np.ceil(np.log(positive) / _LOG_GAMMA).astype(np.int64)


# Bin index standing for the zero bucket in `bin_indices` output (no real bin is this low).
ZERO_BIN = -(2**62)


def bin_indices(values: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """Bin index of each value (ZERO_BIN for the zero bucket), for callers that count bins
    of many histograms at once (grouped with pandas) and then call `add_bin_counts`."""
    arr = _validated(values)
    out = np.full(arr.shape, ZERO_BIN, dtype=np.int64)
    big = arr >= MIN_VALUE_MS
    out[big] = _bin_indices(arr[big])
    return out


def _representative(index: int) -> float:
    """Value reported for bin ``index``: within ALPHA of everything the bin covers."""
    return 2.0 * GAMMA**index / (GAMMA + 1.0)


def _representatives(indices: list[int]) -> npt.NDArray[np.float64]:
    """0.0 (the zero bucket) then `_representative` of each index, computed as one array."""
    values = np.zeros(len(indices) + 1)
    values[1:] = 2.0 * np.power(GAMMA, np.asarray(indices, dtype=np.float64)) / (GAMMA + 1.0)
    return values


def representative_value(value: float) -> float:
    """The value a histogram reports for ``value`` (0.0 for the zero bucket)."""
    arr = _validated([value])
    if arr[0] < MIN_VALUE_MS:
        return 0.0
    return _representative(int(_bin_indices(arr)[0]))


class LatencyHistogram:
    """Sparse histogram over the shared log bins, plus exact count and sum (for the mean).

    ``bins`` maps bin index -> count for values >= MIN_VALUE_MS; ``zero_count`` counts the
    rest. Treat the attributes as read-only and change them through add/merge.
    """

    def __init__(self) -> None:
        self._bins: dict[int, int] = {}
        # `to_bytes` of this histogram while it holds what it was unpickled from (see
        # __reduce__): the bins are decoded only if asked for, and `to_bytes` returns it as is.
        self._blob: bytes | None = None
        self.zero_count: int = 0
        self.count: int = 0
        self.total: float = 0.0

    @property
    def bins(self) -> dict[int, int]:
        # The caller may change the dict, so the blob no longer stands for the histogram.
        if self._blob is not None:
            self._bins = LatencyHistogram.from_bytes(self._blob)._bins
            self._blob = None
        return self._bins

    @bins.setter
    def bins(self, value: dict[int, int]) -> None:
        self._bins = value
        self._blob = None

    # -- pickling -------------------------------------------------------------------------
    # Ingest fan-out pickles thousands of histograms per part, and the part that lands the
    # upload unpickles all of them; most go straight to the database. Pickled as their binary
    # form, they are unpickled without building a dict and written without encoding again.

    def __reduce__(self) -> tuple[Any, ...]:
        return (_unpickle, (self.to_bytes(), self.count, self.zero_count, self.total))

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Pickles made before `__reduce__` existed hold the attributes themselves."""
        self.__init__()  # type: ignore[misc]
        self._bins = state.get("bins", state.get("_bins", {}))
        self.zero_count = state["zero_count"]
        self.count = state["count"]
        self.total = state["total"]

    # -- building -------------------------------------------------------------------------

    def add(self, value: float) -> None:
        """Add one latency in milliseconds."""
        self.add_many([value])

    def add_many(self, values: Iterable[float] | npt.NDArray[np.float64]) -> None:
        """Add many latencies at once; validates all of them before changing anything."""
        arr = _validated(values)
        if arr.size == 0:
            return
        small = arr < MIN_VALUE_MS
        indices, counts = np.unique(_bin_indices(arr[~small]), return_counts=True)
        bins = self.bins  # (also drops an unpickled blob: this histogram changes)
        # tolist() gives plain ints, which keeps the dict JSON-friendly and comparable.
        for index, n in zip(indices.tolist(), counts.tolist(), strict=True):
            bins[index] = bins.get(index, 0) + n
        self.zero_count += int(small.sum())
        self.count += int(arr.size)
        # fsum is correctly rounded, so a chunk's sum does not drift with chunk size.
        self.total += math.fsum(arr.tolist())

    def add_bin_counts(self, indices: Sequence[int], counts: Sequence[int], total: float) -> None:
        """Add pre-counted bins (from `bin_indices`), with the exact sum of their values."""
        bins = self.bins  # (also drops an unpickled blob: this histogram changes)
        for index, n in zip(indices, counts, strict=True):
            if index == ZERO_BIN:
                self.zero_count += n
            else:
                bins[index] = bins.get(index, 0) + n
            self.count += n
        self.total += total

    def merge(self, other: LatencyHistogram) -> LatencyHistogram:
        """Add ``other``'s contents into this histogram (in place) and return self."""
        if not isinstance(other, LatencyHistogram):
            raise TypeError(f"cannot merge {type(other).__name__} into LatencyHistogram")
        bins = self.bins  # (also drops an unpickled blob: this histogram changes)
        for index, n in other.bins.items():
            bins[index] = bins.get(index, 0) + n
        self.zero_count += other.zero_count
        self.count += other.count
        self.total += other.total
        return self

    @classmethod
    def merge_all(cls, histograms: Iterable[LatencyHistogram]) -> LatencyHistogram:
        """A new histogram holding the sum of ``histograms`` (inputs are left untouched)."""
        result = cls()
        for histogram in histograms:
            result.merge(histogram)
        return result

    @classmethod
    def from_values(cls, values: Iterable[float] | npt.NDArray[np.float64]) -> LatencyHistogram:
        """Convenience: a histogram of ``values``."""
        histogram = cls()
        histogram.add_many(values)
        return histogram

    # -- reading --------------------------------------------------------------------------

    @property
    def is_empty(self) -> bool:
        return self.count == 0

    @property
    def mean(self) -> float | None:
        """Exact mean (from the exact sum, not the bins); None when empty."""
        if self.count == 0:
            return None
        return self.total / self.count

    def quantile(self, q: float) -> float | None:
        """Quantile q in [0, 1] with np.percentile's default linear interpolation."""
        return self.percentiles((q,))[q]

    def percentiles(self, qs: Sequence[float] = (0.5, 0.95, 0.99)) -> dict[float, float | None]:
        """{q: quantile(q)} for each q, e.g. the dashboard's p50 / p95 / p99; the bins are
        sorted and summed once for all of them."""
        for q in qs:
            # Written so that NaN fails the check too.
            if not 0.0 <= q <= 1.0:
                raise ValueError(f"quantile {q!r} outside [0, 1]")
        if self.count == 0:
            return dict.fromkeys(qs)
        indices = sorted(self.bins)
        values = _representatives(indices)
        cumulative = np.cumsum([self.zero_count] + [self.bins[i] for i in indices])
        out: dict[float, float | None] = {}
        for q in qs:
            # numpy's "linear" method: position (n-1)q between order statistics floor and ceil.
            position = (self.count - 1) * q
            lo, hi = math.floor(position), math.ceil(position)
            # The k-th (0-based) order statistic sits in the first bin whose cumulative count > k.
            x_lo, x_hi = values[np.searchsorted(cumulative, [lo, hi], side="right")]
            out[q] = float(x_lo + (x_hi - x_lo) * (position - lo))
        return out

    # -- storage --------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict for a database JSONField; from_json inverts it.

        Bins are two parallel lists (indices ascending, counts): several times faster to
        encode and smaller than a dict keyed by strings, which matters when an ingest lands
        thousands of rollups with three histograms each.
        """
        indices = sorted(self.bins)
        return {
            "version": _JSON_VERSION,
            "alpha": ALPHA,
            "min_value_ms": MIN_VALUE_MS,
            "count": self.count,
            "sum": self.total,
            "zero_count": self.zero_count,
            "index": indices,
            "counts": [self.bins[i] for i in indices],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LatencyHistogram:
        """Rebuild a histogram from to_json() output (this layout or the first one, whose bins
        were a dict keyed by index strings); refuses a different bin layout."""
        version = data.get("version")
        layout = (data.get("alpha"), data.get("min_value_ms"))
        if version not in (1, _JSON_VERSION) or layout != (ALPHA, MIN_VALUE_MS):
            raise ValueError(
                f"histogram layout {(version, *layout)!r} does not match this module's"
            )
        histogram = cls()
        if version == 1:
            histogram.bins = {int(index): int(n) for index, n in data["bins"].items()}
        else:
            histogram.bins = dict(zip(data["index"], data["counts"], strict=True))
        histogram.zero_count = int(data["zero_count"])
        histogram.count = int(data["count"])
        histogram.total = float(data["sum"])
        # A count that disagrees with the bins would make every quantile wrong; fail loudly.
        if histogram.count != histogram.zero_count + sum(histogram.bins.values()):
            raise ValueError("histogram count does not match its bins")
        return histogram

    # -- compact binary form -----------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """Compact binary form for columns read in bulk (daily rollups): a header, then the
        counts of every bin from the lowest to the highest occupied one as one dense array
        (uint32, or int64 when a bin holds 2**32 or more). Empty histogram: b"".

        Decoding is `np.frombuffer`, not parsing text, so pages can merge a month of daily
        histograms for hundreds of workloads in milliseconds; `from_bytes` inverts it.
        """
        if self.count == 0:
            return b""
        if self._blob is not None:
            return self._blob
        if self.bins:
            first = min(self.bins)
            dense = np.zeros(max(self.bins) - first + 1, dtype=np.int64)
            dense[np.fromiter(self.bins, dtype=np.int64) - first] = list(self.bins.values())
        else:
            first, dense = 0, np.zeros(0, dtype=np.int64)
        wide = bool(dense.size) and int(dense.max()) >= 2**32
        header = (
            np.array(
                [_BYTES_VERSION | (_WIDE if wide else 0), self.count, self.zero_count, first],
                dtype="<i8",
            ).tobytes()
            + np.array([self.total], dtype="<f8").tobytes()
        )
        return header + dense.astype("<i8" if wide else "<u4").tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> LatencyHistogram:
        return cls.merge_bytes([data])

    @classmethod
    def merge_bytes(cls, items: Iterable[bytes | memoryview | None]) -> LatencyHistogram:
        """One histogram from many `to_bytes` blobs (empty ones skipped), added as dense
        arrays: the fast path for pages. Same result as merging the histograms one by one."""
        parts = []
        zero = count = 0
        totals = []
        for item in items:
            if not item:
                continue
            raw = bytes(item)
            flags, n, z, first = np.frombuffer(raw, dtype="<i8", count=4).tolist()
            if flags & ~_WIDE != _BYTES_VERSION:
                raise ValueError(f"histogram blob version {flags & ~_WIDE} is not {_BYTES_VERSION}")
            dtype = "<i8" if flags & _WIDE else "<u4"
            counts = np.frombuffer(raw, dtype=dtype, offset=_BYTES_HEADER)
            count += n
            zero += z
            totals.append(float(np.frombuffer(raw, dtype="<f8", count=1, offset=32)[0]))
            if counts.size:
                parts.append((first, counts))
        result = cls()
        if parts:
            low = min(first for first, _ in parts)
            high = max(first + counts.size for first, counts in parts)
            dense = np.zeros(high - low, dtype=np.int64)
            for first, counts in parts:
                dense[first - low : first - low + counts.size] += counts
            occupied = np.flatnonzero(dense)
            result.bins = dict(
                zip((occupied + low).tolist(), dense[occupied].tolist(), strict=True)
            )
        result.zero_count = zero
        result.count = count
        result.total = math.fsum(totals)
        if result.count != result.zero_count + sum(result.bins.values()):
            raise ValueError("histogram count does not match its bins")
        return result

    # -- comparison -----------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LatencyHistogram):
            return NotImplemented
        return (
            self.bins == other.bins
            and self.zero_count == other.zero_count
            and self.count == other.count
            and math.isclose(self.total, other.total, rel_tol=_SUM_REL_TOL)
        )

    # Mutable, so unhashable (defining __eq__ already implies this; stated for readers).
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"LatencyHistogram(count={self.count}, bins={len(self.bins)}, "
            f"zero_count={self.zero_count})"
        )


def _unpickle(blob: bytes, count: int, zero_count: int, total: float) -> LatencyHistogram:
    histogram = LatencyHistogram()
    if count:
        histogram._blob = blob
    histogram.count, histogram.zero_count, histogram.total = count, zero_count, total
    return histogram
