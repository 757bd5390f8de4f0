"""Every list API answers pages: `?limit=&offset=`, the envelope count/next/previous/results,
a stable order (walking every page gives the unpaginated selector's list exactly) and a 400
naming the parameter for a bad value.

Seeded: 105 workloads (`w000`..`w104`, each with a gpt-4o and a gpt-4o-mini request on day
1 + i % 30 of November 2026, team `t{i % 5}`, cost (i % 10 + 1) cents per request, so spends
tie in groups of ten and only the name breaks the tie), 15 recommendations, 105 audit events
(all at one time, so only the id orders them), four pool
reports (three pools, one billed in two currencies), token charges on six days in USD and EUR,
seven bill periods, five benchmark runs, five gates and five budgets.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.test import Client

from audit_app.api.pagination import MAX_LIMIT, parse_limit, parse_offset
from audit_app.budgets.anomaly_service import anomaly_list
from audit_app.costs.billing import pool_reports, reconciliation
from audit_app.costs.bills import bills_summary
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.lib.query_params import ParameterError
from audit_app.models import (
    Alert,
    AuditEvent,
    BillingCharge,
    BillingSource,
    Budget,
    Recommendation,
    ServingPool,
    Upload,
    Workload,
)
from audit_app.reporting.filters import parse_filters
from audit_app.reporting.selectors import recommendation_groups
from audit_app.reporting.spend import spend_report, workload_list
from benchmarks_app.models import BenchmarkRun, Gate
from tests.audit_app.budgets.anomaly_samples import ingest_sample
from tests.factories import UploadFactory
from tests.support.api_pages import walk_pages
from tests.support.urls import project_urls

RANGE = "start=2026-11-01&end=2026-11-30"
H0 = datetime.fromisoformat("2026-11-01T00:00:00+00:00")
WORKLOADS = 105


# --- The parameters, as plain functions ----------------------------------------------------
@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, 100), ("", 100), ("1", 1), ("007", 7), (" 5", 5), ("1000", 1000)],
)
def test_parse_limit(value: str | None, expected: int) -> None:
    assert parse_limit({} if value is None else {"limit": value}, default=100) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, 0), ("", 0), ("0", 0), ("250", 250), ("1000000000", 1_000_000_000)],
)
def test_parse_offset(value: str | None, expected: int) -> None:
    assert parse_offset({} if value is None else {"offset": value}) == expected


LIMIT_RANGE = "must be between 1 and 1000"
OFFSET_RANGE = "must be between 0 and 1000000000"
NOT_WHOLE = "is not a whole number"
BAD_VALUES = [
    ("limit", "0", f"limit='0' {LIMIT_RANGE}"),
    ("limit", "1001", f"limit='1001' {LIMIT_RANGE}"),
    ("limit", "-1", f"limit='-1' {LIMIT_RANGE}"),
    ("limit", "ten", f"limit='ten' {NOT_WHOLE}"),
    ("limit", "2.5", f"limit='2.5' {NOT_WHOLE}"),
    ("limit", "1e3", f"limit='1e3' {NOT_WHOLE}"),
    ("limit", "+5", f"limit='+5' {NOT_WHOLE}"),
    ("limit", "\u0665", f"limit='\u0665' {NOT_WHOLE}"),  # an Arabic-Indic five
    ("limit", "5\x00", f"limit='5\\x00' {NOT_WHOLE}"),
    ("limit", "9" * 10_000, f"limit='{'9' * 40}'… (10000 characters) {NOT_WHOLE}"),
    ("offset", "-1", f"offset='-1' {OFFSET_RANGE}"),
    ("offset", "1000000001", f"offset='1000000001' {OFFSET_RANGE}"),
    ("offset", "99999999999999999999", f"offset='99999999999999999999' {OFFSET_RANGE}"),
    ("offset", "x", f"offset='x' {NOT_WHOLE}"),
    ("offset", "\x00", f"offset='\\x00' {NOT_WHOLE}"),
]


@pytest.mark.parametrize(("name", "value", "message"), BAD_VALUES)
def test_bad_values_are_refused_naming_the_parameter(name: str, value: str, message: str) -> None:
    with pytest.raises(ParameterError) as refused:
        if name == "offset":
            parse_offset({name: value})
        else:
            parse_limit({name: value}, default=100)
    assert (refused.value.field, str(refused.value)) == (name, message)


# --- Every list API, seeded ----------------------------------------------------------------
def _token_log() -> bytes:
    lines = ["started_at,ended_at,workload,team,provider,model,input_tokens,output_tokens,cost_usd"]
    for i in range(WORKLOADS):
        day = date(2026, 11, 1 + i % 30).isoformat()
        cost = Decimal(i % 10 + 1) / 100
        for model in ("gpt-4o", "gpt-4o-mini"):
            lines.append(
                f"{day}T10:00:00Z,{day}T10:00:01Z,w{i:03d},t{i % 5},openai,{model},100,10,{cost}"
            )
    return ("\n".join(lines) + "\n").encode()


def _charge(upload: Upload, start: datetime, cost: str, **fields: Any) -> None:
    BillingCharge.objects.create(
        upload=upload,
        line=2,
        provider=fields.pop("provider", "aws"),
        charge_category="Usage",
        currency=fields.pop("currency", "USD"),
        period_start=start,
        period_end=start + timedelta(hours=1),
        billed_cost=Decimal(cost),
        **fields,
    )


@pytest.fixture
def seeded(db: Any) -> None:
    log = upload_create(source=io.BytesIO(_token_log()), original_name="log.csv", enqueue=False)
    upload_ingest(upload_id=log.pk)
    AuditEvent.objects.bulk_create(
        AuditEvent(action="upload_created", object_type="upload", object_id=str(i), summary="x")
        for i in range(WORKLOADS - 1)
    )
    AuditEvent.objects.update(created_at=H0)  # one time for all: only the id orders them
    workloads = {w.name: w for w in Workload.objects.all()}
    for i in range(12):
        for rank in (1, 2) if i % 4 == 0 else (1,):
            Recommendation.objects.create(
                workload=workloads[f"w{i:03d}"],
                target_kind="dedicated_hardware",
                target=f"pool {rank}",
                current_monthly_usd=10,
                projected_monthly_usd=10 - i % 3,
                savings_monthly_usd=i % 3,
                confidence="low",
                rank=rank,
                period_start="2026-11-01",
                period_end="2026-11-30",
            )

    bill = UploadFactory(kind=Upload.Kind.BILLING)
    for name in ("gpu-a", "gpu-b", "gpu-c"):
        ServingPool.objects.create(name=name, resource_ids=[f"i-{name}"])
        _charge(bill, H0, "4.00", resource_id=f"i-{name}")
    _charge(bill, H0, "3.00", resource_id="i-gpu-b", currency="EUR")
    for day in range(6):
        for model in ("gpt-4o", "gpt-4o-mini"):
            for currency in ("USD", "EUR"):
                _charge(
                    bill,
                    H0 + timedelta(days=day),
                    "0.02",
                    provider="openai",
                    currency=currency,
                    meter_kind="token",
                    tags={"model": model},
                )
    for account in range(1, 6):
        _charge(bill, H0, "1.00", billing_account=f"acct-{account}")

    runs = []
    for n in range(5):
        upload = UploadFactory(kind=Upload.Kind.BENCHMARK)
        runs.append(BenchmarkRun.objects.create(upload=upload, name=f"run {n}", tool="aiperf"))
    for n in range(5):
        Gate.objects.create(baseline=runs[0], candidate=runs[n], verdict=Gate.Verdict.PASS)
    for n in range(5):  # named out of id order: the list is by name
        Budget.objects.create(
            name=f"budget {4 - n}", scope_kind="all", amount_usd=100, alert_at_pct=[80]
        )
    for n in range(8):
        Alert.objects.create(kind="anomaly", anomaly_key=f"2026-11-{n + 1:02d}|w|m", message="x")
    Alert.objects.update(created_at=H0)  # one time for all: only the id orders them


def _filters() -> Any:
    return parse_filters({"start": "2026-11-01", "end": "2026-11-30"})


def _spend_keys(group_by: str) -> Callable[[], list[Any]]:
    return lambda: [r.key for r in spend_report(_filters()).breakdown(group_by).rows]


def _recommendation_ids() -> list[Any]:
    return [
        r.pk
        for g in recommendation_groups()
        for r in [*([g.leader] if g.leader else []), *g.alternatives, *g.closed]
    ]


def _reconciliation_keys() -> list[Any]:
    rows = reconciliation(start=date(2026, 11, 1), end=date(2026, 11, 30))
    return [(r.day.isoformat(), r.provider, r.model, r.currency) for r in rows]


def _billing_sources() -> None:
    for n in range(5):  # named out of id order: the list is by name
        BillingSource.objects.create(
            name=f"source {4 - n}", kind="http", location=f"https://x.example/{n}.csv"
        )


@dataclass(frozen=True, kw_only=True)
class ListApi:
    name: str  # the URL name, or URL name + group_by for the spend API
    url: str
    count: int  # by hand, from the seed above
    key: Callable[[dict[str, Any]], Any]  # an item's identity in the answer
    whole: Callable[[], list[Any]]  # the same identities from the selector, unpaginated
    seed: Callable[[], None] | None = None  # data of its own, on top of the shared seed


LIST_APIS = [
    *[
        ListApi(
            name=f"api-spend:{group_by}",
            url=f"/api/v1/spend/?group_by={group_by}&{RANGE}",
            count=count,
            key=lambda item: item["key"],
            whole=_spend_keys(group_by),
        )
        for group_by, count in [
            ("workload", WORKLOADS),
            ("team", 5),
            ("model", 2),
            ("provider", 1),
            ("pool", 1),  # all the traffic is API traffic: one row, no pool
            ("day", 30),
        ]
    ],
    ListApi(
        name="api-workloads",
        url=f"/api/v1/workloads/?{RANGE}",
        count=WORKLOADS,
        key=lambda item: item["name"],
        whole=lambda: [s.name for s in workload_list(_filters()) if s.id is not None],
    ),
    ListApi(
        name="api-recommendations",
        url="/api/v1/recommendations/",
        count=15,  # 12 workloads, three of them (w000, w004, w008) with an alternative
        key=lambda item: item["id"],
        whole=_recommendation_ids,
    ),
    ListApi(
        name="api-audit-events",
        url="/api/v1/audit-events/",
        count=WORKLOADS,  # the log's upload_created and 104 more
        key=lambda item: item["id"],
        whole=lambda: list(AuditEvent.objects.values_list("id", flat=True)),
    ),
    ListApi(
        name="api-reconciliation",
        url=f"/api/v1/reconciliation/?{RANGE}",
        # Billed: 6 days x 2 models x 2 currencies; estimated with no bill: 24 days x 2 models.
        count=24 + 48,
        key=lambda item: (item["day"], item["provider"], item["model"], item["currency"]),
        whole=_reconciliation_keys,
    ),
    ListApi(
        name="api-pools",
        url=f"/api/v1/pools/?{RANGE}",
        count=4,  # gpu-a, gpu-b in EUR and USD, gpu-c
        key=lambda item: (item["name"], item["currency"]),
        whole=lambda: [
            (r.pool.name, r.currency)
            for r in pool_reports(start=date(2026, 11, 1), end=date(2026, 11, 30))
        ],
    ),
    ListApi(
        name="api-bills",
        url="/api/v1/bills/",
        count=7,  # aws with no account (the pools), aws acct-1..acct-5, openai (the tokens)
        key=lambda item: (item["provider"], item["account"]),
        whole=lambda: [(p.provider, p.account) for p in bills_summary().periods],
    ),
    ListApi(
        name="api-alerts",
        url="/api/v1/alerts/",
        count=8,
        key=lambda item: item["id"],
        whole=lambda: list(Alert.objects.values_list("id", flat=True)),
    ),
    ListApi(
        name="api-anomalies",
        url="/api/v1/anomalies/?start=2026-11-02&end=2026-11-08",
        count=1,  # the sample's planted day (tests/audit_app/budgets/anomaly_samples.py)
        key=lambda item: (item["day"], item["workload"], item["model"]),
        whole=lambda: [
            (r.day.isoformat(), r.workload, r.model)
            for r in anomaly_list(date(2026, 11, 2), date(2026, 11, 8))
        ],
        seed=ingest_sample,
    ),
    ListApi(
        name="api-uploads",
        url="/api/v1/uploads/",
        count=7,  # the log, the bill, five benchmark files
        key=lambda item: item["id"],
        whole=lambda: list(Upload.objects.values_list("id", flat=True)),
    ),
    ListApi(
        name="api-benchmark-runs",
        url="/api/v1/benchmark-runs/",
        count=5,
        key=lambda item: item["id"],
        whole=lambda: list(BenchmarkRun.objects.values_list("id", flat=True)),
    ),
    ListApi(
        name="api-gates",
        url="/api/v1/gates/",
        count=5,
        key=lambda item: item["id"],
        whole=lambda: list(Gate.objects.values_list("id", flat=True)),
    ),
    ListApi(
        name="api-budgets",
        url="/api/v1/budgets/",
        count=5,
        key=lambda item: item["name"],
        whole=lambda: [f"budget {n}" for n in range(5)],
    ),
    ListApi(
        name="api-sources",
        url="/api/v1/sources/",
        count=5,
        key=lambda item: item["name"],
        whole=lambda: [f"source {n}" for n in range(5)],
        seed=_billing_sources,
    ),
]
# API routes that answer one object, not a list.
NOT_LISTS = {
    "api-root",
    "api-me",
    "api-schema",
    "api-docs",
    "api-workload-detail",
    "api-recommendation-detail",
    "api-recommendation-decision",
    "api-plan",  # a report: its options are the plan's parts, listed whole
    "api-upload-detail",
    "api-upload-supersede",
    "api-upload-keep-both",
    "api-benchmark-run-detail",
    "api-gate-detail",
    "api-budget-detail",
    "api-alert-acknowledge",
    "api-source-detail",
    "api-source-poll",
    "api-ingest-litellm",  # answers what one post held: counts and its first 20 rejects
    "api-otlp-traces",
    "otlp-traces",
    "api-statements",  # a report: every team's statement of one month, listed whole
    "api-statements-policy",
}


def test_every_api_route_is_a_list_here_or_not_a_list() -> None:
    routes = {u.name for u in project_urls() if u.is_api}
    assert routes - NOT_LISTS == {api.name.split(":")[0] for api in LIST_APIS}


@pytest.fixture
def admin(client: Client, admin_user: Any) -> Client:
    client.force_login(admin_user)  # holds every role, and sees the audit trail
    return client


def _link(url: str | None) -> tuple[str, dict[str, list[str]]] | None:
    if url is None:
        return None
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}", parse_qs(parts.query)


def _expected_link(api: ListApi, **page: int) -> tuple[str, dict[str, list[str]]]:
    parts = urlsplit(api.url)
    query = {**parse_qs(parts.query), **{k: [str(v)] for k, v in page.items()}}
    return f"http://testserver{parts.path}", query


def _ids(api: ListApi) -> str:
    return api.name


def _url(api: ListApi, **params: Any) -> str:
    return api.url + ("&" if "?" in api.url else "?") + urlencode(params)


def _check_the_first_page(client: Client, api: ListApi, whole: list[Any]) -> None:
    body = client.get(api.url).json()
    assert body["count"] == api.count
    assert [api.key(item) for item in body["results"]] == whole[:100]  # the default size
    assert body["previous"] is None
    if api.count > 100:
        assert _link(body["next"]) == _expected_link(api, limit=100, offset=100)
    else:
        assert body["next"] is None


def _check_a_middle_page(client: Client, api: ListApi, whole: list[Any]) -> None:
    body = client.get(_url(api, limit=2, offset=1)).json()
    assert body["count"] == api.count
    assert [api.key(item) for item in body["results"]] == whole[1:3]
    # Back from offset 1 by 2 is the first page: the link drops the offset.
    assert _link(body["previous"]) == _expected_link(api, limit=2)
    if api.count > 3:
        assert _link(body["next"]) == _expected_link(api, limit=2, offset=3)
    else:
        assert body["next"] is None


def _check_the_last_page_and_past_it(client: Client, api: ListApi, whole: list[Any]) -> None:
    last = client.get(_url(api, limit=3, offset=api.count - 1)).json()
    assert [api.key(item) for item in last["results"]] == whole[-1:]
    assert last["next"] is None
    if api.count == 1:
        assert last["previous"] is None  # the last page is the first
    else:
        previous = {"limit": 3, "offset": api.count - 4} if api.count > 4 else {"limit": 3}
        assert _link(last["previous"]) == _expected_link(api, **previous)
    past = client.get(_url(api, offset=api.count + 10)).json()
    assert (past["count"], past["results"], past["next"]) == (api.count, [], None)


def _check_walking_every_page(client: Client, api: ListApi, whole: list[Any]) -> None:
    # Pages of 7 end inside the groups of tied spends and tied times.
    for limit in (1, 7, MAX_LIMIT) if api.count <= 30 else (7, MAX_LIMIT):
        _, items = walk_pages(client, _url(api, limit=limit))
        assert [api.key(item) for item in items] == whole, limit


@pytest.mark.django_db
@pytest.mark.parametrize("api", LIST_APIS, ids=_ids)
def test_pages_of_every_list(seeded: None, admin: Client, api: ListApi) -> None:
    """The default page, a page in the middle, the last page and past it, each with its
    count and links; and walking every page gives the selector's whole list, in order."""
    if api.seed is not None:
        api.seed()
    whole = api.whole()
    assert len(whole) == api.count
    _check_the_first_page(admin, api, whole)
    _check_a_middle_page(admin, api, whole)
    _check_the_last_page_and_past_it(admin, api, whole)
    _check_walking_every_page(admin, api, whole)


@pytest.mark.django_db
@pytest.mark.parametrize("api", LIST_APIS, ids=_ids)
@pytest.mark.parametrize(("name", "value", "message"), BAD_VALUES[::3], ids=lambda v: repr(v)[:12])
def test_a_bad_limit_or_offset_is_a_400_naming_it(
    admin_user: Any, client: Client, api: ListApi, name: str, value: str, message: str
) -> None:
    client.force_login(admin_user)
    response = client.get(_url(api, **{name: value}))
    assert response.status_code == 400
    assert response.json() == {"detail": f"{name}: {message}", "errors": {name: [message]}}


@pytest.mark.django_db
def test_the_schema_describes_every_page(admin: Client) -> None:
    schema = admin.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    components = schema["components"]["schemas"]
    for path in sorted({urlsplit(api.url).path for api in LIST_APIS}):
        operation = schema["paths"][path]["get"]
        names = {p["name"] for p in operation["parameters"]}
        assert {"limit", "offset"} <= names, path
        ref = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        output = components[ref.rsplit("/", 1)[1]]
        assert {"count", "next", "previous", "results"} <= set(output["properties"]), path
        assert output["properties"]["results"]["type"] == "array", path
