"""Roles and the one permission check used by pages and the API alike.

Roles are Django groups (created by a data migration). A superuser holds every role.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeGuard

from django.contrib.auth.mixins import AccessMixin
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from rest_framework.permissions import BasePermission

from audit_app.models import Upload

if TYPE_CHECKING:
    # Types only: rest_framework.views reads the settings that name this module's HasAnyRole.
    from rest_framework.request import Request
    from rest_framework.views import APIView


# Who acts: a signed-in user, the anonymous user of a request, or None for the command line.
Actor = User | AnonymousUser | None


class Role(StrEnum):
    FINOPS = "finops"
    ENGINEER = "engineer"
    MANAGER = "manager"


ALL_ROLES: frozenset[Role] = frozenset(Role)
# Who may add or delete data: analysts upload bills, engineers upload logs and artifacts.
# Which uploads each of them may delete is `upload_delete_refusal`.
UPLOADER_ROLES: frozenset[Role] = frozenset({Role.FINOPS, Role.ENGINEER})
# Upload kinds that hold spend data, which finops analysts own whoever uploaded them.
SPEND_UPLOAD_KINDS = frozenset({Upload.Kind.TOKEN_LOG, Upload.Kind.BILLING})
UPLOAD_DELETE_RULE = (
    "Administrators may delete any upload; finops analysts any token log or billing export and "
    "their own benchmark artifacts; engineers only their own uploads; managers none."
)
# Who may create, change and delete budgets; every role reads them.
BUDGET_WRITER_ROLES: frozenset[Role] = frozenset({Role.FINOPS, Role.MANAGER})
# Who may decide whether a billing upload restates another (`audit_app.ingestion.supersession`):
# finops analysts own the spend data.
SUPERSESSION_ROLES: frozenset[Role] = frozenset({Role.FINOPS})
# Who may add, change, delete and poll billing sources (audit_app.ingestion.sources); every
# role reads them.
SOURCE_WRITER_ROLES: frozenset[Role] = frozenset({Role.FINOPS})


def user_roles(user: Actor) -> frozenset[str]:
    """The roles a user holds; a superuser holds all of them."""
    if user is None or not user.is_authenticated or not user.is_active:
        return frozenset()
    if user.is_superuser:
        return frozenset(ALL_ROLES)
    cached = getattr(user, "_audit_roles", None)
    if cached is None:
        names = user.groups.filter(name__in=[r.value for r in Role]).values_list("name", flat=True)
        cached = frozenset(names)
        user._audit_roles = cached  # type: ignore[attr-defined]  # a cache for this request
    return cached


def has_role(user: Actor, roles: Iterable[str] = ALL_ROLES) -> TypeGuard[User]:
    """True when the user is signed in and holds at least one of ``roles``."""
    return bool(user_roles(user) & frozenset(roles))


def upload_delete_refusal(*, user: User | AnonymousUser, upload: Upload) -> str | None:
    """Why ``user`` may not delete ``upload`` (a sentence naming the rule), or None if they may.

    The one rule for the upload page's button and confirmation and ``DELETE /api/v1/uploads/``.
    """
    roles = user_roles(user)
    own = upload.uploaded_by_id is not None and upload.uploaded_by_id == user.pk
    if (
        user.is_superuser
        or (Role.FINOPS in roles and (upload.kind in SPEND_UPLOAD_KINDS or own))
        or (Role.ENGINEER in roles and own)
    ):
        return None
    uploader = upload.uploaded_by.get_username() if upload.uploaded_by else "nobody known"
    return (
        f"You may not delete this upload (a {upload.get_kind_display().lower()} uploaded by "
        f"{uploader}). {UPLOAD_DELETE_RULE}"
    )


# Which roles may send each HTTP method to a view: ``roles_by_method`` on the view class, read
# by `RoleRequiredMixin` (pages) and `HasAnyRole` (API) through `method_roles`. The key "*"
# stands for every method the table does not name (a view for one group of roles alone).
RolesByMethod = Mapping[str, frozenset[str]]
ANY_METHOD = "*"
# A view that declares no table: every role reads it (GET), and nothing else is named.
EVERY_ROLE_READS: RolesByMethod = MappingProxyType({"GET": ALL_ROLES})


def method_roles(view: object, method: str) -> frozenset[str]:
    """The roles that may send ``method`` to ``view``, from its ``roles_by_method`` table.

    HEAD reads GET's entry, then a method not named reads the "*" entry. Without one: OPTIONS
    admits whoever may send any method named, a method the view does not handle admits every
    role (the view answers 405), and a method it handles admits nobody, so a forgotten entry
    refuses instead of opening.
    """
    table: RolesByMethod = getattr(view, "roles_by_method", EVERY_ROLE_READS)
    verb = method.upper()
    if verb in table:
        return table[verb]
    if verb == "HEAD" and "GET" in table:
        return table["GET"]
    if ANY_METHOD in table:
        return table[ANY_METHOD]
    if verb == "OPTIONS":
        return frozenset().union(*table.values())
    if not callable(getattr(view, verb.lower(), None)):
        return frozenset(ALL_ROLES)
    return frozenset()


class RoleRequiredMixin(AccessMixin):
    """Page views: signed-in users holding a role its ``roles_by_method`` names for the
    request's method (default: every role reads)."""

    roles_by_method: RolesByMethod = EVERY_ROLE_READS
    raise_exception = True
    permission_denied_message = (
        "Your account has no role that may do this here. Ask an administrator for one of: {}."
    )

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return self.handle_no_permission()
        roles = method_roles(self, request.method or "GET")
        if not has_role(request.user, roles):
            raise PermissionDenied(
                self.permission_denied_message.format(", ".join(sorted(roles)) or "none")
            )
        return super().dispatch(request, *args, **kwargs)  # type: ignore[misc]

    def may(self, method: str) -> bool:
        """Whether the signed-in user may send ``method`` here (a page's write buttons)."""
        request: HttpRequest = self.request  # type: ignore[attr-defined]
        return has_role(request.user, method_roles(self, method))


class HasAnyRole(BasePermission):
    """API views: the default permission, reading the view's ``roles_by_method``."""

    message = "Your account has no role that may use this endpoint."

    def has_permission(self, request: Request, view: APIView) -> bool:
        return has_role(request.user, method_roles(view, request.method or "GET"))
