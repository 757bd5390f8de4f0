"""The one way the server makes an HTTP request to an address someone typed in: URL billing
sources, S3-compatible endpoints (their host is checked here; boto3 connects) and alert
webhooks.

Its rules in full: `docs/architecture.md`, section "Outbound requests".
"""

from __future__ import annotations

import base64
import http.client
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

from django.conf import settings

MAX_REDIRECTS = 5
REDIRECT_STATUSES = (301, 302, 303, 307, 308)
READ_CHUNK_BYTES = 64 * 1024
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class OutboundRefused(Exception):
    """The URL, or a redirect, is not one the server may reach; the message says why."""


class OutboundFailed(Exception):
    """The request could not be completed (unreachable, past the deadline, too large)."""


@dataclass(frozen=True, kw_only=True)
class OutboundPolicy:
    """What a request may reach and how long and large it may be."""

    allow_private: tuple[IPNetwork, ...] = ()
    timeout_seconds: float = 60.0
    max_bytes: int = 10 * 1024 * 1024
    max_redirects: int = MAX_REDIRECTS


def allowed_networks(value: str | Iterable[str]) -> tuple[IPNetwork, ...]:
    """The networks of OUTBOUND_ALLOW_PRIVATE (comma-separated CIDRs, or a list of them);
    ValueError naming an entry that is not one."""
    items = value.split(",") if isinstance(value, str) else list(value)
    networks = []
    for item in (str(i).strip() for i in items):
        if not item:
            continue
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(
                f"OUTBOUND_ALLOW_PRIVATE holds {item!r}, not a network such as 10.0.0.0/8."
            ) from None
    return tuple(networks)


def policy_from_settings(
    *, max_bytes: int | None = None, timeout_seconds: float | None = None
) -> OutboundPolicy:
    """The policy the settings give (OUTBOUND_ALLOW_PRIVATE, OUTBOUND_TIMEOUT_SECONDS,
    OUTBOUND_MAX_BYTES); a caller may lower the deadline or set its own size cap."""
    deadline = float(settings.OUTBOUND_TIMEOUT_SECONDS)
    if timeout_seconds is not None:
        deadline = min(deadline, timeout_seconds)
    return OutboundPolicy(
        allow_private=allowed_networks(settings.OUTBOUND_ALLOW_PRIVATE),
        timeout_seconds=deadline,
        max_bytes=int(settings.OUTBOUND_MAX_BYTES if max_bytes is None else max_bytes),
    )


# --- Addresses -----------------------------------------------------------------------------


def _forbidden_kind(address: IPAddress) -> str:
    """Why an address is not for outbound requests ("" when it is public)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return "an IPv4-mapped IPv6 address"
    for kind, flag in (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("reserved", address.is_reserved),
        ("private", address.is_private),
    ):
        if flag:
            return kind
    return "" if address.is_global else "not a public address"


def _allowed(address: IPAddress, networks: Iterable[IPNetwork]) -> bool:
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    candidates = [address] if mapped is None else [address, mapped]
    return any(a in n for a in candidates for n in networks if a.version == n.version)


def address_refusal(address: IPAddress, host: str, policy: OutboundPolicy) -> str:
    """Why ``address`` (what ``host`` resolved to) is refused ("" when it may be reached)."""
    kind = _forbidden_kind(address)
    if not kind or _allowed(address, policy.allow_private):
        return ""
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    shown = str(address) if mapped is None else f"::ffff:{mapped}"
    of = "" if host in (shown, str(address)) else f" of {host}"
    return (
        f"the address {shown}{of} is {kind}, which outbound requests may not reach "
        "(an operator allows networks with OUTBOUND_ALLOW_PRIVATE)"
    )


@dataclass(frozen=True, kw_only=True)
class Target:
    """A checked URL: its parts and the addresses it may be reached at."""

    url: str
    scheme: str
    host: str
    port: int
    path: str
    addresses: tuple[str, ...]
    authorization: str = ""  # Basic, from the URL's user name and password

    @property
    def host_header(self) -> str:
        name = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return name if self.port == default else f"{name}:{self.port}"


def check_url(url: str, policy: OutboundPolicy) -> Target:
    """Resolve the URL's host once and check the scheme and every address; OutboundRefused
    names what is wrong."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise OutboundRefused("the URL is not a valid http(s) URL") from None
    if parts.scheme not in ("http", "https"):
        shown = f"{parts.scheme}://" if parts.scheme else "no scheme"
        raise OutboundRefused(f"only http and https may be used, not {shown}")
    host = parts.hostname or ""
    if not host:
        raise OutboundRefused("the URL names no host")
    port = port or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise OutboundRefused(f"the host {host} could not be resolved") from None
    addresses: list[str] = []
    for info in infos:
        text = str(info[4][0]).split("%", 1)[0]
        refusal = address_refusal(ipaddress.ip_address(text), host, policy)
        if refusal:
            raise OutboundRefused(refusal)
        if text not in addresses:
            addresses.append(text)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    authorization = ""
    if parts.username or parts.password:
        pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
    return Target(
        url=url,
        scheme=parts.scheme,
        host=host,
        port=port,
        path=path,
        addresses=tuple(addresses),
        authorization=authorization,
    )


