"""The client address: X-Forwarded-For believed only from a trusted proxy."""

from __future__ import annotations

import ipaddress

import pytest
from django.core.handlers.wsgi import WSGIRequest
from django.test import RequestFactory, override_settings
from rest_framework.request import Request

from audit_app.access.client_address import client_address, client_address_from
from audit_app.access.throttling import AnonRateThrottle, UserRateThrottle

PROXIES = [ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("::1/128")]


@pytest.mark.parametrize(
    ("remote_addr", "forwarded_for", "trusted", "expected"),
    [
        # No trusted proxy: the header is whatever the client sent, so it is ignored.
        ("198.51.100.9", "203.0.113.7", [], "198.51.100.9"),
        ("198.51.100.9", "", [], "198.51.100.9"),
        # A trusted proxy appends the client it saw: that hop is the client.
        ("10.0.0.1", "203.0.113.7", PROXIES, "203.0.113.7"),
        # What the client wrote to the left of it is not believed.
        ("10.0.0.1", "6.6.6.6, 203.0.113.7", PROXIES, "203.0.113.7"),
        # Two trusted proxies in a row: the first untrusted hop from the right.
        ("10.0.0.1", "6.6.6.6, 203.0.113.7, 10.0.0.2", PROXIES, "203.0.113.7"),
        # Every hop trusted: the leftmost one.
        ("10.0.0.1", "10.0.0.3, 10.0.0.2", PROXIES, "10.0.0.3"),
        # A trusted proxy with no header: the proxy itself.
        ("10.0.0.1", "", PROXIES, "10.0.0.1"),
        # A hop that is no address ends the walk at the hop to its right.
        ("10.0.0.1", "203.0.113.7, not-an-ip", PROXIES, "10.0.0.1"),
        ("10.0.0.1", "not-an-ip, 203.0.113.7", PROXIES, "203.0.113.7"),
        # A peer outside the trusted networks is the client, whatever it says.
        ("198.51.100.9", "203.0.113.7", PROXIES, "198.51.100.9"),
        ("::1", "2001:db8::7", PROXIES, "2001:db8::7"),
    ],
)
def test_client_address_from(
    remote_addr: str, forwarded_for: str, trusted: list[object], expected: str
) -> None:
    got = client_address_from(
        remote_addr=remote_addr,
        forwarded_for=forwarded_for,
        trusted=trusted,  # type: ignore[arg-type]
    )
    assert got == expected


def _request(remote_addr: str, forwarded_for: str) -> WSGIRequest:
    return RequestFactory().get("/", REMOTE_ADDR=remote_addr, HTTP_X_FORWARDED_FOR=forwarded_for)


def test_the_setting_decides_whom_to_believe() -> None:
    request = _request("10.0.0.1", "203.0.113.7")
    assert client_address(request) == "10.0.0.1"
    with override_settings(TRUSTED_PROXIES=["10.0.0.0/8"]):
        assert client_address(request) == "203.0.113.7"


def test_api_rate_limits_count_clients_by_the_same_address() -> None:
    spoofed = Request(_request("198.51.100.9", "203.0.113.7"))
    assert AnonRateThrottle().get_ident(spoofed) == "198.51.100.9"
    assert UserRateThrottle().get_ident(spoofed) == "198.51.100.9"
    with override_settings(TRUSTED_PROXIES=["198.51.100.9"]):
        assert AnonRateThrottle().get_ident(spoofed) == "203.0.113.7"
