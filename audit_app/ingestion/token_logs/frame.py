"""The canonical request frame: one row per accepted request, the unit importers hand over.

Row-by-row importers build `CanonicalRequest` objects and convert them with
`requests_to_frame`; columnar fast paths build the frame directly. Either way the ingest
service and `audit_app.ingestion.rollups` see the same columns and dtypes.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

import numpy as np
import pandas as pd

from audit_app.ingestion.token_logs.base import CanonicalRequest

STARTED_AT = "started_at"
ENDED_AT = "ended_at"
FIRST_TOKEN_AT = "first_token_at"
WORKLOAD = "workload"
TEAM = "team"
END_USER = "end_user"
CALLER = "caller"
PROVIDER = "provider"
MODEL = "model"
OPERATION = "operation"
POOL = "pool"
STREAMING = "streaming"  # 1 streamed, 0 not, -1 unknown
BATCH_API = "batch_api"
IS_ERROR = "is_error"
INPUT_TOKENS = "input_tokens"
OUTPUT_TOKENS = "output_tokens"
CACHED_INPUT_TOKENS = "cached_input_tokens"
CACHE_CREATION_INPUT_TOKENS = "cache_creation_input_tokens"  # part of input, like cached
COST_NANOS = "cost_nanos"  # the log's own cost in 1e-9 USD; -1 when the log has none
LINE = "line"

TEXT_COLUMNS = (WORKLOAD, TEAM, END_USER, CALLER, PROVIDER, MODEL, OPERATION, POOL)
INT_COLUMNS = (
    INPUT_TOKENS,
    OUTPUT_TOKENS,
    CACHED_INPUT_TOKENS,
    CACHE_CREATION_INPUT_TOKENS,
    COST_NANOS,
    LINE,
)
FRAME_COLUMNS = (
    STARTED_AT,
    ENDED_AT,
    FIRST_TOKEN_AT,
    *TEXT_COLUMNS,
    STREAMING,
    BATCH_API,
    IS_ERROR,
    *INT_COLUMNS,
)
NO_COST = -1
NANOS_PER_USD = Decimal(1_000_000_000)


def cost_to_nanos(cost: Decimal | None) -> int:
    if cost is None:
        return NO_COST
    return int((cost * NANOS_PER_USD).to_integral_value())


def nanos_to_usd(nanos: int) -> Decimal:
    return Decimal(nanos) / NANOS_PER_USD


def requests_to_frame(requests: Sequence[CanonicalRequest]) -> pd.DataFrame:
    """Canonical rows (from the row-by-row importers) as a frame."""
    columns: dict[str, list[object]] = {name: [] for name in FRAME_COLUMNS}
    for r in requests:
        columns[STARTED_AT].append(r.started_at)
        columns[ENDED_AT].append(r.ended_at)
        columns[FIRST_TOKEN_AT].append(r.first_token_at)
        columns[WORKLOAD].append(r.workload)
        columns[TEAM].append(r.team)
        columns[END_USER].append(r.end_user)
        columns[CALLER].append(r.caller)
        columns[PROVIDER].append(r.provider)
        columns[MODEL].append(r.model)
        columns[OPERATION].append(r.operation)
        columns[POOL].append(r.pool)
        columns[STREAMING].append(-1 if r.streaming is None else int(r.streaming))
        columns[BATCH_API].append(r.batch_api)
        columns[IS_ERROR].append(r.status == "error")
        columns[INPUT_TOKENS].append(r.input_tokens)
        columns[OUTPUT_TOKENS].append(r.output_tokens)
        columns[CACHED_INPUT_TOKENS].append(r.cached_input_tokens)
        columns[CACHE_CREATION_INPUT_TOKENS].append(r.cache_creation_input_tokens)
        columns[COST_NANOS].append(cost_to_nanos(r.cost_usd))
        columns[LINE].append(r.line)
    return normalize_frame(pd.DataFrame(columns))


def normalize_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Coerce a frame to the canonical dtypes (UTC timestamps, str, int64, bool)."""
    # The columns are gathered and the frame built once, without copying them again (cheaper
    # than setting twenty columns one by one).
    out: dict[str, pd.Series] = {}
    for name in (STARTED_AT, ENDED_AT, FIRST_TOKEN_AT):
        out[name] = pd.to_datetime(frame[name], utc=True).astype("datetime64[ns, UTC]")
    for name in TEXT_COLUMNS:
        column = frame[name]
        if isinstance(column.dtype, pd.CategoricalDtype):
            # Columnar readers hand over dictionary-encoded text; grouping by codes is far
            # cheaper than hashing strings again, so categoricals stay categoricals.
            if column.isna().any():
                if "" not in column.cat.categories:
                    column = column.cat.add_categories([""])
                column = column.fillna("")
            out[name] = column
        else:
            out[name] = column.fillna("").astype(str)
    out[STREAMING] = frame[STREAMING].astype(np.int8)
    out[BATCH_API] = frame[BATCH_API].astype(bool)
    out[IS_ERROR] = frame[IS_ERROR].astype(bool)
    for name in INT_COLUMNS:
        out[name] = frame[name].astype(np.int64)
    return pd.DataFrame(out, index=frame.index, copy=False).reset_index(drop=True)
