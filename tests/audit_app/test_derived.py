"""Derived results are never stale: every change to an input is recorded once
(`results_cache.data_changed`) and asks for one refresh once it commits, the refresh task
(`audit_app.derived.derived_refresh`) brings classes and recommendations up to date, and
`manage.py recommend` right after changes nothing; `manage.py ingest` returns with them fresh
and the task its landing queued then does nothing; a refresh that sees the data change mid-way
stops without writing.

The stopping is deterministic: a step of the refresh is wrapped so that the data version moves
right after it (as when an upload lands or is deleted meanwhile); no timing is involved."""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from django.core.management import call_command

from audit_app import derived
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create, upload_delete
from audit_app.lib import derived_state, task_queue
from audit_app.lib.results_cache import current_version, data_changed, data_token
from audit_app.models import (
    DerivedState,
    HardwareTarget,
    PriceCard,
    Recommendation,
    ServingPool,
    ThroughputAssumption,
    Upload,
    Workload,
    WorkloadClassification,
)
from audit_app.workloads import services as classification
from audit_app.workloads.services import workload_override
from tests.support.paths import FIXTURES_DIR

pytestmark = pytest.mark.django_db

# 20 requests x (10,000 input + 1,000 output) tokens of gpt-4o-mini at $0.15 / $0.60 per 1M
# = $0.042 in one day; a month is x 730 / 24 = $1.2775. The batch tier halves it.
EVALS = "started_at,ended_at,workload,provider,model,input_tokens,output_tokens\n" + "".join(
    f"2026-11-02T02:{i:02d}:00Z,2026-11-02T02:{i:02d}:30Z,evals,openai,gpt-4o-mini,10000,1000\n"
    for i in range(20)
)
BILL = FIXTURES_DIR / "billing" / "focus-1.3_providers.csv"
REFRESH = task_queue.REFRESH_DERIVED


@pytest.fixture(autouse=True)
def refresh_on_change(settings: Any) -> None:
    settings.DERIVED_REFRESH_ON_CHANGE = True
    settings.RECOMMENDATION_MIN_SAVINGS_USD = 0  # the sample saves $0.64 a month


def _ingest(content: bytes, name: str, kind: str = "token_log") -> Any:
    upload = upload_create(source=io.BytesIO(content), original_name=name, kind=kind)
    return upload_ingest(upload_id=upload.pk)


def snapshot() -> list[tuple[Any, ...]]:
    """Everything a refresh writes, down to the last update time."""
    recommendations = [
        tuple(getattr(r, f.attname) for f in Recommendation._meta.concrete_fields)
        for r in Recommendation.objects.order_by("pk")
    ]
    classes = [
        (c.workload_id, c.workload_class, c.confidence, c.evidence, c.classified_at)
        for c in WorkloadClassification.objects.order_by("pk")
    ]
    return [*recommendations, *classes]


@pytest.fixture
def evals(django_capture_on_commit_callbacks: Any, engineer_user: Any) -> Workload:
    with django_capture_on_commit_callbacks(execute=True):
        _ingest(EVALS.encode(), "evals.csv")
    workload = Workload.objects.get(name="evals")
    with django_capture_on_commit_callbacks(execute=True):
        workload_override(
            workload=workload, user=engineer_user, workload_class="async", reason="nightly"
        )
    return workload


def test_an_override_refreshes_and_recommend_then_changes_nothing(evals: Workload) -> None:
    batch = Recommendation.objects.get(workload=evals, target_kind="batch_api")
    assert (batch.current_monthly_usd, batch.savings_monthly_usd) == (
        Decimal("1.28"),
        Decimal("0.64"),
    )
    state = DerivedState.objects.get(pk=1)
    assert state.data_token == current_version().token
    assert batch.data_version == current_version().version
    assert batch.computed_at is not None and batch.source_upload_ids
    before = snapshot()
    call_command("recommend")
    assert snapshot() == before
    assert derived.derived_refresh() is False  # nothing changed since: nothing recomputed


def _price_card() -> None:
    # Twice the price: $0.084 a day -> $2.555 a month ($2.56); batch halves it to $1.2775.
    PriceCard.objects.create(
        provider="openai",
        model="gpt-4o-mini",
        input_usd_per_mtok=Decimal("0.30"),
        output_usd_per_mtok=Decimal("1.20"),
        batch_input_usd_per_mtok=Decimal("0.15"),
        batch_output_usd_per_mtok=Decimal("0.60"),
        valid_from=date(2026, 11, 1),
    )


