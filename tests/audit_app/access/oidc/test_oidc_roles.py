"""OIDC_ROLE_MAP: read into each group's roles, with a bad entry named; groups read from the
roles claim in either shape a provider sends."""

from __future__ import annotations

from typing import Any

import jwt
import pytest
from django.core.exceptions import ImproperlyConfigured

from audit_app.access.oidc import id_token_verify
from audit_app.access.oidc_discovery import Issuer, SsoRefused
from audit_app.access.oidc_roles import claimed_groups, mapped_roles, role_map_parse


def test_pairs_are_read_with_the_last_colon_separating_the_role() -> None:
    parsed = role_map_parse(
        " finops-team:finops , ml-platform:engineer,urn:acme:leads:MANAGER,ml-platform:admin,"
    )
    assert parsed == {
        "finops-team": frozenset({"finops"}),
        "ml-platform": frozenset({"engineer", "admin"}),
        "urn:acme:leads": frozenset({"manager"}),
    }
    assert role_map_parse("") == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("finops-team=finops", "OIDC_ROLE_MAP holds 'finops-team=finops', not a group:role pair"),
        (":finops", "OIDC_ROLE_MAP holds ':finops', not a group:role pair"),
        ("team:", "OIDC_ROLE_MAP holds 'team:', not a group:role pair"),
        (
            "a:finops,b:boss",
            "OIDC_ROLE_MAP maps 'b' to 'boss', which is not a role; roles are "
            "admin, engineer, finops, manager.",
        ),
    ],
)
def test_a_bad_entry_is_named(text: str, message: str) -> None:
    with pytest.raises(ImproperlyConfigured) as refused:
        role_map_parse(text)
    assert message in str(refused.value)


def test_groups_come_from_the_configured_claim_as_a_list_or_one_name(settings: Any) -> None:
    settings.OIDC_ROLES_CLAIM = "roles"
    assert claimed_groups({"roles": ["a", "b"], "groups": ["c"]}) == ["a", "b"]
    assert claimed_groups({"roles": "a"}) == ["a"]
    assert claimed_groups({"roles": {"a": 1}}) == []
    assert claimed_groups({}) == []


def test_mapped_roles_join_every_group_s_roles(settings: Any) -> None:
    settings.OIDC_ROLE_MAP = "x:finops,y:engineer,y:admin"
    assert mapped_roles(["y", "x", "unknown"]) == {"finops", "engineer", "admin"}
    assert mapped_roles(["unknown"]) == frozenset()


@pytest.mark.parametrize("alg", ["HS256", "none"])
def test_a_token_signed_with_a_shared_secret_or_unsigned_is_refused_before_any_key(
    settings: Any, alg: str
) -> None:
    settings.OIDC_CLIENT_ID = "spend-audit"
    issuer = Issuer(
        issuer="https://id.example.com",
        authorization_endpoint="https://id.example.com/a",
        token_endpoint="https://id.example.com/t",
        jwks_uri="https://id.example.com/k",
    )
    claims = {"iss": issuer.issuer, "aud": "spend-audit", "sub": "x", "nonce": "n"}
    secret = "a-shared-client-secret-of-32-bytes!" if alg == "HS256" else None
    token = jwt.encode(claims, secret, algorithm=alg)
    with pytest.raises(SsoRefused) as refused:
        id_token_verify(token, issuer=issuer, nonce="n")
    assert refused.value.reason == "bad_algorithm"
    assert f"signed with {alg}" in str(refused.value)