# --- The deadline --------------------------------------------------------------------------


class Deadline:
    """One request's deadline: the time left, and a watchdog that shuts down the sockets it
    watches when the time is up (a blocked read then ends at once)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends_at = time.monotonic() + seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def left(self) -> float:
        left = self.ends_at - time.monotonic()
        if left <= 0 or self.expired:
            raise self.failure()
        return left

    def failure(self) -> OutboundFailed:
        return OutboundFailed(f"no complete answer within {self.seconds:g} s")

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)

    def cancel(self) -> None:
        self._timer.cancel()


def _shut(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class _PinnedConnection(http.client.HTTPConnection):
    """An HTTP connection to one checked address, for the URL's host name."""

    def __init__(self, target: Target, address: str, deadline: Deadline) -> None:
        super().__init__(target.host, target.port, timeout=deadline.left())
        self.address = address
        self.deadline = deadline

    def connect(self) -> None:
        sock = socket.create_connection((self.address, self.port), timeout=self.deadline.left())
        self.deadline.watch(sock)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = sock


class _PinnedTLSConnection(_PinnedConnection):
    """HTTPS to one checked address; SNI and the certificate are checked for the host name."""

    default_port = 443

    def __init__(
        self, target: Target, address: str, deadline: Deadline, context: ssl.SSLContext
    ) -> None:
        super().__init__(target, address, deadline)
        self.context = context

    def connect(self) -> None:
        super().connect()
        self.sock = self.context.wrap_socket(self.sock, server_hostname=self.host)


# --- Requests ------------------------------------------------------------------------------


