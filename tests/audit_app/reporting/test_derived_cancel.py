"""A refresh of derived results that sees the data change mid-way stops without writing.

Deterministic: a step of the refresh is wrapped so that the data version moves right after it
(as when an upload lands or is deleted meanwhile); no timing is involved.
"""

from __future__ import annotations

import io
from typing import Any

import pytest

from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.lib.results_cache import data_changed, data_token
from audit_app.models import DerivedState, Recommendation, Workload, WorkloadClassification
from audit_app.reporting import derived
from audit_app.workloads import services as classification

pytestmark = pytest.mark.django_db

ROWS = "started_at,ended_at,workload,provider,model,input_tokens,output_tokens\n" + "".join(
    f"2026-11-02T02:{i:02d}:00Z,2026-11-02T02:{i:02d}:30Z,w{i % 3},openai,gpt-4o-mini,100,10\n"
    for i in range(30)
)


@pytest.fixture
def landed() -> None:
    upload = upload_create(source=io.BytesIO(ROWS.encode()), original_name="a.csv", enqueue=False)
    upload_ingest(upload_id=upload.pk, fan_out=False, refresh=False)


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch, settings: Any) -> list[str]:
    settings.DERIVED_REFRESH_ON_CHANGE = True
    calls: list[str] = []
    monkeypatch.setattr(derived, "_enqueue", lambda: calls.append("refresh"))
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
    assert enqueued == ["refresh"]  # a new refresh is asked for
    monkeypatch.setattr(classification, "workloads_classify", classify)
    assert derived.derived_refresh() is True  # the next one, on unchanged data, lands
    assert WorkloadClassification.objects.count() == 3
    assert DerivedState.objects.get(pk=1).data_token == data_token()


def test_classification_checks_every_checkpoint_every_workloads(
    landed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(classification, "CHECKPOINT_EVERY", 2)
    seen: list[int] = []

    def checkpoint() -> None:
        seen.append(WorkloadClassification.objects.count())
        if len(seen) == 2:
            raise derived.RefreshCancelled("test")

    with pytest.raises(derived.RefreshCancelled):
        classification.workloads_classify(checkpoint=checkpoint)
    assert seen == [0, 2]  # before the 1st and the 3rd of 3 workloads
    assert Workload.objects.count() == 3


def test_an_unchanged_token_lets_the_checkpoint_pass(landed: None) -> None:
    derived.refresh_checkpoint(data_token())()  # no exception
    with pytest.raises(derived.RefreshCancelled):
        derived.refresh_checkpoint("stale")()
