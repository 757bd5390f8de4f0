"""Each comparison row of a gate carries the tolerance it was judged by: in the recorded result
(so the API's gate) and in the gate page's Tolerance column."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from benchmarks_app.gating import DEFAULT_ALLOWED, POINTS_METRICS
from benchmarks_app.services import gate_evaluate
from tests.benchmarks_app.gate_samples import import_runs

pytestmark = pytest.mark.django_db
STATED = {"ttft_p95_ms": 7.5, "decode_tokens_per_s": 2.0}


def test_checks_carry_their_tolerance_to_the_api_and_the_page(
    client: Client, engineer_user: Any
) -> None:
    baseline, candidate = import_runs()
    gate = gate_evaluate(
        baseline=baseline, candidate=candidate, tolerances=STATED, user=engineer_user
    )
    client.force_login(engineer_user)
    api = client.get(f"/api/v1/gates/{gate.pk}/").json()
    checks = [c for point in api["result"]["points"] for c in point["checks"]]
    assert checks
    for check in checks:
        expected = STATED.get(check["metric"], DEFAULT_ALLOWED.get(check["metric"], 0.0))
        assert check["allowed"] == expected, check["metric"]

    page = client.get(reverse("gate", args=[gate.pk])).content.decode()
    shown = re.findall(r'<td class="num" data-testid="tolerance">([^<]*)</td>', page)
    assert len(shown) == len(checks)
    wanted = [
        f"{check['allowed']:.1f} pts"
        if check["metric"] in POINTS_METRICS
        else f"{check['allowed']:.1f} %"
        for check in checks
    ]
    assert shown == wanted
    assert "7.5 %" in shown and "2.0 %" in shown
