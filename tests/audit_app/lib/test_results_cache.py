"""The results cache: a read is computed once per data version, and every change to what it is
computed from (an upload landing or deleted, a price card or serving pool edited) is seen."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from django.core.cache import caches
from django.db import transaction
from django.test import override_settings

from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create, upload_delete
from audit_app.lib import results_cache
from audit_app.models import DataVersion, PriceCard, ServingPool
from audit_app.reporting.filters import SpendFilters
from audit_app.reporting.spend import spend_breakdown, workload_list
from tests.audit_app.ingestion.ingest_samples import EXPECTED_TOTAL_COST, SAMPLE_CSV
from tests.support.processes import REPO_ROOT, child_env

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
    # A pool serving the unpriced model makes its tokens self-hosted: priced by GPU bills, so
    # no longer unpriced and no token cost.
    with django_capture_on_commit_callbacks(execute=True):
        ServingPool.objects.create(name="gpu", models_served=["my-finetune"])
    pooled = {row.key: row for row in spend_breakdown(group_by="model", filters=NOVEMBER).rows}
    assert pooled["my-finetune"].unpriced_requests == 0
    assert pooled["my-finetune"].estimated_cost_usd == 0
    # A card for the provider's model: a hosted API prices it, so the pool no longer takes it
    # (the provider rule). 100 in / 10 out at $1 / $2 per 1M = $0.00012.
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


def test_equal_version_numbers_with_other_data_never_share_results(cache_on: Any) -> None:
    # A database restored from a backup (or another database on the same cache) can reach the
    # same version number with other data: keys hold the random token, not the number.
    results_cache.data_changed()
    version = results_cache.data_version()
    assert results_cache.cached("kind", "key", lambda: "first data") == "first data"
    DataVersion.objects.filter(pk=1).update(token=results_cache.new_token())  # other data...
    assert results_cache.data_version() == version  # ...at the same version number
    assert results_cache.cached("kind", "key", lambda: "other data") == "other data"


def test_every_database_gets_its_own_token_and_each_change_a_new_one(cache_on: Any) -> None:
    first = results_cache.data_token()
    assert len(first) == 32  # given by the migration when the test database was created
    results_cache.data_changed()
    second = results_cache.data_token()
    assert second != first and len(second) == 32
    DataVersion.objects.all().delete()  # a flushed database: a new row, a new token
    assert results_cache.data_token() not in ("", first, second)


@pytest.mark.slow
def test_two_databases_from_one_checkout_read_their_own_totals(tmp_path: Any) -> None:
    """Two SQLite databases, one checkout, one file-based results cache, the same sequence of
    changes (so the same version numbers), different data: each CLI reads its own totals."""
    shared_cache = tmp_path / "results-cache"

    def manage(name: str, *args: str) -> str:
        var = tmp_path / name
        env = child_env(
            {
                "DJANGO_SETTINGS_MODULE": "config.settings.base",
                "DJANGO_VAR_DIR": str(var),
                "DATABASE_URL": f"sqlite:///{var / 'db.sqlite3'}",
                "RESULTS_CACHE_URL": "",
                "RESULTS_CACHE_DIR": str(shared_cache),
                "CELERY_TASK_ALWAYS_EAGER": "true",
                "DERIVED_REFRESH_ON_CHANGE": "false",
                "DJANGO_DEBUG": "true",
            }
        )
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    # Database "a" holds the sample; "b" the same requests with every token count doubled.
    doubled = SAMPLE_CSV.replace(b"1000,", b"2000,").replace(b"500,", b"1000,")
    assert doubled != SAMPLE_CSV
    for name, content in (("a", SAMPLE_CSV), ("b", doubled)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "log.csv").write_bytes(content)
        manage(name, "migrate", "--noinput")
        manage(name, "ingest", str(tmp_path / name / "log.csv"), "--json")
    totals = {}
    for name in ("a", "b", "a", "b"):  # the second reads come from the shared cache
        rows = json.loads(manage(name, "workloads", "--json"))
        tokens = sum(r["input_tokens"] + r["output_tokens"] for r in rows)
        totals.setdefault(name, set()).add(tokens)
    version = {name: _version_of(tmp_path / name / "db.sqlite3") for name in ("a", "b")}
    assert version["a"] == version["b"]  # the same version number...
    assert len(totals["a"]) == len(totals["b"]) == 1  # ...each database always its own data
    assert totals["a"] != totals["b"]
    assert list(shared_cache.iterdir())  # and both did go through the one cache


def _version_of(path: Any) -> int:
    import sqlite3

    with sqlite3.connect(path) as connection:
        [(number,)] = connection.execute("select version from audit_app_dataversion").fetchall()
    return int(number)


def test_threads_missing_the_same_entry_compute_it_once(cache_on: Any, monkeypatch: Any) -> None:
    # A burst of first visitors: the first computes, the others wait for its result. (The
    # token is fixed: threads other than the test's do not see its database transaction.)
    monkeypatch.setattr(results_cache, "data_token", lambda: "burst-token")
    started, release = threading.Event(), threading.Event()
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        started.set()
        release.wait(10)
        return 42

    results: list[int] = []

    def visit() -> None:
        results.append(results_cache.cached("kind", "shared key", compute))

    first = threading.Thread(target=visit)
    first.start()
    assert started.wait(10)
    others = [threading.Thread(target=visit) for _ in range(5)]
    for thread in others:
        thread.start()
    release.set()
    for thread in [first, *others]:
        thread.join(10)
    assert results == [42] * 6
    assert len(calls) == 1
    assert results_cache._computing == {}  # nothing left behind


def test_a_failed_computation_lets_the_next_thread_compute(cache_on: Any) -> None:
    def fail() -> int:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        results_cache.cached("kind", "failing key", fail)
    assert results_cache._computing == {}
    assert results_cache.cached("kind", "failing key", lambda: 7) == 7
