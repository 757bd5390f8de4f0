"""Cardinality limits at ingest: past them names fold into one bucket and totals stay exact.

Small limits (override_settings) and a generic CSV whose tokens per workload are chosen so the
heaviest are obvious: w1 has 5,000 input tokens per row, w2 4,000, ... w5 1,000; each row has
10 output tokens and logs $0.01.
"""

from __future__ import annotations

import io
from decimal import Decimal
from typing import Any

import pytest
from django.db.models import Sum
from django.test import Client, override_settings
from django.urls import reverse

from audit_app.ingestion.cardinality import TEAM_BUCKET, WORKLOAD_BUCKET
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import DailyRollup, HourlyRollup, Upload, Workload, WorkloadDay
from audit_app.tasks import ingest_upload

pytestmark = pytest.mark.django_db

HEADER = (
    "started_at,ended_at,first_token_at,workload,team,end_user,caller,provider,model,"
    "operation,streaming,batch_api,input_tokens,output_tokens,cached_input_tokens,cost_usd,"
    "status,request_id,pool\n"
)


def _csv(rows: list[tuple[str, str, int]], *, tag: str = "") -> bytes:
    """(workload, team, input tokens) per row, one minute apart on 2026-11-02."""
    lines = [HEADER]
    for i, (workload, team, tokens) in enumerate(rows):
        hour, minute = divmod(i, 60)
        at = f"2026-11-02T{hour:02d}:{minute:02d}"
        lines.append(
            f"{at}:00Z,{at}:01Z,,{workload},{team},u{i},c{i % 3},openai,gpt-4o,chat,false,false,"
            f"{tokens},10,0,0.01,success,{tag}r{i},\n"
        )
    return "".join(lines).encode()


# Two rows each of w1..w5 (so 10 rows), in an order that is not by weight.
ROWS = [(f"w{n}", f"t{n}", (6 - n) * 1000) for _ in range(2) for n in (3, 5, 1, 4, 2)]


def _ingest(content: bytes, *, name: str = "log.csv") -> Upload:
    upload = upload_create(source=io.BytesIO(content), original_name=name, enqueue=False)
    return upload_ingest(upload_id=upload.pk)


def _input_by_workload(upload: Upload) -> dict[str, int]:
    return {
        row["workload"]: row["n"]
        for row in DailyRollup.objects.filter(upload=upload)
        .values("workload")
        .annotate(n=Sum("input_tokens"))
        .order_by()
    }


@override_settings(MAX_WORKLOADS_PER_UPLOAD=3)
def test_past_the_per_upload_limit_the_lightest_fold_and_totals_stay() -> None:
    upload = _ingest(_csv(ROWS))
    assert upload.status == Upload.Status.SUCCEEDED
    # w1 and w2 keep their names; w3 (3,000), w4 (2,000), w5 (1,000) x 2 rows fold.
    assert _input_by_workload(upload) == {"w1": 10_000, "w2": 8_000, WORKLOAD_BUCKET: 12_000}
    assert sorted(Workload.objects.values_list("name", flat=True)) == [WORKLOAD_BUCKET, "w1", "w2"]
    assert upload.input_tokens == 30_000
    assert upload.output_tokens == 100
    assert upload.requests == 10
    assert upload.logged_cost_usd == Decimal("0.1")
    hourly = HourlyRollup.objects.filter(upload=upload).aggregate(
        i=Sum("input_tokens"), r=Sum("requests"), c=Sum("logged_cost_usd")
    )
    assert hourly == {"i": 30_000, "r": 10, "c": Decimal("0.1")}
    days = {d.workload: d.requests for d in WorkloadDay.objects.filter(upload=upload)}
    assert days == {"w1": 2, "w2": 2, WORKLOAD_BUCKET: 6}
    assert upload.notes == [
        "3 of the 5 workloads in this file were counted together as the workload "
        f"“{WORKLOAD_BUCKET}” (the ones with the fewest tokens): an upload may name at most 3 "
        "workloads (MAX_WORKLOADS_PER_UPLOAD) and the database may hold at most 20,000 "
        "(MAX_WORKLOADS_TOTAL; 0 were known before this upload). Requests, tokens and cost "
        "are all counted; only those names are lost."
    ]


@override_settings(MAX_WORKLOADS_PER_UPLOAD=100, MAX_WORKLOADS_TOTAL=4)
def test_the_total_limit_counts_the_workloads_already_known() -> None:
    Workload.objects.create(name="w5")
    Workload.objects.create(name="elsewhere")
    upload = _ingest(_csv(ROWS))
    # Room for 2 new rows: the bucket and w1, the heaviest new name; w5 is known.
    assert _input_by_workload(upload) == {"w1": 10_000, "w5": 2_000, WORKLOAD_BUCKET: 18_000}
    assert Workload.objects.count() == 4
    assert "(MAX_WORKLOADS_TOTAL; 2 were known before this upload)" in upload.notes[0]


@override_settings(MAX_TEAMS_PER_UPLOAD=2)
def test_teams_fold_past_their_limit() -> None:
    upload = _ingest(_csv(ROWS))
    teams = {
        row["team"]: row["n"]
        for row in DailyRollup.objects.filter(upload=upload)
        .values("team")
        .annotate(n=Sum("input_tokens"))
        .order_by()
    }
    assert teams == {"t1": 10_000, TEAM_BUCKET: 20_000}
    assert len(upload.notes) == 1
    assert upload.notes[0].startswith("4 of the 5 teams in this file were counted together")


def test_under_the_limits_nothing_changes() -> None:
    upload = _ingest(_csv(ROWS))
    assert _input_by_workload(upload) == {
        "w1": 10_000,
        "w2": 8_000,
        "w3": 6_000,
        "w4": 4_000,
        "w5": 2_000,
    }
    assert upload.notes == []


@override_settings(MAX_WORKLOADS_PER_UPLOAD=3, INGEST_FANOUT_MIN_BYTES=1, INGEST_FANOUT_PARTS=3)
def test_a_fanned_out_upload_folds_over_the_whole_file_not_per_part() -> None:
    # Part by part the heaviest differ: w5 rows come first and alone, w1 and w2 last.
    rows = [("w5", "t", 1000)] * 6 + [("w4", "t", 2000)] * 3 + [("w1", "t", 9000)] * 3
    rows += [("w2", "t", 8000)] * 3
    upload = upload_create(source=io.BytesIO(_csv(rows)), original_name="log.csv", enqueue=False)
    ingest_upload.delay(upload.pk)  # eager: the parts run inline and the last one lands
    upload.refresh_from_db()
    assert upload.status == Upload.Status.SUCCEEDED
    assert _input_by_workload(upload) == {"w1": 27_000, "w2": 24_000, WORKLOAD_BUCKET: 12_000}
    assert upload.input_tokens == 63_000


@override_settings(MAX_WORKLOADS_PER_UPLOAD=3)
def test_the_upload_page_and_api_show_the_note(client: Client, finops_user: Any) -> None:
    upload = _ingest(_csv(ROWS))
    client.force_login(finops_user)
    body = client.get(reverse("api-upload-detail", args=[upload.pk])).json()
    assert body["notes"] == upload.notes
    page = client.get(reverse("upload-detail", args=[upload.pk])).content.decode()
    assert "3 of the 5 workloads in this file were counted together" in page
