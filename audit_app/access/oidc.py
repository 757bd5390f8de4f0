"""Single sign-on with OpenID Connect: the authentication backend, the identity token's checks,
and the sign-in service that finds or creates the user and sets their roles.

mozilla-django-oidc runs the flow (state, nonce and PKCE in the session, the redirect to the
issuer, the callback, sign-out); `SsoBackend` replaces its network calls with
`audit_app.access.oidc_discovery` (the one outbound client) and its token check with
`id_token_verify`, which also checks the audience, the issuer and the expiry (the library
checks only the signature and nonce). A user is found by their (issuer, subject) identity, then
by a verified email, else created with the username of ``preferred_username`` or ``email``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import jwt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.db import transaction
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from audit_app.access.audit import audit_record
from audit_app.access.auth_failures import Lock, failure_lock, failure_record, login_address_key
from audit_app.access.client_address import client_address
from audit_app.access.oidc_discovery import (
    Issuer,
    SsoRefused,
    issuer_discover,
    issuer_signing_key,
    tokens_exchange,
    userinfo_fetch,
)
from audit_app.access.oidc_roles import claimed_groups, roles_sync
from audit_app.models import AuditEvent, SsoIdentity

# Clocks of the issuer and this server may differ by this much.
CLOCK_SKEW_SECONDS = 60
# Refusals that say nothing about the client (the issuer is down; the person declined at the
# issuer) are audited but not counted towards the client address's lock.
UNCOUNTED_REASONS = frozenset({"issuer_unavailable", "provider_error"})


def sso_enabled() -> bool:
    return bool(settings.OIDC_ISSUER)


def id_token_verify(token: str, *, issuer: Issuer, nonce: str | None) -> dict[str, Any]:
    """The claims of an identity token signed by one of the issuer's published keys, for this
    client, from this issuer, unexpired and carrying ``nonce``; SsoRefused naming the check
    that failed."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise SsoRefused(
            "The identity provider answered with an identity token that is not a JWT.",
            reason="malformed_token",
        ) from None
    alg = str(header.get("alg", ""))
    if alg not in issuer.signing_algorithms:
        raise SsoRefused(
            f"The identity token is signed with {alg or 'no algorithm'}, which the issuer does "
            "not declare or this server does not accept.",
            reason="bad_algorithm",
        )
    try:
        key = jwt.PyJWK(issuer_signing_key(issuer, kid=header.get("kid"), alg=alg), algorithm=alg)
    except jwt.PyJWTError:
        raise SsoRefused(
            f"The issuer publishes its key for this token in a form that cannot be read ({alg}).",
            reason="unreadable_key",
        ) from None
    try:
        claims = jwt.decode(
            token,
            key,
            algorithms=[alg],
            audience=settings.OIDC_CLIENT_ID,
            issuer=issuer.issuer,
            leeway=CLOCK_SKEW_SECONDS,
            options={"require": ["exp", "iat", "iss", "aud", "sub"]},
        )
    except jwt.PyJWTError as exc:
        raise _token_refusal(exc, token, issuer) from None
    _check_claims(claims, nonce=nonce)
    return claims


def _token_refusal(exc: jwt.PyJWTError, token: str, issuer: Issuer) -> SsoRefused:
    try:
        unverified = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        unverified = {}
    if isinstance(exc, jwt.InvalidSignatureError):
        return SsoRefused(
            "The identity token's signature does not verify with the issuer's key.",
            reason="bad_signature",
        )
    if isinstance(exc, jwt.ExpiredSignatureError):
        return SsoRefused("The identity token has expired. Sign in again.", reason="expired")
    if isinstance(exc, jwt.InvalidAudienceError):
        audience = unverified.get("aud")
        named = ", ".join(audience) if isinstance(audience, list) else str(audience)
        return SsoRefused(
            f"The identity token is meant for another application (audience {named}, not "
            f"this server's client {settings.OIDC_CLIENT_ID}).",
            reason="wrong_audience",
        )
    if isinstance(exc, jwt.InvalidIssuerError):
        return SsoRefused(
            f"The identity token was issued by {unverified.get('iss')!r}, not by the "
            f"configured issuer {issuer.issuer!r}.",
            reason="wrong_issuer",
        )
    return SsoRefused(f"The identity token is not valid ({exc}).", reason="invalid_token")


