"""Many workloads: the workloads page is paginated (100 a page, by spend) and the overview's
breakdown table shows the top rows and one row adding up the others.

205 workloads w000..w204 on one day, workload wN logging $(N + 1) / 100 for its one request:
the whole spend is 205 x 206 / 2 cents = $211.15; the costliest 25 (w204..w180) $48.25, the
other 180 $162.90.
"""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import Workload, WorkloadClassification, WorkloadOverride
from audit_app.workloads.services import effective_class, effective_classes

pytestmark = pytest.mark.django_db

HEADER = "started_at,ended_at,workload,provider,model,input_tokens,output_tokens,cost_usd\n"


@pytest.fixture
def many(client: Client, finops_user: Any) -> Client:
    rows = "".join(
        f"2026-11-02T10:00:00Z,2026-11-02T10:00:01Z,w{n:03d},openai,gpt-4o,10,1,{(n + 1) / 100}\n"
        for n in range(205)
    )
    upload = upload_create(
        source=io.BytesIO((HEADER + rows).encode()), original_name="many.csv", enqueue=False
    )
    upload_ingest(upload_id=upload.pk)
    client.force_login(finops_user)
    return client


def _names(html: str) -> list[str]:
    return re.findall(r">(w\d{3})</a><br>", html)


def test_the_workloads_page_lists_100_a_page_costliest_first(many: Client) -> None:
    first = many.get(reverse("workloads")).content.decode()
    assert _names(first) == [f"w{n:03d}" for n in range(204, 104, -1)]
    assert "205 workloads, $211.15" in first
    assert "1–100 shown" in first
    assert "page=2" in first and "page 1 of 3" in first
    last = many.get(reverse("workloads"), {"page": "3"}).content.decode()
    assert _names(last) == [f"w{n:03d}" for n in range(4, -1, -1)]
    assert "201–205 shown" in last


def test_the_page_keeps_the_sort_in_its_links(many: Client) -> None:
    html = many.get(reverse("workloads"), {"sort": "name", "page": "2"}).content.decode()
    assert _names(html) == [f"w{n:03d}" for n in range(100, 200)]
    assert "sort=name&amp;page=3" in html


@pytest.mark.parametrize(
    ("page_number", "message"),
    [
        ("4", "page='4' must be between 1 and 3"),
        ("0", "page='0' must be between 1 and 3"),
        ("x", "page='x' is not a whole number"),
        ("1\x00", "page='1\\x00' is not a whole number"),
    ],
)
def test_a_page_out_of_range_is_a_400_naming_it(
    many: Client, page_number: str, message: str
) -> None:
    # Not named `page`: that is pytest-playwright's fixture, which would make this a browser test.
    response = many.get(reverse("workloads"), {"page": page_number})
    assert response.status_code == 400
    html = response.content.decode()
    assert escape(message) in html
    assert _names(html)[:2] == ["w204", "w203"]  # the first page, as without the parameter


def test_the_overview_shows_the_top_rows_and_the_others_added_up(many: Client) -> None:
    html = many.get(reverse("overview"), {"stack": "workload"}).content.decode()
    table = html[
        html.index('id="breakdown-table"') : html.index(
            "</table>", html.index('id="breakdown-table"')
        )
    ]
    assert re.findall(r"<tr><td>(w\d{3})</td>", table) == [f"w{n:03d}" for n in range(204, 179, -1)]
    others = table[table.index('data-testid="breakdown-others"') :]
    assert others.startswith('data-testid="breakdown-others"><td>180 others')
    assert "$162.90" in others.split("</tr>")[0]
    assert "$211.15" in table  # the total is still the whole


def test_effective_classes_follow_the_one_workload_rule(many: Client, engineer_user: Any) -> None:
    workloads = {w.name: w for w in Workload.objects.filter(name__in=["w001", "w002", "w003"])}
    for name, label in (("w001", "async"), ("w002", "realtime"), ("w003", "async")):
        WorkloadClassification.objects.create(
            workload=workloads[name], workload_class=label, confidence=0.9
        )
    # w001: overridden to realtime; w002: overridden, then handed back to the classifier.
    WorkloadOverride.objects.create(
        workload=workloads["w001"], workload_class="realtime", reason="r", user=engineer_user
    )
    WorkloadOverride.objects.create(
        workload=workloads["w002"], workload_class="async", reason="r", user=engineer_user
    )
    WorkloadOverride.objects.create(
        workload=workloads["w002"], workload_class="", reason="back", user=engineer_user
    )
    assert effective_classes() == {"w001": "realtime", "w002": "realtime", "w003": "async"}
    assert {name: effective_class(w) for name, w in workloads.items()} == {
        "w001": "realtime",
        "w002": "realtime",
        "w003": "async",
    }
