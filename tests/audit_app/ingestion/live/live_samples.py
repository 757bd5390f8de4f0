"""Live records for the landing tests, written as a generic log so the same records can also be
ingested as a file, and a helper that keeps them as a receiver would (`live_receive`) at a
chosen time of receipt.

The records, by hand (all on 2026-12-01, provider openai; "sent" is the batch that carries
them, a re-sent record has the same request id):

| id  | started | workload | model       | in    | out | cached | logged cost | end user |
|-----|---------|----------|-------------|-------|-----|--------|-------------|----------|
| t/1 | 09:10   | chat     | gpt-4o-mini | 1,000 | 200 | 100    | 0.000270    | u1       |
| t/2 | 09:40   | chat     | gpt-4o-mini | 2,000 | 100 | 0      | 0.000360    | u1       |
| t/3 | 10:05   | evals    | gpt-4o      | 500   | 50  | 0      | (none)      |          |
| t/4 | 10:20   | chat     | gpt-4o-mini | 300   | 30  | 0      | 0.000063    | u2       |
| t/5 | 09:50   | chat     | gpt-4o-mini | 400   | 40  | 0      | 0.000084    | u3       |

Batch A holds t/1, t/2, t/3; batch B holds t/2, t/3 again and t/4, t/5. Counted once each:
5 requests, 4,200 input tokens (100 cached), 420 output tokens, $0.000777 logged. Per hour:
09:00 chat 3 requests (t/1, t/2, t/5: 3,400 in, 340 out, $0.000714), 10:00 chat 1 (t/4) and
evals 1 (t/3, unlogged). t/5 lands in the second pass into the 09:00 chat row the first made.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal

from audit_app.ingestion import token_logs as importers
from audit_app.ingestion.live.receive import live_receive
from audit_app.ingestion.reading import RowReject
from audit_app.ingestion.token_logs.base import CanonicalRequest
from audit_app.models import LiveBatch

HEADER = (
    "started_at,ended_at,first_token_at,workload,team,end_user,caller,provider,model,operation,"
    "streaming,input_tokens,output_tokens,cached_input_tokens,cost_usd,request_id\n"
)
ROWS = {
    "t/1": "2026-12-01T09:10:00Z,2026-12-01T09:10:02Z,2026-12-01T09:10:00.500Z,chat,support,u1,"
    "svc-a,openai,gpt-4o-mini,chat,true,1000,200,100,0.000270,t/1",
    "t/2": "2026-12-01T09:40:00Z,2026-12-01T09:40:03Z,2026-12-01T09:40:00.800Z,chat,support,u1,"
    "svc-a,openai,gpt-4o-mini,chat,true,2000,100,0,0.000360,t/2",
    "t/3": "2026-12-01T10:05:00Z,2026-12-01T10:05:04Z,,evals,ml,,svc-e,openai,gpt-4o,chat,false,"
    "500,50,0,,t/3",
    "t/4": "2026-12-01T10:20:00Z,2026-12-01T10:20:01Z,2026-12-01T10:20:00.250Z,chat,support,u2,"
    "svc-a,openai,gpt-4o-mini,chat,true,300,30,0,0.000063,t/4",
    "t/5": "2026-12-01T09:50:00Z,2026-12-01T09:50:02.500Z,2026-12-01T09:50:00.300Z,chat,support,"
    "u3,svc-b,openai,gpt-4o-mini,chat,true,400,40,0,0.000084,t/5",
}
BATCH_A = ("t/1", "t/2", "t/3")
BATCH_B = ("t/2", "t/3", "t/4", "t/5")
ALL = ("t/1", "t/2", "t/3", "t/4", "t/5")
TOTAL_REQUESTS = 5
TOTAL_INPUT = 4200
TOTAL_CACHED = 100
TOTAL_OUTPUT = 420
TOTAL_COST = Decimal("0.000777")


def log_text(ids: Sequence[str]) -> bytes:
    """The records as a generic CSV log."""
    return (HEADER + "".join(ROWS[i] + "\n" for i in ids)).encode()


def records(ids: Sequence[str]) -> list[CanonicalRequest]:
    """The records as the generic importer reads them: what a receiver hands over."""
    out: list[CanonicalRequest] = []
    for chunk in importers.read_requests(
        io.BytesIO(log_text(ids)), format="generic", chunk_rows=1000
    ):
        assert not chunk.rejects
        out.extend(chunk.requests)
    return out


def receive(
    ids: Sequence[str] | Sequence[CanonicalRequest],
    *,
    at: datetime,
    source: str = "otlp",
    rejects: Sequence[RowReject] = (),
    ignored: int = 0,
) -> LiveBatch:
    """Keep the records as one received request at ``at`` (what `live_receive` stores)."""
    requests = records(ids) if ids and isinstance(ids[0], str) else list(ids)  # type: ignore[arg-type]
    received = live_receive(
        source=source,
        requests=requests,  # type: ignore[arg-type]
        rows_read=len(requests) + len(rejects) + ignored,
        rejects=rejects,
        ignored=ignored,
    )
    LiveBatch.objects.filter(pk=received.batch_id).update(received_at=at)
    return LiveBatch.objects.get(pk=received.batch_id)
