"""What the server asks an OpenID Connect issuer, all through the one outbound HTTP client
(`audit_app.lib.outbound`): its discovery document, its signing keys (JWKS), the token
exchange and the userinfo answer.

The discovery document names every endpoint, so OIDC_ISSUER is the only address configured.
It and the keys are kept in this process for DISCOVERY_MAX_AGE_SECONDS; a token signed by a key
the kept set lacks fetches the set again (at most every KEYS_REFETCH_SECONDS), so a key the
issuer rotates in is picked up at once. Every failure is `SsoRefused` with a sentence naming
what failed, for the sign-in page to show.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from django.conf import settings

from audit_app.lib import outbound

DISCOVERY_MAX_AGE_SECONDS = 3600.0
KEYS_REFETCH_SECONDS = 10.0
# No sign-in should wait longer on the issuer than this.
ISSUER_TIMEOUT_SECONDS = 15.0
# Asymmetric algorithms only: a token "signed" with the client secret (HS256) or "none" is
# never accepted.
SIGNING_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)


class SsoRefused(Exception):
    """A sign-in through the identity provider is refused; the message says why, in a sentence
    for the person signing in. ``reason`` is a short code for the audit trail."""

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, kw_only=True)
class Issuer:
    """The endpoints and capabilities an issuer's discovery document states."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str = ""
    end_session_endpoint: str = ""
    signing_algorithms: frozenset[str] = frozenset({"RS256"})
    token_auth_methods: tuple[str, ...] = ("client_secret_basic",)


_lock = threading.Lock()
_issuers: dict[str, tuple[float, Issuer]] = {}
_keys: dict[str, tuple[float, list[dict[str, Any]]]] = {}


def discovery_url(issuer: str) -> str:
    return issuer.rstrip("/") + "/.well-known/openid-configuration"


def issuer_discover(issuer: str | None = None) -> Issuer:
    """The configured issuer's discovery document (kept for an hour); SsoRefused when it cannot
    be fetched or does not describe that issuer."""
    name = issuer or settings.OIDC_ISSUER
    now = time.monotonic()
    with _lock:
        kept = _issuers.get(name)
    if kept is not None and now - kept[0] < DISCOVERY_MAX_AGE_SECONDS:
        return kept[1]
    document = _fetch_json(discovery_url(name), what="the discovery document")
    found = _issuer_from_document(name, document)
    with _lock:
        _issuers[name] = (now, found)
    return found


def _issuer_from_document(name: str, document: dict[str, Any]) -> Issuer:
    if document.get("issuer") != name:
        raise SsoRefused(
            f"The discovery document of {name} names the issuer {document.get('issuer')!r}; "
            "OIDC_ISSUER must be exactly the issuer it names.",
            reason="discovery_issuer_mismatch",
        )
    missing = [
        field
        for field in ("authorization_endpoint", "token_endpoint", "jwks_uri")
        if not isinstance(document.get(field), str) or not document[field]
    ]
    if missing:
        raise SsoRefused(
            f"The discovery document of {name} names no {', '.join(missing)}.",
            reason="discovery_incomplete",
        )
    algorithms = frozenset(document.get("id_token_signing_alg_values_supported") or ["RS256"])
    methods = document.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
    return Issuer(
        issuer=name,
        authorization_endpoint=document["authorization_endpoint"],
        token_endpoint=document["token_endpoint"],
        jwks_uri=document["jwks_uri"],
        userinfo_endpoint=str(document.get("userinfo_endpoint") or ""),
        end_session_endpoint=str(document.get("end_session_endpoint") or ""),
        signing_algorithms=algorithms & SIGNING_ALGORITHMS,
        token_auth_methods=tuple(str(m) for m in methods),
    )


def issuer_signing_key(issuer: Issuer, *, kid: str | None, alg: str) -> dict[str, Any]:
    """The issuer's published key (a JWK) that a token's header names; SsoRefused when the
    issuer publishes none such, even after fetching its keys again."""
    now = time.monotonic()
    with _lock:
        kept = _keys.get(issuer.jwks_uri)
    fresh = kept is None or now - kept[0] >= DISCOVERY_MAX_AGE_SECONDS
    keys = _fetch_keys(issuer) if fresh or kept is None else kept[1]
    found = _matching_key(keys, kid=kid, alg=alg)
    if found is None and not fresh and kept is not None and now - kept[0] >= KEYS_REFETCH_SECONDS:
        found = _matching_key(_fetch_keys(issuer), kid=kid, alg=alg)
    if found is None:
        raise SsoRefused(
            "The identity token is signed by a key the issuer does not publish "
            f"(key id {kid!r}), so it was not issued by {issuer.issuer}.",
            reason="unknown_signing_key",
        )
    return found


