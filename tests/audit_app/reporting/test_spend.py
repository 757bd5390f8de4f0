"""Spend breakdowns, workloads, CSV exports: API, pages and CLI on a hand-checked upload."""

from __future__ import annotations

import csv
import io
import json
from decimal import ROUND_HALF_UP, Decimal
from io import StringIO
from typing import Any

import numpy as np
import pytest
from django.core.management import call_command
from django.test import Client

from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.lib.csv_export import safe_cell
from audit_app.models import PriceCard, Workload
from audit_app.reporting.filters import parse_filters
from audit_app.reporting.spend import workload_list
from tests.audit_app.ingestion.ingest_samples import EXPECTED_TOTAL_COST, SAMPLE_CSV

pytestmark = pytest.mark.django_db
RANGE = "start=2026-11-01&end=2026-11-03"


@pytest.fixture
def sample_upload(db: Any) -> Any:
    upload = upload_create(source=io.BytesIO(SAMPLE_CSV), original_name="s.csv", enqueue=False)
    return upload_ingest(upload_id=upload.pk)


def test_spend_api_by_workload(client: Client, finops_user: Any, sample_upload: Any) -> None:
    client.force_login(finops_user)
    body = client.get(f"/api/v1/spend/?group_by=workload&{RANGE}").json()
    assert body["total_usd"] == "0.092500"
    assert (body["count"], body["next"], body["previous"]) == (3, None, None)  # chat, evals, tool
    rows = {row["key"]: row for row in body["results"]}
    assert rows["chat"]["spend_usd"] == "0.017500"
    assert rows["chat"]["logged_cost_usd"] == "0.010000"
    assert rows["chat"]["estimated_cost_usd"] == "0.007500"
    assert rows["evals"]["input_tokens"] == 1_000_000
    assert rows["tool"]["unpriced_requests"] == 1
    assert body["unpriced_models"] == [
        {
            "provider": "openai",
            "model": "my-finetune",
            "requests": 1,
            "input_tokens": 100,
            "output_tokens": 10,
        }
    ]


def test_spend_api_by_day_and_range(client: Client, finops_user: Any, sample_upload: Any) -> None:
    client.force_login(finops_user)
    body = client.get(f"/api/v1/spend/?group_by=day&{RANGE}").json()
    assert [(r["key"], r["requests"]) for r in body["results"]] == [("2026-11-02", 4)]
    assert body["count"] == 1
    outside = client.get("/api/v1/spend/?group_by=day&start=2026-11-03&end=2026-11-05").json()
    assert (outside["count"], outside["results"]) == (0, [])
    assert outside["total_usd"] == "0.000000"


def test_spend_api_rejects_bad_parameters(client: Client, finops_user: Any) -> None:
    client.force_login(finops_user)
    bad_group = client.get("/api/v1/spend/?group_by=color")
    assert bad_group.status_code == 400
    assert "group_by" in bad_group.json()["errors"]
    bad_date = client.get("/api/v1/spend/?start=yesterday")
    assert bad_date.status_code == 400
    assert bad_date.json()["errors"] == {
        "start": ["start='yesterday' is not a date (use YYYY-MM-DD)"]
    }
    reversed_range = client.get("/api/v1/spend/?start=2026-11-05&end=2026-11-01")
    assert reversed_range.json()["errors"]["start"] == [
        "start (2026-11-05) is after end (2026-11-01)"
    ]


