"""Every route that reads query parameters, sent hostile values in each: refused with a 400
naming the parameter, or accepted where the value is ordinary input, never a 500.

Generated from the URLconf like the authorization matrix: a new route without a row in
ROUTE_PARAMS or NO_PARAMS fails `test_every_route_has_a_row`. Routes listed as reading no
parameters are sent all the hostile values at once and must answer as they do without them,
which also catches a route that starts reading a parameter without being listed here.

A NUL byte only fails on PostgreSQL (SQLite stores it), so run this file there too:
DATABASE_URL=postgres://postgres@127.0.0.1:5432/<name>.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import Workload
from tests.audit_app.access.test_authorization_matrix import EXPECTED, ROLES
from tests.audit_app.ingestion.ingest_samples import SAMPLE_CSV
from tests.support.urls import project_urls

NUL = "team\x00name"
LONG = "x" * 10_000
HOSTILE = ("0001-01-01", "9999-12-31", NUL, "1e308", "nan", "inf", "-infinity", "-1", LONG)
# The hostile values a kind of parameter takes as ordinary input (answered 200); every other
# value is refused with a 400.
ACCEPTED = {
    "date": frozenset[str](),
    "text": frozenset({"0001-01-01", "9999-12-31", "1e308", "nan", "inf", "-infinity", "-1"}),
    "choice": frozenset[str](),
    "bool": frozenset[str](),
    "number": frozenset[str](),
}
FILTERS = {"start": "date", "end": "date", "team": "text", "provider": "text", "model": "text"}
PAGE = {"limit": "number", "offset": "number"}
# Route name (with a fixed query when one route serves two answers) -> parameter -> kind.
ROUTE_PARAMS: dict[str, dict[str, str]] = {
    "overview": {**FILTERS, "stack": "choice"},
    "spend-csv": {**FILTERS, "group_by": "choice"},
    "workloads": {**FILTERS, "sort": "choice", "export": "choice", "page": "number"},
    "workloads?export=csv": {**FILTERS, "sort": "choice"},
    "workload-detail": FILTERS,
    "reconciliation": {
        **FILTERS,
        "threshold": "number",
        "flagged": "bool",
        "export": "choice",
        "page": "number",
    },
    "reconciliation?export=csv": {**FILTERS, "threshold": "number", "flagged": "bool"},
    "audit-trail": {"action": "choice"},
    "api-spend": {**FILTERS, **PAGE, "group_by": "choice"},
    "api-workloads": {**FILTERS, **PAGE},
    "api-workload-detail": FILTERS,
    "api-reconciliation": {**FILTERS, **PAGE, "threshold": "number", "flagged": "bool"},
    "api-pools": {**FILTERS, **PAGE},
    "api-audit-events": {**PAGE, "action": "choice"},
    "api-recommendations": {**PAGE, "pool": "text"},
    "recommendations": {"pool": "text"},
    "anomalies": {"start": "date", "end": "date", "sort": "choice", "min_usd": "number"},
    "api-anomalies": {
        "start": "date",
        "end": "date",
        "sort": "choice",
        "min_usd": "number",
        **PAGE,
    },
    "api-plan": {"start": "date", "end": "date"},
    "api-alerts": PAGE,
    "api-bills": PAGE,
    "api-uploads": PAGE,
    "api-benchmark-runs": PAGE,
    "api-gates": PAGE,
    "api-budgets": PAGE,
    "api-sources": PAGE,
    "benchmark-run": {"point": "number"},
    # A month is YYYY-MM: every hostile value is refused, as for a date.
    "statements": {"month": "date"},
    "statement-team": {"month": "date", "team": "text"},
    "statements-csv": {"month": "date"},
    "statements-xlsx": {"month": "date"},
    "api-statements": {"month": "date", "policy": "choice"},
}
NO_PARAMS = {
    "healthz",
    "login",
    "logout",
    "api-root",
    "api-me",
    "api-recommendation-detail",
    "api-recommendation-decision",
    "api-upload-detail",
    "api-upload-supersede",
    "api-upload-keep-both",
    "api-benchmark-run-detail",
    "api-gate-detail",
    "api-schema",
    "api-docs",
    "benchmarks",
    "gate",
    "uploads",
    "upload-new",
    "upload-detail",
    "upload-raw",
    "upload-delete",
    "upload-restatement",
    "recommendation-detail",
    "recommendation-decision",
    "workload-override",
    "api-budget-detail",
    "budgets",
    "budget-detail",
    "budget-delete",
    "alerts",
    "alert-acknowledge",
    "api-alert-acknowledge",
    "api-source-detail",
    "api-source-poll",
    "sources",
    "source-poll",
    "api-ingest-litellm",
    "otlp-traces",
    "api-otlp-traces",
    "statements-policy",
    "statements-send",
    "api-statements-policy",
    "api-tokens",
    "api-token-revoke",
    "sso-no-role",
    # The sign-in's `code` and `state` go to the provider's checks, with bad, stale and replayed
    # values tested against a real provider in tests/audit_app/access/oidc.
    "oidc_authentication_init",
    "oidc_authentication_callback",
}
EVERY_PARAM = sorted({name for params in ROUTE_PARAMS.values() for name in params})
URLS = {u.name: u for u in project_urls() if not u.is_admin}
ADMIN_STATUS = {
    name: dict(zip(ROLES, codes, strict=True))["admin"] for name, codes in EXPECTED.items()
}


def test_every_route_has_a_row() -> None:
    listed = {key.split("?")[0] for key in ROUTE_PARAMS} | NO_PARAMS
    assert sorted(set(URLS) - listed) == [], "add a row: which query parameters does it read?"
    assert sorted(listed - set(URLS)) == []
    assert not {key.split("?")[0] for key in ROUTE_PARAMS} & NO_PARAMS


@pytest.fixture
def admin_client(admin_user: Any) -> Client:
    # Without raising, a crash is answered 500 as under gunicorn, and shows as a status.
    client = Client(raise_request_exception=False)
    client.force_login(admin_user)
    return client


@pytest.fixture
def workload(db: Any) -> Workload:
    upload = upload_create(source=io.BytesIO(SAMPLE_CSV), original_name="s.csv", enqueue=False)
    upload_ingest(upload_id=upload.pk)
    return Workload.objects.get(name="chat")


def _path_and_query(route: str, workload: Workload) -> tuple[str, dict[str, str]]:
    name, _, query = route.partition("?")
    if name in ("workload-detail", "api-workload-detail"):
        path = reverse(name, args=[workload.pk])
    elif name == "benchmark-run":
        path = reverse(name, args=[_benchmark_run().pk])
    else:
        path = URLS[name].path
    return path, dict(part.split("=") for part in query.split("&") if part)


def _benchmark_run() -> Any:
    """A run of one point to read with `?point=`."""
    from benchmarks_app.runs import benchmark_run_import
    from tests.support.paths import FIXTURES_DIR

    path = FIXTURES_DIR / "benchmarks" / "vllm_baseline.json"
    with path.open("rb") as source:
        return benchmark_run_import(source=source, filename=path.name)


def _names_the_value(response: Any, param: str) -> bool:
    if response["Content-Type"].startswith("application/json"):
        return list(response.json()["errors"]) == [param]
    body = response.content.decode()
    if response["Content-Type"].startswith("text/plain"):
        return body.startswith(f"{param}='")
    return f'role="alert">{param}=&#x27;' in body


@pytest.mark.parametrize(
    ("route", "param"),
    [(route, param) for route, params in ROUTE_PARAMS.items() for param in params],
)
def test_hostile_value_is_refused_or_accepted_never_a_500(
    admin_client: Client, workload: Workload, route: str, param: str
) -> None:
    path, query = _path_and_query(route, workload)
    kind = ROUTE_PARAMS[route][param]
    wrong = []
    for value in HOSTILE:
        response = admin_client.get(path, {**query, param: value})
        expected = 200 if value in ACCEPTED[kind] else 400
        named = expected == 200 or _names_the_value(response, param)
        if response.status_code != expected or not named:
            wrong.append((value[:20], response.status_code, named))
    assert wrong == []


@pytest.mark.parametrize("route", sorted(ROUTE_PARAMS))
def test_route_answers_200_with_ordinary_parameters(
    admin_client: Client, workload: Workload, route: str
) -> None:
    path, query = _path_and_query(route, workload)
    assert admin_client.get(path, query).status_code == 200
    unread = dict.fromkeys(set(EVERY_PARAM) - set(ROUTE_PARAMS[route]) - set(query), NUL)
    assert admin_client.get(path, {**query, **unread}).status_code == 200


@pytest.mark.parametrize("name", sorted(NO_PARAMS))
def test_route_reading_no_parameters_ignores_them(admin_client: Client, name: str) -> None:
    expected = ADMIN_STATUS[name]
    for value in (NUL, LONG, "9999-12-31", "1e308"):
        status = admin_client.get(URLS[name].path, dict.fromkeys(EVERY_PARAM, value)).status_code
        if name == "healthz" and status == 503:  # the broker is down: still an answer
            status = 200
        assert (value[:20], status) == (value[:20], expected)


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        (
            "--end",
            "9999-12-31",
            "end='9999-12-31' is outside 2000-01-01 to 2100-12-31, the days we handle",
        ),
        (
            "--start",
            "0001-01-01",
            "start='0001-01-01' is outside 2000-01-01 to 2100-12-31, the days we handle",
        ),
    ],
)
def test_workloads_command_refuses_days_out_of_range(
    workload: Workload, option: str, value: str, message: str
) -> None:
    with pytest.raises(CommandError) as caught:
        call_command("workloads", option, value)
    assert str(caught.value) == message
