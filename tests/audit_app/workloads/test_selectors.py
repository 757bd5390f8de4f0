"""What the workloads pages show, read by `audit_app.workloads.selectors` on a hand-checked
upload (three workloads: chat, evals, tool)."""

from __future__ import annotations

import io
from decimal import Decimal
from typing import Any

import pytest
from django.http import Http404

from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import Workload, WorkloadOverride
from audit_app.reporting.filters import parse_filters
from audit_app.workloads.selectors import workload_page, workload_table
from tests.audit_app.ingestion.ingest_samples import SAMPLE_CSV

pytestmark = pytest.mark.django_db
FILTERS = {"start": "2026-11-01", "end": "2026-11-03"}


@pytest.fixture
def sample_upload(db: Any) -> Any:
    upload = upload_create(source=io.BytesIO(SAMPLE_CSV), original_name="s.csv", enqueue=False)
    return upload_ingest(upload_id=upload.pk)


def test_the_table_sorts_and_adds_up(sample_upload: Any) -> None:
    filters = parse_filters(FILTERS)
    by_spend = workload_table(filters, sort="-spend")
    spends = [w.spend_usd for w in by_spend.workloads]
    assert spends == sorted(spends, reverse=True)
    assert by_spend.attributed_usd == sum(spends, Decimal(0))
    assert by_spend.total_usd == by_spend.attributed_usd + by_spend.idle_gpu_usd
    by_name = workload_table(filters, sort="name")
    assert [w.name for w in by_name.workloads] == ["chat", "evals", "tool"]
    assert [w.name for w in workload_table(filters, sort="-name").workloads] == [
        "tool",
        "evals",
        "chat",
    ]


def test_one_workload_page(sample_upload: Any, engineer_user: Any) -> None:
    chat = Workload.objects.get(name="chat")
    WorkloadOverride.objects.create(
        workload=chat, workload_class="async", reason="nightly", user=engineer_user
    )
    page = workload_page(chat.pk, parse_filters(FILTERS))
    assert page.workload == chat
    assert page.effective_class == "async"
    assert page.override is not None and page.override.reason == "nightly"
    assert page.stats is not None
    assert (page.stats.requests, page.stats.input_tokens, page.stats.output_tokens) == (
        2,
        3000,
        600,
    )
    assert page.daily.requests == [0, 2, 0]
    assert {row.key for row in page.models.rows} == set(page.stats.models)
    assert sum(map(sum, page.hour_of_week)) == 2
    assert page.pools == []  # no GPU bill in the sample


def test_a_window_without_requests_has_no_stats(sample_upload: Any) -> None:
    chat = Workload.objects.get(name="chat")
    page = workload_page(chat.pk, parse_filters({"start": "2026-10-01", "end": "2026-10-02"}))
    assert page.stats is None


def test_an_unknown_workload_is_404(db: Any) -> None:
    with pytest.raises(Http404):
        workload_page(999_999, parse_filters(FILTERS))
