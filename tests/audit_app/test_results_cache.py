"""The results cache: a read is computed once per data version, and every change to what it is
computed from (an upload landing or deleted, a price card or serving pool edited) is seen."""

from __future__ import annotations

import io
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from django.core.cache import caches
from django.db import transaction
from django.test import override_settings

from audit_app import results_cache
from audit_app.filters import SpendFilters
from audit_app.models import DataVersion, PriceCard, ServingPool
from audit_app.selectors_spend import spend_breakdown, workload_list
from audit_app.services.ingest import upload_ingest
from audit_app.services.uploads import upload_create, upload_delete
from tests.audit_app.ingest_samples import EXPECTED_TOTAL_COST, SAMPLE_CSV

pytestmark = pytest.mark.django_db

LOCMEM = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "results": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "results-cache-tests",
    },
}

NOVEMBER = SpendFilters(start=date(2026, 11, 1), end=date(2026, 11, 30))  # the sample's days


@pytest.fixture
def cache_on() -> Any:
    with override_settings(CACHES=LOCMEM):
        caches["results"].clear()
        yield caches["results"]
        caches["results"].clear()


def _ingest(content: bytes, name: str, capture: Any) -> Any:
    with capture(execute=True):
        upload = upload_create(source=io.BytesIO(content), original_name=name)
        return upload_ingest(upload_id=upload.pk)


def test_cached_computes_once_per_version(cache_on: Any, django_capture_on_commit_callbacks):
    calls = []

    def compute() -> int:
        calls.append(1)
        return len(calls)

    assert results_cache.cached("kind", "key", compute) == 1
    assert results_cache.cached("kind", "key", compute) == 1  # served from the cache
    assert results_cache.cached("kind", "other key", compute) == 2
    results_cache.data_changed()
    assert results_cache.cached("kind", "key", compute) == 3  # a new version recomputes


def test_the_version_moves_with_the_data_transaction(cache_on: Any) -> None:
    before = results_cache.data_version()

    class Rollback(Exception):
        pass

    with pytest.raises(Rollback), transaction.atomic():
        results_cache.data_changed()
        assert results_cache.data_version() == before + 1
        raise Rollback  # the change is rolled back, and so is the version
    assert results_cache.data_version() == before
    DataVersion.objects.all().delete()  # as after a flush: the next change recreates the row
    results_cache.data_changed()
    assert results_cache.data_version() == 1


def test_a_queued_upload_does_not_change_the_version(cache_on: Any) -> None:
    before = results_cache.data_version()
    upload_create(source=io.BytesIO(SAMPLE_CSV), original_name="q.csv", enqueue=False)
    assert results_cache.data_version() == before


def test_landing_and_deleting_uploads_are_seen(
    cache_on: Any, django_capture_on_commit_callbacks: Any
) -> None:
    assert spend_breakdown(group_by="provider", filters=NOVEMBER).total_usd == 0
    upload = _ingest(SAMPLE_CSV, "a.csv", django_capture_on_commit_callbacks)
    assert spend_breakdown(group_by="provider", filters=NOVEMBER).total_usd == EXPECTED_TOTAL_COST
    names = [w.name for w in workload_list(NOVEMBER)]
    assert sorted(names) == ["chat", "evals", "tool"]
    with django_capture_on_commit_callbacks(execute=True):
        upload_delete(upload=upload, user=None)
    assert spend_breakdown(group_by="provider", filters=NOVEMBER).total_usd == 0
    assert workload_list(NOVEMBER) == []


def test_price_card_and_pool_edits_are_seen(
    cache_on: Any, django_capture_on_commit_callbacks: Any
) -> None:
    _ingest(SAMPLE_CSV, "a.csv", django_capture_on_commit_callbacks)
    before = spend_breakdown(group_by="model", filters=NOVEMBER)
    by_model = {row.key: row for row in before.rows}
    assert by_model["my-finetune"].unpriced_requests == 1
    # A card for the unpriced model: 100 in / 10 out at $1 / $2 per 1M = $0.00012.
    with django_capture_on_commit_callbacks(execute=True):
        PriceCard.objects.create(
            provider="openai",
            model="my-finetune",
            input_usd_per_mtok=Decimal(1),
            output_usd_per_mtok=Decimal(2),
            valid_from=date(2026, 1, 1),
        )
    after = {row.key: row for row in spend_breakdown(group_by="model", filters=NOVEMBER).rows}
    assert after["my-finetune"].unpriced_requests == 0
    assert after["my-finetune"].estimated_cost_usd == Decimal("0.00012")
    # Serving gpt-4o from a pool makes its tokens self-hosted: no card price any more.
    with django_capture_on_commit_callbacks(execute=True):
        ServingPool.objects.create(name="gpu", models_served=["gpt-4o"])
    pooled = {row.key: row for row in spend_breakdown(group_by="model", filters=NOVEMBER).rows}
    assert pooled["gpt-4o"].estimated_cost_usd == 0
    assert after["gpt-4o"].estimated_cost_usd == Decimal("0.0075")


def test_a_broken_cache_still_answers(django_capture_on_commit_callbacks: Any) -> None:
    broken = {
        **LOCMEM,
        "results": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens on port 1
        },
    }
    _ingest(SAMPLE_CSV, "a.csv", django_capture_on_commit_callbacks)
    with override_settings(CACHES=broken):
        assert (
            spend_breakdown(group_by="provider", filters=NOVEMBER).total_usd == EXPECTED_TOTAL_COST
        )
