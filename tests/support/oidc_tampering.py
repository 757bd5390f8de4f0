"""A proxy in front of a real OpenID provider that presents it as an issuer of its own
address (the provider names its issuer from X-Forwarded-Host) and, in one chosen way, lies:

- ``none``: it tells no lie (the sign-in passes every check);
- ``audience``: the sign-in is made for another client, so the identity token's audience is
  that client's;
- ``issuer``: the token endpoint is reached without the forwarded host, so the token names the
  provider's own address as its issuer;
- ``key``: the published keys (JWKS) hold another key under the provider's key id, so the
  token's signature does not verify;
- ``unknown_key``: the published keys hold only a key of another id.

Every token is the real provider's; only what a compromised or misconfigured issuer would
change is changed.
"""

from __future__ import annotations

import base64
import http.client
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

OTHER_CLIENT = "another-application"
MODES = ("none", "audience", "issuer", "key", "unknown_key")


def _foreign_jwk(kid: str) -> dict[str, Any]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
    return {**jwk, "kid": kid, "alg": "RS256", "use": "sig"}


class _Handler(BaseHTTPRequestHandler):
    server: _TamperingServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        self._forward()

    def do_POST(self) -> None:
        self._forward()

    def _forward(self) -> None:
        mode, parts = self.server.mode, urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k: v for k, v in self.headers.items() if k.lower() not in {"host", "connection"}}
        query = parts.query
        if mode == "audience" and parts.path == "/oauth2/authorize":
            pairs = [(k, OTHER_CLIENT if k == "client_id" else v) for k, v in parse_qsl(query)]
            query = urlencode(pairs)
        if mode == "audience" and parts.path == "/oauth2/token":
            secret = base64.b64encode(f"{OTHER_CLIENT}:secret".encode()).decode()
            headers["Authorization"] = f"Basic {secret}"
        if not (mode == "issuer" and parts.path == "/oauth2/token"):
            headers["X-Forwarded-Host"] = f"127.0.0.1:{self.server.server_port}"
            headers["X-Forwarded-Proto"] = "http"
        status, answer_headers, answer = self._send(parts.path, query, body, headers)
        if mode in ("key", "unknown_key") and parts.path == "/jwks":
            real = json.loads(answer)["keys"][0]
            kid = real["kid"] if mode == "key" else "a-key-of-someone-else"
            answer = json.dumps({"keys": [_foreign_jwk(kid)]}).encode()
        self.send_response(status)
        for name, value in answer_headers:
            if name.lower() not in {"content-length", "transfer-encoding", "connection"}:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def _send(
        self, path: str, query: str, body: bytes, headers: dict[str, str]
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        target = urlsplit(self.server.target)
        connection = http.client.HTTPConnection(target.hostname or "", target.port, timeout=10)
        try:
            connection.request(
                self.command, path + (f"?{query}" if query else ""), body=body, headers=headers
            )
            answer = connection.getresponse()
            return answer.status, answer.getheaders(), answer.read()
        finally:
            connection.close()


class _TamperingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, target: str, mode: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.target = target
        self.mode = mode


@contextmanager
def tampering_issuer(target: str, mode: str) -> Iterator[str]:
    """A proxy presenting the provider at ``target`` as the issuer of the URL yielded, lying in
    the way ``mode`` names (one of MODES)."""
    assert mode in MODES, mode
    server = _TamperingServer(target, mode)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
