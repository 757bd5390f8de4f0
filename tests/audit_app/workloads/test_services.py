"""The workload service: classify every workload in the window from hand-built rollups, keep
people's overrides, work in batches.

Traffic is written straight into hourly and daily rollups of one succeeded upload (no file is
ingested), so each workload's requests are known exactly. A latency SLO decides a class with
confidence 0.95 whatever the traffic; fewer than 50 requests tell nothing (`unknown`, 0).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pytest

from audit_app import derived
from audit_app.lib.errors import ErrorKind
from audit_app.lib.results_cache import data_changed
from audit_app.models import (
    AuditEvent,
    DailyRollup,
    HourlyRollup,
    Upload,
    Workload,
    WorkloadClassification,
)
from audit_app.workloads import services
from audit_app.workloads.services import (
    OverrideRefused,
    analysis_window,
    effective_class,
    effective_classes,
    workload_override,
    workloads_classify,
)
from tests.factories import UploadFactory

pytestmark = pytest.mark.django_db

DAY = date(2026, 11, 2)


def _traffic(
    upload: Upload, workload: str, *, day: date, requests_by_hour: dict[int, int], batch: bool
) -> None:
    """`requests_by_hour` requests of `workload` at those UTC hours of `day`."""
    for hour, requests in requests_by_hour.items():
        HourlyRollup.objects.create(
            upload=upload,
            hour=datetime(day.year, day.month, day.day, hour, tzinfo=UTC),
            workload=workload,
            model="gpt-4o",
            batch_api=batch,
            requests=requests,
            input_tokens=requests * 100,
            output_tokens=requests * 20,
        )
    DailyRollup.objects.create(
        upload=upload,
        day=day,
        workload=workload,
        model="gpt-4o",
        batch_api=batch,
        requests=sum(requests_by_hour.values()),
        input_tokens=sum(requests_by_hour.values()) * 100,
        output_tokens=sum(requests_by_hour.values()) * 20,
    )


@pytest.fixture
def upload() -> Upload:
    return UploadFactory(status=Upload.Status.SUCCEEDED)


@pytest.fixture
def three(upload: Upload) -> dict[str, Workload]:
    """chat (SLO 500 ms), reports (SLO 5 s) and few (10 requests, no SLO), all on DAY."""
    workloads = {
        "chat": Workload.objects.create(name="chat", latency_slo_ms=500),
        "reports": Workload.objects.create(name="reports", latency_slo_ms=5_000),
        "few": Workload.objects.create(name="few"),
    }
    _traffic(upload, "chat", day=DAY, requests_by_hour={9: 300, 10: 400}, batch=False)
    _traffic(upload, "reports", day=DAY, requests_by_hour={2: 1_000}, batch=True)
    _traffic(upload, "few", day=DAY, requests_by_hour={12: 10}, batch=False)
    data_changed()
    return workloads


def _stored() -> dict[str, tuple[str, float]]:
    return {
        c.workload.name: (c.workload_class, c.confidence)
        for c in WorkloadClassification.objects.select_related("workload")
    }


def test_the_window_is_the_last_30_days_with_data(upload: Upload) -> None:
    assert analysis_window() is None
    _traffic(upload, "old", day=date(2026, 9, 1), requests_by_hour={0: 1}, batch=False)
    _traffic(upload, "new", day=DAY, requests_by_hour={0: 1}, batch=False)
    data_changed()

    assert analysis_window() == (date(2026, 10, 4), DAY)  # 2 Nov less 29 days
    assert analysis_window(today=date(2026, 10, 15)) == (date(2026, 9, 16), date(2026, 10, 15))
    assert analysis_window(today=date(2026, 9, 10)) == (date(2026, 9, 1), date(2026, 9, 10))


def test_nothing_to_classify_without_data() -> None:
    Workload.objects.create(name="idle")

    assert workloads_classify() == []
    assert WorkloadClassification.objects.count() == 0


def test_classify_by_slo_and_by_volume(three: dict[str, Workload]) -> None:
    results = workloads_classify()

    assert [r.workload.name for r in results] == ["chat", "reports", "few"]  # by pk
    assert _stored() == {
        "chat": ("realtime", 0.95),
        "reports": ("async", 0.95),
        "few": ("unknown", 0.0),
    }
    by_name = {r.workload.name: r for r in results}
    assert by_name["chat"].evidence[0] == (
        "latency SLO is 500 ms (< 2.0 s): someone waits on the answer, so this is real-time"
    )
    assert by_name["reports"].evidence[0] == (
        "latency SLO is 5.0 s (≥ 2.0 s): response time does not change the outcome, so this is "
        "an async candidate"
    )
    assert by_name["few"].evidence[0] == "only 10 requests in 1 days: too few to tell"
    assert by_name["chat"].features["requests"] == 700
    assert by_name["reports"].features["batch_api_share"] == 1.0


def test_workloads_without_traffic_in_the_window_are_not_classified(upload: Upload) -> None:
    Workload.objects.create(name="gone", latency_slo_ms=500)
    Workload.objects.create(name="here", latency_slo_ms=500)
    _traffic(upload, "gone", day=date(2026, 9, 1), requests_by_hour={9: 100}, batch=False)
    _traffic(upload, "here", day=DAY, requests_by_hour={9: 100}, batch=False)
    data_changed()

    assert [r.workload.name for r in workloads_classify()] == ["here"]
    assert _stored() == {"here": ("realtime", 0.95)}


def test_reclassifying_replaces_the_row(three: dict[str, Workload]) -> None:
    workloads_classify()
    Workload.objects.filter(name="chat").update(latency_slo_ms=5_000)

    workloads_classify()

    assert WorkloadClassification.objects.filter(workload__name="chat").count() == 1
    assert _stored()["chat"] == ("async", 0.95)


def test_an_override_wins_over_the_classifier_until_it_is_cleared(
    three: dict[str, Workload], engineer_user: Any
) -> None:
    workloads_classify()
    chat = three["chat"]

    workload_override(
        workload=chat, user=engineer_user, workload_class="async", reason="  queue behind it  "
    )
    workloads_classify()

    assert effective_class(Workload.objects.get(name="chat")) == "async"
    assert _stored()["chat"] == ("realtime", 0.95)  # the classifier's own verdict is kept
    assert effective_classes() == {"chat": "async", "reports": "async", "few": "unknown"}
    event = AuditEvent.objects.get()
    assert (event.summary, event.details) == (
        "set chat to Asynchronous",
        {"workload_class": "async", "reason": "queue behind it"},
    )

    workload_override(workload=chat, user=engineer_user, workload_class="", reason="wrong")

    assert effective_class(Workload.objects.get(name="chat")) == "realtime"
    assert effective_classes()["chat"] == "realtime"
    assert AuditEvent.objects.order_by("pk").last().summary == "set chat to the classifier"


def test_an_unclassified_workload_is_unknown(three: dict[str, Workload]) -> None:
    assert effective_class(three["chat"]) == "unknown"
    assert effective_classes() == {}


@pytest.mark.parametrize(
    ("role_user", "workload_class", "reason", "field", "kind", "message"),
    [
        (
            "finops_user",
            "async",
            "why",
            "",
            ErrorKind.FORBIDDEN,
            "Only engineers and managers may override a workload's class.",
        ),
        (
            "engineer_user",
            "batch",
            "why",
            "workload_class",
            ErrorKind.INVALID,
            "workload_class must be realtime, async, unknown or empty, not 'batch'.",
        ),
        (
            "manager_user",
            "async",
            "   ",
            "reason",
            ErrorKind.INVALID,
            "Say why: an override needs a reason.",
        ),
    ],
)
def test_overrides_refused(
    request: pytest.FixtureRequest,
    role_user: str,
    workload_class: str,
    reason: str,
    field: str,
    kind: ErrorKind,
    message: str,
) -> None:
    workload = Workload.objects.create(name="chat")
    user = request.getfixturevalue(role_user)

    with pytest.raises(OverrideRefused) as refused:
        workload_override(
            workload=workload, user=user, workload_class=workload_class, reason=reason
        )

    assert (str(refused.value), refused.value.field, refused.value.kind) == (message, field, kind)
    assert workload.overrides.count() == 0
    assert AuditEvent.objects.count() == 0


def test_classification_runs_in_batches_with_a_checkpoint_before_each(
    three: dict[str, Workload], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(services, "CHECKPOINT_EVERY", 2)
    checkpoints: list[int] = []

    def checkpoint() -> None:
        checkpoints.append(WorkloadClassification.objects.count())

    results = workloads_classify(checkpoint=checkpoint)

    # 3 workloads, 2 a batch: a checkpoint before the first batch and before the second.
    assert checkpoints == [0, 2]
    assert [r.workload.name for r in results] == ["chat", "reports", "few"]
    assert len(_stored()) == 3


def test_classification_checks_every_checkpoint_every_workloads(
    three: dict[str, Workload], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(services, "CHECKPOINT_EVERY", 2)
    seen: list[int] = []

    def checkpoint() -> None:
        seen.append(WorkloadClassification.objects.count())
        if len(seen) == 2:
            raise derived.RefreshCancelled("test")

    with pytest.raises(derived.RefreshCancelled):
        services.workloads_classify(checkpoint=checkpoint)
    assert seen == [0, 2]  # before the 1st and the 3rd of 3 workloads
    assert Workload.objects.count() == 3