def test_workloads_api(client: Client, manager_user: Any, sample_upload: Any) -> None:
    client.force_login(manager_user)
    listing = client.get(f"/api/v1/workloads/?{RANGE}").json()
    assert (listing["count"], listing["next"], listing["previous"]) == (3, None, None)
    by_name = {w["name"]: w for w in listing["results"]}
    assert set(by_name) == {"chat", "evals", "tool"}
    chat = by_name["chat"]
    assert (chat["requests"], chat["input_tokens"], chat["output_tokens"]) == (2, 3000, 600)
    assert chat["spend_usd"] == "0.017500"
    # End-to-end latencies 2,000 and 1,000 ms: numpy's p95 is 1,950.
    exact = float(np.percentile([2000.0, 1000.0], 95))
    assert abs(chat["p95_e2e_ms"] - exact) / exact < 0.01
    assert abs(chat["p95_ttft_ms"] - 500.0) / 500.0 < 0.01  # one streamed request, TTFT 500 ms
    workload_id = Workload.objects.get(name="chat").pk
    assert chat["id"] == workload_id

    detail = client.get(f"/api/v1/workloads/{workload_id}/?{RANGE}").json()
    assert detail["name"] == "chat"
    assert [d["day"] for d in detail["daily"]] == ["2026-11-01", "2026-11-02", "2026-11-03"]
    assert [d["requests"] for d in detail["daily"]] == [0, 2, 0]
    assert detail["daily"][1]["spend_usd"] == "0.017500"
    assert client.get("/api/v1/workloads/999999/").status_code == 404


def test_workloads_cli_json(sample_upload: Any) -> None:
    out = StringIO()
    call_command("workloads", "--json", stdout=out)
    rows = {row["name"]: row for row in json.loads(out.getvalue())}
    assert rows["evals"]["requests"] == 1
    assert rows["evals"]["spend_usd"] == "0.075000"  # 0.0750003 rounded to 6 places
    assert rows["tool"]["unpriced_requests"] == 1
    assert {
        "name",
        "requests",
        "input_tokens",
        "output_tokens",
        "spend_usd",
        "p95_ttft_ms",
        "p95_e2e_ms",
    } <= set(rows["chat"])
    assert sum(Decimal(r["spend_usd"]) for r in rows.values()) == Decimal("0.092500")


def test_an_unpriced_model_has_an_add_a_card_link_for_an_admin(
    client: Client, finops_user: Any, admin_user: Any, sample_upload: Any
) -> None:
    add_link = (
        "/admin/audit_app/pricecard/add/?provider=openai&amp;model=my-finetune"
        "&amp;valid_from=2020-01-01"
    )
    client.force_login(finops_user)  # may not add cards: no link
    assert add_link not in client.get(f"/?{RANGE}").content.decode()

    client.force_login(admin_user)
    assert add_link in client.get(f"/?{RANGE}").content.decode()
    form = client.get(add_link.replace("&amp;", "&")).context["adminform"].form
    assert (form.initial["provider"], form.initial["model"]) == ("openai", "my-finetune")
    response = client.post(
        "/admin/audit_app/pricecard/add/",
        {
            "provider": "openai",
            "model": "my-finetune",
            "input_usd_per_mtok": "1",
            "output_usd_per_mtok": "4",
            "valid_from": "2020-01-01",
        },
    )
    assert response.status_code == 302
    card = PriceCard.objects.get(model="my-finetune")
    assert card.origin == "local"  # a hand-entered card is a local override
    html = client.get(f"/?{RANGE}").content.decode()
    assert "Unpriced models" not in html


def test_overview_page_with_data(client: Client, finops_user: Any, sample_upload: Any) -> None:
    client.force_login(finops_user)
    response = client.get(f"/?{RANGE}&stack=workload")
    html = response.content.decode()
    assert response.status_code == 200
    assert "Unpriced models" in html and "my-finetune" in html
    assert "Get started" not in html
    figure = response.context["spend_figure"]
    assert sorted(t["name"] for t in figure["data"]) == ["chat", "evals", "tool"]
    assert response.context["breakdown"].total_usd == EXPECTED_TOTAL_COST
    assert f"/spend.csv?{RANGE.replace('&', '&amp;')}&amp;group_by=workload" in html


