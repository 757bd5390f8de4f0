"""Every URL the project serves, walked from the URLconf, so a new page cannot be missed."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.urls import URLPattern, URLResolver, get_resolver

# Reachable without signing in, on purpose (single sign-on starts and returns signed out).
PUBLIC_URL_NAMES = frozenset(
    {"login", "healthz", "oidc_authentication_init", "oidc_authentication_callback"}
)


@dataclass(frozen=True, kw_only=True)
class ProjectUrl:
    path: str
    name: str
    is_api: bool
    is_admin: bool


def _sample_path(route: str) -> str:
    """Turn a route with converters into a concrete path (ids become 1, slugs 'x')."""
    path = re.sub(r"<int:[^>]+>", "1", route)
    path = re.sub(r"<(?:slug|str|uuid|path):[^>]+>|<[^>]+>", "x", path)
    # Regex routes (admin uses some): drop anchors and fill groups.
    path = re.sub(r"\(\?P<[^>]+>[^)]*\)", "x", path)
    return "/" + path.replace("^", "").replace("$", "").replace("\\", "")


def project_urls() -> list[ProjectUrl]:
    found: list[ProjectUrl] = []

    def walk(patterns: list[URLPattern | URLResolver], prefix: str, namespace: str) -> None:
        for pattern in patterns:
            route = str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                inner_namespace = pattern.namespace or namespace
                walk(pattern.url_patterns, prefix + route, inner_namespace)
                continue
            name = pattern.name or ""
            full_name = f"{namespace}:{name}" if namespace and name else name
            path = _sample_path(prefix + route)
            found.append(
                ProjectUrl(
                    path=path,
                    name=full_name or path,
                    # /v1/traces: OTLP's receiver, an API outside /api/ (OTLP fixes the path).
                    is_api=(path.startswith("/api/") and not path.startswith("/api/docs/"))
                    or path.startswith("/v1/"),
                    is_admin=path.startswith("/admin/"),
                )
            )

    walk(get_resolver().url_patterns, "", "")
    return found
