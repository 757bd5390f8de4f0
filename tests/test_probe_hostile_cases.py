"""bench/probe_hostile.py's live-record, alert-text and body-size cases sent to this project's
own views (through Django's test client instead of the probe's gunicorn), with its SQL on the
test database and its landing through `live_land`: every case passes, so `make probe` shows
them passing when the server behaves."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client

from audit_app.access.tokens import api_token_issue
from audit_app.ingestion.live.landing import live_land
from bench import probe_hostile
from bench.probe_hostile import Probe, Recorder

pytestmark = pytest.mark.django_db(transaction=True)
BASE = "http://testserver"


class _Response:
    def __init__(self, response: Any) -> None:
        self.status_code = response.status_code
        self.headers = response.headers
        self.text = response.content.decode("utf-8", "replace")
        self._response = response

    def json(self) -> Any:
        return self._response.json()


class _Session:
    """What the recorder uses of a requests session, answered by Django's test client."""

    def __init__(self, headers: dict[str, str]) -> None:
        self.client = Client(**{f"HTTP_{k.upper()}": v for k, v in headers.items()})

    def request(
        self,
        method: str,
        url: str,
        *,
        timeout: float,
        allow_redirects: bool = False,
        data: bytes | None = None,
        json: Any = None,
        headers: dict[str, str] | None = None,
    ) -> _Response:
        import json as json_module

        content_type = (headers or {}).get("Content-Type", "application/json")
        body = json_module.dumps(json) if json is not None else (data or b"")
        response = self.client.generic(
            method, url.removeprefix(BASE), data=body, content_type=content_type
        )
        return _Response(response)


def _sql(query: str) -> object:
    with connection.cursor() as cursor:
        cursor.execute(query)
        row = cursor.fetchone()
    return row[0] if row else None


def test_the_new_hostile_cases_all_pass(finops_user: Any) -> None:
    key = api_token_issue(user=finops_user).key
    probe = Probe(
        base=BASE,
        clients={"finops-api": _Session({"Authorization": f"Token {key}"})},
        password="",
        sql=_sql,
        wait_refreshed=lambda: None,
        land_live=lambda: str(live_land().landed),
    )
    rec = Recorder(probe)
    probe_hostile._poison_cases(rec)
    probe_hostile._alert_text_and_body_cases(rec)
    failed = [(a.case.what, a.status, a.message, a.problem) for a in rec.answers if not a.passed]
    assert failed == []
    assert [a.status for a in rec.answers] == [200] * 11 + [200, 413]
