"""The smallest WSGI app, for tests that start gunicorn itself and not the dashboard.

It answers with the request's path; ``/pid`` answers with the serving process's id, and
``/sleep/<seconds>`` sleeps that long first (a request still in flight when a worker stops).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    path = environ.get("PATH_INFO", "")
    if path.startswith("/sleep/"):
        time.sleep(float(path.removeprefix("/sleep/")))
    body = str(os.getpid()).encode() if path == "/pid" else path.encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
