"""Secrets encrypted at rest: a model field whose column holds a Fernet token, never the text.

The keys are `settings.FIELD_ENCRYPTION_KEYS` (Fernet keys, urlsafe base64 of 32 bytes, as
`Fernet.generate_key()` makes): the first encrypts, every one decrypts. Without any, one key is
derived from SECRET_KEY (the embedded default). Rotating: put a new key first, run
`manage.py encrypt_secrets` (every secret is decrypted and encrypted again with the first key),
then drop the old key.

A stored value is ``fernet:`` and the token. A value without that prefix (one written before
the column was encrypted) reads as it is and is encrypted when next saved. A token no key
decrypts reads as the stored token (logged), so saving it again never loses it;
`undecryptable` tells it apart.
"""

from __future__ import annotations

import base64
import hashlib
import logging
from functools import lru_cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models

logger = logging.getLogger(__name__)

PREFIX = "fernet:"


def derived_key(secret_key: str) -> str:
    """The Fernet key derived from SECRET_KEY, used when FIELD_ENCRYPTION_KEYS is empty."""
    digest = hashlib.sha256(f"field-encryption:{secret_key}".encode()).digest()
    return base64.urlsafe_b64encode(digest).decode()


@lru_cache(maxsize=8)
def _fernet(keys: tuple[str, ...]) -> MultiFernet:
    fernets = []
    for position, key in enumerate(keys, start=1):
        try:
            fernets.append(Fernet(key.encode()))
        except ValueError:
            raise ImproperlyConfigured(
                f"FIELD_ENCRYPTION_KEYS: key {position} is not a Fernet key (32 bytes in "
                "urlsafe base64, as Fernet.generate_key() makes)."
            ) from None
    return MultiFernet(fernets)


def current_keys() -> tuple[str, ...]:
    keys = tuple(str(k).strip() for k in getattr(settings, "FIELD_ENCRYPTION_KEYS", []) or [])
    return tuple(k for k in keys if k) or (derived_key(settings.SECRET_KEY),)


def encrypt(text: str) -> str:
    """``fernet:`` and the token of ``text`` with the first key ("" stays "")."""
    if not text or text.startswith(PREFIX):
        return text
    return PREFIX + _fernet(current_keys()).encrypt(text.encode("utf-8")).decode("ascii")


def undecryptable(value: str) -> bool:
    """True for a stored token that none of the keys decrypts (as `decrypt` left it)."""
    return value.startswith(PREFIX)


def decrypt(stored: str) -> str:
    """The text of a stored value: a token decrypted with any key; a value without the
    prefix as it is; a token no key decrypts as it is (logged)."""
    if not stored.startswith(PREFIX):
        return stored
    try:
        return _fernet(current_keys()).decrypt(stored[len(PREFIX) :].encode("ascii")).decode()
    except (InvalidToken, UnicodeError):
        logger.error(
            "a stored secret could not be decrypted with any key of FIELD_ENCRYPTION_KEYS "
            "(was the key it was encrypted with dropped, or SECRET_KEY changed?)"
        )
        return stored


class EncryptedTextField(models.TextField):
    """Text kept encrypted in its column; read and written as plain text."""

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return value if value is None else decrypt(str(value))

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        return value if value is None else encrypt(str(value))
