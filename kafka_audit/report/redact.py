"""Evidence without payloads (SPEC section 3, ``dump --redact`` / ``report --redact``): a record's
key, value and header values are replaced by their length and a keyed hash, so that equal
payloads still look equal to whoever reads the evidence and nobody can read or guess them.

The hash is BLAKE2b-128 keyed with ``--redact-key`` (stretched to a 32-byte BLAKE2b key, so any
length of key works) or, without one, with a random key drawn once per run: the same payload
hashes alike within one document and differently across runs unless the key is shared."""

from __future__ import annotations

import hashlib
import secrets

_KEY_PERSON = b"kafka-audit-rk"


class Redactor:
    """Replaces payload bytes by ``<redacted N bytes blake2b:HEX>`` (None stays None)."""

    def __init__(self, key: str | None = None) -> None:
        if key is None:
            self._key = secrets.token_bytes(32)
        else:
            self._key = hashlib.blake2b(key.encode("utf-8", "surrogateescape"), digest_size=32,
                                        person=_KEY_PERSON).digest()

    def digest(self, data: bytes) -> str:
        return hashlib.blake2b(data, key=self._key, digest_size=16).hexdigest()

    def __call__(self, data: bytes | None) -> str | None:
        if data is None:
            return None
        return f"<redacted {len(data)} bytes blake2b:{self.digest(bytes(data))}>"
