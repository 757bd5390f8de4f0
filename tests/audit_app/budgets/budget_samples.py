"""A small hand-checked dataset for budgets: a month of logged costs and one GPU pool billed by
AWS, shared by the service, status, API, page and command tests.

Logged costs (USD), by day:
- 2026-10-20 (history, before the period): chat / web / openai / gpt-4o 4.00
- 2026-11-02: chat / web / openai / gpt-4o 10.00
- 2026-11-03: evals / ml / anthropic / claude-sonnet 5.50
- 2026-11-04: sales / web / hosted_vllm / llama-70b on pool "gpu": no cost in the log; the pool
  is billed by AWS 10.00 an hour for hours 00 and 01, so sales gets hour 00 (10.00) and hour 01
  is idle (10.00)
- 2026-11-05: chat 2.25
- 2026-11-12 (after AS_OF): chat 100.00, never counted as spent on AS_OF

So on AS_OF (2026-11-10), November spent: all 37.75 (idle included); team web 22.25, ml 5.50;
workload chat 12.25; model gpt-4o 12.25; provider openai 12.25, anthropic 5.50, hosted_vllm
20.00 (its GPU share 10.00 + the idle hour of the pool that served it), aws 20.00 (the pool it
bills: sales' share and the idle hour).
"""

from __future__ import annotations

import io
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import BillingCharge, ServingPool, Upload

AS_OF = date(2026, 11, 10)
PERIOD = (date(2026, 11, 1), date(2026, 11, 30))
HEADER = (
    b"started_at,ended_at,workload,team,provider,model,input_tokens,output_tokens,cost_usd,pool\n"
)
ROWS = (
    b"2026-10-20T10:00:00Z,2026-10-20T10:00:01Z,chat,web,openai,gpt-4o,100,10,4.00,\n"
    b"2026-11-02T10:00:00Z,2026-11-02T10:00:01Z,chat,web,openai,gpt-4o,100,10,10.00,\n"
    b"2026-11-03T10:00:00Z,2026-11-03T10:00:01Z,evals,ml,anthropic,claude-sonnet,100,10,5.50,\n"
    b"2026-11-04T00:05:00Z,2026-11-04T00:05:02Z,sales,web,hosted_vllm,llama-70b,2000,1000,,gpu\n"
    b"2026-11-05T10:00:00Z,2026-11-05T10:00:01Z,chat,web,openai,gpt-4o,100,10,2.25,\n"
    b"2026-11-12T10:00:00Z,2026-11-12T10:00:01Z,chat,web,openai,gpt-4o,100,10,100.00,\n"
)
# Spend per day of the period up to AS_OF, and before it, for each scope (hand-computed above).
NOVEMBER = {
    ("all", ""): {2: "10.00", 3: "5.50", 4: "20.00", 5: "2.25"},
    ("team", "web"): {2: "10.00", 4: "10.00", 5: "2.25"},
    ("team", "ml"): {3: "5.50"},
    ("workload", "chat"): {2: "10.00", 5: "2.25"},
    ("model", "gpt-4o"): {2: "10.00", 5: "2.25"},
    ("provider", "openai"): {2: "10.00", 5: "2.25"},
    ("provider", "anthropic"): {3: "5.50"},
    ("provider", "hosted_vllm"): {4: "20.00"},
    ("provider", "aws"): {4: "20.00"},
}
OCTOBER_20 = {
    scope: "4.00"
    for scope in (
        ("all", ""),
        ("team", "web"),
        ("workload", "chat"),
        ("model", "gpt-4o"),
        ("provider", "openai"),
    )
}


def expected_daily(kind: str, value: str, start: date, end: date) -> dict[date, Decimal]:
    """The scope's spend on each day start..end (end at most AS_OF), from the tables above."""
    assert end <= AS_OF
    out = {}
    day = start
    while day <= end:
        if day == date(2026, 10, 20):
            out[day] = Decimal(OCTOBER_20.get((kind, value), "0"))
        elif day.month == 11:
            out[day] = Decimal(NOVEMBER[(kind, value)].get(day.day, "0"))
        else:
            out[day] = Decimal(0)
        day += timedelta(days=1)
    return out


def ingest_budget_sample() -> None:
    upload = upload_create(
        source=io.BytesIO(HEADER + ROWS), original_name="budgets.csv", enqueue=False
    )
    upload_ingest(upload_id=upload.pk)
    bill = Upload.objects.create(
        kind=Upload.Kind.BILLING,
        original_name="bill.csv",
        sha256="b" * 64,
        status=Upload.Status.SUCCEEDED,
        file="x",
    )
    start = datetime(2026, 11, 4, 0, tzinfo=UTC)
    for hour in range(2):
        BillingCharge.objects.create(
            upload=bill,
            provider="aws",
            charge_category="Usage",
            currency="USD",
            period_start=start + timedelta(hours=hour),
            period_end=start + timedelta(hours=hour + 1),
            billed_cost=Decimal("10.00"),
            resource_id="i-1",
            meter_kind="gpu_instance",
            line=2 + hour,
        )
    ServingPool.objects.create(name="gpu", resource_ids=["i-1"])


def ingest_after_the_data(monkeypatch: Any) -> None:
    """The sample, read on 1 December (after its last day, 12 November, which is then the day
    counted up to), as the pages and the API see it."""
    from datetime import UTC, datetime

    from django.utils import timezone

    monkeypatch.setattr(timezone, "now", lambda: datetime(2026, 12, 1, 9, tzinfo=UTC))
    ingest_budget_sample()


def logged_in(user: Any) -> Any:
    """A test client signed in as ``user``."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client
