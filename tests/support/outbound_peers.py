"""Local peers for the outbound client's tests: an HTTP server answering from a table of routes
(redirects, statuses, bodies), and a raw socket server that drips its answer a byte at a time."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Route:
    status: int = 200
    body: bytes = b"ok"
    headers: dict[str, str] = field(default_factory=dict)
    reason: str = ""


@dataclass
class Peer:
    """A running local server: its base URL and what it received."""

    base: str
    routes: dict[str, Route]
    requests: list[dict[str, Any]] = field(default_factory=list)


@contextmanager
def http_peer(routes: dict[str, Route], *, host: str = "127.0.0.1") -> Iterator[Peer]:
    """An HTTP server on ``host`` answering each path from ``routes`` (404 otherwise)."""
    peer = Peer(base="", routes=routes)

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            peer.requests.append(
                {
                    "method": self.command,
                    "path": self.path,
                    "host": self.headers.get("Host"),
                    "authorization": self.headers.get("Authorization"),
                    "body": body,
                }
            )
            route = peer.routes.get(self.path.split("?")[0], Route(status=404, body=b"nope"))
            self.send_response(route.status, route.reason or None)
            for name, value in route.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(route.body)))
            self.end_headers()
            self.wfile.write(route.body)

        do_GET = do_POST = _answer  # noqa: N815 - http.server's names

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer((host, 0), Handler)
    peer.base = f"http://{host}:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield peer
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def dripping_peer(*, every_seconds: float, headers_too: bool = False) -> Iterator[str]:
    """A server that answers each connection with a 200 whose body (or, with ``headers_too``,
    whose status line and headers as well) arrives one byte every ``every_seconds``, for far
    longer than any test waits. Yields its base URL."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()

    def drip(conn: socket.socket) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"
        with conn:
            try:
                conn.recv(65536)
                if not headers_too:
                    conn.sendall(head)
                    head = b""
                for byte in head + b"x" * 100000:
                    if stop.wait(every_seconds):
                        return
                    conn.sendall(bytes([byte]))
            except OSError:
                return

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=drip, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=2)
        listener.close()


def elapsed(started: float) -> float:
    return time.monotonic() - started