def _check_claims(claims: dict[str, Any], *, nonce: str | None) -> None:
    if nonce is None or claims.get("nonce") != nonce:
        raise SsoRefused(
            "The identity token does not carry the nonce of this sign-in (a replayed token).",
            reason="wrong_nonce",
        )
    audience = claims.get("aud")
    several = isinstance(audience, list) and len(audience) > 1
    if several and claims.get("azp") != settings.OIDC_CLIENT_ID:
        raise SsoRefused(
            "The identity token names several audiences and is not authorized for this "
            "server's client (azp).",
            reason="wrong_audience",
        )


def claims_merge(id_claims: dict[str, Any], userinfo: dict[str, Any]) -> dict[str, Any]:
    """The identity token's claims with the userinfo answer's over them, when both name the
    same subject (OpenID Connect Core 5.3.2); SsoRefused otherwise."""
    if not userinfo:
        return id_claims
    if userinfo.get("sub") != id_claims.get("sub"):
        raise SsoRefused(
            "The userinfo answer names another subject than the identity token.",
            reason="userinfo_subject_mismatch",
        )
    return {**id_claims, **userinfo}


@dataclass(frozen=True, kw_only=True)
class SsoSignIn:
    user: User
    roles: frozenset[str]
    created: bool


def sso_sign_in(*, issuer: str, claims: dict[str, Any]) -> SsoSignIn:
    """Find or create the user the verified ``claims`` name, update their email and name, set
    their roles from the groups claim, and record the sign-in; SsoRefused when no account may
    be used."""
    with transaction.atomic():
        user, created = _user_for(issuer=issuer, claims=claims)
        if not user.is_active:
            raise SsoRefused(
                f"The account {user.get_username()} is disabled here; ask an administrator.",
                reason="inactive_account",
            )
        _user_update(user, claims)
        groups = claimed_groups(claims)
        roles = roles_sync(user=user, groups=groups)
        audit_record(
            actor=user,
            action=AuditEvent.Action.SSO_SIGN_IN,
            obj=user,
            summary=(
                f"signed in through {issuer} as {claims['sub']}"
                f"{' (account created)' if created else ''}; roles: "
                f"{', '.join(sorted(roles)) or 'none'}"
            ),
            details={"issuer": issuer, "subject": claims["sub"], "groups": groups},
        )
    return SsoSignIn(user=user, roles=roles, created=created)


def _user_for(*, issuer: str, claims: dict[str, Any]) -> tuple[User, bool]:
    subject = str(claims["sub"])
    identity = (
        SsoIdentity.objects.select_related("user")
        .select_for_update()
        .filter(issuer=issuer, subject=subject)
        .first()
    )
    if identity is not None:
        identity.last_sign_in_at = timezone.now()
        identity.save(update_fields=["last_sign_in_at"])
        return identity.user, False
    user, created = _user_by_email(claims) or (_user_create(claims), True)
    SsoIdentity.objects.create(
        user=user, issuer=issuer, subject=subject, last_sign_in_at=timezone.now()
    )
    return user, created


def _user_by_email(claims: dict[str, Any]) -> tuple[User, bool] | None:
    email = str(claims.get("email") or "").strip()
    if not email or claims.get("email_verified") is not True:
        return None
    matches = list(get_user_model().objects.filter(email__iexact=email)[:2])
    if len(matches) > 1:
        raise SsoRefused(
            f"Several accounts here have the email {email}, so none is chosen; ask an "
            "administrator to keep one.",
            reason="ambiguous_email",
        )
    return (matches[0], False) if matches else None


