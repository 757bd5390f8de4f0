"""The one family of domain errors: what a service refuses, in words, never in HTTP.

A service raises a `DomainError` (or a subclass naming the refusal) with a `kind` that says what
sort of refusal it is and, for bad input, the `field` at fault. Front ends decide what that
means to them: the API maps each kind to a status code once (`audit_app.api.errors`), a page
shows the message, a command stops with it. Pure module (no Django).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorKind(StrEnum):
    INVALID = "invalid"  # the input is wrong; `field` names it
    FORBIDDEN = "forbidden"  # the user may not do this
    NOT_FOUND = "not_found"  # what the input names does not exist
    CONFLICT = "conflict"  # the input is fine, the current state refuses it
    NO_SPACE = "no_space"  # the server has no room to keep what was sent
    BUSY = "busy"  # the server cannot take it now; the client retries after `retry_after` s


class DomainError(Exception):
    """A refusal: the message is the sentence every front end shows."""

    kind: ErrorKind = ErrorKind.INVALID
    field: str = ""

    def __init__(
        self, message: str, *, kind: ErrorKind | None = None, field: str | None = None
    ) -> None:
        super().__init__(message)
        if kind is not None:
            self.kind = kind
        if field is not None:
            self.field = field

    def facts(self) -> dict[str, Any]:
        """JSON facts a front end may add to its error (the gates that keep an upload, ...);
        a key here states that part of the error more exactly than the message alone."""
        return {}