def _serving_pool() -> None:
    ServingPool.objects.create(name="gpu", models_served=["gpt-4o-mini"])


def _hardware() -> None:
    HardwareTarget.objects.create(
        kind="instance", provider="aws", name="x1.test", usd_per_hour=Decimal("1")
    )
    ThroughputAssumption.objects.create(
        instance="x1.test", model_class="8b", tokens_per_second=100, source="test"
    )


def _slo() -> None:
    workload = Workload.objects.get(name="evals")
    workload.latency_slo_ms = 5000
    workload.save()


def _bill() -> None:
    _ingest(BILL.read_bytes(), "bill.csv", kind="billing")


CHANGES: dict[str, Callable[[], None]] = {
    "price card": _price_card,
    "serving pool": _serving_pool,
    "hardware and throughput": _hardware,
    "workload SLO": _slo,
    "billing upload": _bill,
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_every_input_change_refreshes_before_anyone_asks(
    evals: Workload, django_capture_on_commit_callbacks: Any, change: str
) -> None:
    token = current_version().token
    with django_capture_on_commit_callbacks(execute=True):
        CHANGES[change]()
    assert current_version().token != token  # the change started a new data version...
    assert derived_state.derived_is_stale() is False  # ...and the refresh followed it
    before = snapshot()
    call_command("recommend")
    assert snapshot() == before


def test_a_price_change_reprices_the_recommendation(
    evals: Workload, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        _price_card()
    batch = Recommendation.objects.get(workload=evals, target_kind="batch_api")
    assert (batch.current_monthly_usd, batch.projected_monthly_usd) == (
        Decimal("2.56"),  # 2.555 rounded half up
        Decimal("1.28"),  # 1.2775
    )


def test_serving_the_model_from_a_pool_withdraws_the_api_recommendation(
    evals: Workload, django_capture_on_commit_callbacks: Any
) -> None:
    # Self-hosted traffic is costed from GPU bills only, and this pool has none: nothing to save.
    # The requests logged without a pool are the pool's only when no card prices their
    # provider's model (a model served hosted and self-hosted is told apart by
    # provider), so the pool serving OpenAI's model name does not take OpenAI's traffic...
    with django_capture_on_commit_callbacks(execute=True):
        _serving_pool()
    assert Recommendation.objects.filter(workload=evals).exists()
    # ...until no card prices it (no OpenAI card at all, so no family prefix either): then the
    # pool served it.
    with django_capture_on_commit_callbacks(execute=True):
        PriceCard.objects.filter(provider="openai").delete()
    assert not Recommendation.objects.filter(workload=evals).exists()


def test_deleting_the_log_withdraws_its_recommendations(
    evals: Workload, django_capture_on_commit_callbacks: Any
) -> None:
    upload = evals.recommendations.get().source_upload_ids[0]
    with django_capture_on_commit_callbacks(execute=True):
        upload_delete(upload=Upload.objects.get(pk=upload))
    assert Recommendation.objects.count() == 0
    assert derived_state.derived_is_stale() is False


def test_a_refresh_the_broker_never_took_is_asked_for_again(
    evals: Workload, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The change happened while the broker refused the refresh...
    monkeypatch.setattr(task_queue, "publish", lambda name, **kwargs: None)
    _price_card()
    assert derived_state.derived_is_stale() is True
    # ...so a worker's sweep queues one (in-process here), and then all is current.
    monkeypatch.undo()
    assert derived_state.refresh_if_due() is True
    assert derived_state.derived_is_stale() is False
    assert derived_state.refresh_if_due() is False


# --- A refresh that sees the data change mid-way -------------------------------------------------

ROWS = "started_at,ended_at,workload,provider,model,input_tokens,output_tokens\n" + "".join(
    f"2026-11-02T02:{i:02d}:00Z,2026-11-02T02:{i:02d}:30Z,w{i % 3},openai,gpt-4o-mini,100,10\n"
    for i in range(30)
)


@pytest.fixture
def landed() -> None:
    upload = upload_create(source=io.BytesIO(ROWS.encode()), original_name="a.csv", enqueue=False)
    upload_ingest(upload_id=upload.pk)


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch, settings: Any) -> list[str]:
    """The names of the tasks queued (what a worker would be sent), none of them run."""
    settings.DERIVED_REFRESH_ON_CHANGE = True
    calls: list[str] = []
    monkeypatch.setattr(task_queue, "publish", lambda name, **kwargs: calls.append(name))
    return calls


def test_data_changed_after_classifying_stops_the_refresh_before_it_writes(
    landed: None,
    enqueued: list[str],
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    classify = classification.workloads_classify

    def classify_then_data_changes(**kwargs: Any) -> Any:
        result = classify(**kwargs)
        assert WorkloadClassification.objects.count() == 3  # written, for now
        data_changed()
        return result

    monkeypatch.setattr(classification, "workloads_classify", classify_then_data_changes)
    with django_capture_on_commit_callbacks(execute=True):
        assert derived.derived_refresh() is False
    assert WorkloadClassification.objects.count() == 0  # rolled back: they were stale
    assert Recommendation.objects.count() == 0
    assert DerivedState.objects.filter(data_token=data_token()).count() == 0
    assert enqueued == [REFRESH]  # a new refresh is asked for
    monkeypatch.setattr(classification, "workloads_classify", classify)
    assert derived.derived_refresh() is True  # the next one, on unchanged data, lands
    assert WorkloadClassification.objects.count() == 3
    assert DerivedState.objects.get(pk=1).data_token == data_token()


def test_an_unchanged_token_lets_the_checkpoint_pass(landed: None) -> None:
    derived.refresh_checkpoint(data_token())()  # no exception
    with pytest.raises(derived.RefreshCancelled):
        derived.refresh_checkpoint("stale")()


def test_saving_a_price_card_records_one_change_and_asks_for_one_refresh_after_commit(
    landed: None, enqueued: list[str], django_capture_on_commit_callbacks: Any
) -> None:
    before = current_version()
    with django_capture_on_commit_callbacks(execute=True):
        _price_card()
        after = current_version()
        assert enqueued == []  # nothing before the change commits
    assert (after.version, after.token != before.token) == (before.version + 1, True)
    assert current_version().version == before.version + 1
    assert enqueued == [REFRESH]


def test_deleting_an_upload_records_one_change_and_asks_for_one_refresh_after_commit(
    landed: None, enqueued: list[str], django_capture_on_commit_callbacks: Any
) -> None:
    before = current_version().version
    with django_capture_on_commit_callbacks(execute=True):
        upload_delete(upload=Upload.objects.get())
        assert enqueued == []
    assert current_version().version == before + 1
    assert enqueued == [REFRESH]


def test_a_live_landing_records_a_change_and_asks_for_no_refresh(
    landed: None, enqueued: list[str], django_capture_on_commit_callbacks: Any
) -> None:
    before = current_version()
    with django_capture_on_commit_callbacks(execute=True):
        data_changed(live=True)
    after = current_version()
    assert (after.version, after.token != before.token) == (before.version, True)
    assert enqueued == []  # live landings ask on their throttle (test_landing_refresh)


def test_an_ingest_asks_for_the_refresh_and_does_not_run_it(
    enqueued: list[str], django_capture_on_commit_callbacks: Any
) -> None:
    upload = upload_create(source=io.BytesIO(ROWS.encode()), original_name="a.csv", enqueue=False)
    with django_capture_on_commit_callbacks(execute=True):
        upload_ingest(upload_id=upload.pk)
    assert enqueued == [REFRESH]
    assert WorkloadClassification.objects.count() == 0  # the worker's task refreshes
    assert derived_state.derived_is_stale() is True


def test_the_ingest_command_returns_fresh_and_the_task_it_queued_then_does_nothing(
    enqueued: list[str],
    django_capture_on_commit_callbacks: Any,
    tmp_path: Any,
    engineer_user: Any,
) -> None:
    # The evals workload is known to be asynchronous before its log lands (an override).
    workload_override(
        workload=Workload.objects.create(name="evals"),
        user=engineer_user,
        workload_class="async",
        reason="nightly",
    )
    path = tmp_path / "evals.csv"
    path.write_text(EVALS)
    with django_capture_on_commit_callbacks(execute=True):
        call_command("ingest", str(path), stdout=io.StringIO())
    # Fresh when the command returns: classified and priced from this data version...
    version = current_version()
    assert DerivedState.objects.get(pk=1).data_token == version.token
    assert list(WorkloadClassification.objects.values_list("workload__name", flat=True)) == [
        "evals"
    ]
    batch = Recommendation.objects.get(workload__name="evals", target_kind="batch_api")
    assert (batch.data_version, batch.savings_monthly_usd) == (version.version, Decimal("0.64"))
    assert derived_state.derived_is_stale() is False
    # ...and the refresh its landing queued, run by a worker now, finds nothing to do.
    assert enqueued == [REFRESH]
    before = snapshot()
    assert task_queue.registered(REFRESH).apply().get() is False
    assert snapshot() == before