def _user_create(claims: dict[str, Any]) -> User:
    username = str(claims.get("preferred_username") or claims.get("email") or "").strip()
    model = get_user_model()
    if not username:
        raise SsoRefused(
            "The identity provider gave neither preferred_username nor email, so no account "
            "can be named; ask its administrator to release one of them.",
            reason="no_username",
        )
    if model.objects.filter(username__iexact=username).exists():
        raise SsoRefused(
            f"An account named {username} already exists here and is not linked to your "
            "sign-in (its email is not your verified email); ask an administrator.",
            reason="username_taken",
        )
    user: User = model.objects.create_user(username[:150], email=str(claims.get("email") or ""))
    return user


def _user_update(user: User, claims: dict[str, Any]) -> None:
    fields = {
        "email": str(claims.get("email") or user.email),
        "first_name": str(claims.get("given_name") or user.first_name)[:150],
        "last_name": str(claims.get("family_name") or user.last_name)[:150],
    }
    changed = [name for name, value in fields.items() if getattr(user, name) != value]
    for name in changed:
        setattr(user, name, fields[name])
    if changed:
        user.save(update_fields=changed)


class SsoBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's backend with endpoints from discovery, every request through the
    outbound client, and the token checks of `id_token_verify`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Built for every request that has a session; it reads no endpoint until a sign-in.
        self.UserModel = get_user_model()

    def get_user(self, user_id: Any) -> User | None:
        """The session's user, unless deactivated since (Django's check; the library's
        ``get_user`` has none)."""
        return ModelBackend.get_user(self, user_id)

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> User | None:
        if not sso_enabled() or request is None or "nonce" not in kwargs:
            return None  # not the callback of a sign-in (a password sign-in, say)
        if not request.GET.get("code"):
            return None  # not the callback of a sign-in (a password sign-in, say)
        self.request = request
        issuer = issuer_discover()
        tokens = tokens_exchange(
            issuer,
            code=request.GET["code"],
            redirect_uri=request.build_absolute_uri(reverse("oidc_authentication_callback")),
            code_verifier=kwargs.get("code_verifier"),
        )
        claims = id_token_verify(tokens["id_token"], issuer=issuer, nonce=kwargs["nonce"])
        userinfo = userinfo_fetch(issuer, access_token=str(tokens.get("access_token") or ""))
        claims = claims_merge(claims, userinfo)
        self.store_tokens(tokens.get("access_token"), tokens["id_token"])
        request.session["sso_groups"] = claimed_groups(claims)  # for the page of no role
        return sso_sign_in(issuer=issuer.issuer, claims=claims).user


def sso_refusal_record(request: HttpRequest, refusal: SsoRefused) -> Lock | None:
    """Record a refused sign-in in the audit trail and in the failed-login count of the client
    address (the password form's count too); the lock on that address, if it now holds one.

    A refusal from an address already locked is neither counted nor audited again, as the
    password form does with a wrong password."""
    address = client_address(request)
    address_key = login_address_key(address)
    lock = failure_lock(account_key=None, address_key=address_key)
    if lock is not None:
        return lock
    if refusal.reason not in UNCOUNTED_REASONS:
        # The one place single sign-on counts a failed login.
        failure_record(account_key=None, address_key=address_key)
    audit_record(
        actor=None,
        actor_name=f"sign-in from {address}",
        action=AuditEvent.Action.SSO_REFUSED,
        obj=None,
        summary=f"single sign-on refused: {refusal}",
        details={"reason": refusal.reason, "address": address},
    )
    return None


def provider_logout_url(request: HttpRequest) -> str:
    """Where sign-out sends the browser: the issuer's end_session_endpoint for a session that
    signed in through it (when the issuer advertises one), else the sign-in page."""
    local = request.build_absolute_uri(reverse(settings.LOGOUT_REDIRECT_URL))
    id_token = request.session.get("oidc_id_token")
    if not id_token:
        return local
    try:
        endpoint = issuer_discover().end_session_endpoint
    except SsoRefused:
        return local
    if not endpoint:
        return local
    query = urlencode(
        {
            "id_token_hint": id_token,
            "post_logout_redirect_uri": local,
            "client_id": settings.OIDC_CLIENT_ID,
        }
    )
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"
