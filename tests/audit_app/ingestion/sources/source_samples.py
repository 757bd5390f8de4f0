"""Shared pieces of the billing-source tests: an allowed folder root, sources of each kind, a
poll whose uploads are ingested in-process (their ingest is queued on commit, and Celery runs
eagerly in tests), and small HTTP servers."""

from __future__ import annotations

import hashlib
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from audit_app.costs.bills import bills_summary
from audit_app.ingestion.sources import PollResult, source_poll, sources_poll_due
from audit_app.models import BillingSource
from tests.audit_app.ingestion.billing_exports.bills import (
    FOCUS_SAMPLE,
    billed_total_by_csv,
    focus_csv,
    focus_row,
    restated_sample,
)

__all__ = [
    "FOCUS_SAMPLE",
    "billed_total_by_csv",
    "focus_csv",
    "focus_row",
    "restated_sample",
]

# BilledCost of the FOCUS sample, and of it restated (first line raised by 1): by the csv module
# in tests/audit_app/ingestion/test_supersession.py, 20.52022672899 and 21.52022672899.
SAMPLE_TOTAL = Decimal("20.52022672899")
RESTATED_TOTAL = Decimal("21.52022672899")


def make_source(**fields: Any) -> BillingSource:
    values = {"name": "exports", "kind": "folder", "poll_every_minutes": 60, **fields}
    return BillingSource.objects.create(**values)


def poll(capture: Callable[..., Any], source: BillingSource) -> PollResult:
    """Poll now; the uploads it creates are ingested when their transaction commits."""
    with capture(execute=True):
        result = source_poll(source)
    source.refresh_from_db()
    return result


def poll_due(capture: Callable[..., Any], **kwargs: Any) -> list[PollResult]:
    with capture(execute=True):
        return sources_poll_due(**kwargs)


def billed() -> dict[str, Decimal]:
    return bills_summary().billed_cost


def closed_port() -> int:
    """A local port nothing listens on (connections are refused at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    """What the test HTTP server serves and what it was asked."""

    body: bytes
    etag: bool = True
    last_modified: str = ""
    content_length: bool = True  # without it the body ends when the connection closes
    requests: list[dict[str, str]] = field(default_factory=list)
    answers: list[int] = field(default_factory=list)

    @property
    def tag(self) -> str:
        return '"' + hashlib.sha256(self.body).hexdigest()[:16] + '"'


def _handler(served: Served) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            served.requests.append(dict(self.headers.items()))
            if self.path != "/exports/focus.csv":
                self._answer(404, b"not here")
                return
            fresh = served.etag and self.headers.get("If-None-Match") == served.tag
            if fresh or (
                served.last_modified
                and self.headers.get("If-Modified-Since") == served.last_modified
            ):
                self._answer(304, b"")
                return
            self._answer(200, served.body)

        def _answer(self, status: int, body: bytes) -> None:
            served.answers.append(status)
            self.send_response(status)
            if served.etag:
                self.send_header("ETag", served.tag)
            if served.last_modified:
                self.send_header("Last-Modified", served.last_modified)
            if status != 304 and served.content_length:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if status != 304:
                self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return None

    return Handler


@contextmanager
def http_server(served: Served) -> Iterator[str]:
    """Serve ``served.body`` at /exports/focus.csv on a free local port; yields the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(served))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def write(path: Path, content: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path
