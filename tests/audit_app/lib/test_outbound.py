"""The outbound client against real local servers: every spelling of a loopback, private,
link-local or mapped address refused unless OUTBOUND_ALLOW_PRIVATE lists its network; the
host resolved once and the connection made to that address; redirects checked again (a 302 or
307 to a refused address, a redirect to ftp://, too many); one deadline for the whole request
against a peer that drips; the size cap; errors that never carry the peer's body or reason."""

from __future__ import annotations

import ipaddress
import socket
import time
from typing import Any

import pytest

from audit_app.lib import outbound
from audit_app.lib.outbound import (
    OutboundFailed,
    OutboundPolicy,
    OutboundRefused,
    allowed_networks,
    check_url,
    policy_from_settings,
)
from tests.support.outbound_peers import Route, dripping_peer, elapsed, http_peer

NOTHING_ALLOWED = OutboundPolicy()
LOOPBACK_ALLOWED = OutboundPolicy(allow_private=allowed_networks("127.0.0.0/8"))


def _refusal(url: str, policy: OutboundPolicy = NOTHING_ALLOWED) -> str:
    with pytest.raises(OutboundRefused) as refused:
        check_url(url, policy)
    return str(refused.value)


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "127.1", "0x7f000001", "2130706433", "0177.0.0.1", "localhost"],
)
def test_every_spelling_of_loopback_is_refused_by_the_address_it_resolves_to(host: str) -> None:
    message = _refusal(f"http://{host}:6379/")
    assert message.startswith("the address 127.0.0.1")
    assert "is loopback, which outbound requests may not reach" in message
    assert "OUTBOUND_ALLOW_PRIVATE" in message


@pytest.mark.parametrize(
    ("url", "address", "kind"),
    [
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254", "link-local"),
        ("http://10.1.2.3/", "10.1.2.3", "private"),
        ("http://192.168.0.10:5432/", "192.168.0.10", "private"),
        ("http://0.0.0.0:8000/", "0.0.0.0", "unspecified"),  # noqa: S104 - the case under test
        ("http://224.0.0.1/", "224.0.0.1", "multicast"),
        ("http://240.0.0.1/", "240.0.0.1", "reserved"),
        ("http://100.64.0.1/", "100.64.0.1", "not a public address"),
        ("http://[::1]:6379/", "::1", "loopback"),
        ("http://[fe80::1]/", "fe80::1", "link-local"),
        ("http://[fd00::5]/", "fd00::5", "private"),
        ("http://[::ffff:127.0.0.1]:6379/", "::ffff:127.0.0.1", "an IPv4-mapped IPv6 address"),
        ("http://[::ffff:8.8.8.8]/", "::ffff:8.8.8.8", "an IPv4-mapped IPv6 address"),
    ],
)
def test_internal_addresses_are_refused(url: str, address: str, kind: str) -> None:
    assert _refusal(url).startswith(f"the address {address} is {kind},")


def test_a_name_that_does_not_resolve_is_refused() -> None:
    # metadata.google.internal resolves only inside Google's cloud; anywhere else it fails.
    assert _refusal("http://metadata.google.internal/computeMetadata/v1/") in (
        "the host metadata.google.internal could not be resolved",
        "the address 169.254.169.254 of metadata.google.internal is link-local, which outbound "
        "requests may not reach (an operator allows networks with OUTBOUND_ALLOW_PRIVATE)",
    )


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://files.example.com/a.csv", "only http and https may be used, not ftp://"),
        ("file:///etc/passwd", "only http and https may be used, not file://"),
        ("gopher://127.0.0.1:6379/_INFO", "only http and https may be used, not gopher://"),
        ("http:///nohost", "the URL names no host"),
        ("http://127.0.0.1:99999/", "the URL is not a valid http(s) URL"),
    ],
)
def test_only_http_and_https_urls_with_a_host(url: str, message: str) -> None:
    assert _refusal(url) == message


def test_a_public_address_passes_and_is_what_the_connection_uses() -> None:
    target = check_url("https://8.8.8.8:8443/x?y=1", NOTHING_ALLOWED)
    assert (target.addresses, target.host_header, target.path) == (
        ("8.8.8.8",),
        "8.8.8.8:8443",
        "/x?y=1",
    )


def test_the_allow_list_admits_its_networks_only() -> None:
    policy = OutboundPolicy(allow_private=allowed_networks("10.20.0.0/16, fd00::/8"))
    assert check_url("http://10.20.3.4/", policy).addresses == ("10.20.3.4",)
    assert check_url("http://[fd00::5]/", policy).addresses == ("fd00::5",)
    assert _refusal("http://10.21.0.1/", policy).startswith("the address 10.21.0.1 is private")
    assert _refusal("http://127.0.0.1/", policy).startswith("the address 127.0.0.1 is loopback")
    # A mapped address is the IPv4 address it maps: allowed only with that network.
    mapped = OutboundPolicy(allow_private=allowed_networks("127.0.0.0/8"))
    assert check_url("http://[::ffff:127.0.0.1]/", mapped).addresses == ("::ffff:127.0.0.1",)


