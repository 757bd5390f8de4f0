"""Every URL the project serves x anonymous, finops, engineer, manager and admin, on GET.

Generated from the URLconf: a new URL without a row in EXPECTED fails this test, so nobody can
add an endpoint without saying who may use it. Detail URLs are asked for an object that does
not exist, so "allowed" shows as 404 (past the permission check) and "refused" as 403/302/401.

GATE_LINK: the transitions a gate makes on a recommendation (`POST /api/v1/gates/` with
``recommendation``), for every role (and a user with none) x the recommendation's status x runs
that match it or not: the answer, and the status the recommendation is left in.

DELETE_RULE: who may delete an upload, for every role x upload kind x their own or someone
else's, on the API and the pages.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from audit_app.access.permissions import UPLOAD_DELETE_RULE
from audit_app.models import Recommendation, Upload
from tests.benchmarks_app.gate_samples import OTHER_MODEL, RUNS_MODEL, import_runs, recommendation
from tests.factories import UploadFactory, UserFactory
from tests.support.urls import project_urls

ROLES = ("anonymous", "finops", "engineer", "manager", "admin")
PAGE = (302, 200, 200, 200, 200)
PAGE_DETAIL = (302, 404, 404, 404, 404)
API = (401, 200, 200, 200, 200)
API_DETAIL = (401, 404, 404, 404, 404)
POST_ONLY_ANY_ROLE = (302, 405, 405, 405, 405)
API_POST_ONLY = (401, 405, 405, 405, 405)
# API-token authentication only (OTLP exporters): a session is no credential, so every signed-in
# role is 401 here too. With a token: tests/audit_app/ingestion/live/test_otlp_receiver.py.
TOKEN_ONLY = (401, 401, 401, 401, 401)

EXPECTED: dict[str, tuple[int, ...]] = {
    "healthz": (200, 200, 200, 200, 200),
    "login": (200, 302, 302, 302, 302),  # signed-in users are sent on to the overview
    "logout": (302, 405, 405, 405, 405),  # POST only
    "api-root": API,
    "api-me": API,
    "api-spend": API,
    "api-workloads": API,
    "api-workload-detail": API_DETAIL,
    "api-recommendations": API,
    "api-recommendation-detail": API_DETAIL,
    "api-recommendation-decision": API_POST_ONLY,
    "api-plan": API,
    "api-anomalies": API,
    "api-alerts": API,
    "api-alert-acknowledge": API_POST_ONLY,  # every role acknowledges, by POST
    "api-audit-events": (401, 403, 403, 403, 200),
    "api-reconciliation": API,
    "api-pools": API,
    "api-bills": API,
    "api-uploads": API,
    "api-upload-detail": API_DETAIL,
    # Finops analysts decide, by POST: tests/audit_app/ingestion/test_supersession_decisions.py.
    "api-upload-supersede": API_POST_ONLY,
    "api-upload-keep-both": API_POST_ONLY,
    "api-benchmark-runs": API,
    "api-benchmark-run-detail": API_DETAIL,
    "api-gates": API,
    "api-gate-detail": API_DETAIL,
    "api-schema": API,
    "api-docs": PAGE,
    "benchmarks": PAGE,
    "benchmark-run": PAGE_DETAIL,
    "gate": PAGE_DETAIL,
    "overview": PAGE,
    "audit-trail": (302, 403, 403, 403, 200),
    "spend-csv": PAGE,
    "workloads": PAGE,
    "workload-detail": PAGE_DETAIL,
    "uploads": PAGE,
    "upload-new": (302, 200, 200, 403, 200),  # managers review; they do not upload
    "upload-detail": PAGE_DETAIL,
    "upload-raw": PAGE_DETAIL,
    "upload-restatement": POST_ONLY_ANY_ROLE,  # finops decide, by POST
    # The confirmation page; whose uploads each role may delete: DELETE_RULE below.
    "upload-delete": PAGE_DETAIL,
    "recommendations": PAGE,
    "recommendation-detail": PAGE_DETAIL,
    "recommendation-decision": (302, 403, 403, 405, 405),  # managers decide, by POST
    "workload-override": (302, 403, 405, 405, 405),  # engineers and managers, by POST
    "reconciliation": PAGE,
    "api-budgets": API,  # finops and managers POST: tests/audit_app/budgets/test_budgets_api.py
    "api-budget-detail": API_DETAIL,
    "budgets": PAGE,  # the create form (POST) is for finops and managers
    "budget-detail": PAGE_DETAIL,
    "budget-delete": (302, 405, 403, 405, 405),  # finops and managers, by POST
    # Finops analysts write: tests/audit_app/ingestion/sources/test_sources_api.py and _pages.
    "api-sources": API,
    "api-source-detail": API_DETAIL,
    "api-source-poll": API_POST_ONLY,
    "sources": PAGE,  # the form to add one (POST) is for finops
    "source-poll": (302, 405, 403, 403, 405),  # finops, by POST
    "anomalies": PAGE,
    "alerts": PAGE,
    "alert-acknowledge": POST_ONLY_ANY_ROLE,  # every role acknowledges, by POST
    # LiteLLM's callback posts here with an uploader's token: tests/audit_app/api/test_live_litellm
    "api-ingest-litellm": (401, 405, 405, 403, 405),
    "otlp-traces": TOKEN_ONLY,  # finops and engineers POST traces with a token
    # Statements: finops and managers see every team, an engineer the teams listing them
    # (tests/audit_app/statements/test_statement_pages.py); finops change the policy and send.
    "statements": PAGE,
    "statement-team": (302, 200, 403, 200, 200),  # no ?team=: not one of the engineer's
    "statements-policy": (302, 405, 403, 403, 405),  # finops, by POST
    "statements-send": (302, 405, 403, 403, 405),  # finops, by POST
    "statements-csv": PAGE,
    "statements-xlsx": PAGE,
    "api-statements": API,
    "api-statements-policy": API,  # finops POST
    "api-otlp-traces": TOKEN_ONLY,
    # Each user's own tokens; revoking is a POST (tests/audit_app/views/test_tokens.py).
    "api-tokens": PAGE,
    "api-token-revoke": POST_ONLY_ANY_ROLE,
    # Single sign-on answers 404 while OIDC_ISSUER is unset, as here; configured:
    # tests/audit_app/access/oidc/.
    "oidc_authentication_init": (404, 404, 404, 404, 404),
    "oidc_authentication_callback": (404, 404, 404, 404, 404),
    "sso-no-role": (302, 404, 404, 404, 404),
}

URLS = [u for u in project_urls() if not u.is_admin]
SSO_OFF = ("oidc_authentication_init", "oidc_authentication_callback", "sso-no-role")


def test_every_url_has_a_row() -> None:
    assert sorted(u.name for u in URLS) == sorted(EXPECTED)


@pytest.mark.django_db
@pytest.mark.parametrize("url", URLS, ids=lambda u: u.name)
def test_matrix(url: Any, request: Any) -> None:
    users = {
        "anonymous": None,
        "finops": request.getfixturevalue("finops_user"),
        "engineer": request.getfixturevalue("engineer_user"),
        "manager": request.getfixturevalue("manager_user"),
        "admin": request.getfixturevalue("admin_user"),
    }
    got = []
    for role in ROLES:
        client = Client()
        if users[role] is not None:
            client.force_login(users[role])
        got.append(client.get(url.path).status_code)
    expected = list(EXPECTED[url.name])
    if url.name == "healthz":  # 503 when the broker is down is still an answer
        got = [200 if code in (200, 503) else code for code in got]
    assert dict(zip(ROLES, got, strict=True)) == dict(zip(ROLES, expected, strict=True))


@pytest.mark.django_db
@pytest.mark.parametrize("role_fixture", ["finops_user", "engineer_user", "manager_user"])
def test_admin_site_needs_staff(
    client: Client, request: Any, role_fixture: str, admin_user: Any
) -> None:
    client.force_login(request.getfixturevalue(role_fixture))
    assert client.get("/admin/").status_code == 302
    client.force_login(admin_user)
    assert client.get("/admin/").status_code == 200


GATE_ROLES = (*ROLES, "no role")


def _engineers_only(status: str, answer: int, after: str) -> tuple[tuple[int, str], ...]:
    """Per GATE_ROLES: (HTTP status, the recommendation's status after). Only engineers run
    gates (admins hold every role): they get ``answer`` and leave it ``after``; anyone else is
    refused and leaves it as it was."""
    refused = (403, status)
    return ((401, status), refused, (answer, after), refused, (answer, after), refused)


# A gate verifies only a pilot-approved recommendation whose workload used the runs' model (on
# the target's hardware). Otherwise the gate is still recorded, unlinked: 409 when the status
# refuses the link, 400 when the runs do not match.
GATE_LINK: dict[tuple[str, str], tuple[tuple[int, str], ...]] = {
    ("proposed", "match"): _engineers_only("proposed", 409, "proposed"),
    ("proposed", "mismatch"): _engineers_only("proposed", 409, "proposed"),
    ("pilot_approved", "match"): _engineers_only("pilot_approved", 201, "verified"),
    ("pilot_approved", "mismatch"): _engineers_only("pilot_approved", 400, "pilot_approved"),
    ("rejected", "match"): _engineers_only("rejected", 409, "rejected"),
    ("rejected", "mismatch"): _engineers_only("rejected", 409, "rejected"),
    ("verified", "match"): _engineers_only("verified", 409, "verified"),
    ("verified", "mismatch"): _engineers_only("verified", 409, "verified"),
    ("gate_failed", "match"): _engineers_only("gate_failed", 409, "gate_failed"),
    ("gate_failed", "mismatch"): _engineers_only("gate_failed", 409, "gate_failed"),
}


@pytest.mark.django_db
@pytest.mark.parametrize(("status", "runs"), list(GATE_LINK), ids="-".join)
def test_gate_link_matrix(status: str, runs: str, request: Any) -> None:
    users = {
        "anonymous": None,
        "finops": request.getfixturevalue("finops_user"),
        "engineer": request.getfixturevalue("engineer_user"),
        "manager": request.getfixturevalue("manager_user"),
        "admin": request.getfixturevalue("admin_user"),
        "no role": request.getfixturevalue("no_role_user"),
    }
    baseline, candidate = import_runs()
    linked = recommendation(
        status=status, workload_model=RUNS_MODEL if runs == "match" else OTHER_MODEL
    )
    got = []
    for role in GATE_ROLES:
        Recommendation.objects.filter(pk=linked.pk).update(status=status)
        client = Client()
        if users[role] is not None:
            client.force_login(users[role])
        response = client.post(
            "/api/v1/gates/",
            {"baseline": baseline.pk, "candidate": candidate.pk, "recommendation": linked.pk},
            content_type="application/json",
        )
        linked.refresh_from_db()
        got.append((response.status_code, linked.status))
    expected = GATE_LINK[(status, runs)]
    assert dict(zip(GATE_ROLES, got, strict=True)) == dict(zip(GATE_ROLES, expected, strict=True))


@pytest.mark.django_db
def test_user_without_a_role_is_refused_every_url(no_role_user: Any) -> None:
    client = Client()
    client.force_login(no_role_user)
    got = {url.name: client.get(url.path).status_code for url in URLS}
    expected = {url.name: 401 if EXPECTED[url.name] == TOKEN_ONLY else 403 for url in URLS}
    expected.update(healthz=got["healthz"], login=302, logout=405)
    # A user without a role still manages their own tokens (which open nothing without one).
    expected.update({"api-tokens": 200, "api-token-revoke": 405})
    expected.update({name: 404 for name in SSO_OFF})
    assert got == expected


# Who may delete an upload, by role, kind and whether they uploaded it themselves
# (README, "Ingesting token and request logs"): True where the delete goes through.
DELETE_RULE: dict[tuple[str, str, str], bool] = {
    **{("admin", kind, owner): True for kind in Upload.Kind for owner in ("own", "other")},
    ("finops", "token_log", "own"): True,
    ("finops", "token_log", "other"): True,
    ("finops", "billing", "own"): True,
    ("finops", "billing", "other"): True,
    ("finops", "benchmark", "own"): True,
    ("finops", "benchmark", "other"): False,
    **{("engineer", kind, "own"): True for kind in Upload.Kind},
    **{("engineer", kind, "other"): False for kind in Upload.Kind},
    **{("manager", kind, owner): False for kind in Upload.Kind for owner in ("own", "other")},
}


def _upload_of(case: tuple[str, str, str], request: Any) -> tuple[Any, Upload]:
    role, kind, owner = case
    user = request.getfixturevalue(f"{role}_user")
    other = UserFactory(username="oli-other", roles=["finops", "engineer"])
    upload = UploadFactory(kind=kind, uploaded_by=user if owner == "own" else other)
    return user, upload


@pytest.mark.django_db
@pytest.mark.parametrize("case", list(DELETE_RULE), ids="-".join)
def test_upload_delete_rule_on_the_api(case: tuple[str, str, str], request: Any) -> None:
    user, upload = _upload_of(case, request)
    client = Client()
    client.force_login(user)
    response = client.delete(f"/api/v1/uploads/{upload.pk}/")
    if DELETE_RULE[case]:
        assert response.status_code == 204
        assert not Upload.objects.filter(pk=upload.pk).exists()
    else:
        assert response.status_code == 403
        assert response.json()["detail"].endswith(UPLOAD_DELETE_RULE)
        assert Upload.objects.filter(pk=upload.pk).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("case", list(DELETE_RULE), ids="-".join)
def test_upload_delete_rule_on_the_pages(case: tuple[str, str, str], request: Any) -> None:
    user, upload = _upload_of(case, request)
    client = Client()
    client.force_login(user)
    delete_url = f"/uploads/{upload.pk}/delete/"
    detail = client.get(f"/uploads/{upload.pk}/").content.decode()
    confirmation = client.get(delete_url)
    deleted = client.post(delete_url)
    if DELETE_RULE[case]:
        assert delete_url in detail
        assert (confirmation.status_code, deleted.status_code) == (200, 302)
        assert not Upload.objects.filter(pk=upload.pk).exists()
    else:
        assert delete_url not in detail
        assert (confirmation.status_code, deleted.status_code) == (403, 403)
        assert Upload.objects.filter(pk=upload.pk).exists()


@pytest.mark.django_db
def test_a_refused_delete_names_the_upload_and_the_rule(engineer_user: Any) -> None:
    other = UserFactory(username="oli-other", roles=["finops"])
    upload = UploadFactory(kind=Upload.Kind.BILLING, uploaded_by=other)
    client = Client()
    client.force_login(engineer_user)
    expected = (
        "You may not delete this upload (a billing export uploaded by oli-other). "
        "Administrators may delete any upload; finops analysts any token log or billing export "
        "and their own benchmark artifacts; engineers only their own uploads; managers none."
    )
    assert client.delete(f"/api/v1/uploads/{upload.pk}/").json() == {
        "detail": expected,
        "errors": {},
    }
    assert expected in client.post(f"/uploads/{upload.pk}/delete/").content.decode()
