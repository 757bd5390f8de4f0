"""The client's address: the one place that reads REMOTE_ADDR and X-Forwarded-For.

Behind a proxy every request comes from the proxy's address. The proxy's X-Forwarded-For
header names the client, but a client can send that header too, so it is believed only when
the request comes from a proxy listed in TRUSTED_PROXIES, and then only up to the first hop
(from the right) that no trusted proxy vouches for.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from django.conf import settings

if TYPE_CHECKING:
    from django.http import HttpRequest
    from rest_framework.request import Request

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


def _is_trusted(address: str, trusted: Sequence[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in trusted)


def client_address_from(*, remote_addr: str, forwarded_for: str, trusted: Sequence[Network]) -> str:
    """The rightmost address not vouched for by a trusted proxy.

    ``remote_addr`` is the peer of this server; ``forwarded_for`` the X-Forwarded-For header
    (hops left to right, each proxy appending the address it received the request from).
    A hop that is not an IP address ends the walk: the hop to its right is the answer.
    """
    address = remote_addr
    if not _is_trusted(address, trusted):
        return address
    for hop in reversed([part.strip() for part in forwarded_for.split(",") if part.strip()]):
        try:
            ipaddress.ip_address(hop)
        except ValueError:
            break
        address = hop
        if not _is_trusted(hop, trusted):
            break
    return address


def client_address(request: HttpRequest | Request) -> str:
    """The address the request came from (Django or DRF request), per TRUSTED_PROXIES."""
    meta = request.META
    return client_address_from(
        remote_addr=str(meta.get("REMOTE_ADDR") or "unknown"),
        forwarded_for=str(meta.get("HTTP_X_FORWARDED_FOR", "")),
        trusted=_networks(tuple(settings.TRUSTED_PROXIES)),
    )