def test_a_bad_allow_list_entry_is_named() -> None:
    with pytest.raises(ValueError, match="OUTBOUND_ALLOW_PRIVATE holds 'intranet'"):
        allowed_networks("10.0.0.0/8,intranet")
    assert allowed_networks(["10.0.0.0/8", ""]) == (ipaddress.ip_network("10.0.0.0/8"),)


def test_the_settings_give_the_policy(settings: Any) -> None:
    settings.OUTBOUND_ALLOW_PRIVATE = ["192.168.0.0/16"]
    settings.OUTBOUND_TIMEOUT_SECONDS = 7
    settings.OUTBOUND_MAX_BYTES = 1234
    policy = policy_from_settings(timeout_seconds=5)
    assert (policy.allow_private, policy.timeout_seconds, policy.max_bytes) == (
        (ipaddress.ip_network("192.168.0.0/16"),),
        5,
        1234,
    )
    assert policy_from_settings(timeout_seconds=30, max_bytes=9).timeout_seconds == 7


def test_without_the_allow_list_the_suites_own_loopback_servers_are_refused(
    settings: Any,
) -> None:
    """The test settings allow 127.0.0.0/8 for the suite's peers; unset, a real request to one
    is refused before anything is sent."""
    settings.OUTBOUND_ALLOW_PRIVATE = []
    with http_peer({"/secret": Route(body=b"internal")}) as peer:
        with pytest.raises(OutboundRefused, match="is loopback"):
            outbound.request("GET", f"{peer.base}/secret", policy=policy_from_settings())
        assert peer.requests == []


