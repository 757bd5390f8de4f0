"""`make probe`'s outbound cases: requests the server makes to addresses a user typed in.

Against the probe's deployment (gunicorn, a worker consuming every queue, no
OUTBOUND_ALLOW_PRIVATE), `outbound_cases` reproduces each way of reaching an internal address
and each place a secret could come back, and says for each whether it was refused or masked:

- URL sources at 127.0.0.1, 127.1, 0x7f000001 and 2130706433 (all a local canary server, which
  must receive nothing) and at 169.254.169.254 are polled and must fail naming the address;
- a budget's webhook to 127.0.0.1:6379 (Redis), on a budget already past its threshold, must
  fail refused and never be POSTed;
- a URL source's user name, password and token, and a budget's webhook URL, must not come
  back from /api/v1/sources/ and /api/v1/budgets/ to a writer or a reader.

Each case is (name, ok, detail). What it creates is deleted at the end.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench.probe_hostile import Probe

OutboundCase = tuple[str, bool, str]
REFUSED = "outbound requests may not reach"
URL_SECRET = "probe-pass-7f3a"
TOKEN_SECRET = "probe-token-91c2"
WEBHOOK_SECRET_PART = "probeHookSecret5521"
WRITER, READER = "finops-api", "engineer-api"


@contextmanager
def canary() -> Iterator[tuple[int, list[str]]]:
    """A local HTTP server that records every request it gets; yields (port, paths)."""
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _hit(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "6")
            self.end_headers()
            self.wfile.write(b"secret")

        do_GET = do_POST = _hit  # noqa: N815 - http.server's names

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield int(server.server_address[1]), hits
    finally:
        server.shutdown()
        server.server_close()


def _api(probe: Probe, role: str, method: str, path: str, **kwargs: Any) -> Any:
    return probe.clients[role].request(method, f"{probe.base}{path}", timeout=60, **kwargs)


def _wait_for(read: Callable[[], Any], done: Callable[[Any], bool], timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    value = read()
    while not done(value) and time.monotonic() < deadline:
        time.sleep(1)
        value = read()
    return value


def _source_case(probe: Probe, name: str, url: str, timeout: float) -> tuple[OutboundCase, int]:
    created = _api(
        probe,
        WRITER,
        "POST",
        "/api/v1/sources/",
        json={"name": name, "kind": "http", "location": url},
    )
    if created.status_code != 201:
        return (f"source at {url}", False, f"not created: HTTP {created.status_code}"), 0
    source_id = int(created.json()["id"])
    _api(probe, WRITER, "POST", f"/api/v1/sources/{source_id}/poll/")
    body = _wait_for(
        lambda: _api(probe, WRITER, "GET", f"/api/v1/sources/{source_id}/").json(),
        lambda b: bool(b.get("last_error")) or bool(b.get("upload_count")),
        timeout,
    )
    error = str(body.get("last_error") or "")
    ok = REFUSED in error and not body.get("upload_count")
    detail = error or f"no error after {timeout:.0f} s ({body.get('upload_count')} uploads)"
    return (f"source at {url} refused", ok, detail), source_id


def _webhook_case(probe: Probe, timeout: float) -> tuple[OutboundCase, int]:
    url = "http://127.0.0.1:6379/"
    budget = _api(
        probe,
        WRITER,
        "POST",
        "/api/v1/budgets/",
        json={
            "name": "probe-outbound-webhook",
            "scope": {"kind": "all"},
            "amount_usd": "0.01",
            "alert_at_pct": [1],
            "on_forecast": False,
            "notify": {"emails": [], "webhooks": [url]},
        },
    )
    if budget.status_code != 201:
        return ("webhook to 127.0.0.1:6379 refused", False, f"HTTP {budget.status_code}"), 0
    budget_id = int(budget.json()["id"])

    def deliveries() -> list[dict[str, Any]]:
        alerts = _api(probe, WRITER, "GET", "/api/v1/alerts/").json().get("results", [])
        return [
            d
            for a in alerts
            if a.get("budget_id") == budget_id
            for d in a.get("deliveries", [])
            if d.get("channel") == "webhook"
        ]

    found = _wait_for(deliveries, lambda ds: any(d.get("last_error") for d in ds), timeout)
    errors = [str(d.get("last_error")) for d in found if d.get("last_error")]
    ok = bool(errors) and all(REFUSED in e for e in errors)
    detail = errors[0] if errors else f"no failed delivery after {timeout:.0f} s"
    return ("webhook to 127.0.0.1:6379 refused", ok, detail), budget_id


def _masked_cases(probe: Probe, canary_port: int) -> tuple[list[OutboundCase], list[int]]:
    cases: list[OutboundCase] = []
    url = f"http://probe:{URL_SECRET}@127.0.0.1:{canary_port}/f.csv?token={TOKEN_SECRET}"
    source = _api(
        probe,
        WRITER,
        "POST",
        "/api/v1/sources/",
        json={"name": "probe-outbound-creds", "kind": "http", "location": url, "enabled": False},
    )
    hook = f"https://hooks.slack.com/services/T0/B0/{WEBHOOK_SECRET_PART}"
    budget = _api(
        probe,
        WRITER,
        "POST",
        "/api/v1/budgets/",
        json={
            "name": "probe-outbound-masked",
            "scope": {"kind": "all"},
            "amount_usd": "1000000",
            "notify": {"emails": [], "webhooks": [hook]},
        },
    )
    for role in (WRITER, READER):
        for path, secrets in (
            ("/api/v1/sources/", (URL_SECRET, TOKEN_SECRET)),
            ("/api/v1/budgets/", (WEBHOOK_SECRET_PART,)),
        ):
            answer = _api(probe, role, "GET", path)
            leaked = [s for s in secrets if s in answer.text]
            ok = answer.status_code == 200 and not leaked
            detail = f"HTTP {answer.status_code}" + (f", shows {leaked}" if leaked else ", masked")
            cases.append((f"secrets masked in {path} for {role}", ok, detail))
    ids = [int(source.json()["id"])] if source.status_code == 201 else []
    budget_ids = [int(budget.json()["id"])] if budget.status_code == 201 else []
    return cases, ids + [-b for b in budget_ids]


def outbound_cases(probe: Probe, *, timeout: float = 120) -> list[OutboundCase]:
    """Every outbound case once: (case name, ok, detail)."""
    cases: list[OutboundCase] = []
    sources: list[int] = []
    budgets: list[int] = []
    with canary() as (port, hits):
        hosts = ["127.0.0.1", "127.1", "0x7f000001", "2130706433"]
        urls = [f"http://{host}:{port}/export.csv" for host in hosts]
        urls.append("http://169.254.169.254/latest/meta-data/iam/security-credentials/")
        for n, url in enumerate(urls):
            case, source_id = _source_case(probe, f"probe-outbound-{n}", url, timeout)
            cases.append(case)
            sources += [source_id] if source_id else []
        case, budget_id = _webhook_case(probe, timeout)
        cases.append(case)
        budgets += [budget_id] if budget_id else []
        masked, ids = _masked_cases(probe, port)
        cases += masked
        sources += [i for i in ids if i > 0]
        budgets += [-i for i in ids if i < 0]
        cases.append(("no request reached the loopback canary", not hits, f"{len(hits)} hits"))
    for source_id in sources:
        _api(probe, WRITER, "DELETE", f"/api/v1/sources/{source_id}/")
    for budget_id in budgets:
        _api(probe, WRITER, "DELETE", f"/api/v1/budgets/{budget_id}/")
    for name, ok, detail in cases:
        print(f"probe: outbound {name}: {'ok' if ok else 'FAILED'} ({detail[:120]})", flush=True)
    return cases
