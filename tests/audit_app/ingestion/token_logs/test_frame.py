"""`frame.normalize_frame`: whatever dtypes a reader hands over, the canonical frame comes out."""

from __future__ import annotations

import numpy as np
import pandas as pd

from audit_app.ingestion.token_logs import frame as canonical


def _mixed_input() -> pd.DataFrame:
    """Two rows in the loose dtypes readers produce, on an index that is not 0..n-1."""
    columns: dict[str, object] = {
        canonical.STARTED_AT: ["2025-03-03T00:00:02Z", "2025-03-03T01:00:00+01:00"],
        canonical.ENDED_AT: pd.to_datetime(["2025-03-03 00:00:06", "2025-03-03 00:00:09"]),
        canonical.FIRST_TOKEN_AT: [None, "2025-03-03T00:00:01Z"],
        canonical.WORKLOAD: pd.Categorical(["digest", None]),
        canonical.TEAM: ["data", None],
        canonical.END_USER: pd.Categorical(["u1", "u2"]),
        canonical.CALLER: ["key-a", "key-b"],
        canonical.PROVIDER: ["openai", "openai"],
        canonical.MODEL: ["gpt-4o-mini", "gpt-4o"],
        canonical.OPERATION: ["chat", "chat"],
        canonical.POOL: [None, None],
        canonical.STREAMING: [1, -1],
        canonical.BATCH_API: [0, 1],
        canonical.IS_ERROR: [False, True],
        canonical.INPUT_TOKENS: [10.0, 20.0],
        canonical.OUTPUT_TOKENS: np.array([3, 4], dtype=np.int32),
        canonical.CACHED_INPUT_TOKENS: [0, 5],
        canonical.CACHE_CREATION_INPUT_TOKENS: [0, 0],
        canonical.COST_NANOS: [1_341_000, -1],
        canonical.LINE: [7, 8],
    }
    return pd.DataFrame(columns, index=[40, 41])


def test_normalize_frame_gives_the_canonical_columns_dtypes_and_values() -> None:
    out = canonical.normalize_frame(_mixed_input())

    assert list(out.columns) == list(canonical.FRAME_COLUMNS)
    assert list(out.index) == [0, 1]
    utc = pd.DatetimeTZDtype("ns", "UTC")
    for name in (canonical.STARTED_AT, canonical.ENDED_AT, canonical.FIRST_TOKEN_AT):
        assert out[name].dtype == utc, name
    # 01:00 at +01:00 is midnight UTC; naive times are read as UTC.
    assert list(out[canonical.STARTED_AT]) == [
        pd.Timestamp("2025-03-03 00:00:02", tz="UTC"),
        pd.Timestamp("2025-03-03 00:00:00", tz="UTC"),
    ]
    assert out[canonical.ENDED_AT].iloc[1] == pd.Timestamp("2025-03-03 00:00:09", tz="UTC")
    assert pd.isna(out[canonical.FIRST_TOKEN_AT].iloc[0])
    # Missing text reads as "", categorical text stays categorical (with "" added).
    assert isinstance(out[canonical.WORKLOAD].dtype, pd.CategoricalDtype)
    assert list(out[canonical.WORKLOAD]) == ["digest", ""]
    assert isinstance(out[canonical.END_USER].dtype, pd.CategoricalDtype)
    assert list(out[canonical.TEAM]) == ["data", ""]
    assert list(out[canonical.POOL]) == ["", ""]
    assert out[canonical.STREAMING].dtype == np.int8
    assert list(out[canonical.STREAMING]) == [1, -1]
    assert out[canonical.BATCH_API].dtype == bool
    assert list(out[canonical.BATCH_API]) == [False, True]
    assert out[canonical.IS_ERROR].dtype == bool
    for name in canonical.INT_COLUMNS:
        assert out[name].dtype == np.int64, name
    assert list(out[canonical.INPUT_TOKENS]) == [10, 20]
    assert list(out[canonical.OUTPUT_TOKENS]) == [3, 4]
    assert list(out[canonical.COST_NANOS]) == [1_341_000, -1]
    assert list(out[canonical.LINE]) == [7, 8]


def test_normalize_frame_of_no_rows_keeps_every_column() -> None:
    out = canonical.normalize_frame(_mixed_input().iloc[:0])

    assert len(out) == 0
    assert list(out.columns) == list(canonical.FRAME_COLUMNS)
    assert out[canonical.INPUT_TOKENS].dtype == np.int64


def test_normalize_frame_reads_rows_by_position_whatever_their_index() -> None:
    """Frames joined from chunks repeat index labels; the columns are not aligned on them."""
    mixed = _mixed_input()
    out = canonical.normalize_frame(pd.concat([mixed, mixed.iloc[::-1]]))

    assert list(out.index) == [0, 1, 2, 3]
    assert list(out[canonical.LINE]) == [7, 8, 8, 7]
    assert list(out[canonical.WORKLOAD]) == ["digest", "", "", "digest"]
    assert list(out[canonical.STARTED_AT].dt.hour) == [0, 0, 0, 0]
    assert list(out[canonical.STARTED_AT].dt.second) == [2, 0, 0, 2]
