"""Raw choice keys never reach a page: a recommendation's status history, a gate's serving
mode, a workload's class and the audit trail show labels."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from audit_app.models import Recommendation, WorkloadClass
from audit_app.workloads.services import workload_override
from benchmarks_app.services import gate_evaluate
from tests.benchmarks_app.gate_samples import import_runs, recommendation

pytestmark = pytest.mark.django_db
RAW_KEYS = ("pilot_approved", "always_on", "scale_to_zero", "dedicated_hardware")


class _VisibleText(HTMLParser):
    """The text a reader sees: no tags, attributes, scripts or styles."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in ("script", "style"):
            self._hidden += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def visible_text(html: bytes) -> str:
    parser = _VisibleText()
    parser.feed(html.decode())
    return re.sub(r"\s+", " ", " ".join(parser.parts))


def test_histories_show_labels(client: Client, engineer_user: Any, admin_user: Any) -> None:
    baseline, candidate = import_runs()
    rec = recommendation()  # pilot_approved; the gate moves it to verified
    gate = gate_evaluate(
        baseline=baseline,
        candidate=candidate,
        mode="always_on",
        recommendation=rec,
        user=engineer_user,
    )
    workload_override(
        workload=rec.workload, user=engineer_user, workload_class="async", reason="nightly"
    )
    client.force_login(admin_user)
    pages = {
        "recommendation": reverse("recommendation-detail", args=[rec.pk]),
        "gate": reverse("gate", args=[gate.pk]),
        "workload": reverse("workload-detail", args=[rec.workload_id]),
        "audit trail": reverse("audit-trail"),
    }
    texts = {}
    for name, path in pages.items():
        response = client.get(path)
        assert response.status_code == 200, name
        texts[name] = visible_text(response.content)
        for key in RAW_KEYS:
            assert key not in texts[name], f"{name} shows {key!r}"
    approved = Recommendation.Status.PILOT_APPROVED.label
    verified = Recommendation.Status.VERIFIED.label
    assert f"{approved} → {verified}" in texts["recommendation"]
    assert "mode always on" in texts["gate"]
    assert f"Class: {WorkloadClass.ASYNC.label}" in texts["workload"]
    assert f"set evals to {WorkloadClass.ASYNC.label}" in texts["audit trail"]
