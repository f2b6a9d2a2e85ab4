"""A text field stored encrypted with Fernet (AES-128-CBC + HMAC-SHA256).

The keys come from `settings.FIELD_ENCRYPTION_KEYS`: the first one encrypts, every one decrypts, so a key
can be rotated by putting the new key first and re-saving the rows. The database column only ever holds the
Fernet token; Python code sees the plain text.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models

TOKEN_PREFIX = "fernet:"  # noqa: S105 - a marker, not a password


@lru_cache(maxsize=8)
def _fernet_for(keys: tuple[str, ...]) -> MultiFernet:
    if not keys:
        raise ImproperlyConfigured("FIELD_ENCRYPTION_KEYS is empty: set CLEARFLOW_ENCRYPTION_KEY")
    try:
        return MultiFernet([Fernet(key.encode() if isinstance(key, str) else key) for key in keys])
    except (ValueError, TypeError) as exc:
        raise ImproperlyConfigured(f"FIELD_ENCRYPTION_KEYS holds an invalid Fernet key: {exc}") from None


def fernet() -> MultiFernet:
    """The MultiFernet for the current settings (cached per key tuple, so tests can override settings)."""
    return _fernet_for(tuple(settings.FIELD_ENCRYPTION_KEYS))


def encrypt_str(value: str) -> str:
    return TOKEN_PREFIX + fernet().encrypt(value.encode()).decode()


def decrypt_str(token: str) -> str:
    if not token.startswith(TOKEN_PREFIX):
        raise ImproperlyConfigured("an encrypted column holds a value that is not a Fernet token")
    try:
        return fernet().decrypt(token[len(TOKEN_PREFIX) :].encode()).decode()
    except InvalidToken:
        raise ImproperlyConfigured(
            "cannot decrypt a stored secret: none of FIELD_ENCRYPTION_KEYS matches the key it was written with"
        ) from None


class EncryptedTextField(models.TextField):
    """Plain text in Python, a Fernet token in the database. Empty strings are stored as empty strings.

    Not searchable, not orderable in any useful way; never put it in `list_display` or a filter.
    """

    description = "Text encrypted at rest (Fernet)"

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> str | None:
        if value is None or value == "":
            return value
        return decrypt_str(value)

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        if value is None or value == "":
            return value
        return encrypt_str(str(value))