def test_the_name_is_resolved_once_and_the_connection_goes_to_that_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A resolver that answers 127.0.0.2 first and a refused address afterwards (DNS
    rebinding): the request reaches 127.0.0.2, with the name in the Host header."""
    real = socket.getaddrinfo
    calls: list[str] = []

    def rebinding(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "exports.example.test":
            return real(host, port, *args, **kwargs)
        calls.append(host)
        address = "127.0.0.2" if len(calls) == 1 else "169.254.169.254"
        return real(address, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    with http_peer({"/f.csv": Route(body=b"a,b\n")}, host="127.0.0.2") as peer:
        port = peer.base.rsplit(":", 1)[1]
        url = f"http://exports.example.test:{port}/f.csv"
        with outbound.opened("GET", url, policy=LOOPBACK_ALLOWED) as response:
            assert (response.status, response.read_all()) == (200, b"a,b\n")
    assert calls == ["exports.example.test"]
    assert peer.requests[0]["host"] == f"exports.example.test:{port}"


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_to_a_refused_address_is_refused(status: int) -> None:
    """The redirecting server is on 127.0.0.2, the only address allowed; it sends the request
    on to 127.0.0.1, which is never asked."""
    only_it = OutboundPolicy(allow_private=allowed_networks("127.0.0.2/32"))
    with http_peer({"/secret": Route(body=b"internal")}) as internal:
        moved = Route(status=status, headers={"Location": f"{internal.base}/secret"})
        with (
            http_peer({"/f.csv": moved}, host="127.0.0.2") as peer,
            pytest.raises(OutboundRefused) as refused,
        ):
            outbound.request("POST", f"{peer.base}/f.csv", policy=only_it, body=b"{}")
    assert str(refused.value).startswith(
        "it redirected to a URL that is refused: the address 127.0.0.1 is loopback"
    )
    assert len(peer.requests) == 1 and internal.requests == []


def test_a_redirect_to_ftp_is_refused() -> None:
    moved = Route(status=302, headers={"Location": "ftp://127.0.0.1/etc/passwd"})
    with http_peer({"/hook": moved}) as peer, pytest.raises(OutboundRefused) as refused:
        outbound.request("GET", f"{peer.base}/hook", policy=LOOPBACK_ALLOWED)
    assert str(refused.value) == (
        "it redirected to a URL that is refused: only http and https may be used, not ftp://"
    )


def test_redirects_are_followed_up_to_the_limit_with_the_method_each_status_keeps() -> None:
    routes = {
        "/a": Route(status=307, headers={"Location": "/b"}),
        "/b": Route(status=303, headers={"Location": "/c"}),
        "/c": Route(body=b"done"),
        "/loop": Route(status=302, headers={"Location": "/loop"}),
    }
    with http_peer(routes) as peer:
        with outbound.opened("POST", f"{peer.base}/a", policy=LOOPBACK_ALLOWED, body=b"x") as r:
            assert (r.status, r.read_all()) == (200, b"done")
        assert [(q["method"], q["path"], q["body"]) for q in peer.requests] == [
            ("POST", "/a", b"x"),
            ("POST", "/b", b"x"),  # 307 keeps the method and the body
            ("GET", "/c", b""),  # 303 asks with GET
        ]
        with pytest.raises(OutboundFailed, match="more than 5 redirects"):
            outbound.request("GET", f"{peer.base}/loop", policy=LOOPBACK_ALLOWED)
        assert len(peer.requests) == 3 + 6


@pytest.mark.parametrize("headers_too", [False, True])
def test_a_dripping_peer_is_cut_at_the_total_deadline(headers_too: bool) -> None:
    """A byte every 0.5 s keeps every single read alive; the deadline (2 s) covers them all."""
    policy = OutboundPolicy(allow_private=LOOPBACK_ALLOWED.allow_private, timeout_seconds=2)
    with dripping_peer(every_seconds=0.5, headers_too=headers_too) as base:
        started = time.monotonic()
        with (
            pytest.raises(OutboundFailed) as failed,
            outbound.opened("GET", f"{base}/slow.csv", policy=policy) as response,
        ):
            response.read_all()
        took = elapsed(started)
    assert str(failed.value) == "no complete answer within 2 s"
    assert 1.5 <= took < 20


def test_a_peer_that_never_answers_is_cut_at_the_deadline() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)  # accepts the connection, never reads or answers
    policy = OutboundPolicy(allow_private=LOOPBACK_ALLOWED.allow_private, timeout_seconds=1)
    try:
        started = time.monotonic()
        with pytest.raises(OutboundFailed, match="no complete answer within 1 s"):
            outbound.request("GET", f"http://127.0.0.1:{listener.getsockname()[1]}/", policy=policy)
        assert elapsed(started) < 10
    finally:
        listener.close()


def test_the_body_is_read_up_to_the_cap() -> None:
    policy = OutboundPolicy(allow_private=LOOPBACK_ALLOWED.allow_private, max_bytes=1000)
    with http_peer({"/big": Route(body=b"y" * 5000), "/small": Route(body=b"z" * 1000)}) as peer:
        with outbound.opened("GET", f"{peer.base}/small", policy=policy) as response:
            assert response.read_all() == b"z" * 1000
        with (
            pytest.raises(OutboundFailed, match="the answer is larger than 1,000 bytes"),
            outbound.opened("GET", f"{peer.base}/big", policy=policy) as response,
        ):
            response.read_all()


def test_a_closed_port_is_unreachable_without_the_peers_words() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()
    with pytest.raises(OutboundFailed) as failed:
        outbound.request("GET", f"http://127.0.0.1:{port}/", policy=LOOPBACK_ALLOWED)
    assert str(failed.value) == "the server could not be reached (Connection refused)"


def test_an_error_status_is_returned_to_the_caller_with_its_code_only() -> None:
    route = Route(status=500, body=b"stack trace: password=hunter2", reason="Leaked Reason")
    with (
        http_peer({"/x": route}) as peer,
        outbound.opened("GET", f"{peer.base}/x", policy=LOOPBACK_ALLOWED) as response,
    ):
        assert response.status == 500
        assert not hasattr(response, "reason")


def test_credentials_in_the_url_go_to_that_url_only_never_to_where_it_redirects() -> None:
    with http_peer({"/next": Route(body=b"done")}, host="127.0.0.2") as other:
        moved = Route(status=302, headers={"Location": f"{other.base}/next"})
        with http_peer({"/f": moved}) as peer:
            url = f"http://ann:p%40ss@{peer.base.removeprefix('http://')}/f"
            with outbound.opened("GET", url, policy=LOOPBACK_ALLOWED) as response:
                assert response.read_all() == b"done"
    assert peer.requests[0]["authorization"] == "Basic YW5uOnBAc3M="  # ann:p@ss
    assert other.requests[0]["authorization"] is None


def _self_signed(tmp_path: Any, name: str) -> tuple[str, str]:
    """A certificate for ``name`` and its key, as PEM files."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / f"{name}.crt", tmp_path / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(cert_path), str(key_path)


@pytest.mark.parametrize(("served_as", "works"), [("localhost", True), ("other.test", False)])
def test_https_checks_the_certificate_for_the_name_while_connecting_to_the_address(
    tmp_path: Any, served_as: str, works: bool
) -> None:
    import ssl
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    cert, key = _self_signed(tmp_path, served_as)
    names: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    server_context.sni_callback = lambda sock, name, ctx: names.append(name)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = server_context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client_context = ssl.create_default_context(cafile=cert)
    url = f"https://localhost:{server.server_address[1]}/"
    try:
        if works:
            with outbound.opened(
                "GET", url, policy=LOOPBACK_ALLOWED, tls_context=client_context
            ) as response:
                assert response.read_all() == b"ok"
        else:
            with pytest.raises(OutboundFailed, match="the TLS handshake with localhost failed"):
                outbound.request("GET", url, policy=LOOPBACK_ALLOWED, tls_context=client_context)
    finally:
        server.shutdown()
        server.server_close()
    assert names[:1] == ["localhost"]
