"""DRF's API rate limits, counting anonymous clients by `audit_app.access.client_address`.

DRF's own classes take X-Forwarded-For as sent, so a client could pick a new identity for every
request; these believe it only from a trusted proxy. Rate limits are DRF's (django-axes only
locks out failed logins).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework import throttling

from audit_app.access.client_address import client_address

if TYPE_CHECKING:
    from rest_framework.request import Request


class AnonRateThrottle(throttling.AnonRateThrottle):
    def get_ident(self, request: Request) -> str:
        return client_address(request)


class UserRateThrottle(throttling.UserRateThrottle):
    def get_ident(self, request: Request) -> str:
        return client_address(request)