def _fetch_keys(issuer: Issuer) -> list[dict[str, Any]]:
    document = _fetch_json(issuer.jwks_uri, what="the signing keys (JWKS)")
    keys = [key for key in document.get("keys") or [] if isinstance(key, dict)]
    with _lock:
        _keys[issuer.jwks_uri] = (time.monotonic(), keys)
    return keys


def _matching_key(
    keys: list[dict[str, Any]], *, kid: str | None, alg: str
) -> dict[str, Any] | None:
    candidates = [
        key
        for key in keys
        if key.get("use", "sig") == "sig"
        and key.get("alg", alg) == alg
        and (kid is None or key.get("kid") == kid)
    ]
    # A token without a key id is accepted only when one key can have signed it.
    return candidates[0] if len(candidates) == 1 or (kid and candidates) else None


def issuer_forget() -> None:
    """Drop the kept discovery documents and keys (a changed OIDC_ISSUER, tests)."""
    with _lock:
        _issuers.clear()
        _keys.clear()


def tokens_exchange(
    issuer: Issuer, *, code: str, redirect_uri: str, code_verifier: str | None
) -> dict[str, Any]:
    """The issuer's tokens for an authorization code (the token endpoint's JSON answer)."""
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
    if code_verifier:
        form["code_verifier"] = code_verifier
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
    client_id, secret = settings.OIDC_CLIENT_ID, settings.OIDC_CLIENT_SECRET
    if "client_secret_basic" in issuer.token_auth_methods or not secret:
        # RFC 6749 2.3.1: each part form-encoded before the Basic encoding.
        pair = f"{quote(client_id, safe='')}:{quote(secret, safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    else:
        form.update(client_id=client_id, client_secret=secret)
    status, answer = _send(
        "POST", issuer.token_endpoint, headers=headers, body=urlencode(form).encode()
    )
    if status != 200 or not isinstance(answer, dict) or not answer.get("id_token"):
        raise _token_refusal(status, answer)
    return answer


def _token_refusal(status: int, answer: Any) -> SsoRefused:
    error = answer.get("error") if isinstance(answer, dict) else None
    if error == "invalid_grant":
        return SsoRefused(
            "The identity provider refused the sign-in code (invalid_grant): it has expired or "
            "was already used. Sign in again.",
            reason="code_refused",
        )
    if error:
        return SsoRefused(
            f"The identity provider refused to exchange the sign-in code ({str(error)[:60]}).",
            reason="token_error",
        )
    return SsoRefused(
        f"The identity provider's token endpoint answered HTTP {status} without an identity token.",
        reason="token_error",
    )


def userinfo_fetch(issuer: Issuer, *, access_token: str) -> dict[str, Any]:
    """The claims the userinfo endpoint gives for an access token ({} when none advertised)."""
    if not issuer.userinfo_endpoint or not access_token:
        return {}
    status, answer = _send(
        "GET",
        issuer.userinfo_endpoint,
        headers={"Authorization": f"Bearer {access_token}", "Accept": "application/json"},
    )
    if status != 200 or not isinstance(answer, dict):
        raise SsoRefused(
            f"The identity provider's userinfo endpoint answered HTTP {status}.",
            reason="userinfo_error",
        )
    return answer


def _fetch_json(url: str, *, what: str) -> dict[str, Any]:
    status, answer = _send("GET", url, headers={"Accept": "application/json"})
    if status != 200 or not isinstance(answer, dict):
        raise SsoRefused(
            f"The identity provider is unavailable: {what} at {url} answered HTTP {status}.",
            reason="issuer_unavailable",
        )
    return answer


def _send(
    method: str, url: str, *, headers: dict[str, str], body: bytes | None = None
) -> tuple[int, Any]:
    """One request through the outbound client: the status and the JSON body (None if the
    body is not JSON)."""
    policy = outbound.policy_from_settings(timeout_seconds=ISSUER_TIMEOUT_SECONDS)
    try:
        with outbound.opened(method, url, policy=policy, headers=headers, body=body) as answer:
            status, raw = answer.status, answer.read_all()
    except (outbound.OutboundRefused, outbound.OutboundFailed) as exc:
        raise SsoRefused(
            f"The identity provider is unavailable: {url} could not be reached ({exc}).",
            reason="issuer_unavailable",
        ) from None
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, None