@dataclass(kw_only=True)
class OutboundResponse:
    """An answer whose body is read within the request's deadline and size cap."""

    status: int
    headers: Mapping[str, str]
    url: str
    _raw: http.client.HTTPResponse
    _connection: http.client.HTTPConnection
    _deadline: Deadline
    _max_bytes: int
    _read: int = field(default=0)

    def read(self, amount: int = READ_CHUNK_BYTES) -> bytes:
        """Up to ``amount`` bytes (b"" at the end); OutboundFailed past the deadline or cap."""
        self._deadline.left()
        try:
            chunk = self._raw.read1(max(1, amount))
        except (OSError, http.client.HTTPException) as exc:
            raise self._read_failure(exc) from None
        if not chunk and self._deadline.expired:
            raise self._deadline.failure()
        self._read += len(chunk)
        if self._read > self._max_bytes:
            raise OutboundFailed(f"the answer is larger than {self._max_bytes:,} bytes")
        return chunk

    def read_all(self) -> bytes:
        return b"".join(iter(self.read, b""))

    def _read_failure(self, exc: BaseException) -> OutboundFailed:
        if self._deadline.expired or isinstance(exc, TimeoutError):
            return self._deadline.failure()
        return OutboundFailed(f"the connection broke while reading ({type(exc).__name__})")

    def close(self) -> None:
        self._deadline.cancel()
        self._raw.close()
        self._connection.close()

    def __enter__(self) -> OutboundResponse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _connect(
    target: Target, deadline: Deadline, context: ssl.SSLContext | None
) -> http.client.HTTPConnection:
    last: BaseException | None = None
    for address in target.addresses:
        connection: http.client.HTTPConnection
        if target.scheme == "https":
            connection = _PinnedTLSConnection(
                target, address, deadline, context or ssl.create_default_context()
            )
        else:
            connection = _PinnedConnection(target, address, deadline)
        try:
            connection.connect()
            return connection
        except ssl.SSLError as exc:
            connection.close()
            raise OutboundFailed(
                f"the TLS handshake with {target.host} failed ({exc.reason})"
            ) from None
        except OSError as exc:
            connection.close()
            last = exc
    if deadline.expired or isinstance(last, TimeoutError):
        raise deadline.failure()
    reason = getattr(last, "strerror", None) or type(last).__name__
    raise OutboundFailed(f"the server could not be reached ({reason})")


def _send(
    target: Target,
    method: str,
    headers: Mapping[str, str],
    body: bytes | None,
    deadline: Deadline,
    context: ssl.SSLContext | None,
) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    connection = _connect(target, deadline, context)
    sent = {"Host": target.host_header, **headers}
    if target.authorization:
        sent["Authorization"] = target.authorization
    try:
        connection.request(method, target.path, body=body, headers=sent)
        return connection, connection.getresponse()
    except (OSError, http.client.HTTPException) as exc:
        connection.close()
        if deadline.expired or isinstance(exc, TimeoutError):
            raise deadline.failure() from None
        raise OutboundFailed(
            f"{target.host} broke the connection before answering ({type(exc).__name__})"
        ) from None


def _checked_hop(url: str, policy: OutboundPolicy, *, redirected: bool) -> Target:
    try:
        return check_url(url, policy)
    except OutboundRefused as exc:
        if not redirected:
            raise
        raise OutboundRefused(f"it redirected to a URL that is refused: {exc}") from None


def _redirected(status: int, method: str, body: bytes | None) -> tuple[str, bytes | None]:
    if status in (307, 308):
        return method, body
    return ("GET" if method not in ("GET", "HEAD") else method), None


def request(
    method: str,
    url: str,
    *,
    policy: OutboundPolicy,
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    tls_context: ssl.SSLContext | None = None,
) -> OutboundResponse:
    """Send one request, following redirects (each checked), within the policy. The answer,
    whatever its status, is returned open: read it and close it (or use it with ``with``)."""
    deadline = Deadline(policy.timeout_seconds)
    try:
        for hop in range(policy.max_redirects + 1):
            target = _checked_hop(url, policy, redirected=hop > 0)
            connection, raw = _send(target, method, headers or {}, body, deadline, tls_context)
            location = raw.getheader("Location")
            if raw.status not in REDIRECT_STATUSES or not location:
                return OutboundResponse(
                    status=raw.status,
                    headers={k: v for k, v in raw.getheaders()},
                    url=url,
                    _raw=raw,
                    _connection=connection,
                    _deadline=deadline,
                    _max_bytes=policy.max_bytes,
                )
            raw.close()
            connection.close()
            url = urljoin(url, location.strip())
            method, body = _redirected(raw.status, method, body)
        raise OutboundFailed(f"more than {policy.max_redirects} redirects")
    except BaseException:
        deadline.cancel()
        raise


@contextmanager
def opened(method: str, url: str, **kwargs: Any) -> Iterator[OutboundResponse]:
    """`request` as a context manager that closes the answer."""
    response = request(method, url, **kwargs)
    try:
        yield response
    finally:
        response.close()