def test_bad_filter_is_shown_not_a_500(client: Client, finops_user: Any) -> None:
    client.force_login(finops_user)
    response = client.get("/workloads/?start=not-a-date")
    assert response.status_code == 400
    assert (
        "start=&#x27;not-a-date&#x27; is not a date (use YYYY-MM-DD); showing the defaults instead."
        in response.content.decode()
    )
    assert [w.name for w in response.context["workloads"]] == []  # the default range: no data
    csv_export = client.get("/workloads/?start=not-a-date&export=csv")
    assert (csv_export.status_code, csv_export.content.decode()) == (
        400,
        "start='not-a-date' is not a date (use YYYY-MM-DD)",
    )


def test_workloads_page_sorts_and_keeps_filters(
    client: Client, engineer_user: Any, sample_upload: Any
) -> None:
    client.force_login(engineer_user)
    response = client.get(f"/workloads/?{RANGE}&sort=requests")
    names = [w.name for w in response.context["workloads"]]
    assert names[-1] == "chat"  # ascending by requests: chat has 2, the others 1
    html = response.content.decode()
    assert "start=2026-11-01&amp;end=2026-11-03&amp;sort=-requests" in html
    detail = client.get(f"/workloads/{Workload.objects.get(name='chat').pk}/?{RANGE}")
    assert detail.status_code == 200
    assert detail.context["stats"].requests == 2
    assert len(detail.context["heatmap_figure"]["data"][0]["z"]) == 7


def test_csv_export_neutralises_formulas(client: Client, finops_user: Any) -> None:
    hostile = SAMPLE_CSV.replace(b",chat,web,", b',=HYPERLINK("http://x"),web,')
    upload = upload_create(source=io.BytesIO(hostile), original_name="h.csv", enqueue=False)
    upload_ingest(upload_id=upload.pk)
    client.force_login(finops_user)
    response = client.get(f"/workloads/?{RANGE}&export=csv")
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0][:2] == ["workload", "teams"]
    names = [row[0] for row in rows[1:]]
    assert '\'=HYPERLINK("http://x")' in names
    assert not any(name.startswith("=") for name in names)
    spend_csv = client.get(f"/spend.csv?{RANGE}&group_by=workload").content.decode()
    assert "'=HYPERLINK" in spend_csv


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("=1+1", "'=1+1"),
        ("+cmd", "'+cmd"),
        ("-x", "'-x"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("plain", "plain"),
        (-5, -5),
        (Decimal("-1.5"), Decimal("-1.5")),
        (None, ""),
    ],
)
def test_safe_cell(value: object, expected: object) -> None:
    assert safe_cell(value) == expected


def _three_decimals(value: float | None) -> float | None:
    """Half-up to 3 decimals, by hand: the rule the API and the CLI share."""
    if value is None:
        return None
    return float(Decimal(repr(value)).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP))


def test_api_and_cli_give_latency_to_three_decimals(
    client: Client, manager_user: Any, sample_upload: Any
) -> None:
    stats = {
        s.name: s
        for s in workload_list(parse_filters({"start": "2026-11-01", "end": "2026-11-03"}))
    }
    client.force_login(manager_user)
    api = {w["name"]: w for w in client.get(f"/api/v1/workloads/?{RANGE}").json()["results"]}
    out = StringIO()
    call_command("workloads", "--json", "--start=2026-11-01", "--end=2026-11-03", stdout=out)
    cli = {row["name"]: row for row in json.loads(out.getvalue())}
    for name, s in stats.items():
        assert (
            api[name]["p95_ttft_ms"] == cli[name]["p95_ttft_ms"] == _three_decimals(s.ttft.p95_ms)
        )
        assert (
            api[name]["p95_e2e_ms"] == cli[name]["p95_e2e_ms"] == _three_decimals(s.latency.p95_ms)
        )
        assert api[name]["latency"]["p99_ms"] == _three_decimals(s.latency.p99_ms)
    # The chat workload's p95 is not a whole number of milliseconds, so the rule is exercised.
    assert stats["chat"].latency.p95_ms != round(stats["chat"].latency.p95_ms or 0, 3)
