"""bench/probe_outbound.py against a live server of the test settings with no allow-list: the
URL sources at loopback spellings and at the metadata address are refused, nothing reaches the
canary, and secrets stay masked for a writer and a reader. (Tasks run in the server's process.)"""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
import requests
from django.core.management import call_command

from bench.probe_hostile import Probe
from bench.probe_outbound import outbound_cases


def _token_session(username: str) -> requests.Session:
    out = StringIO()
    call_command("issue_token", username, stdout=out)
    session = requests.Session()
    session.headers["Authorization"] = f"Token {out.getvalue().strip()}"
    return session


@pytest.mark.django_db(transaction=True)
def test_the_outbound_cases_pass_without_an_allow_list(
    live_server: Any, settings: Any, finops_user: Any, engineer_user: Any
) -> None:
    settings.OUTBOUND_ALLOW_PRIVATE = []
    settings.ALERT_WEBHOOK_SECRET = "probe-test-secret"
    probe = Probe(
        base=live_server.url,
        clients={
            "finops-api": _token_session(finops_user.username),
            "engineer-api": _token_session(engineer_user.username),
        },
        password="",
        sql=lambda query: None,
        wait_refreshed=lambda: None,
    )
    cases = outbound_cases(probe, timeout=3)
    by_name = {name: (ok, detail) for name, ok, detail in cases}
    # With no spend in the test database, no budget alert (and so no webhook delivery) is made.
    webhook = by_name.pop("webhook to 127.0.0.1:6379 refused")
    assert webhook == (False, "no failed delivery after 3 s")
    failed = {name: detail for name, (ok, detail) in by_name.items() if not ok}
    assert failed == {}
    assert len(by_name) == 5 + 4 + 1
    assert (
        "the address 127.0.0.1 of 0x7f000001 is loopback"
        in by_name[f"source at {_url(cases, '0x7f000001')} refused"][1]
    )


def _url(cases: list[tuple[str, bool, str]], host: str) -> str:
    [name] = [n for n, _, _ in cases if f"//{host}:" in n]
    return name.removeprefix("source at ").removesuffix(" refused")
