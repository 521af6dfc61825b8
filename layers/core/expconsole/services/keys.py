"""Console keys and server secrets: created once, stored as hashes, resolved by the authorizer."""

from __future__ import annotations

import secrets
import time
from typing import Any

from expconsole.key_hashes import KeyKind, generate_key, hash_key, hashes_match
from expconsole.store import dynamo


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
    """The active key record matching a presented key, or None."""
    if not presented:
        return None
    record = dynamo.get_key(hash_key(presented))
    if record is None or not hashes_match(record["keyHash"], presented) or not record.get("active", False):
        return None
    return record


def deactivate(key_id: str) -> bool:
    """Revoke a key by its id; False if there is no such key."""
    for record in dynamo.list_keys():
        if record["keyId"] == key_id:
            dynamo.set_key_active(record["keyHash"], False)
            return True
    return False


def list_keys() -> list[dict[str, Any]]:
    """Key records without their hashes, for `expconsole keys list`."""
    return [{k: v for k, v in r.items() if k != "keyHash"} for r in dynamo.list_keys()]
