"""Secrets at rest (AES-256-GCM), and redaction of secret values from all we store or return."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final, TypeVar

from quickjail.sandbox import TypedArray

from .errors import SecretKeyError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ["REDACTED", "Redactor", "SecretBox"]

REDACTED: Final = "[REDACTED]"
_VERSION: Final = b"\x01"
_NONCE_BYTES: Final = 12
_MIN_KEY_BYTES: Final = 32
_INFO: Final = b"quickjail-runtime secrets v1"
_SEAL_INFO: Final = b"quickjail-runtime continuations v1"
_MAX_PASSES: Final = 8


class SecretBox:
    """Encrypts variable values with a key derived (HKDF-SHA256) from ``secret_key``.

    Each value gets a fresh 96-bit nonce and is bound to its thread and name (associated data),
    so a ciphertext copied to another row does not decrypt.
    """

    __slots__ = ("_aead", "seal_key")

    def __init__(self, secret_key: bytes | str) -> None:
        """Derive the encryption key.

        Args:
            secret_key: At least 32 bytes of key material (e.g. ``os.urandom(32)`` or
                ``secrets.token_urlsafe(32)``); a str is UTF-8 encoded.

        Raises:
            SecretKeyError: The key is too short or of the wrong type.
        """
        material = secret_key.encode() if isinstance(secret_key, str) else secret_key
        if not isinstance(material, bytes) or len(material) < _MIN_KEY_BYTES:
            raise SecretKeyError(f"secret_key must be at least {_MIN_KEY_BYTES} bytes")
        # cryptography loads only for a runtime with a secret key (milliseconds of import)
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF

        hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO)
        self._aead: AESGCM = AESGCM(hkdf.derive(material))
        # the HMAC key paused runs are sealed with (another HKDF output: never the AES key)
        seal = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_SEAL_INFO)
        self.seal_key: bytes = seal.derive(material)

    def encrypt(self, value: str, context: bytes) -> bytes:
        """Return ``version || nonce || ciphertext`` for ``value`` bound to ``context``."""
        return self.encrypt_bytes(value.encode(), context)

    def encrypt_bytes(self, data: bytes, context: bytes) -> bytes:
        """:meth:`encrypt` for bytes (a paused run's continuation, a pending call)."""
        nonce = os.urandom(_NONCE_BYTES)
        return _VERSION + nonce + self._aead.encrypt(nonce, data, context)

    def decrypt(self, blob: bytes, context: bytes) -> str:
        """Decrypt a value from :meth:`encrypt`.

        Raises:
            SecretKeyError: Wrong key, tampered or misplaced ciphertext.
        """
        return self.decrypt_bytes(blob, context).decode()

    def decrypt_bytes(self, blob: bytes, context: bytes) -> bytes:
        """Decrypt bytes from :meth:`encrypt_bytes`.

        Raises:
            SecretKeyError: Wrong key, tampered or misplaced ciphertext.
        """
        from cryptography.exceptions import InvalidTag  # loaded by __init__ already

        if blob[:1] != _VERSION:
            raise SecretKeyError("stored secret has an unknown format")
        nonce, sealed = blob[1 : 1 + _NONCE_BYTES], blob[1 + _NONCE_BYTES :]
        try:
            return self._aead.decrypt(nonce, sealed, context)
        except InvalidTag:
            raise SecretKeyError(
                "cannot decrypt a stored secret: wrong secret_key or tampered data"
            ) from None


class Redactor:
    """Replaces every occurrence of known secret values with ``[REDACTED]``.

    Longer secrets are replaced first so a secret containing another is hidden whole, and the
    replacement repeats until no secret is left (a marker next to the text around it can form
    a secret again); if that does not settle, the whole text is replaced. A secret that is
    itself part of the marker (``"RED"``) is replaced once, without that guarantee.
    """

    __slots__ = ("_secrets",)

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        """Start with some secret values (empty strings are ignored)."""
        self._secrets: list[str] = []
        for value in secrets:
            self.add(value)

    def add(self, value: str) -> None:
        """Remember one more secret value."""
        if value and value not in self._secrets:
            self._secrets.append(value)
            self._secrets.sort(key=len, reverse=True)

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def __len__(self) -> int:
        """How many secret values it knows (grows as tools register secrets)."""
        return len(self._secrets)

    def text(self, value: str) -> str:
        """Redact a string."""
        return _scrub(value, self._secrets, REDACTED)

    def data(self, value: bytes) -> bytes:
        """Redact raw bytes (UTF-8 occurrences of the secrets)."""
        return _scrub(value, [s.encode() for s in self._secrets], REDACTED.encode())

    def typed(self, value: TypedArray) -> TypedArray:
        """Redact a typed array's bytes; once changed, zeros pad them to whole elements."""
        data = self.data(value.data)
        if data == value.data:
            return value
        data += bytes(-len(data) % value.itemsize)
        return TypedArray(value.kind, data)

    def value(self, value: Any) -> Any:
        """Redact every string, bytes and typed array inside a value that crossed the sandbox.

        Walks every container a run's values come in (dict keys and values, lists and
        tuples, and the ``frozenset`` a JavaScript ``Set`` becomes), so no shape of value
        carries a secret past it. Members or keys that become equal once redacted merge.
        """
        if not self._secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, bytes):
            return self.data(value)
        if isinstance(value, TypedArray):
            return self.typed(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        if isinstance(value, (frozenset, set)):
            return frozenset(self._member(v) for v in value)
        return value

    def _member(self, value: Any) -> Any:
        """Redact a set member, keeping it hashable (a tuple stays a tuple)."""
        if isinstance(value, tuple):
            return tuple(self._member(v) for v in value)
        return self.value(value)


_Text = TypeVar("_Text", str, bytes)


def _scrub(value: _Text, secrets: list[_Text], marker: _Text) -> _Text:
    for secret in secrets:
        if secret in value:
            value = value.replace(secret, marker)
    strong = [s for s in secrets if s not in marker]
    for _ in range(_MAX_PASSES):
        found = [s for s in strong if s in value]
        if not found:
            return value
        for secret in found:
            value = value.replace(secret, marker)
    return marker if any(s in value for s in strong) else value
