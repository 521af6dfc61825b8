"""Console keys and server secrets: created once, stored as hashes, resolved on every request.

Every function that serves a keyed route resolves the presented key itself
(`expconsole.api.auth.check`), through a short per-sandbox cache (`KeyCache`): one place decides
who is calling, so a new kind of principal is one more branch there, not a second gateway.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from expconsole import config
from expconsole.key_hashes import KeyKind, generate_key, hash_key
from expconsole.store import dynamo


@dataclass(frozen=True)
class ActiveKey:
    """A presented key that resolved to an active record: who is calling, and as what."""

    key_id: str
    kind: KeyKind


def create_key(kind: KeyKind, description: str = "", key: str | None = None) -> tuple[str, dict[str, Any]]:
    """Register a key (a given one, or a new one) and return it with its stored record.

    The plain key is returned here and never stored or logged anywhere.
    """
    plain = key or generate_key(kind)
    key_hash = hash_key(plain)
    existing = dynamo.get_key(key_hash)
    if existing is not None:
        if existing["kind"] != kind:
            raise ValueError(f"that key is already registered as a {existing['kind']} key")
        return plain, existing
    record = {
        "keyId": secrets.token_hex(8),
        "keyHash": key_hash,
        "kind": kind,
        "description": description,
        "createdTime": int(time.time() * 1000),
        "active": True,
    }
    dynamo.put_key(key_hash, record)
    return plain, record


def resolve(presented: str) -> dict[str, Any] | None:
    """The active key record matching a presented key, or None (one GetItem)."""
    if not presented:
        return None
    return _active_record(hash_key(presented))


def _active_record(key_hash: str) -> dict[str, Any] | None:
    record = dynamo.get_key(key_hash)
    # The item is found by the hash; the stored hash is still compared in constant time.
    if record is None or not hmac.compare_digest(str(record["keyHash"]).encode(), key_hash.encode()):
        return None
    return record if record.get("active", False) else None


class KeyCache:
    """The active keys this sandbox has resolved, each trusted for `ttl_seconds`.

    A hit costs a SHA-256 of the presented key and a dict lookup; a miss one DynamoDB GetItem.
    Entries are keyed by the key's hash, never the key. Only active keys are kept: an unknown key
    is looked up on every request (so a key created a moment ago works at once), and the cache
    holds at most one entry per registered key. A key deactivated elsewhere keeps working in a
    sandbox that resolved it for at most `ttl_seconds`; `ttl_seconds=0` looks up every request.
    """

    def __init__(self, ttl_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._entries: dict[str, tuple[float, ActiveKey]] = {}

    def resolve(self, presented: str) -> ActiveKey | None:
        if not presented:
            return None
        key_hash = hash_key(presented)
        entry = self._entries.get(key_hash)
        if entry is not None and entry[0] > self._clock():
            return entry[1]
        record = _active_record(key_hash)
        if record is None:
            self._entries.pop(key_hash, None)
            return None
        key = ActiveKey(key_id=str(record["keyId"]), kind=cast(KeyKind, record["kind"]))
        if self.ttl_seconds > 0:
            self._entries[key_hash] = (self._clock() + self.ttl_seconds, key)
        return key

    def forget(self, key_hash: str) -> None:
        """Stop trusting a key here (deactivated by this process: no need to wait for the TTL)."""
        self._entries.pop(key_hash, None)


_cache: KeyCache | None = None


def cache() -> KeyCache:
    """This sandbox's cache, its TTL read from KEY_CACHE_SECONDS on first use."""
    global _cache
    if _cache is None:
        _cache = KeyCache(config.key_cache_seconds())
    return _cache


def reset_cache() -> None:
    """Forget every cached key and re-read the TTL (a new store, as in tests, is a new sandbox)."""
    global _cache
    _cache = None


def deactivate(key_id: str) -> bool:
    """Revoke a key by its id; False if there is no such key. Other sandboxes stop accepting it
    once their cached entry expires (KEY_CACHE_SECONDS)."""
    for record in dynamo.list_keys():
        if record["keyId"] == key_id:
            dynamo.set_key_active(record["keyHash"], False)
            if _cache is not None:
                _cache.forget(record["keyHash"])
            return True
    return False


def list_keys() -> list[dict[str, Any]]:
    """Key records without their hashes, for `expconsole keys list`."""
    return [{k: v for k, v in r.items() if k != "keyHash"} for r in dynamo.list_keys()]
