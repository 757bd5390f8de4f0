"""OpenAPI description of the hashed-token authentication, for drf-spectacular."""

from __future__ import annotations

from typing import TYPE_CHECKING

from drf_spectacular.extensions import OpenApiAuthenticationExtension

if TYPE_CHECKING:
    from drf_spectacular.openapi import AutoSchema


class HashedTokenScheme(OpenApiAuthenticationExtension):
    target_class = "audit_app.access.authentication.HashedTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": 'Token from `manage.py issue_token USERNAME`, sent as "Token <key>".',
        }
