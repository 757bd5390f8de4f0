"""One set of numbers everywhere: every surface that shows money agrees to the cent.

Generated like the authorization matrix: every URL the project serves and every management
command is listed below as showing the read model's spend (checked here), showing other money
(an upload's totals, a bill, a benchmark's cost per token: checked in their own tests), or
showing no money. A new URL or command without a row fails `test_every_surface_has_a_row`, and
a page or API listed as showing no money that starts to show dollars fails
`test_surfaces_listed_without_money_show_none`.

Seeded data: API spend (logged costs, priced tokens, an unpriced model) every day of November
2026 and one day in June, and a self-hosted serving pool with a GPU bill for two days of
November (busy and idle hours) plus a June day nobody used. Windows: the default 30 days, a
year, and a window with no data. Expected totals are worked out by hand below; every surface
must show them, and the same per-workload and per-day figures.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import (
    BillingCharge,
    Budget,
    Recommendation,
    ServingPool,
    Upload,
    Workload,
)
from audit_app.recommendations.services import recommendations_refresh
from audit_app.workloads.services import workload_override
from tests.support.api_pages import walk_pages
from tests.support.plan import assert_plan_coherent
from tests.support.urls import project_urls

CENT = Decimal("0.01")
EXACT = Decimal("0.0001")  # machine outputs carry 6 decimals: sums agree far below a cent

# --- Every surface, classified -------------------------------------------------------------
# Show the read model's spend: checked by the agreement tests below.
AGREES = {
    "overview": "cards, breakdown table for every stack, spend-per-day and top-workload charts",
    "spend-csv": "every group_by; idle GPU is a row of its own",
    "workloads": "the list and its CSV export",
    "workload-detail": "cards, daily chart, models table",
    "api-spend": "every group_by",
    "api-workloads": "spend_usd = api_spend_usd + gpu_cost_usd",
    "api-workload-detail": "totals and daily",
    "api-pools": "idle and attributed GPU cost per pool",
    "recommendations": "the 'now' figure of each recommendation",
    "api-recommendations": "the 'now' figure of each recommendation",
    "command:workloads": "workloads --json",
    "command:recommend": "recommend --json",
    "budgets": "each budget's spent in its period",
    "budget-detail": "the budget's spent in its period",
    "api-budgets": "each budget's actual_usd",
    "api-budget-detail": "the budget's actual_usd and its days",
    "command:budgets": "budgets --json (and the month to date: test_one_month_to_date_figure)",
    "api-plan": "the savings plan: spend now, after, savings and each option's now",
    "command:plan": "plan --json: the API's answer",
    "statements": "each team's direct, allocated and total; the month's total",
    "statement-team": "one team's direct, allocated and total",
    "statements-csv": "one row per team; totals add up to the month's",
    "statements-xlsx": "the summary sheet's rows and total row",
    "api-statements": "each team's totals, under every policy",
    "command:statement": "statement --json: the API's answer",
}
# Show other money, checked by their own tests.
OTHER_MONEY = {
    "reconciliation": "billed token charges vs token-log estimates (test_billing_*)",
    "api-reconciliation": "billed token charges vs token-log estimates (test_billing_api)",
    "recommendation-detail": "one recommendation; its 'now' is the api-recommendations figure",
    "api-recommendation-detail": "one recommendation (test_recommendations)",
    "api-recommendation-decision": "a decision's answer (test_recommendations)",
    "uploads": "each upload's own totals (test_uploads_pages)",
    "upload-detail": "one upload's own totals (test_uploads_pages)",
    "api-uploads": "each upload's own totals (test_uploads_api)",
    "api-upload-detail": "one upload's own totals (test_uploads_api)",
    "upload-raw": "the file as it was uploaded, byte for byte",
    "upload-delete": "what deleting would remove, an upload's own totals (test_uploads_pages)",
    "benchmarks": "cost per 1M tokens of benchmark runs (tests/benchmarks_app)",
    "benchmark-run": "cost per 1M tokens of one run (tests/benchmarks_app)",
    "gate": "a gate's cost comparison (tests/benchmarks_app)",
    "api-benchmark-runs": "cost per 1M tokens of benchmark runs (tests/benchmarks_app)",
    "api-benchmark-run-detail": "cost per 1M tokens of one run (tests/benchmarks_app)",
    "api-gates": "gates' cost comparisons (tests/benchmarks_app)",
    "api-gate-detail": "a gate's cost comparison (tests/benchmarks_app)",
    "api-schema": "describes the fields, holds no figures",
    "api-docs": "describes the fields, holds no figures",
    "api-bills": "billed and effective cost per billing period (tests/audit_app/billing)",
    "command:bills": "billed and effective cost per billing period (tests/audit_app/billing)",
    "command:ingest": "one upload's own totals (test_commands)",
    "command:land_live": "what live landings added to stream uploads (test_landing_pages)",
    "command:gate": "a gate's cost comparison (tests/benchmarks_app)",
    "command:benchmark_import": "a run's cost per 1M tokens (tests/benchmarks_app)",
    "command:seed_demo": "prints what it loaded",
    "command:classify": "prints classes; recommendations' figures come from recommend",
    "anomalies": "a workload x model's day of read-model spend vs expected (test_anomaly_service)",
    "api-anomalies": "the anomalies page's figures (tests/audit_app/budgets/test_anomaly_service)",
    "command:anomalies": "the anomalies page's figures (test_anomaly_service)",
    "alerts": "budget and anomaly figures as of their alert (tests/audit_app/budgets/test_alerts)",
    "api-alerts": "the alerts page's figures (tests/audit_app/budgets/test_alerts)",
    "alert-acknowledge": "an acknowledgement's answer (tests/audit_app/budgets/test_alerts)",
    "api-alert-acknowledge": "one alert's figures (tests/audit_app/budgets/test_alerts)",
    "command:alerts": "the alerts page's figures (tests/audit_app/budgets/test_alerts)",
}
# Show no money at all (checked: their pages and answers hold no dollar figure).
NO_MONEY = {
    "healthz",
    "login",
    "logout",
    "api-root",
    "api-me",
    "api-audit-events",
    "audit-trail",
    "upload-new",
    "recommendation-decision",
    "workload-override",
    "budget-delete",
    "statements-policy",  # POST only: changes the allocation policy
    "statements-send",  # POST only: sends the statements
    "api-statements-policy",  # the allocation rules, no figures
    "command:issue_token",
    "command:serve",
    "command:prices_sync",  # prints the price cards it added (unit prices), no spend figures
    "command:encrypt_secrets",  # re-encrypts stored secrets; prints how many
    # Billing sources: where exports come from, when polled, what failed; no figures.
    "sources",
    "source-poll",
    "api-sources",
    "api-source-detail",
    "api-source-poll",
    "command:sources",
    "api-ingest-litellm",  # answers record counts; what lands shows on api-uploads
    "otlp-traces",
    "api-otlp-traces",
    # Single sign-on and API tokens: who signs in and their keys; no figures.
    "oidc_authentication_init",
    "oidc_authentication_callback",
    "sso-no-role",
    "api-tokens",
    "api-token-revoke",
    # Deciding whether a billing upload restates another: POST only, answers ids and a count of
    # charges; what then counts shows on the upload pages and bills.
    "upload-restatement",
    "api-upload-supersede",
    "api-upload-keep-both",
}
# Routes added by other work land here until classified; keep it empty.
SURFACE_ALIASES: dict[str, str] = {}


def _commands() -> list[str]:
    root = Path(__file__).resolve().parents[2]
    return sorted(
        f"command:{path.stem}"
        for app in ("audit_app", "benchmarks_app")
        for path in (root / app / "management" / "commands").glob("*.py")
        if path.stem != "__init__"
    )


def test_every_surface_has_a_row() -> None:
    listed = set(AGREES) | set(OTHER_MONEY) | NO_MONEY
    served = {u.name for u in project_urls() if not u.is_admin} | set(_commands())
    assert sorted(served - listed) == [], "add a row: which money does this surface show?"
    assert sorted(listed - served) == []
    assert not (set(AGREES) & set(OTHER_MONEY)) and not (set(AGREES) & NO_MONEY)


# --- Seeded data, with the figures worked out by hand -------------------------------------
NOVEMBER = [date(2026, 11, 1) + timedelta(days=i) for i in range(30)]
JUNE_DAY = date(2026, 6, 15)
POOL_DAYS = (date(2026, 11, 28), date(2026, 11, 29))
BUSY_HOURS = range(9, 17)  # 8 busy hours a day on the pool


def _api_log() -> bytes:
    """Per November day: chat 2 requests with a logged cost of $0.01 each ($0.02); evals one
    gpt-4o-mini request of 10,000 input and 1,000 output tokens priced from the card at $0.15 /
    $0.60 per 1M ($0.0015 + $0.0006 = $0.0021); tool one request of an unpriced model ($0).
    June 15: chat one request logged at $0.50."""
    rows = ["started_at,ended_at,workload,team,provider,model,input_tokens,output_tokens,cost_usd"]
    for day in NOVEMBER:
        d = day.isoformat()
        rows += [
            f"{d}T10:00:00Z,{d}T10:00:02Z,chat,web,openai,gpt-4o,1000,200,0.01",
            f"{d}T15:00:00Z,{d}T15:00:01Z,chat,web,openai,gpt-4o,800,100,0.01",
            f"{d}T02:00:00Z,{d}T02:00:30Z,evals,ml,openai,gpt-4o-mini,10000,1000,",
            f"{d}T12:00:00Z,{d}T12:00:01Z,tool,ops,openai,my-finetune,100,10,",
        ]
    d = JUNE_DAY.isoformat()
    rows.append(f"{d}T10:00:00Z,{d}T10:00:05Z,chat,web,openai,gpt-4o,5000,500,0.50")
    return ("\n".join(rows) + "\n").encode()


def _pool_log() -> bytes:
    """On the pool, each busy hour: copilot 1,000 + 1,000 tokens; at 12:00 batch-embed adds
    3,000 tokens, so that hour splits 2,000 : 3,000 between them."""
    rows = ["started_at,ended_at,workload,team,provider,model,input_tokens,output_tokens,pool"]
    for day in POOL_DAYS:
        for hour in BUSY_HOURS:
            t = f"{day.isoformat()}T{hour:02d}:10:00Z"
            rows.append(f"{t},{t},copilot,web,vllm,llama-3.3-70b,1000,1000,gpu")
        t = f"{day.isoformat()}T12:30:00Z"
        rows.append(f"{t},{t},batch-embed,ml,vllm,llama-3.3-70b,2500,500,gpu")
    return ("\n".join(rows) + "\n").encode()


API_NOVEMBER = Decimal("0.02") * 30 + Decimal("0.0021") * 30  # 0.663
API_JUNE = Decimal("0.50")
# The pool bill: $10.00 an hour for the 48 hours of Nov 28-29: 16 busy hours ($160: copilot
# 7 x $10 + $4 and batch-embed $6 a day) and 32 idle ($320); June 15: 24 hours x $2.50 idle.
POOL_NOVEMBER = Decimal("480.00")
IDLE_NOVEMBER = Decimal("320.00")
POOL_JUNE = Decimal("60.00")
GPU = {"copilot": Decimal("148.00"), "batch-embed": Decimal("12.00")}


@dataclass(frozen=True, kw_only=True)
class Window:
    name: str
    start: date
    end: date
    total: Decimal  # by hand
    idle: Decimal
    workloads: dict[str, Decimal]  # by hand: spend_usd per workload

    @property
    def query(self) -> str:
        return f"start={self.start}&end={self.end}"


WINDOWS = [
    Window(
        name="30 days",
        start=date(2026, 11, 1),
        end=date(2026, 11, 30),
        total=API_NOVEMBER + POOL_NOVEMBER,  # 480.663
        idle=IDLE_NOVEMBER,
        workloads={
            "copilot": GPU["copilot"],
            "batch-embed": GPU["batch-embed"],
            "chat": Decimal("0.60"),
            "evals": Decimal("0.063"),
            "tool": Decimal(0),
        },
    ),
    Window(
        name="a year",
        start=date(2025, 12, 1),
        end=date(2026, 11, 30),
        total=API_NOVEMBER + API_JUNE + POOL_NOVEMBER + POOL_JUNE,  # 541.163
        idle=IDLE_NOVEMBER + POOL_JUNE,
        workloads={
            "copilot": GPU["copilot"],
            "batch-embed": GPU["batch-embed"],
            "chat": Decimal("1.10"),
            "evals": Decimal("0.063"),
            "tool": Decimal(0),
        },
    ),
    Window(
        name="no data",
        start=date(2020, 1, 1),
        end=date(2020, 1, 30),
        total=Decimal(0),
        idle=Decimal(0),
        workloads={},
    ),
]


def _ingest(content: bytes, name: str) -> Upload:
    upload = upload_create(source=io.BytesIO(content), original_name=name, enqueue=False)
    return upload_ingest(upload_id=upload.pk)


def _bill() -> None:
    bill = Upload.objects.create(
        kind=Upload.Kind.BILLING,
        original_name="gpu-bill.csv",
        sha256="c" * 64,
        status=Upload.Status.SUCCEEDED,
        file="x",
    )
    charges = []

    def charge(start: datetime, cost: str, resource: str) -> None:
        month = datetime(start.year, start.month, 1, tzinfo=UTC)
        charges.append(
            BillingCharge(
                upload=bill,
                billing_period_start=month,
                billing_period_end=(month + timedelta(days=32)).replace(day=1),
                line=len(charges) + 2,
                provider="aws",
                charge_category="Usage",
                currency="USD",
                period_start=start,
                period_end=start + timedelta(hours=1),
                billed_cost=Decimal(cost),
                resource_id=resource,
                meter_kind="gpu_instance",
                instance_type="p5.48xlarge",
            )
        )

    for day in POOL_DAYS:
        for hour in range(24):
            charge(datetime(day.year, day.month, day.day, hour, tzinfo=UTC), "10.00", "i-gpu")
    for hour in range(24):
        charge(datetime(2026, 6, 15, hour, tzinfo=UTC), "2.50", "i-gpu")
    charge(datetime(2026, 11, 28, 0, tzinfo=UTC), "999.00", "i-not-a-pool")
    BillingCharge.objects.bulk_create(charges)


@pytest.fixture
def seeded(db: Any, engineer_user: Any, settings: Any) -> None:
    settings.RECOMMENDATION_MIN_SAVINGS_USD = 0
    _ingest(_api_log(), "api.csv")
    _ingest(_pool_log(), "pool.csv")
    _bill()
    ServingPool.objects.create(name="gpu", resource_ids=["i-gpu"])
    for name in ("batch-embed", "evals"):
        workload_override(
            workload=Workload.objects.get(name=name),
            user=engineer_user,
            workload_class="async",
            reason="background job",
        )
    recommendations_refresh()


# --- Reading each surface ------------------------------------------------------------------
def money(text: str) -> Decimal:
    """A dollar figure as pages write it ("$1,234.56", "-$3.00")."""
    negative = text.strip().startswith(("-", "−"))
    value = Decimal(re.sub(r"[^\d.]", "", text))
    return -value if negative else value


def by_testid(html: str, name: str) -> Decimal:
    match = re.search(rf'data-testid="{name}">(?:<a [^>]*>)?([^<]+)<', html)
    assert match, f"no {name} on the page"
    return money(match.group(1))


def csv_rows(response: Any) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def bar_total(figure: dict[str, Any], *, names: Iterator[str] | None = None) -> Decimal:
    """The sum of every bar a figure draws, as Decimal (plotly carries floats)."""
    wanted = set(names) if names is not None else None
    total = Decimal(0)
    for trace in figure.get("data", []):
        if trace.get("type") != "bar" or (wanted is not None and trace["name"] not in wanted):
            continue
        total += sum((Decimal(str(v)) for v in trace["y"] if v is not None), Decimal(0))
    return total


def close(a: Decimal, b: Decimal, tolerance: Decimal = EXACT) -> bool:
    return abs(a - b) <= tolerance


@pytest.fixture
def finops(client: Client, finops_user: Any) -> Client:
    client.force_login(finops_user)
    return client


@pytest.mark.parametrize("window", WINDOWS, ids=lambda w: w.name)
def test_every_surface_shows_the_same_money(seeded: None, finops: Client, window: Window) -> None:
    q = window.query

    # The API: every grouping has the same total; rows (over all pages) plus idle make it up.
    spend = {}
    for group_by in ("workload", "team", "model", "provider", "pool", "day"):
        body, rows = walk_pages(finops, f"/api/v1/spend/?group_by={group_by}&{q}")
        spend[group_by] = rows
        assert Decimal(body["total_usd"]) == window.total, group_by
        assert Decimal(body["idle_gpu_usd"]) == window.idle, group_by
        rows_total = sum((Decimal(r["spend_usd"]) for r in rows), Decimal(0))
        assert close(rows_total + Decimal(body["idle_gpu_usd"]), window.total), group_by
        for r in rows:
            assert Decimal(r["spend_usd"]) == Decimal(r["api_spend_usd"]) + Decimal(
                r["gpu_cost_usd"]
            )
    by_workload = {r["key"]: Decimal(r["spend_usd"]) for r in spend["workload"]}
    assert by_workload == {k: v for k, v in window.workloads.items()}
    by_pool = {r["key"]: Decimal(r["gpu_cost_usd"]) for r in spend["pool"]}
    if window.total:
        assert by_pool["gpu"] == GPU["copilot"] + GPU["batch-embed"]

    # The CSV of every grouping: its spend_usd column (idle GPU a row of its own) adds up.
    for group_by in spend:
        rows = csv_rows(finops.get(f"/spend.csv?group_by={group_by}&{q}"))
        assert close(sum((Decimal(r["spend_usd"]) for r in rows), Decimal(0)), window.total)

    # The workloads API and its detail: the same per-workload figures, daily points add up.
    _, listed = walk_pages(finops, f"/api/v1/workloads/?{q}")
    assert {w["name"]: Decimal(w["spend_usd"]) for w in listed} == window.workloads
    for w in listed:
        assert Decimal(w["spend_usd"]) == Decimal(w["api_spend_usd"]) + Decimal(w["gpu_cost_usd"])
        detail = finops.get(f"/api/v1/workloads/{w['id']}/?{q}").json()
        assert Decimal(detail["spend_usd"]) == window.workloads[w["name"]]
        daily = sum((Decimal(d["spend_usd"]) for d in detail["daily"]), Decimal(0))
        assert close(daily, window.workloads[w["name"]])

    # The CLI.
    out = io.StringIO()
    call_command(
        "workloads", "--json", f"--start={window.start}", f"--end={window.end}", stdout=out
    )
    assert {r["name"]: Decimal(r["spend_usd"]) for r in json.loads(out.getvalue())} == (
        window.workloads
    )

    # The pools API: idle per pool adds up to the idle figure; attributed to the workloads'.
    _, pools = walk_pages(finops, f"/api/v1/pools/?{q}")
    assert sum((Decimal(p["idle"]) for p in pools), Decimal(0)) == window.idle
    for p in pools:
        for name, amount in p["by_workload"].items():
            assert Decimal(amount) == window.workloads[name] - _api_part(spend, name)

    # The overview, for every stack: cards, table footer, charts.
    for stack in ("provider", "model", "team", "workload", "pool"):
        page = finops.get(f"/?{q}&stack={stack}")
        html = page.content.decode()
        assert by_testid(html, "total-spend") == window.total.quantize(CENT)
        if not window.total:
            assert 'data-testid="empty-window"' in html
            continue
        assert by_testid(html, "breakdown-total") == window.total.quantize(CENT)
        context = page.context
        assert close(bar_total(context["spend_figure"]), window.total)
        top = context["top_figure"]["data"][0]
        for name, value in zip(top["y"], top["x"], strict=True):
            assert close(Decimal(str(value)), window.workloads[name])
        split = sum(context["class_split"].values(), Decimal(0))
        assert close(split + context["report"].idle_gpu_usd, window.total)

    # The workloads page and its CSV.
    page = finops.get(f"/workloads/?{q}")
    assert {w.name: w.spend_usd for w in page.context["workloads"]} == window.workloads
    assert page.context["total_spend"] == window.total
    rows = csv_rows(finops.get(f"/workloads/?{q}&export=csv"))
    assert close(sum((Decimal(r["spend_usd"]) for r in rows), Decimal(0)), window.total)

    # Each workload's page: the card, the daily chart, the models table.
    for w in listed:
        page = finops.get(f"/workloads/{w['id']}/?{q}")
        expected = window.workloads[w["name"]]
        html = page.content.decode()
        if w["requests"]:
            assert by_testid(html, "workload-spend") == expected.quantize(CENT)
        assert close(bar_total(page.context["usage_figure"]), expected)
        models = page.context["models"].rows
        assert close(sum((r.spend_usd for r in models), Decimal(0)), expected)


def _api_part(spend: dict[str, list[dict[str, Any]]], name: str) -> Decimal:
    for r in spend["workload"]:
        if r["key"] == name:
            return Decimal(r["api_spend_usd"])
    return Decimal(0)


def test_recommendations_now_is_what_they_re_price(seeded: None, finops: Client) -> None:
    # The analysis window is the last 30 days with data: November, 720 hours. An option's
    # "now" is the spend it replaces: a workload's API spend on the model it moves, or the whole
    # bill of the pool it leaves.
    to_month = Decimal(730) / 720
    _, rows = walk_pages(finops, "/api/v1/spend/?group_by=workload&start=2026-11-01&end=2026-11-30")
    spend = {r["key"]: Decimal(r["spend_usd"]) for r in rows}
    assert spend["evals"] == Decimal("0.063")
    pool_bill = (POOL_NOVEMBER * to_month).quantize(CENT)
    _, recommendations = walk_pages(finops, "/api/v1/recommendations/")
    # batch-embed shares the gpu pool with the copilot, which keeps the pool's hours billed:
    # moving it off saves nothing, so it gets no recommendation.
    assert {r["workload"] for r in recommendations} == {"evals"}

    def expected_now(r: dict[str, Any]) -> Decimal:
        if r["workload"] is None:
            return pool_bill
        return (spend[r["workload"]] * to_month).quantize(CENT)

    for r in recommendations:
        assert Decimal(r["current_monthly_usd"]) == expected_now(r)
    out = io.StringIO()
    call_command("recommend", "--json", stdout=out)
    for r in json.loads(out.getvalue()):
        assert Decimal(r["current_monthly_usd"]) == expected_now(r)
    assert Recommendation.objects.filter(workload__name="evals").count() == 1  # the batch tier


def test_the_plan_reads_the_same_everywhere(seeded: None, finops: Client) -> None:
    to_month = Decimal(730) / 720
    plan = finops.get("/api/v1/plan/").json()
    assert (plan["start"], plan["end"]) == ("2026-11-01", "2026-11-30")
    assert Decimal(plan["spend_monthly_usd"]) == (
        (API_NOVEMBER + POOL_NOVEMBER) * to_month
    ).quantize(CENT)
    assert_plan_coherent(plan)
    assert Decimal(plan["savings_monthly_usd"]) > 0
    recommendations = {r["id"]: r for r in walk_pages(finops, "/api/v1/recommendations/")[1]}
    for option in plan["options"]:
        stored = recommendations[option["id"]]
        assert option["now_monthly_usd"] == stored["current_monthly_usd"]
        assert option["after_monthly_usd"] == stored["projected_monthly_usd"]
        if not option["in_plan"]:
            assert option["savings_monthly_usd"] == stored["savings_monthly_usd"]
    out = io.StringIO()
    call_command("plan", "--json", stdout=out)
    assert json.loads(out.getvalue()) == plan
    savings = Decimal(plan["savings_monthly_usd"])
    html = finops.get("/recommendations/").content.decode()
    assert by_testid(html, "total-savings") == savings
    assert by_testid(html, "plan-spend") == Decimal(plan["spend_monthly_usd"])
    assert by_testid(html, "plan-after") == Decimal(plan["after_monthly_usd"])
    assert by_testid(finops.get("/").content.decode(), "potential-savings") == savings
    # A workload's page: its option in the plan with the same share.
    (evals,) = [o for o in plan["options"] if o["workload"] == "evals" and o["in_plan"]]
    page = finops.get(f"/workloads/{Workload.objects.get(name='evals').pk}/").content.decode()
    share = re.search(r'data-testid="workload-plan">.*?its share (\$[\d,.]+)/month', page, re.S)
    assert share and money(share.group(1)) == Decimal(evals["savings_monthly_usd"])
    # A window of its own: the API and the command agree, priced on that window's spend.
    windowed = finops.get("/api/v1/plan/?start=2026-11-16&end=2026-11-30").json()
    out = io.StringIO()
    call_command("plan", "--json", "--start", "2026-11-16", "--end", "2026-11-30", stdout=out)
    assert json.loads(out.getvalue()) == windowed
    # Nov 16-30: 15 days of API spend (0.0221 a day) and the whole pool bill, 360 hours.
    fifteen = Decimal("0.0221") * 15 + POOL_NOVEMBER
    assert Decimal(windowed["spend_monthly_usd"]) == (fifteen * 730 / 360).quantize(CENT)
    assert_plan_coherent(windowed)
    bad = finops.get("/api/v1/plan/?start=2026-11-30&end=2026-11-01")
    assert bad.status_code == 400


def test_the_month_cards_are_the_months_totals(seeded: None, finops: Client) -> None:
    # No data in the current month: the cards compare the last complete month with the one
    # before, each the same total the spend API gives for that month.
    today = timezone.now().date()
    html = finops.get("/").content.decode()
    first = today.replace(day=1)
    last_month_end = first - timedelta(days=1)
    last_month_start = last_month_end.replace(day=1)
    api = finops.get(
        f"/api/v1/spend/?group_by=day&start={last_month_start}&end={last_month_end}"
    ).json()
    assert by_testid(html, "month-this") == Decimal(api["total_usd"]).quantize(CENT)
    if last_month_start == date(2026, 11, 1):  # run in December 2026: November by hand
        assert Decimal(api["total_usd"]) == API_NOVEMBER + POOL_NOVEMBER


# --- Surfaces listed without money show none ---------------------------------------------
_DOLLARS = re.compile(r"\$\s?\d|_usd\"")


@pytest.mark.parametrize(
    "url",
    [u for u in project_urls() if u.name in NO_MONEY and "<" not in u.path],
    ids=lambda u: u.name,
)
def test_surfaces_listed_without_money_show_none(seeded: None, admin_user: Any, url: Any) -> None:
    client = Client()
    client.force_login(admin_user)
    body = client.get(url.path).content.decode(errors="replace")
    assert not _DOLLARS.search(body), f"{url.name} shows money: give it a row in AGREES"


# Budgets on 30 November (the last day with data): November's spend of their scope. A provider
# counts its serving pools whole: vllm's traffic ran on the pool "gpu" (its share and the idle
# hours), and AWS bills that pool.
BUDGET_SPENT = {
    ("all", ""): API_NOVEMBER + POOL_NOVEMBER,
    ("workload", "copilot"): GPU["copilot"],
    ("workload", "chat"): Decimal("0.60"),
    ("provider", "vllm"): POOL_NOVEMBER,
    ("provider", "aws"): POOL_NOVEMBER,
    ("team", "ml"): GPU["batch-embed"] + Decimal("0.063"),
}


def test_budgets_spent_is_the_read_models_month(
    seeded: None, finops: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(timezone, "now", lambda: datetime(2026, 12, 1, 9, tzinfo=UTC))
    budgets = {
        scope: Budget.objects.create(
            name=f"{scope[0]} {scope[1]}",
            scope_kind=scope[0],
            scope_value=scope[1],
            amount_usd=Decimal("1000.00"),
            alert_at_pct=[80],
        )
        for scope in BUDGET_SPENT
    }
    # The overview's total for November is the all-spend budget's spent.
    spend = finops.get("/api/v1/spend/?start=2026-11-01&end=2026-11-30").json()
    assert Decimal(spend["total_usd"]) == BUDGET_SPENT[("all", "")]
    listed = {r["id"]: r for r in walk_pages(finops, "/api/v1/budgets/?limit=2")[1]}
    out = io.StringIO()
    call_command("budgets", "--json", stdout=out)
    printed = {r["id"]: r for r in json.loads(out.getvalue())}
    page = finops.get("/budgets/").content.decode()
    on_page = [money(m) for m in re.findall(r'data-testid="budget-actual">([^<]+)<', page)]
    assert sorted(on_page) == sorted(money(f"${v:.2f}") for v in BUDGET_SPENT.values())
    for scope, expected in BUDGET_SPENT.items():
        pk = budgets[scope].pk
        detail = finops.get(f"/api/v1/budgets/{pk}/").json()
        assert close(Decimal(listed[pk]["actual_usd"]), expected), scope
        assert close(Decimal(detail["actual_usd"]), expected), scope
        assert close(Decimal(detail["days"][29]["actual_usd"]), expected), scope
        assert close(Decimal(printed[pk]["actual_usd"]), expected), scope
        html = finops.get(f"/budgets/{pk}/").content.decode()
        assert close(by_testid(html, "actual"), expected, CENT), scope


# Statements of November: the month's total ($480.66) given to teams. Direct: web $148.60
# (chat $0.60, copilot's GPU share $148), ml $12.06 (evals $0.063, batch-embed $12), ops $0
# (an unpriced model). Shared: the pool's $320 idle, allocated
# - proportional to direct spend on the pool (148 : 12): web $296, ml $24;
# - even between the two teams that used it: $160 each;
# - owner (ops, which runs the pool): all $320 to ops.
STATEMENTS = {
    "proportional": {"web": "444.60", "ml": "36.06", "ops": "0.00"},
    "even": {"web": "308.60", "ml": "172.06", "ops": "0.00"},
    "owner": {"web": "148.60", "ml": "12.06", "ops": "320.00"},
}


def _xlsx_rows(content: bytes) -> list[dict[str, Any]]:
    from openpyxl import load_workbook

    sheet = load_workbook(io.BytesIO(content))["Summary"]
    rows = [list(r) for r in sheet.iter_rows(values_only=True)]
    header_at = next(i for i, r in enumerate(rows) if r and r[0] == "month")
    header = rows[header_at]
    return [dict(zip(header, r, strict=True)) for r in rows[header_at + 1 :]]


@pytest.mark.parametrize("policy", list(STATEMENTS))
def test_statements_share_the_months_total(seeded: None, finops: Client, policy: str) -> None:
    from audit_app.statements.services import policy_change

    policy_change(actor=None, pool="", method=policy, owner="ops")
    expected = {team: Decimal(v) for team, v in STATEMENTS[policy].items()}
    month_total = by_testid(
        finops.get("/?start=2026-11-01&end=2026-11-30").content.decode(), "total-spend"
    )
    assert month_total == (API_NOVEMBER + POOL_NOVEMBER).quantize(CENT)
    assert sum(expected.values()) == month_total

    api = finops.get("/api/v1/statements/?month=2026-11").json()
    assert api["policy"] == policy
    assert Decimal(api["total_usd"]) == month_total
    assert {t["team"]: Decimal(t["total_usd"]) for t in api["teams"]} == expected
    for t in api["teams"]:
        assert Decimal(t["total_usd"]) == Decimal(t["direct_usd"]) + Decimal(t["allocated_usd"])
    out = io.StringIO()
    call_command("statement", "--month", "2026-11", "--json", stdout=out)
    assert json.loads(out.getvalue()) == api
    out = io.StringIO()
    call_command("statement", "--month", "2026-11", "--json", "--policy", policy, stdout=out)
    assert {t["team"]: Decimal(t["total_usd"]) for t in json.loads(out.getvalue())["teams"]} == (
        expected
    )

    html = finops.get("/statements/?month=2026-11").content.decode()
    assert by_testid(html, "statements-total") == month_total
    on_page = re.findall(
        r'data-testid="statement-team">([^<]+)<.*?data-testid="statement-total">([^<]+)<',
        html,
        re.S,
    )
    assert {team: money(v) for team, v in on_page} == expected
    for team, total in expected.items():
        page = finops.get(f"/statements/team/?team={team}&month=2026-11").content.decode()
        assert by_testid(page, "team-total") == total

    rows = csv_rows(finops.get("/statements.csv?month=2026-11"))
    assert {r["team"]: Decimal(r["total_usd"]) for r in rows} == expected
    book = _xlsx_rows(finops.get("/statements.xlsx?month=2026-11").content)
    assert {r["team"]: Decimal(str(r["total_usd"])).quantize(CENT) for r in book[:-1]} == expected
    assert Decimal(str(book[-1]["total_usd"])).quantize(CENT) == month_total


def test_one_month_to_date_figure(
    seeded: None, finops: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Read at 15:00 on 29 November: the 29th is still running, so the month to date is
    # November 1-28, and the pool's hours of the 29th are scheduled, in none of the figures.
    monkeypatch.setattr(timezone, "now", lambda: datetime(2026, 11, 29, 15, tzinfo=UTC))
    expected = API_NOVEMBER / 30 * 28 + POOL_NOVEMBER / 2
    budget = Budget.objects.create(
        name="everything", scope_kind="all", amount_usd=Decimal("1000.00"), alert_at_pct=[80]
    )
    html = finops.get("/").content.decode()
    assert close(by_testid(html, "month-this"), expected, CENT)
    spend = finops.get("/api/v1/spend/?start=2026-11-01&end=2026-11-28").json()
    assert Decimal(spend["total_usd"]) == expected
    detail = finops.get(f"/api/v1/budgets/{budget.pk}/").json()
    assert (detail["as_of"], Decimal(detail["actual_usd"])) == ("2026-11-28", expected)
    out = io.StringIO()
    call_command("budgets", "--json", stdout=out)
    [printed] = json.loads(out.getvalue())
    assert Decimal(printed["actual_usd"]) == expected
    page = finops.get("/budgets/").content.decode()
    [on_page] = re.findall(r'data-testid="budget-actual">([^<]+)<', page)
    assert money(on_page) == expected.quantize(CENT)
    # Like for like: October 1-28 had no data; June's figures are in no month shown.
    assert Decimal(detail["previous_same_days_usd"]) == Decimal(0)
    assert by_testid(html, "month-same-days") == Decimal(0)
    # The partial day: its API spend alone (its pool hours are scheduled).
    assert by_testid(html, "today-so-far") == (API_NOVEMBER / 30).quantize(CENT)
    pools = finops.get("/api/v1/pools/?start=2026-11-01&end=2026-11-29").json()["results"]
    [gpu] = [p for p in pools if p["name"] == "gpu"]
    assert (gpu["hours_billed"], gpu["hours_scheduled"]) == (24, 24)
    assert Decimal(gpu["scheduled"]) == POOL_NOVEMBER / 2


# --- Provider cost reports (an openai source's upload, no token log) ------------------------
# Nov 3-5 2026, per day: gpt-4o $2.40 (project "Web", keys a and b) and an unpriced cost line
# "web search tool calls" $0.10 (project "Web"): $2.50 a day, $7.50 in all, all of it the
# report's, as no token log covers those days. Budgets, spend, the bills and the workloads
# read the same $7.50.
REPORT_DAYS = [date(2026, 11, 3), date(2026, 11, 4), date(2026, 11, 5)]
REPORT_TOTAL = Decimal("7.50")


@pytest.fixture
def reported(db: Any) -> Upload:
    from audit_app.ingestion.billing_exports.provider_reports import (
        DocCost,
        DocUsage,
        report_document,
    )

    costs, usage = [], []
    for day in REPORT_DAYS:
        for line_item, amount in (("gpt-4o, input", "2.40"), ("web search tool calls", "0.10")):
            costs.append(
                DocCost(day=day, line_item=line_item, model="gpt-4o" if "," in line_item else "",
                        project_id="proj_web", project_name="Web", amount=Decimal(amount),
                        currency="USD", service_tier="", token_type="")
            )  # fmt: skip
        for key, tokens in (("key_a", 3_000), ("key_b", 1_000)):
            usage.append(
                DocUsage(day=day, model="gpt-4o", project_id="proj_web", api_key_id=key,
                         batch=False, service_tier="", requests=5, input_tokens=tokens,
                         output_tokens=0, cached_input_tokens=0, cache_write_tokens=0)
            )  # fmt: skip
    document = report_document(
        provider="openai",
        account="openai-source-1",
        start=REPORT_DAYS[0],
        end=date(2026, 11, 6),
        costs=costs,
        usage=usage,
        follows=None,
    )
    upload = upload_create(
        source=io.BytesIO(document),
        original_name="openai-costs.json",
        kind="billing",
        requested_format="openai-costs-api",
        enqueue=False,
    )
    return upload_ingest(upload_id=upload.pk)


def test_a_provider_report_reads_the_same_on_every_surface(
    reported: Upload, finops: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    q = "start=2026-11-01&end=2026-11-30"
    for group_by in ("workload", "model", "provider", "day"):
        body, rows = walk_pages(finops, f"/api/v1/spend/?group_by={group_by}&{q}")
        assert Decimal(body["total_usd"]) == REPORT_TOTAL, group_by
        rows = csv_rows(finops.get(f"/spend.csv?group_by={group_by}&{q}"))
        csv_total = sum((Decimal(r["spend_usd"]) for r in rows), Decimal(0))
        assert close(csv_total, REPORT_TOTAL), group_by
    _, rows = walk_pages(finops, f"/api/v1/spend/?group_by=model&{q}")
    by_model = {r["key"]: Decimal(r["spend_usd"]) for r in rows}
    assert by_model == {"gpt-4o": Decimal("7.20"), "web search tool calls": Decimal("0.30")}
    _, listed = walk_pages(finops, f"/api/v1/workloads/?{q}")
    assert {w["name"]: Decimal(w["spend_usd"]) for w in listed} == {"Web": REPORT_TOTAL}
    assert by_testid(finops.get(f"/?{q}").content.decode(), "total-spend") == REPORT_TOTAL
    # The bills: the same dollars as billed and effective cost.
    bills = finops.get("/api/v1/bills/").json()
    assert bills["billed_cost"] == {"USD": "7.5"} and bills["effective_cost"] == {"USD": "7.5"}
    # A budget of all spend for November reads the report's month.
    monkeypatch.setattr(timezone, "now", lambda: datetime(2026, 12, 1, 9, tzinfo=UTC))
    budget = Budget.objects.create(
        name="all", scope_kind="all", scope_value="", amount_usd=Decimal("100"), alert_at_pct=[80]
    )
    detail = finops.get(f"/api/v1/budgets/{budget.pk}/").json()
    assert close(Decimal(detail["actual_usd"]), REPORT_TOTAL)
