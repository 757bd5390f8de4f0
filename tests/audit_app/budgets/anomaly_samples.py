"""A small token log with one planted anomaly, worked out by hand.

Five weeks from Monday 2026-10-05 to Sunday 2026-11-08 of two workloads on gpt-4o, every
request 100,000 input and 10,000 output tokens with no logged cost, priced from the seeded card
($2.50 / $10 per 1M): $0.25 + $0.10 = $0.35 a request, 110,000 tokens a request.

- chat: 10, 9, 11, 10 requests a day in weeks 1 to 4, then 10 a day in week 5, except
  Wednesday 2026-11-04: 50 requests (×5). Its previous Wednesdays had 10, 11, 9, 10 requests
  (median 10), so it was expected to spend 10 × $0.35 = $3.50 and spent 50 × $0.35 = $17.50:
  a $14.00 change, all volume (tokens per request and price per token did not move).
- batch: a weekly job, 20 requests every Sunday and none on other days: never an anomaly.
"""

from __future__ import annotations

import io
from datetime import date, timedelta
from decimal import Decimal

from audit_app.costs.price_cards import price_cards_seed
from audit_app.derived import derived_refresh
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import Upload

FIRST_DAY = date(2026, 10, 5)
LAST_DAY = date(2026, 11, 8)
PLANTED_DAY = date(2026, 11, 4)
PER_REQUEST_USD = Decimal("0.35")
WEEK_REQUESTS = (10, 9, 11, 10, 10)
EXPECTED_USD = Decimal("3.50")
PLANTED_USD = Decimal("17.50")
CHANGE_USD = Decimal("14.00")
HEADER = "started_at,ended_at,workload,provider,model,input_tokens,output_tokens\n"


def _requests(workload: str, day: date, count: int) -> list[str]:
    return [
        f"{day}T{8 + n // 60:02d}:{n % 60:02d}:00Z,{day}T{8 + n // 60:02d}:{n % 60:02d}:05Z,"
        f"{workload},openai,gpt-4o,100000,10000\n"
        for n in range(count)
    ]


def sample_csv() -> bytes:
    lines = [HEADER]
    for i in range((LAST_DAY - FIRST_DAY).days + 1):
        day = FIRST_DAY + timedelta(days=i)
        chat = 50 if day == PLANTED_DAY else WEEK_REQUESTS[i // 7]
        lines += _requests("chat", day, chat)
        if day.weekday() == 6:
            lines += _requests("batch", day, 20)
    return "".join(lines).encode()


def ingest_sample(*, refresh: bool = False) -> Upload:
    # The gpt-4o card comes from the catalog's data migration, which a test flushing the
    # database (transaction=True) removes for the tests after it: seed the cards again.
    price_cards_seed()
    upload = upload_create(
        source=io.BytesIO(sample_csv()), original_name="anomaly.csv", enqueue=False
    )
    landed = upload_ingest(upload_id=upload.pk)
    if refresh:
        derived_refresh()  # as `manage.py ingest` does before it returns
    return landed
