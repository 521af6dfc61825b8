"""API keys as the domain keeps them: a kind prefix and randomness, stored only as SHA-256 hashes.

Shared by the key service (which creates and resolves keys) and the API's auth check.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Literal

KeyKind = Literal["console", "server"]
PREFIX: dict[str, str] = {"console": "console-", "server": "secret-"}


def generate_key(kind: KeyKind) -> str:
    """A new key: a kind prefix and 256 bits of randomness."""
    return PREFIX[kind] + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def hashes_match(stored_hash: str, presented_key: str) -> bool:
    """Constant-time comparison of a stored hash with the hash of a presented key."""
    return hmac.compare_digest(stored_hash.encode(), hash_key(presented_key).encode())
